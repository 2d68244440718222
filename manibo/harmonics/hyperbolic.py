r"""Harmonic analysis on the hyperbolic space :math:`H^d`: Plancherel density and heat kernels.

Conventions, for :math:`H^d` of curvature :math:`-1` and :math:`\rho = (d-1)/2`:

* The spherical function :math:`\varphi_\lambda(r)`, :math:`\lambda \ge 0`, is the radial
  eigenfunction of :math:`-\Delta` with eigenvalue :math:`\lambda^2 + \rho^2` and
  :math:`\varphi_\lambda(0) = 1`.
* The Plancherel density (the inverse square of Harish-Chandra's :math:`c`-function, up to a
  constant) is taken as :math:`P_1 = 1`, :math:`P_2(\lambda) = \lambda\tanh(\pi\lambda)` and
  :math:`P_{d+2}(\lambda) = (\lambda^2 + \rho_d^2) P_d(\lambda)`; so
  :math:`P_d = \prod_{j=0}^{(d-3)/2} (\lambda^2 + j^2)` for odd :math:`d` and
  :math:`P_d = \lambda\tanh(\pi\lambda)\prod_{j=1}^{d/2-1}(\lambda^2 + (j - \tfrac12)^2)` for even
  :math:`d`.
* The *shifted* heat kernel is :math:`\tilde p_t(r) = \int_0^\infty e^{-t\lambda^2}
  \varphi_\lambda(r) P_d(\lambda)\,d\lambda` (the heat kernel of :math:`-\Delta - \rho^2` up to a
  constant). Any kernel :math:`\int S(\lambda)\varphi_\lambda P_d\,d\lambda` whose :math:`S` is a
  superposition of Gaussians in :math:`\lambda` (Matérn, heat) is a superposition of these.

Closed forms. The shift operator :math:`\varphi^{d+2}_\lambda = -\frac{d}{\lambda^2 + \rho_d^2}
\frac{1}{\sinh r}\partial_r \varphi^d_\lambda` gives :math:`\tilde p^{(d+2)} = d\,\mathcal D
\tilde p^{(d)}` with :math:`\mathcal D = -\frac{1}{\sinh r}\partial_r`, starting from
:math:`\tilde p^{(1)} = \tfrac12\sqrt{\pi/t}\,e^{-r^2/4t}` on the line; so on odd :math:`d = 2m+1`,
:math:`\tilde p = (2m-1)!!\,\tfrac12\sqrt{\pi/t}\,e^{-r^2/4t} \sum_{j\le m} (2t)^{-j} f_{m,j}(r)`
with even analytic :math:`f_{m,j}` (on :math:`H^3`, :math:`\tilde p = \frac{\sqrt\pi}{4} t^{-3/2}
\frac{r}{\sinh r} e^{-r^2/4t}`; Grigor'yan and Noguchi 1998). The :math:`f_{m,j}` are sums of
:math:`r^a \sinh^{-b} r \cosh^e r` built with exact rational coefficients; below :math:`r = 1`
they are evaluated from their Taylor series (exact rationals too), where the closed form cancels.
Even :math:`d = 2m` descends from :math:`d + 1`: :math:`\tilde p^{(d)}(r) = A_d \int_0^\infty
\tilde p^{(d+1)}(\operatorname{arccosh}(\cosh r + y^2))\,dy` with :math:`A_2 = 2\sqrt2/\pi`
(Mehler's formula, McKean 1970) and :math:`A_{d+2} = A_d\,d/(d+1)`; the integral is evaluated with
:math:`s = r + w^2` and :math:`w = e^\zeta` by the trapezoidal rule in :math:`\zeta`, which
converges geometrically for every scale of :math:`t`.

Kernels are tabulated on a fixed grid of distances :math:`r_i = c \sinh(i\,\delta)` (fine near 0,
relative spacing :math:`\delta` further out) with their :math:`r`-derivatives and evaluated by
cubic Hermite interpolation (:func:`interpolate`).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError

GRID_SCALE = 0.0005
"""The :math:`c` of the distance grid :math:`r_i = c\\sinh(i\\delta)`."""
GRID_STEP = 0.005
"""The :math:`\\delta` of the distance grid (relative spacing at large distances)."""
GRID_MAX_DISTANCE = 40.0
"""Largest tabulated distance; larger distances are evaluated there (kernels are below 1e-12)."""
_TAYLOR_RADIUS = 1.0
_UNDERFLOW = 750.0  # exp(-x) == 0 in float64 beyond this x
_TAYLOR_TERMS = 40
_DESCENT_LOG_NODES = (-25.0, 0.1)  # start and step of zeta, w = exp(zeta)


def check_dimension(d: int) -> int:
    """Return ``d`` as an int if it is an integer ``>= 2``, else raise ``ConfigurationError``."""
    if isinstance(d, bool) or int(d) != d or d < 2:
        raise ConfigurationError(f"`dim` must be an integer >= 2 for H^dim, got {d!r}.")
    return int(d)


def rho(d: int) -> float:
    r""":math:`\rho = (d-1)/2`; :math:`\rho^2` is the bottom of the spectrum of :math:`-\Delta`."""
    return (check_dimension(d) - 1) / 2


def log_plancherel(lam: Tensor, d: int) -> Tensor:
    r""":math:`\log P_d(\lambda)`, the Plancherel density in the normalisation of this module.

    Args:
        lam: frequencies :math:`\lambda \ge 0`, any shape.
        d: dimension of :math:`H^d`.

    Returns:
        Same shape as ``lam`` (``-inf`` at :math:`\lambda = 0`).
    """
    d = check_dimension(d)
    lam2 = lam.square()
    if d % 2:
        shifts = [float(j * j) for j in range((d - 1) // 2)]
        return sum(torch.log(lam2 + s) for s in shifts)
    shifts = [(j - 0.5) ** 2 for j in range(1, d // 2)]
    base = torch.log(lam) + torch.log(torch.tanh(math.pi * lam))
    return base + sum((torch.log(lam2 + s) for s in shifts), torch.zeros_like(lam))


def sinhc(z: Tensor) -> Tensor:
    r""":math:`\sinh(z)/z` for ``z >= 0`` (1 at 0), with a finite gradient everywhere."""
    small = z < 1e-4
    safe = torch.where(small, torch.ones_like(z), z)
    return torch.where(small, 1 + z * z / 6, torch.sinh(safe) / safe)


def r_over_sinh(r: Tensor) -> Tensor:
    r""":math:`r / \sinh r` for ``r >= 0`` (1 at 0), with a finite gradient everywhere."""
    return 1 / sinhc(r)


# exact construction of the odd-dimensional families -----------------------------------------
def _apply_d(terms: dict) -> dict:
    r""":math:`\mathcal D = -\partial_r / \sinh r` on sums of :math:`r^a\sinh^{-b}\cosh^e`."""
    out: dict = {}
    for (a, b, e), c in terms.items():
        for key, factor in (((a - 1, b + 1, e), -a), ((a, b + 2, e + 1), b), ((a, b, e - 1), -e)):
            if factor:
                out[key] = out.get(key, 0) + c * factor
    return {k: v for k, v in out.items() if v}


def _add(x: dict, y: dict) -> dict:
    out = dict(x)
    for k, v in y.items():
        out[k] = out.get(k, 0) + v
    return {k: v for k, v in out.items() if v}


def _families(order: int) -> list[list[dict]]:
    r"""Exact :math:`f_{k,j}` for :math:`k \le` ``order``: :math:`Q_{k+1} = \beta s Q_k +
    \mathcal D Q_k` with :math:`s = r/\sinh r`, :math:`Q_k = \sum_j \beta^j f_{k,j}`."""
    families = [[{(0, 0, 0): Fraction(1)}]]
    for _ in range(order):
        prev = families[-1]
        shifted = [{}] + [{(a + 1, b + 1, e): c for (a, b, e), c in t.items()} for t in prev]
        derived = [_apply_d(t) for t in prev] + [{}]
        families.append([_add(s, t) for s, t in zip(shifted, derived, strict=True)])
    return families


def _series_mul(a: list, b: list, n: int) -> list:
    out = [Fraction(0)] * n
    for i, x in enumerate(a[:n]):
        if x:
            for j, y in enumerate(b[: n - i]):
                out[i + j] += x * y
    return out


def _series_pow(a: list, p: int, n: int) -> list:
    out = [Fraction(1)] + [Fraction(0)] * (n - 1)
    for _ in range(p):
        out = _series_mul(out, a, n)
    return out


def _taylor(terms: dict, n: int) -> list[Fraction]:
    r"""Coefficients of :math:`r^{2k}`, :math:`k < n`, of an even analytic sum of monomials."""
    length = n + max(b for (_, b, _) in terms) + 2
    sinhc = [Fraction(1, math.factorial(2 * k + 1)) for k in range(length)]
    inverse = [Fraction(1)] + [Fraction(0)] * (length - 1)  # series of r / sinh r
    for k in range(1, length):
        inverse[k] = -sum(sinhc[j] * inverse[k - j] for j in range(1, k + 1))
    cosh = [Fraction(1, math.factorial(2 * k)) for k in range(length)]
    acc: dict = {}
    for (a, b, e), c in terms.items():
        series = _series_mul(_series_pow(inverse, b, length), _series_pow(cosh, e, length), length)
        for k, v in enumerate(series):
            if v:
                power = a - b + 2 * k
                acc[power] = acc.get(power, 0) + c * v
    if any(v for p, v in acc.items() if p < 0 or p % 2):
        raise ArithmeticError("internal error: a heat-kernel term is not even and analytic")
    return [acc.get(2 * k, Fraction(0)) for k in range(n)]


@functools.cache
def _odd_family(m: int) -> tuple[tuple, tuple]:
    """Float monomials and Taylor coefficients of :math:`f_{m,j}` and :math:`f_{m+1,j}`."""
    families = _families(m + 1)
    out = []
    for order in (m, m + 1):
        functions = []
        for terms in families[order]:
            if not terms:
                functions.append(None)
                continue
            monomials = tuple((float(c), a, b, e) for (a, b, e), c in terms.items())
            taylor = tuple(float(c) for c in _taylor(terms, _TAYLOR_TERMS))
            functions.append((monomials, taylor))
        out.append(tuple(functions))
    return out[0], out[1]


def _eval_function(function, r: Tensor) -> Tensor:
    """An even analytic :math:`f` at distances ``r >= 0`` (float64): Taylor below 1, else closed."""
    if function is None:
        return torch.zeros_like(r)
    monomials, taylor = function
    small = r < _TAYLOR_RADIUS
    r_small = torch.where(small, r, torch.zeros_like(r))
    x = r_small.square()
    series = torch.full_like(r, taylor[-1])
    for c in reversed(taylor[:-1]):
        series = series * x + c
    r_big = torch.where(small, torch.full_like(r, _TAYLOR_RADIUS), r)
    log_sinh = r_big + torch.log1p(-torch.exp(-2 * r_big)) - math.log(2)
    log_cosh = r_big + torch.log1p(torch.exp(-2 * r_big)) - math.log(2)
    closed = torch.zeros_like(r)
    for c, a, b, e in monomials:
        closed = closed + c * r_big**a * torch.exp(e * log_cosh - b * log_sinh)
    return torch.where(small, series, closed)


def _double_factorial(n: int) -> int:
    return math.prod(range(n, 0, -2)) if n > 0 else 1


class HyperbolicHeat:
    r"""The normalised shifted heat kernel :math:`\pi_t(r) = \tilde p_t(r)/\tilde p_t(0)` of
    :math:`H^d` on the distance grid, for any times at once.

    Use :func:`hyperbolic_heat`, which caches one instance per dimension.

    Attributes:
        d: the dimension.
        radii: the distance grid, float64 ``(R,)``.
    """

    def __init__(self, d: int) -> None:
        self.d = check_dimension(d)
        self.m = self.d // 2  # odd d = 2m+1; even d = 2m descends from 2m+1
        count = math.ceil(math.asinh(GRID_MAX_DISTANCE / GRID_SCALE) / GRID_STEP) + 1
        eta = torch.arange(count, dtype=torch.float64) * GRID_STEP
        self.radii = GRID_SCALE * torch.sinh(eta)
        values, slopes = _odd_family(self.m)
        if self.d % 2:
            data = {
                "f": torch.stack([_eval_function(f, self.radii) for f in values], -1),
                "g": torch.stack([_eval_function(f, self.radii) for f in slopes], -1),
            }
        else:
            data = self._descent_nodes(values, slopes)
        data["radii"] = self.radii
        data["f0"] = torch.tensor([f[1][0] if f else 0.0 for f in values], dtype=torch.float64)
        self._data = {torch.device("cpu"): data}

    def _descent_nodes(self, values, slopes) -> dict[str, Tensor]:
        r"""Nodes :math:`s = r + w^2` of the descent integral with the odd family's values there,
        times the Jacobian and the trapezoidal weights in :math:`\zeta = \log w`."""
        start, step = _DESCENT_LOG_NODES
        top = 0.5 * math.log(80.0 / (2 * self.m - 1))
        zeta = torch.arange(start, top + step, step, dtype=torch.float64)
        w = torch.exp(zeta)
        weights = step * w  # dw = w dzeta
        r = self.radii.unsqueeze(-1)
        s = r + w.square()  # (R, M)
        half = 0.5 * w.square()
        sinhc_half = torch.where(half > 0, torch.sinh(half) / half, torch.ones_like(half))
        jacobian = torch.sinh(s) / torch.sqrt(torch.sinh(r + half) * sinhc_half) * weights
        f = torch.stack([_eval_function(f, s) for f in values], -1) * jacobian.unsqueeze(-1)
        g = torch.stack([_eval_function(f, s) for f in slopes], -1) * jacobian.unsqueeze(-1)
        return {"s": s, "w": w, "f": f, "g": g}

    def _on(self, device: torch.device) -> dict[str, Tensor]:
        if device not in self._data:
            self._data[device] = {
                k: v.to(device) for k, v in self._data[torch.device("cpu")].items()
            }
        return self._data[device]

    def _powers(self, t: Tensor) -> tuple[Tensor, Tensor]:
        r""":math:`\beta^j / \max(1, \beta)^m`, ``(*T, m+2)``, and :math:`m\log\max(1,\beta)`."""
        beta = 0.5 / t
        log_scale = torch.log(torch.clamp(beta, min=1.0))
        j = torch.arange(self.m + 2, dtype=t.dtype, device=t.device)
        powers = torch.exp(j * torch.log(beta).unsqueeze(-1) - self.m * log_scale.unsqueeze(-1))
        return powers, self.m * log_scale

    def profile(self, t: Tensor) -> tuple[Tensor, Tensor]:
        r""":math:`\pi_t(r_i)` and :math:`\partial_r \pi_t(r_i)` on the grid.

        Args:
            t: times, float64 of any shape ``(*T)``, on any device (may require grad).

        Returns:
            ``(values, slopes)``, each ``(*T, R)``.
        """
        data = self._on(t.device)
        radii = data["radii"]
        powers, _ = self._powers(t)
        p_val, p_der = powers[..., : self.m + 1], powers[..., : self.m + 2]
        if self.d % 2:
            gauss = torch.exp(-radii.square() / (4 * t.unsqueeze(-1)))  # (*T, R)
            value = gauss * (p_val.unsqueeze(-2) * data["f"]).sum(-1)
            slope = -torch.sinh(radii) * gauss * (p_der.unsqueeze(-2) * data["g"]).sum(-1)
            origin = (p_val * data["f0"]).sum(-1, keepdim=True)
            return value / origin, slope / origin
        flat_t = t.reshape(-1)
        p_val, p_der = p_val.reshape(-1, self.m + 1), p_der.reshape(-1, self.m + 2)
        values, slopes = [], []
        for i in range(flat_t.shape[0]):
            value, slope = self._descent(data, flat_t[i], p_val[i], p_der[i])
            values.append(value)
            slopes.append(slope)
        value = torch.stack(values).reshape(*t.shape, -1)
        slope = -torch.sinh(radii) * torch.stack(slopes).reshape(*t.shape, -1)
        return value / value[..., :1], slope / value[..., :1]

    def _descent(self, data, t: Tensor, p_val: Tensor, p_der: Tensor) -> tuple[Tensor, Tensor]:
        """Unnormalised descent integrals at one time, skipping nodes where the Gaussian is 0."""
        reach = math.sqrt(4 * float(t.detach()) * _UNDERFLOW)
        rows = int((data["radii"] <= reach).sum()) + 1
        cols = int((data["w"] <= math.sqrt(reach)).sum()) + 1
        gauss = torch.exp(-data["s"][:rows, :cols].square() / (4 * t))
        value = (gauss * (data["f"][:rows, :cols] @ p_val)).sum(-1)
        slope = (gauss * (data["g"][:rows, :cols] @ p_der)).sum(-1)
        pad = (0, data["radii"].shape[0] - value.shape[0])
        return torch.nn.functional.pad(value, pad), torch.nn.functional.pad(slope, pad)

    def log_at_origin(self, t: Tensor) -> Tensor:
        r""":math:`\log \tilde p_t(0)`, same shape as ``t``."""
        data = self._on(t.device)
        powers, log_scale = self._powers(t)
        constant = math.log(_double_factorial(2 * self.m - 1) * 0.5 * math.sqrt(math.pi))
        base = constant - 0.5 * torch.log(t) + log_scale
        if self.d % 2:
            return base + torch.log((powers[..., : self.m + 1] * data["f0"]).sum(-1))
        gauss = torch.exp(-data["s"][0].square() / (4 * t.unsqueeze(-1)))  # (*T, M)
        integral = gauss * (data["f"][0] @ powers[..., : self.m + 1].unsqueeze(-1)).squeeze(-1)
        a = 2 * math.sqrt(2) / math.pi * math.prod(k / (k + 1) for k in range(2, self.d, 2))
        return base + math.log(a) + torch.log(integral.sum(-1))


@functools.cache
def hyperbolic_heat(d: int) -> HyperbolicHeat:
    """The (cached) :class:`HyperbolicHeat` of :math:`H^d`."""
    return HyperbolicHeat(d)


def interpolate(values: Tensor, slopes: Tensor, r: Tensor, point_dims: int = 0) -> Tensor:
    r"""Cubic Hermite interpolation of a tabulated radial profile at distances ``r``.

    Args:
        values: the profile on the grid, ``(*W, R)``.
        slopes: its :math:`r`-derivative on the grid, ``(*W, R)``.
        r: distances ``>= 0``, ``(*B, *P)`` with ``point_dims = len(P)`` trailing dimensions that
            are not batch dimensions.
        point_dims: ``len(P)``; ``W`` broadcasts against ``B``.

    Returns:
        Shape ``(*broadcast(W, B), *P)``; differentiable in ``values``, ``slopes`` and ``r``.
        Distances beyond the grid are evaluated at its end.
    """
    count = values.shape[-1]
    r = r.clamp(0.0, GRID_SCALE * math.sinh((count - 1) * GRID_STEP))
    with torch.no_grad():
        index = torch.floor(torch.asinh(r / GRID_SCALE) / GRID_STEP).long().clamp(0, count - 2)
    left = GRID_SCALE * torch.sinh(index.to(r.dtype) * GRID_STEP)
    right = GRID_SCALE * torch.sinh((index + 1).to(r.dtype) * GRID_STEP)
    h = right - left
    s = (r - left) / h
    s2, s3 = s * s, s * s * s
    if values.dim() == 1:
        v0, v1, d0, d1 = values[index], values[index + 1], slopes[index], slopes[index + 1]
    else:
        points = r.shape[r.dim() - point_dims :]
        batch = torch.broadcast_shapes(values.shape[:-1], r.shape[: r.dim() - point_dims])
        flat = index.expand(*batch, *points).reshape(*batch, -1)
        vals, slps = values.expand(*batch, count), slopes.expand(*batch, count)

        def pick(table: Tensor, offset: int) -> Tensor:
            return table.gather(-1, flat + offset).reshape(*batch, *points)

        v0, v1, d0, d1 = pick(vals, 0), pick(vals, 1), pick(slps, 0), pick(slps, 1)
    return (
        (2 * s3 - 3 * s2 + 1) * v0
        + (s3 - 2 * s2 + s) * h * d0
        + (3 * s2 - 2 * s3) * v1
        + (s3 - s2) * h * d1
    )


LOG_TIME_STEP = 0.25
"""Step of the trapezoidal rule in :math:`\\log t` of :func:`heat_table`."""
LOG_TIME_END = 25.0
"""Largest :math:`\\log t` of :func:`heat_table` (superpositions reach lengthscales ~1e4)."""


@functools.lru_cache(maxsize=8)
def heat_table(d: int, log_time_start: float) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    r"""Normalised heat kernels on a grid of times, for superpositions over :math:`\log t`.

    Args:
        d: dimension of :math:`H^d`.
        log_time_start: smallest :math:`\log t` of the grid (a superposition whose weights grow
            like :math:`t^\nu` near 0 needs :math:`\nu \cdot` ``log_time_start`` :math:`\ll -30`).

    Returns:
        ``(log_times (T,), log_origin (T,), values (T, R), slopes (T, R))``, float64: the grid
        :math:`\xi_k` (step :data:`LOG_TIME_STEP`), :math:`\log\tilde p_{t_k}(0)` and the
        normalised heat kernels :math:`\pi_{t_k}` with their :math:`r`-derivatives on the
        distance grid.
    """
    heat = hyperbolic_heat(d)
    count = math.floor((LOG_TIME_END - log_time_start) / LOG_TIME_STEP) + 1
    log_times = log_time_start + LOG_TIME_STEP * torch.arange(count, dtype=torch.float64)
    times = torch.exp(log_times)
    values, slopes = heat.profile(times)
    return log_times, heat.log_at_origin(times), values, slopes


def superpose(log_weights: Tensor, values: Tensor, slopes: Tensor) -> tuple[Tensor, Tensor]:
    r"""The normalised superposition :math:`\sum_k w_k \pi_{t_k}` of tabulated heat kernels.

    The weights are :math:`\operatorname{softmax}` of ``log_weights``. The slope at distance 0 is
    the one-sided three-point estimate, so that kernels with a corner at 0 (Matérn
    :math:`\nu \le 1`, whose heat-kernel components all have slope 0 there) are interpolated
    correctly on the first grid cell; for smooth kernels the estimate is 0 to :math:`O(h^3)`.

    Args:
        log_weights: ``(*W, T)``.
        values: ``(T, R)`` from :func:`heat_table`, in the dtype and on the device wanted.
        slopes: ``(T, R)``.

    Returns:
        ``(values, slopes)``, each ``(*W, R)``, for :func:`interpolate`.
    """
    weights = torch.softmax(log_weights, dim=-1)
    value, slope = weights @ values, weights @ slopes
    r1 = GRID_SCALE * math.sinh(GRID_STEP)
    r2 = GRID_SCALE * math.sinh(2 * GRID_STEP)
    v0, v1, v2 = value[..., 0], value[..., 1], value[..., 2]
    start = -(1 / r1 + 1 / r2) * v0 + r2 / (r1 * (r2 - r1)) * v1 - r1 / (r2 * (r2 - r1)) * v2
    return value, torch.cat([start.unsqueeze(-1), slope[..., 1:]], dim=-1)
