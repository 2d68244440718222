r"""The hyperbolic space :math:`H^d` in the hyperboloid model, with a geodesic ball as BO domain.

Points are ``(*batch, d + 1)`` vectors :math:`x` with :math:`\langle x, x\rangle_L = -1`,
:math:`x_0 > 0`, where :math:`\langle x, y\rangle_L = -x_0 y_0 + \sum_{i \ge 1} x_i y_i` is the
Lorentz inner product; the distance is :math:`\operatorname{arccosh}(-\langle x, y\rangle_L)`.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import special
from torch import Tensor

from manibo._validation import check_finite, default_tolerance, described
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.harmonics.hyperbolic import (
    check_dimension,
    heat_table,
    hyperbolic_heat,
    interpolate,
    log_plancherel,
    r_over_sinh,
    sinhc,
    superpose,
)
from manibo.spaces.base import (
    DISTANCE_ACCURACY,
    NoncompactSpace,
    pairwise_in_chunks,
    rescaled,
    safe_sqrt,
)

MAX_RADIUS = 15.0
"""Largest domain radius (kernels are tabulated to distance 40; beyond ~20 float64 loses the
hyperboloid constraint)."""
FLOAT32_RADIUS = 4.5
r"""Farthest distance from the origin at which float32 hyperboloid coordinates fix distances to
about :data:`DISTANCE_ACCURACY`. Rounding moves a point off the hyperboloid by about
:math:`\epsilon x_0^2` (:math:`x_0 = \cosh r`), so no formula recovers its distances. Measured
against 50-digit mpmath distances of near pairs (constructed exactly at distances 1e-3 to 1, both
points within the radius, then rounded), the worst error of float32 points is 2.9e-4 within 4.5
(15,600 pairs, d = 2, 3, 4), 1.0e-3 to 1.4e-3 within 5, 0.2 within 8, 1.7 within 10 and 12 within
15; float64 points err by at most 5.5e-4 within :data:`MAX_RADIUS`."""
_QUADRATURE = np.polynomial.legendre.leggauss(8)


def resolved_radius(dtype: torch.dtype) -> float:
    r"""The farthest distance from the origin at which points of ``dtype`` fix distances to about
    :data:`DISTANCE_ACCURACY`: :data:`MAX_RADIUS` for float64, :data:`FLOAT32_RADIUS` for
    float32, and for coarser dtypes the radius where their off-hyperboloid error
    :math:`\epsilon x_0^2` equals float32's at :data:`FLOAT32_RADIUS`."""
    eps = torch.finfo(dtype).eps
    if eps <= torch.finfo(torch.float64).eps:
        return MAX_RADIUS
    x0 = math.cosh(FLOAT32_RADIUS) * math.sqrt(torch.finfo(torch.float32).eps / eps)
    return min(math.acosh(max(x0, 1.0)), MAX_RADIUS)


def lorentz(a: Tensor, b: Tensor) -> Tensor:
    r""":math:`\langle a, b\rangle_L = -a_0 b_0 + \sum_{i\ge1} a_i b_i` over the last dimension."""
    return -a[..., 0] * b[..., 0] + (a[..., 1:] * b[..., 1:]).sum(-1)


def poincare_to_hyperboloid(u: Tensor) -> Tensor:
    r"""Hyperboloid points of Poincaré-ball coordinates: :math:`x_0 = (1 + |u|^2) / (1 - |u|^2)`,
    :math:`(x_1, \dots, x_d) = 2u / (1 - |u|^2)`; the inverse of :meth:`Hyperbolic.chart`.

    Args:
        u: points of the open unit ball, shape ``(*batch, d)`` (hyperbolic embeddings are often
            kept in these coordinates).

    Returns:
        Shape ``(*batch, d + 1)``, the points of :class:`Hyperbolic` ``(d)``.

    Raises:
        InputDataError: ``u`` is not a floating tensor of finite entries, or a point has
            :math:`|u| \ge 1` (the ball's boundary is at infinite distance).
    """
    if not (isinstance(u, Tensor) and u.is_floating_point() and u.dim() >= 1):
        raise InputDataError(
            f"`u` must be a floating tensor of Poincaré-ball coordinates, shape (*batch, d); got "
            f"{described(u)}. Make one with torch.as_tensor(u, dtype=torch.float64)."
        )
    check_finite("u", u)
    norm = u.norm(dim=-1, keepdim=True)
    if bool((norm >= 1).any()):
        raise InputDataError(
            f"Poincaré-ball coordinates must have norm < 1 (the boundary is at infinite "
            f"distance); {int((norm >= 1).sum())} point(s) of `u` have norm >= 1, the largest "
            f"{float(norm.max()):.6g}. Scale them into the ball, or check that they are "
            "Poincaré and not Beltrami–Klein or upper-half-space coordinates."
        )
    gap = (1 - norm) * (1 + norm)  # 1 - |u|^2 without cancellation near the boundary
    return torch.cat([(2 - gap) / gap, 2 * u / gap], dim=-1)


class Hyperbolic(NoncompactSpace):
    r"""The hyperbolic space :math:`H^d` (curvature :math:`-1`), hyperboloid model.

    The BO domain is the closed geodesic ball of radius ``radius`` around the origin
    :math:`o = (1, 0, \dots, 0)`: ``random`` samples it uniformly with respect to the volume
    (radial density :math:`\propto \sinh^{d-1} r`, so most of the volume lies near the boundary
    sphere), ``check`` refuses points outside it, ``project`` maps ambient vectors to the
    hyperboloid (keeping :math:`x_1..x_d`) and then pulls points outside the ball back to its
    boundary along the geodesic to the origin, and ``retract`` is the exponential map followed by
    ``project``, so the acquisition optimiser never leaves the ball. The chart is the Poincaré
    ball, :math:`u = (x_1, \dots, x_d) / (1 + x_0)`.

    Kernels: the heat and Matérn kernels of this space are evaluated exactly through its heat
    kernels (:meth:`heat_kernel`, :meth:`heat_mixture`, see :mod:`manibo.harmonics.hyperbolic`)
    or by random-phase features from its Plancherel density
    :math:`|c(\lambda)|^{-2} \propto \lambda^2 \prod_{j=1}^{(d-3)/2}(\lambda^2 + j^2)` (odd
    :math:`d`) or :math:`\lambda\tanh(\pi\lambda)\prod_{j=1}^{d/2-1}(\lambda^2 + (j-\tfrac12)^2)`
    (even :math:`d`) and horocyclic projection :math:`H(x) = -\log(x_0 - \vec x\cdot\omega)`,
    :math:`\omega \in S^{d-1}`.

    Precision: float32 coordinates fix distances to about 1e-3 only within
    :data:`FLOAT32_RADIUS` (4.5) of the origin (rounding moves a point off the hyperboloid by
    about :math:`\epsilon x_0^2`; at distance 10 the distances of near float32 points are off by
    up to 1.7), so ``check`` (and with it every kernel, model and optimiser) refuses float32
    points beyond it, and ``random(dtype=torch.float32)`` refuses a domain of larger radius; use
    float64 there (``x.double()``, ``model.double()``). float64 resolves the whole domain.

    Args:
        dim: :math:`d \ge 2`.
        radius: radius of the domain ball, in :math:`(0, 15]` (at most 4.5 for float32 points).
    """

    def __init__(self, dim: int, radius: float = 2.0) -> None:
        self.dim = check_dimension(dim)
        radius = float(radius)
        if not 0 < radius <= MAX_RADIUS:
            raise ConfigurationError(
                f"`radius` must lie in (0, {MAX_RADIUS}] (the domain is a geodesic ball), got "
                f"{radius}."
            )
        self.radius = radius
        self.point_shape = (self.dim + 1,)
        self.rank = 1
        self.spectral_dim = self.dim
        self.uniform_dims = (1, self.dim)
        self._tables: dict = {}
        self._volume_grid: dict = {}

    def __repr__(self) -> str:
        return f"Hyperbolic({self.dim}, radius={self.radius:g})"

    # geometry -------------------------------------------------------------------------------
    def origin(self, dtype: torch.dtype = torch.float64, device=None) -> Tensor:
        """The centre of the domain, :math:`(1, 0, \\dots, 0)`, shape ``(d + 1,)``."""
        o = torch.zeros(self.dim + 1, dtype=dtype, device=device)
        o[0] = 1.0
        return o

    def _volume(self, device) -> tuple[Tensor, Tensor, float]:
        r"""Grid on :math:`[0, R]`, the volume fraction of the ball within each grid radius, and
        :math:`\log\int_0^R \sinh^{d-1}`."""
        if device not in self._volume_grid:
            grid = torch.linspace(0.0, self.radius, 4097, dtype=torch.float64)
            log_cells = self._log_mass(grid[:-1], grid[1:])
            log_cum = torch.logcumsumexp(log_cells, 0)
            total = float(log_cum[-1])
            cdf = torch.cat([torch.zeros(1, dtype=torch.float64), torch.exp(log_cum - total)])
            self._volume_grid[device] = (grid.to(device), cdf.to(device), total)
        return self._volume_grid[device]

    def _log_mass(self, lo: Tensor, hi: Tensor) -> Tensor:
        r""":math:`\log\int_{lo}^{hi} \sinh^{d-1}`, by 8-point Gauss–Legendre (``hi > lo``)."""
        nodes, weights = (torch.from_numpy(a).to(lo) for a in _QUADRATURE)
        half = 0.5 * (hi - lo).clamp_min(1e-300)
        s = lo.unsqueeze(-1) + half.unsqueeze(-1) * (nodes + 1)
        log_sinh = torch.log(torch.sinh(s).clamp_min(1e-300))
        return torch.logsumexp(
            torch.log(half.unsqueeze(-1) * weights) + (self.dim - 1) * log_sinh, -1
        )

    def _radii(self, u: Tensor) -> Tensor:
        r"""Radii with density :math:`\propto\sinh^{d-1}` on :math:`[0, R]` at quantiles ``u``:
        the tabulated distribution function, then Newton steps on its exact value."""
        grid, cdf, log_total = self._volume(u.device)
        i = torch.searchsorted(cdf, u).clamp(1, grid.shape[0] - 1)
        lo, hi, c_lo = grid[i - 1], grid[i], cdf[i - 1]
        r = lo + (u - c_lo) / (cdf[i] - c_lo).clamp_min(1e-300) * (hi - lo)
        for _ in range(3):
            mass = torch.exp(self._log_mass(lo, r) - log_total) * (r > lo)
            log_density = (self.dim - 1) * torch.log(torch.sinh(r).clamp_min(1e-300)) - log_total
            step = (c_lo + mass - u) / torch.exp(log_density).clamp_min(1e-300)
            r = torch.minimum(torch.maximum(r - step, lo), hi)
        return r

    def random(self, n, generator=None, dtype=torch.float64, device=None) -> Tensor:
        """Uniform points of the domain ball (volume measure), shape ``(n, d + 1)``.

        Refuses a ``dtype`` that does not resolve the whole ball (float32 beyond radius 4.5, see
        :data:`FLOAT32_RADIUS`): most of the volume lies near the boundary sphere.
        """
        resolved = resolved_radius(dtype)
        if self.radius > resolved:
            raise ConfigurationError(
                f"{self!r} cannot draw {dtype} points: {dtype} hyperboloid coordinates fix "
                f"distances to about {DISTANCE_ACCURACY:g} only within {resolved:.3g} of the "
                f"origin (rounding moves a point off the hyperboloid by about eps * x0^2), and "
                f"this domain reaches {self.radius:g}. Draw float64 points "
                f"(`dtype=torch.float64`), or build Hyperbolic({self.dim}, radius={resolved:.3g})."
            )
        u = torch.rand(n, generator=generator, dtype=torch.float64, device=device)
        r = self._radii(u)
        z = torch.randn(n, self.dim, generator=generator, dtype=torch.float64, device=device)
        direction = z / z.norm(dim=-1, keepdim=True)
        x = torch.cat([torch.cosh(r)[:, None], torch.sinh(r)[:, None] * direction], -1)
        return x.to(dtype)

    def _check_on_manifold(self, x: Tensor, name: str) -> None:
        """On the upper sheet of the hyperboloid (within the geodesic ball or not)."""
        x = x.detach()
        tol = default_tolerance(x.dtype)
        off = (lorentz(x, x) + 1).abs() / (1 + x[..., 0].square())
        if (off > tol).any() or (x[..., 0] <= 0).any():
            lower = int((x[..., 0] <= 0).sum())
            worst = (
                f"{lower} point(s) have x0 <= 0 (the other sheet of the hyperboloid)"
                if lower
                else f"the worst is off by {float(off.max()):.3g}"
            )
            raise self._membership_error(
                name,
                f"points must satisfy -x0^2 + |x1..xd|^2 = -1 with x0 > 0 (relative tolerance "
                f"{tol:g}); {worst}",
                "Convert Poincaré-ball coordinates u (shape (*batch, d)) with "
                "`manibo.spaces.poincare_to_hyperboloid(u)`; "
                f"`space.project({name})` keeps x1..xd and recomputes x0, which is right only "
                "for points off by rounding.",
            )

    def _shape_advice(self, x: Tensor, name: str) -> str | None:
        if x.shape[-1:] != (self.dim,):
            return None
        return (
            f"A last dimension of {self.dim} looks like Poincaré-ball coordinates; points of "
            f"{self!r} are hyperboloid vectors (x0, x1, ..., x{self.dim}). Convert them with "
            f"`manibo.spaces.poincare_to_hyperboloid({name})`."
        )

    def _check_membership(self, x: Tensor, name: str) -> None:
        self._check_on_manifold(x, name)
        x = x.detach()
        tol = default_tolerance(x.dtype)
        limit = math.cosh(self.radius) * (1 + tol)
        if (x[..., 0] > limit).any():
            far = float(torch.acosh(x[..., 0].max().clamp_min(1)))
            raise self._membership_error(
                name,
                f"points must lie within distance {self.radius:g} of the origin (the domain); "
                f"the farthest is at {far:.4g}",
                f"Build Hyperbolic({self.dim}, radius=...) with a radius of at least {far:.4g} "
                f"(at most {MAX_RADIUS:g}); `space.project({name})` moves them onto the domain's "
                "boundary, which suits proposals but not points whose values were measured.",
            )
        resolved = resolved_radius(x.dtype)
        if self.radius > resolved and (x[..., 0] > math.cosh(resolved) * (1 + tol)).any():
            far = float(torch.acosh(x[..., 0].max().double()))
            raise InputDataError(
                f"`{name}` is {x.dtype}, whose hyperboloid coordinates fix distances to about "
                f"{DISTANCE_ACCURACY:g} only within {resolved:.3g} of the origin (rounding moves a "
                f"point off the hyperboloid by about eps * x0^2, so distances and kernel values "
                f"farther out are wrong); its farthest point is at {far:.4g} from the origin. Use "
                f"float64 (`{name}.double()`, and `model.double()` for a model), or keep the "
                f"points within {resolved:.3g} of the origin (Hyperbolic({self.dim}, "
                f"radius={resolved:.3g}))."
            )

    def project(self, x: Tensor) -> Tensor:
        """Onto the hyperboloid (keeping :math:`x_1..x_d`), then into the domain ball.

        Shapes ``(*batch, d + 1)``.
        """
        spatial = x[..., 1:]
        direction, scale = rescaled(spatial)
        length = direction.norm(dim=-1, keepdim=True)
        cap = math.sinh(self.radius)
        outside = scale * length > cap
        spatial = torch.where(outside, cap * direction / torch.where(outside, length, 1.0), spatial)
        x0 = torch.sqrt(1 + spatial.square().sum(-1, keepdim=True))
        return torch.cat([x0, spatial], -1)

    def to_tangent(self, x: Tensor, v: Tensor) -> Tensor:
        r"""Euclidean-orthogonal projection onto :math:`T_x = \{v : \langle x, v\rangle_L = 0\}`.

        The normal is :math:`(-x_0, x_1, \dots, x_d)`.
        """
        normal = torch.cat([-x[..., :1], x[..., 1:]], -1)
        coeff = (normal * v).sum(-1, keepdim=True) / normal.square().sum(-1, keepdim=True)
        return v - coeff * normal

    def exp(self, x: Tensor, v: Tensor) -> Tensor:
        r"""Exponential map :math:`\cosh(|v|) x + \sinh(|v|) v / |v|`, :math:`|v|^2 =
        \langle v, v\rangle_L` (``v`` tangent at ``x``). Shapes ``(*batch, d + 1)``."""
        norm = safe_sqrt(lorentz(v, v)).unsqueeze(-1)
        return torch.cosh(norm) * x + sinhc(norm) * v

    def log(self, x: Tensor, y: Tensor) -> Tensor:
        r"""Logarithm map: the tangent vector at ``x`` of length :math:`d(x, y)` towards ``y``.

        Shapes ``(*batch, d + 1)``.
        """
        d = self._unchecked("distance")(x, y).unsqueeze(-1)
        return (y + lorentz(x, y).unsqueeze(-1) * x) / sinhc(d)

    def retract(self, x: Tensor, v: Tensor) -> Tensor:
        r"""The exponential map, then :meth:`project` (back onto the hyperboloid and the ball).

        Steps longer than 40 are shortened to 40 first (they leave the ball anyway), so that
        :math:`\cosh` stays finite in float32; the length is taken of the step divided by its
        largest entry, so that it does not overflow either (a step of 2e154 in float64 became 0).
        """
        direction, scale = rescaled(v)
        length = scale * safe_sqrt(lorentz(direction, direction)).unsqueeze(-1)
        v = v * torch.where(length > 40.0, 40.0 / length.clamp_min(40.0), 1.0)
        return self.project(self.exp(x, v))

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        r""":math:`2\operatorname{asinh}(\tfrac12\sqrt{\langle x-y, x-y\rangle_L})`.

        This equals :math:`\operatorname{arccosh}(-\langle x, y\rangle_L)` and keeps relative
        accuracy near 0 and for large distances. Shapes: broadcastable ``(*batch, d + 1)`` →
        ``(*batch)``.
        """
        diff = x - y
        return 2 * torch.asinh(0.5 * safe_sqrt(lorentz(diff, diff)))

    def pairwise_distance(self, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        r"""Distances of all pairs through the Gram matrix of Lorentz products.

        The gradient is finite (zero) at coincident points.

        Args:
            x1: ``(*batch, n, d + 1)``.
            x2: ``(*batch, m, d + 1)``.
            diag: only the distances of ``x1[i]`` and ``x2[i]`` (``n == m``).

        Returns:
            ``(*batch, n, m)``, or ``(*batch, n)`` when ``diag``.
        """
        if diag:
            return self._unchecked("distance")(x1, x2)
        x0y0 = x1[..., :1] @ x2[..., :1].transpose(-1, -2)
        q = 0.5 * (x0y0 - x1[..., 1:] @ x2[..., 1:].transpose(-1, -2) - 1)  # sinh^2(d/2)
        # q's rounding error is about eps * x0 * y0 here: pairs where that exceeds eps^(3/4) * q
        # (2e-12 in float64, 7e-6 in float32) are recomputed from their differences, whose error
        # is about eps * max(x0, y0) * |x - y|, with |x - y|^2 = 4q + 2 (x0 - y0)^2, where that is
        # smaller (not for pairs far apart along a radius)
        near = q.detach() < torch.finfo(q.dtype).eps ** 0.25 * x0y0.detach()
        if near.any():
            batch = q.shape[:-2]
            index = near.nonzero(as_tuple=True)
            a = x1.expand(*batch, *x1.shape[-2:])[index[:-1]]
            b = x2.expand(*batch, *x2.shape[-2:])[(*index[:-2], index[-1])]
            diff = a - b
            closer = 0.25 * lorentz(diff, diff)
            x0, y0 = a[..., 0].detach(), b[..., 0].detach()
            better = 4 * closer.detach() + 2 * (x0 - y0).square() < torch.minimum(x0, y0).square()
            q = q.masked_scatter(near, torch.where(better, closer, q[near]))
        return 2 * torch.asinh(safe_sqrt(q))

    def chart(self, x: Tensor) -> Tensor:
        """Poincaré-ball coordinates :math:`\\vec x / (1 + x_0)`, shape ``(*batch, d)``; the
        inverse is :func:`poincare_to_hyperboloid`."""
        return x[..., 1:] / (1 + x[..., :1])

    def ambient_bounds(self) -> Tensor:
        r"""The box :math:`[1, \cosh R] \times [-\sinh R, \sinh R]^d`, shape ``(2, d + 1)``."""
        lower = torch.full((self.dim + 1,), -math.sinh(self.radius), dtype=torch.float64)
        upper = -lower
        lower[0], upper[0] = 1.0, math.cosh(self.radius)
        return torch.stack([lower, upper])

    # spectrum -------------------------------------------------------------------------------
    @property
    def rho(self) -> Tensor:
        r""":math:`\rho = ((d - 1)/2,)`; the spectrum of :math:`-\Delta` starts at \rho^2."""
        return torch.tensor([(self.dim - 1) / 2], dtype=torch.float64)

    def log_plancherel(self, lam: Tensor) -> Tensor:
        return log_plancherel(lam[..., 0].abs(), self.dim)

    def feature_second_moment(self) -> float:
        r""":math:`E_k[e^{4\rho H(k x)}] = \varphi_{-3i\rho}(R)` at the domain's edge
        :math:`R`: the spherical function
        :math:`{}_2F_1(2\rho, -\rho; d/2; -\sinh^2 R)` (Koornwinder 1984), :math:`\cosh R` on
        H² and :math:`(4\cosh^2 R - 1)/3` on H³; it grows like :math:`e^{2\rho R}`."""
        rho = (self.dim - 1) / 2
        return float(special.hyp2f1(2 * rho, -rho, self.dim / 2, -(math.sinh(self.radius) ** 2)))

    def spectral_base(self, uniforms: Tensor, nu: float) -> Tensor:
        """The quantiles themselves, ``(L, 1)`` (sampling is by inverse transform)."""
        return uniforms.to(torch.float64)

    def spectral_sample(self, base, nu, lengthscale, shifted=True):
        r"""Exact inverse-transform samples of :math:`S(\lambda) P_d(\lambda)` on
        :math:`\lambda > 0`, at the quantiles ``base``.

        The distribution function is tabulated on 4096 points of :math:`\log\lambda` around the
        spectral scale; the quantiles are interpolated linearly, so the samples are continuous
        and differentiable in ``lengthscale``.
        """
        ell = lengthscale
        if math.isinf(nu):
            log_scale = -torch.log(ell)
            top = 6.0
        else:
            a2 = 2 * nu / ell.square() + (0.0 if shifted else ((self.dim - 1) / 2) ** 2)
            log_scale = 0.5 * torch.log(a2)
            top = max(6.0, 15.0 / nu)
        offsets = torch.linspace(-12.0, top, 4096, dtype=ell.dtype, device=ell.device)
        x = log_scale + offsets  # (*W, G)
        lam = torch.exp(x)
        if math.isinf(nu):
            log_s = -0.5 * (ell * lam).square()
        else:
            log_s = -(nu + self.dim / 2) * torch.log(a2 + lam.square())
        log_density = log_s + log_plancherel(lam, self.dim) + x
        density = torch.exp(log_density - log_density.max(-1, keepdim=True).values)
        cells = 0.5 * (density[..., 1:] + density[..., :-1]) * (x[..., 1:] - x[..., :-1])
        cdf = torch.cat([torch.zeros_like(cells[..., :1]), cells.cumsum(-1)], -1)
        cdf = cdf / cdf[..., -1:]
        u = base[:, 0].to(ell).expand(*cdf.shape[:-1], base.shape[0]).contiguous()
        i = torch.searchsorted(cdf.detach().contiguous(), u).clamp(1, cdf.shape[-1] - 1)
        c0, c1 = cdf.gather(-1, i - 1), cdf.gather(-1, i)
        x0, x1 = x.gather(-1, i - 1), x.gather(-1, i)
        sample = x0 + (u - c0) / (c1 - c0).clamp_min(1e-300) * (x1 - x0)
        return torch.exp(sample).unsqueeze(-1), torch.zeros_like(sample)

    def boundary_points(self, uniforms: Tensor) -> Tensor:
        """Uniform directions :math:`\\omega \\in S^{d-1}`, ``(L, d)``."""
        u = uniforms.to(torch.float64).clamp(1e-12, 1 - 1e-12)
        z = math.sqrt(2) * torch.erfinv(2 * u - 1)
        return z / z.norm(dim=-1, keepdim=True)

    def horocyclic(self, x: Tensor, boundary: Tensor) -> Tensor:
        r""":math:`H = -\log(x_0 - \vec x\cdot\omega)`, ``(*batch, n, L, 1)``."""
        inner = x[..., :1] - x[..., 1:] @ boundary.to(x).transpose(-1, -2)
        return -torch.log(inner).unsqueeze(-1)

    def _on(self, key: tuple, make) -> tuple[Tensor, ...]:
        if key not in self._tables:
            if len(self._tables) >= 16:
                self._tables.clear()
            self._tables[key] = make()
        return self._tables[key]

    def heat_kernel(self, time, x1, x2, diag=False):
        r"""The normalised heat kernel of :math:`-\Delta - \rho^2` at ``time`` ``(*W, 1)``.

        On :math:`H^3` it is :math:`\frac{r}{\sinh r} e^{-r^2/4t}`; in other dimensions it is
        tabulated from the closed forms of :mod:`manibo.harmonics.hyperbolic` and interpolated.
        """
        if self.dim == 3:

            def block(a: Tensor, b: Tensor) -> Tensor:
                r = self._unchecked("pairwise_distance")(a, b, diag)
                return r_over_sinh(r) * torch.exp(-r.square() / (4 * _time_like(time, r, diag)))

        else:
            values, slopes = hyperbolic_heat(self.dim).profile(time[..., 0].to(torch.float64))
            values, slopes = values.to(x1.dtype), slopes.to(x1.dtype)

            def block(a: Tensor, b: Tensor) -> Tensor:
                return interpolate(
                    values,
                    slopes,
                    self._unchecked("pairwise_distance")(a, b, diag),
                    1 if diag else 2,
                )

        return block(x1, x2) if diag else pairwise_in_chunks(block, x1, x2, point_ndim=1)

    def heat_times(self, log_time_start: float) -> tuple[Tensor, Tensor]:
        log_times, log_origin, _, _ = heat_table(self.dim, float(log_time_start))
        return log_times, log_origin

    def heat_mixture(self, log_weights, log_time_start, x1, x2, diag=False):
        key = (float(log_time_start), log_weights.dtype, log_weights.device)

        def make() -> tuple[Tensor, Tensor]:
            _, _, values, slopes = heat_table(self.dim, float(log_time_start))
            return values.to(log_weights), slopes.to(log_weights)

        table_values, table_slopes = self._on(key, make)
        values, slopes = superpose(log_weights, table_values, table_slopes)

        def block(a: Tensor, b: Tensor) -> Tensor:
            return interpolate(
                values, slopes, self._unchecked("pairwise_distance")(a, b, diag), 1 if diag else 2
            )

        return block(x1, x2) if diag else pairwise_in_chunks(block, x1, x2, point_ndim=1)


def _time_like(time: Tensor, r: Tensor, diag: bool) -> Tensor:
    """Broadcast a ``(*W, 1)`` parameter against ``r`` (``(*b, n, m)``, or ``(*b, n)``)."""
    return time if diag else time.unsqueeze(-1)
