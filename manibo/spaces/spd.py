r"""Symmetric positive-definite matrices with the affine-invariant metric, and an eigenvalue box.

Points are :math:`n \times n` SPD matrices flattened row-major, ``(*batch, n * n)``. The metric
is :math:`\langle U, V\rangle_X = \operatorname{tr}(X^{-1} U X^{-1} V)`, the distance
:math:`\|\log(X^{-1/2} Y X^{-1/2})\|_F`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch
from scipy import optimize, special
from torch import Tensor
from torch.autograd.function import once_differentiable

from manibo._validation import default_tolerance
from manibo.exceptions import ConfigurationError, InputDataError, ManiboWarning
from manibo.spaces.base import DISTANCE_ACCURACY, NoncompactSpace, content_digest, safe_sqrt

_PROPOSALS_PER_ROUND = 4096
#: proposals of one call of ``random`` (``sampling="volume"``, about 10 s of CPU) beyond which it
#: warns, once per space, that the rejection sampler is slow there
_SLOW_PROPOSALS = 20_000_000
FLOAT32_CONDITION = 1e4
r"""Largest condition number (largest over smallest eigenvalue) at which float32 entries fix
distances to about :data:`DISTANCE_ACCURACY`. Rounding an entry perturbs the matrix by about
:math:`\epsilon\lambda_{\max}`, which moves its smallest eigenvalue by a relative
:math:`\epsilon\kappa`, so no formula recovers its distances (:meth:`distance` already computes
in float64). Measured against 50-digit mpmath distances of near pairs (``Y = X^{1/2} \exp(sW)
X^{1/2}``, :math:`s` from 1e-3 to 1, constructed exactly, then rounded; n = 2 and 3, 600 pairs
each up to 3e4, 150 beyond): the worst error of float32 matrices is 5.0e-4 at condition number
1e4, 1.2e-3 at 2e4, 4.7e-3 at 1e5, 0.06 at 1e6, 0.6 at 1e7, and beyond 1e8 their Cholesky
factorisation fails; float64 matrices err by 1.5e-8 at 1e8 and 7e-5 at 1e12."""


RESOLVED_BOUNDS_RATIO = 1 / (16 * torch.finfo(torch.float64).eps)
"""Bound on ``upper / lower`` of the eigenvalue bounds (about 2.8e14): float64 computes an
eigenvalue to within a few eps of the largest, so below this ratio a matrix of the domain has
positive computed eigenvalues, and one with an eigenvalue of 0 or below is told from it."""


def resolved_condition(dtype: torch.dtype) -> float:
    """The largest condition number of matrices of ``dtype`` whose distances are fixed to about
    :data:`DISTANCE_ACCURACY`: unbounded for float64, :data:`FLOAT32_CONDITION` for float32, and
    for coarser dtypes the condition number where their rounding error ``eps * kappa`` equals
    float32's at :data:`FLOAT32_CONDITION`."""
    eps = torch.finfo(dtype).eps
    if eps <= torch.finfo(torch.float64).eps:
        return math.inf
    return FLOAT32_CONDITION * torch.finfo(torch.float32).eps / eps


def _matrices(x: Tensor, n: int) -> Tensor:
    return x.reshape(*x.shape[:-1], n, n)


def _flat(m: Tensor) -> Tensor:
    return m.reshape(*m.shape[:-2], m.shape[-2] * m.shape[-1])


def _sym(m: Tensor) -> Tensor:
    return 0.5 * (m + m.transpose(-1, -2))


class _SymmetricMatrixFunction(torch.autograd.Function):
    r""":math:`F(M) = V f(\Lambda) V^\top` for symmetric :math:`M = V \Lambda V^\top`, with the
    Daleckii–Krein derivative :math:`dF = V (D \circ V^\top dM\, V) V^\top`, where
    :math:`D_{ij} = (f(\lambda_i) - f(\lambda_j)) / (\lambda_i - \lambda_j)`, and
    :math:`D_{ij} = f'((\lambda_i + \lambda_j)/2)` where the two eigenvalues are closer than
    :math:`\sqrt{\epsilon}\,\max|\lambda|` (:math:`\epsilon` the dtype's machine epsilon: there
    the divided difference would divide rounding errors by the gap). Autograd through ``eigh``
    divides by :math:`\lambda_i - \lambda_j` instead and gives NaN at repeated eigenvalues (the
    identity, or a matrix whose eigenvalues were clamped to one bound). ``M`` must be symmetric
    (callers apply ``_sym``); first derivatives only (a second backward raises). Given a
    ``factor`` :math:`F` with :math:`M = F F^\top`, the eigenpairs are read off its SVD
    :math:`F = U \Sigma W^\top` (:math:`\Lambda = \Sigma^2`, :math:`V = U`), whose smallest
    singular values keep relative accuracy where those of :math:`M` would be rounded to zero or
    below; gradients flow through ``M`` only."""

    @staticmethod
    def forward(ctx, m: Tensor, fn, derivative, factor: Tensor | None = None) -> Tensor:
        if factor is None:
            w, v = torch.linalg.eigh(m)
        else:
            v, sigma, _ = torch.linalg.svd(factor)
            w = sigma.square()
        fw = fn(w)
        ctx.save_for_backward(w, v, fw)
        ctx.derivative = derivative
        return (v * fw.unsqueeze(-2)) @ v.transpose(-1, -2)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        w, v, fw = ctx.saved_tensors
        gap = w.unsqueeze(-1) - w.unsqueeze(-2)
        scale = w.abs().amax(-1, keepdim=True).unsqueeze(-1).clamp_min(torch.finfo(w.dtype).tiny)
        close = gap.abs() <= math.sqrt(torch.finfo(w.dtype).eps) * scale
        mid = ctx.derivative(0.5 * (w.unsqueeze(-1) + w.unsqueeze(-2)))
        ratio = (fw.unsqueeze(-1) - fw.unsqueeze(-2)) / torch.where(close, 1.0, gap)
        divided = torch.where(close, mid, ratio)
        inner = v.transpose(-1, -2) @ _sym(grad) @ v
        return v @ (divided * inner) @ v.transpose(-1, -2), None, None, None


def _eig_apply(m: Tensor, fn, derivative, factor: Tensor | None = None) -> Tensor:
    """``V fn(w) V^T`` for symmetric ``m = V diag(w) V^T``, differentiable at repeated eigenvalues
    (``derivative`` is ``fn``'s derivative, elementwise); ``factor``, when given, is an ``F`` with
    ``m = F Fᵀ`` whose SVD gives the eigenpairs more accurately."""
    return _SymmetricMatrixFunction.apply(m, fn, derivative, factor)


def _inside(w: Tensor, lo: float, hi: float) -> Tensor:
    """1 where ``lo < w < hi``, else 0 (the derivative of ``w.clamp(lo, hi)``)."""
    return ((w > lo) & (w < hi)).to(w.dtype)


def _gaussians(uniforms: Tensor) -> Tensor:
    """Standard normal quantiles of uniforms (clamped away from 0 and 1)."""
    return math.sqrt(2) * torch.erfinv(2 * uniforms.clamp(1e-12, 1 - 1e-12) - 1)


class SymmetricPositiveDefinite(NoncompactSpace):
    r"""The manifold :math:`\mathrm{SPD}(n) = GL(n)/O(n)` with the affine-invariant metric.

    Points are SPD matrices flattened row-major, ``point_shape = (n * n,)``; ``dim`` is
    :math:`n(n+1)/2`. The BO domain is the set of matrices whose eigenvalues lie in
    ``eigenvalue_bounds`` (default :math:`[10^{-3}, 5]`, the domain of the :math:`S^2_{++}`
    benchmarks of Jaquier, Borovitskiy, Smolensky, Terenin, Asfour and Rozo 2021). ``random``
    draws the initial designs and the acquisition optimiser's raw samples; by default
    (``sampling="eigenvalues"``) it draws each eigenvalue uniformly from the box, with Haar
    eigenvectors (for SPD(2) and the default box, 4% of the points have an eigenvalue below 0.1,
    the median smallest eigenvalue is 1.46), the design of Jaquier et al. (2021);
    ``"log-eigenvalues"`` draws their logarithms uniformly instead, for bounds spanning orders of
    magnitude (stiffnesses from 10 to 10^4: a quarter of the eigenvalues below 56, against 0.5%
    for ``"eigenvalues"``); ``"volume"`` is uniform on the domain for the Riemannian volume,
    :math:`\prod_{i<j}\sinh(|\mu_i - \mu_j|/2)\,d\mu\,dQ` for
    :math:`X = Q\operatorname{diag}(e^{\mu})Q^\top`, which puts most points near the singular
    edge of the box (95% have an eigenvalue below 0.1, median 0.0034), so that a Bayesian
    optimisation's initial design and raw samples crowd it (minimising
    :math:`-\operatorname{tr} X` on SPD(2), budget 12, found -5.0 with it against -10.0).
    ``project`` symmetrises and clamps the eigenvalues into the box; ``retract`` is the
    exponential map :math:`X^{1/2}\exp(X^{-1/2} V X^{-1/2}) X^{1/2}` followed by ``project``; the
    chart is the log-Euclidean Mandel vector of :math:`\log X`.

    Spectrum (Terras 1988; Helgason 1984): with :math:`X = N\operatorname{diag}(e^{H})N^\top`,
    :math:`N` unit lower triangular, the horocyclic projection is :math:`H(X)` (twice the log of
    the Cholesky diagonal), :math:`\rho_i = (2i - n - 1)/4`, the plane waves
    :math:`e^{(i\lambda + \rho)\cdot H(k X k^\top)}` have eigenvalue
    :math:`-(|\lambda|^2 + |\rho|^2)` and the Plancherel density is
    :math:`|c(\lambda)|^{-2} \propto \prod_{i<j} |\lambda_i - \lambda_j|
    \tanh(\pi|\lambda_i - \lambda_j|)` (Gindikin–Karpelevich, all root multiplicities 1).

    Precision: float32 entries fix distances to about 1e-3 only for matrices of condition number
    (largest over smallest eigenvalue) up to :data:`FLOAT32_CONDITION` (1e4): rounding an entry
    moves the smallest eigenvalue by a relative :math:`\epsilon\kappa` (at 1e6 the distances of
    near float32 matrices are off by up to 0.06; beyond 1e8 rounding can make them indefinite). So
    ``check`` (and with it every kernel, model and optimiser) refuses float32 matrices beyond
    it, and ``random(dtype=torch.float32)`` refuses bounds whose ratio exceeds it; use float64
    there (``x.double()``, ``model.double()``). The default bounds (ratio 5000) are resolved.

    Args:
        n: matrix size, ``>= 1``.
        eigenvalue_bounds: ``(lower, upper)`` with ``0 < lower < upper`` and ``upper / lower``
            below :data:`RESOLVED_BOUNDS_RATIO` (about 2.8e14).
        sampling: the distribution of :meth:`random`: ``"eigenvalues"`` (eigenvalues
            independently uniform on the bounds), ``"log-eigenvalues"`` (their logarithms
            uniform) or ``"volume"`` (uniform for the Riemannian volume).
    """

    SAMPLINGS = ("eigenvalues", "log-eigenvalues", "volume")

    def __init__(
        self,
        n: int,
        eigenvalue_bounds: tuple[float, float] = (1e-3, 5.0),
        sampling: str = "eigenvalues",
    ) -> None:
        if isinstance(n, bool) or int(n) != n or n < 1:
            raise ConfigurationError(f"`n` must be an integer >= 1, got {n!r}.")
        lower, upper = (float(b) for b in eigenvalue_bounds)
        if not (0 < lower < upper < math.inf):
            raise ConfigurationError(
                f"`eigenvalue_bounds` must be (lower, upper) with 0 < lower < upper, got "
                f"{eigenvalue_bounds!r}."
            )
        if upper / lower >= RESOLVED_BOUNDS_RATIO:
            raise ConfigurationError(
                f"`eigenvalue_bounds` {eigenvalue_bounds!r} have a ratio upper / lower of "
                f"{upper / lower:.3g}; float64 resolves eigenvalues only to about 16 eps = "
                f"{1 / RESOLVED_BOUNDS_RATIO:.2g} of the largest, so a matrix at the lower bound "
                f"could not be told from a singular or indefinite one. Use bounds with a ratio "
                f"below {RESOLVED_BOUNDS_RATIO:.3g}."
            )
        if sampling not in self.SAMPLINGS:
            raise ConfigurationError(
                f"`sampling` must be one of {self.SAMPLINGS}, got {sampling!r}: 'eigenvalues' "
                "for eigenvalues uniform on `eigenvalue_bounds`, 'log-eigenvalues' for their "
                "logarithms uniform, 'volume' for uniform points of the Riemannian volume."
            )
        self.n = int(n)
        self.sampling = sampling
        self.bounds = (lower, upper)
        self.dim = self.n * (self.n + 1) // 2
        self.point_shape = (self.n * self.n,)
        self.matrix_shape = (self.n, self.n)
        self.rank = self.n
        self.spectral_dim = self.dim
        self.uniform_dims = (1 + self.dim, self.n * self.n)
        self._max_log_volume: float | None = None
        self._acceptance: float | None = None
        self._warned_slow = False

    def __repr__(self) -> str:
        return (
            f"SymmetricPositiveDefinite({self.n}, eigenvalue_bounds={self.bounds}, "
            f"sampling={self.sampling!r})"
        )

    def fingerprint(self) -> str:
        """The hash of :meth:`~manibo.spaces.base.Space.fingerprint`, except that with
        ``sampling="volume"`` it is the hash of the repr without the sampling: the repr of the
        default space until 2026-11-27, when the default was ``"volume"``, so journals of those
        runs resume with ``SymmetricPositiveDefinite(n, ..., sampling="volume")``."""
        if self.sampling != "volume":
            return super().fingerprint()
        cls = type(self)
        old_repr = f"SymmetricPositiveDefinite({self.n}, eigenvalue_bounds={self.bounds})"
        return content_digest(cls.__module__, cls.__qualname__, old_repr)

    # geometry -------------------------------------------------------------------------------
    def _log_volume_density(self, mu: Tensor) -> Tensor:
        r""":math:`\sum_{i<j}\log\sinh(|\mu_i - \mu_j|/2)` for log-eigenvalues ``(..., n)``."""
        i, j = torch.triu_indices(self.n, self.n, 1)
        gaps = (mu[..., i] - mu[..., j]).abs()
        return torch.log(torch.sinh(0.5 * gaps).clamp_min(1e-300)).sum(-1)

    def _acceptance_rate(self) -> float:
        """The rejection sampler's acceptance rate, estimated once from 16 rounds of seeded uniform
        proposals as the mean acceptance probability (smooth even when few would be accepted)."""
        if self._acceptance is None:
            lo, hi = (math.log(b) for b in self.bounds)
            generator = torch.Generator().manual_seed(0)
            mu = lo + (hi - lo) * torch.rand(
                16 * _PROPOSALS_PER_ROUND, self.n, generator=generator, dtype=torch.float64
            )
            log_ratio = self._log_volume_density(mu) - self._log_volume_bound()
            self._acceptance = max(float(log_ratio.exp().mean()), 1e-300)
        return self._acceptance

    def _log_volume_bound(self) -> float:
        r"""The maximum of the log volume density over the box (plus 0.1%).

        For sorted log-eigenvalues the density is a concave function of the gaps between
        neighbours (:math:`\log\sinh` is concave), maximal when the gaps fill the whole width,
        so a local maximiser over the simplex of gaps is the global one.
        """
        if self._max_log_volume is None:
            width = math.log(self.bounds[1] / self.bounds[0])

            def negative(theta: np.ndarray) -> float:
                gaps = width * np.exp(theta - theta.max()) / np.exp(theta - theta.max()).sum()
                mu = torch.from_numpy(np.concatenate([[0.0], np.cumsum(gaps)]))
                return -float(self._log_volume_density(mu))

            best = optimize.minimize(negative, np.zeros(self.n - 1), method="Nelder-Mead")
            best = -best.fun if self.n > 1 else 0.0
            self._max_log_volume = best + math.log(1.001)
        return self._max_log_volume

    def random(self, n, generator=None, dtype=torch.float64, device=None) -> Tensor:
        """Random points of the domain, shape ``(n, n * n)``: Haar eigenvectors, and eigenvalues
        independently uniform on the bounds (``sampling="eigenvalues"``), their logarithms
        uniform (``"log-eigenvalues"``), or log-eigenvalues by rejection sampling of the volume
        density (``"volume"``).

        Refuses a ``dtype`` that does not resolve the condition numbers of the domain (float32
        where the bounds' ratio exceeds 1e4, see :data:`FLOAT32_CONDITION`)."""
        resolved = resolved_condition(dtype)
        if self.bounds[1] / self.bounds[0] > resolved:
            raise ConfigurationError(
                f"{self!r} cannot draw {dtype} points: {dtype} entries fix distances to about "
                f"{DISTANCE_ACCURACY:g} only for matrices of condition number up to "
                f"{resolved:.3g}, and this domain reaches {self.bounds[1] / self.bounds[0]:.3g}. "
                "Draw float64 points (`dtype=torch.float64`), or choose eigenvalue_bounds whose "
                f"ratio is at most {resolved:.3g}."
            )
        if self.sampling != "volume":
            logarithmic = self.sampling == "log-eigenvalues"
            lo, hi = (math.log(b) if logarithmic else b for b in self.bounds)
            eigenvalues = lo + (hi - lo) * torch.rand(
                n, self.n, generator=generator, dtype=torch.float64, device=device
            )
            if logarithmic:
                eigenvalues = eigenvalues.exp().clamp(*self.bounds)
            return self._with_haar_eigenvectors(eigenvalues, generator).to(dtype)
        lo, hi = (math.log(b) for b in self.bounds)
        bound = self._log_volume_bound()
        if self.n > 1 and not self._warned_slow and n / self._acceptance_rate() > _SLOW_PROPOSALS:
            self._warned_slow = True
            rate = self._acceptance_rate()
            warnings.warn(
                f"volume-uniform sampling of {self!r} accepts about {rate:.2g} of its proposals: "
                f"drawing {n} points takes about {n / rate:.2g} proposals (10 s per "
                f"{_SLOW_PROPOSALS:.0e}), "
                "and the loop draws its raw samples this way at every proposal. The volume crowds "
                "the corners of wide eigenvalue bounds; SymmetricPositiveDefinite("
                f"{self.n}, eigenvalue_bounds=..., sampling='eigenvalues') or narrower bounds "
                "sample at once.",
                ManiboWarning,
                stacklevel=2,
            )
        accepted, count = [], 0
        while count < n:
            mu = lo + (hi - lo) * torch.rand(
                _PROPOSALS_PER_ROUND,
                self.n,
                generator=generator,
                dtype=torch.float64,
                device=device,
            )
            u = torch.rand(
                _PROPOSALS_PER_ROUND, generator=generator, dtype=torch.float64, device=device
            )
            log_density = self._log_volume_density(mu) if self.n > 1 else torch.zeros_like(u)
            if (log_density > bound).any():
                raise ArithmeticError("internal error: the volume bound of the domain is too low")
            keep = mu[torch.log(u) < log_density - bound]
            accepted.append(keep)
            count += keep.shape[0]
        mu = torch.cat(accepted)[:n]
        return self._with_haar_eigenvectors(torch.exp(mu), generator).to(dtype)

    def _with_haar_eigenvectors(self, eigenvalues: Tensor, generator) -> Tensor:
        """``Q diag(eigenvalues) Qᵀ`` with Haar-random ``Q``: ``(m, n)`` → ``(m, n * n)``."""
        z = torch.randn(
            eigenvalues.shape[0],
            self.n,
            self.n,
            generator=generator,
            dtype=eigenvalues.dtype,
            device=eigenvalues.device,
        )
        q = self._orthogonal(z)
        return _flat(_sym((q * eigenvalues.unsqueeze(-2)) @ q.transpose(-1, -2)))

    @staticmethod
    def _orthogonal(z: Tensor) -> Tensor:
        """Haar-distributed orthogonal matrices from Gaussian matrices ``(..., n, n)``."""
        q, r = torch.linalg.qr(z)
        return q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)

    def _eigenvalues_of_symmetric(self, x: Tensor, name: str) -> Tensor:
        """The eigenvalues ``(*batch, n)`` of the matrices ``x`` ``(*batch, n * n)``, after
        refusing matrices that are not symmetric (to a relative :func:`default_tolerance`)."""
        m = _matrices(x.detach(), self.n)
        tol = default_tolerance(x.dtype)
        scale = m.abs().amax((-1, -2)).clamp_min(1e-300)
        asym = ((m - m.transpose(-1, -2)).abs().amax((-1, -2)) / scale).max()
        if asym > tol:
            raise self._membership_error(
                name,
                f"matrices must be symmetric (relative tolerance {tol:g}); the worst is off by "
                f"{float(asym):.3g}",
                f"Symmetrise them, or map them into the domain with `space.project({name})`.",
            )
        return torch.linalg.eigvalsh(_sym(m))

    def _shape_advice(self, x: Tensor, name: str) -> str | None:
        triangle = self.n * (self.n + 1) // 2
        if x.shape[-1:] != (triangle,):
            return None
        return (
            f"A last dimension of {triangle} looks like the upper triangle (or a Voigt or Mandel "
            f"vector) of {self.n}x{self.n} symmetric matrices; points of {self!r} are the whole "
            f"matrices flattened row-major ({self.n * self.n} numbers): from symmetric matrices "
            f"m, `m.reshape(*m.shape[:-2], {self.n * self.n})`."
        )

    def _check_on_manifold(self, x: Tensor, name: str) -> None:
        """Symmetric and positive definite (the eigenvalue bounds are the domain's, not the
        manifold's: distances and logs between any SPD matrices are defined)."""
        if x.numel() == 0:
            return
        self._check_positive_definite(self._eigenvalues_of_symmetric(x, name), name)

    def _check_positive_definite(self, eigenvalues: Tensor, name: str) -> None:
        """Refuse matrices with an eigenvalue of 0 or below (``eigenvalues``: ``(*batch, n)``).

        A matrix singular to rounding (its smallest eigenvalue within the square root of the
        dtype's precision of 0, relative to its largest: a sample covariance of fewer samples
        than its size) is told how to lift it; a clearly negative eigenvalue is told to be
        fixed where it is built, not projected: clamping it to the lower bound gives another
        matrix, and the value measured at this one would be filed under it."""
        smallest = eigenvalues.amin(-1)
        if not bool((smallest <= 0).any()):
            return
        lo, hi = self.bounds
        worst = int(smallest.flatten().argmin())
        largest = eigenvalues.amax(-1).flatten()[worst]
        low = float(smallest.flatten()[worst])
        what = (
            f"matrices must be positive definite; {int((smallest <= 0).sum())} have an "
            f"eigenvalue of 0 or below (the smallest is {low:.4g}, in a matrix whose largest is "
            f"{float(largest):.4g}; the domain is [{lo:g}, {hi:g}])"
        )
        if -low <= math.sqrt(torch.finfo(eigenvalues.dtype).eps) * float(largest.abs()):
            advice = (
                "It is singular to rounding (rank-deficient, as a sample covariance of fewer "
                "samples than its size is): add a multiple of the identity at least the lower "
                f"bound, {name} + c * I, or `space.project({name})`, which raises such "
                "eigenvalues to the lower bound."
            )
        else:
            advice = (
                "No symmetric positive definite matrix is near such a matrix: look for a sign "
                "or assembly error where it is built. `space.project` would replace that "
                "eigenvalue by the domain's lower bound, which gives a different matrix."
            )
        raise self._membership_error(name, what, advice)

    def _check_membership(self, x: Tensor, name: str) -> None:
        if x.numel() == 0:
            return
        m = _matrices(x.detach(), self.n)
        tol = default_tolerance(x.dtype)
        eig = self._eigenvalues_of_symmetric(x, name)
        lo, hi = self.bounds
        low, high = float(eig.min()), float(eig.max())
        # an eigenvalue's rounding error is relative to its own matrix's norm (its largest
        # eigenvalue), not to the upper bound; and where the dtype resolves the bounds (their
        # ratio well above its precision), a matrix must be positive definite as computed
        slack = tol * eig.abs().amax(-1)
        # the dtype resolves the bounds: always in float64 (RESOLVED_BOUNDS_RATIO)
        resolved = lo / hi > 16 * torch.finfo(x.dtype).eps
        nonpositive = eig.amin(-1) <= (0 if resolved else -slack)
        below = eig.amin(-1) < lo - slack
        if bool((below | nonpositive).any()) or high > hi * (1 + tol):  # one read of the device
            if bool(nonpositive.any()):
                self._check_positive_definite(eig, name)
            raise self._membership_error(
                name,
                f"eigenvalues must lie in [{lo:g}, {hi:g}] (the domain); they range over "
                f"[{low:.4g}, {high:.4g}]",
                f"Clamp them with `space.project({name})`, or build "
                f"SymmetricPositiveDefinite({self.n}, eigenvalue_bounds=...) with wider bounds.",
            )
        self._check_resolved(m, name)

    def _check_resolved(self, m: Tensor, name: str) -> None:
        """Refuse matrices ``(*batch, n, n)`` whose dtype does not resolve their condition number
        (see :data:`FLOAT32_CONDITION`); the eigenvalues are taken in float64."""
        resolved = resolved_condition(m.dtype)
        lo, hi = self.bounds
        if hi / lo <= resolved:
            return
        eig = torch.linalg.eigvalsh(_sym(m.to(torch.float64)))
        low, high = eig.amin(-1), eig.amax(-1)
        condition = torch.where(low > 0, high / low.clamp_min(1e-300), math.inf)
        worst = float(condition.max())
        if worst > resolved * (1 + default_tolerance(m.dtype)):
            worst = (
                f"condition number {worst:.3g}"
                if math.isfinite(worst)
                else "an eigenvalue of 0 or below (in float64)"
            )
            raise InputDataError(
                f"`{name}` is {m.dtype}, whose entries fix distances to about "
                f"{DISTANCE_ACCURACY:g} only for matrices of condition number (largest over "
                f"smallest eigenvalue) up to {resolved:.3g} (rounding an entry moves the smallest "
                f"eigenvalue by a relative eps * condition, so distances and kernel values are "
                f"wrong beyond); its worst matrix has {worst}. Use float64 (`{name}.double()`, and "
                f"`model.double()` for a model), or eigenvalue_bounds whose ratio is at most "
                f"{resolved:.3g}."
            )

    def project(self, x: Tensor) -> Tensor:
        """Symmetrise and clamp the eigenvalues into the box; shapes ``(*batch, n * n)``."""
        lo, hi = self.bounds
        clamped = _eig_apply(
            _sym(_matrices(x, self.n)), lambda w: w.clamp(lo, hi), lambda w: _inside(w, lo, hi)
        )
        return _flat(_sym(clamped))  # V f(w) Vᵀ is symmetric only to rounding; users test S == Sᵀ

    def to_tangent(self, x: Tensor, v: Tensor) -> Tensor:
        """The symmetric part of ``v`` (the tangent space is all symmetric matrices)."""
        return _flat(_sym(_matrices(v, self.n)))

    def _sqrt_and_inverse(self, x: Tensor) -> tuple[Tensor, Tensor]:
        w, v = torch.linalg.eigh(_sym(_matrices(x, self.n)))
        root = w.clamp_min(1e-300).sqrt().unsqueeze(-2)
        vt = v.transpose(-1, -2)
        return (v * root) @ vt, (v / root) @ vt

    def exp(self, x: Tensor, v: Tensor) -> Tensor:
        r"""Exponential map :math:`X^{1/2}\exp(X^{-1/2} V X^{-1/2}) X^{1/2}`.

        Shapes ``(*batch, n * n)``.
        """
        return self._exp(x, v, math.inf)

    def _exp(self, x: Tensor, v: Tensor, cap: float) -> Tensor:
        root, inv_root = self._sqrt_and_inverse(x)
        inner = _sym(inv_root @ _sym(_matrices(v, self.n)) @ inv_root)
        grown = _eig_apply(
            inner,
            lambda w: torch.exp(w.clamp(-cap, cap)),
            lambda w: torch.exp(w.clamp(-cap, cap)) * _inside(w, -cap, cap),
        )
        return _flat(_sym(root @ grown @ root))

    def _relative_factor(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        r"""The Cholesky factor :math:`L_X` of :math:`X` and :math:`F = L_X^{-1} L_Y`, whose
        singular values are the square roots of the generalised eigenvalues of :math:`(Y, X)`:
        broadcastable ``(*batch, n * n)`` → two ``(*batch, n, n)``. The SVD of :math:`F` resolves
        them to about :math:`\epsilon\sigma_{\max}` rather than :math:`\epsilon\sigma_{\max}^2`,
        which matters for wide eigenvalue bounds (``(1e-6, 1e3)`` reaches ratios of :math:`10^9`).
        """
        chol_x = torch.linalg.cholesky(_sym(_matrices(x, self.n)))
        chol_y = torch.linalg.cholesky(_sym(_matrices(y, self.n)))
        chol_x, chol_y = torch.broadcast_tensors(chol_x, chol_y)
        return chol_x, torch.linalg.solve_triangular(chol_x, chol_y, upper=False)

    def log(self, x: Tensor, y: Tensor) -> Tensor:
        r"""Logarithm map :math:`X^{1/2}\log(X^{-1/2} Y X^{-1/2}) X^{1/2}`; ``(*batch, n * n)``.

        Computed as :math:`L_X \log(F F^\top) L_X^\top` with :math:`F = L_X^{-1} L_Y` (the same
        map for any square root of :math:`X`), the logarithm from the SVD of :math:`F`.
        """
        chol, factor = self._relative_factor(x, y)
        logm = _eig_apply(
            _sym(factor @ factor.transpose(-1, -2)), torch.log, torch.reciprocal, factor
        )
        return _flat(_sym(chol @ logm @ chol.transpose(-1, -2)))

    def retract(self, x: Tensor, v: Tensor) -> Tensor:
        """The exponential map, then :meth:`project` (clamps the eigenvalues into the box).

        Eigenvalues of :math:`X^{-1/2} V X^{-1/2}` beyond 50 in magnitude are clamped before
        exponentiating, so that long steps stay finite (they end on the boundary of the box).
        """
        return self.project(self._exp(x, v, 50.0))

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        r""":math:`\|\log(X^{-1/2} Y X^{-1/2})\|_F = 2\|\log\sigma(L_X^{-1} L_Y)\|`, from the
        singular values of the relative Cholesky factor (see :meth:`log`).

        Shapes: broadcastable ``(*batch, n * n)`` → ``(*batch)``. Computed in float64 (the
        domain's matrices can be ill-conditioned) and returned in the inputs' dtype.
        """
        _, factor = self._relative_factor(x.to(torch.float64), y.to(torch.float64))
        sigma = torch.linalg.svdvals(factor)
        return safe_sqrt(4 * torch.log(sigma.clamp_min(1e-300)).square().sum(-1)).to(x.dtype)

    def chart(self, x: Tensor) -> Tensor:
        r"""Mandel vector of :math:`\log X` (diagonal, then :math:`\sqrt2\times` the upper
        off-diagonal entries), shape ``(*batch, n(n+1)/2)``."""
        logm = _eig_apply(_sym(_matrices(x, self.n)), torch.log, torch.reciprocal)
        i, j = torch.triu_indices(self.n, self.n, 1)
        diag = torch.diagonal(logm, dim1=-2, dim2=-1)
        return torch.cat([diag, math.sqrt(2) * logm[..., i, j]], -1)

    def ambient_bounds(self) -> Tensor:
        """Entry bounds: ``[lower, upper]`` on the diagonal, ``[-upper, upper]`` off it."""
        lo, hi = self.bounds
        lower = torch.full((self.n, self.n), -hi, dtype=torch.float64)
        lower.diagonal().fill_(lo)
        upper = torch.full((self.n, self.n), hi, dtype=torch.float64)
        return torch.stack([lower.reshape(-1), upper.reshape(-1)])

    # spectrum -------------------------------------------------------------------------------
    @property
    def rho(self) -> Tensor:
        r""":math:`\rho_i = (2i - n - 1)/4`, ``(n,)``; the spectrum starts at
        :math:`|\rho|^2 = n(n^2 - 1)/48`."""
        i = torch.arange(1, self.n + 1, dtype=torch.float64)
        return (2 * i - self.n - 1) / 4

    def _gaps(self, lam: Tensor) -> Tensor:
        i, j = torch.triu_indices(self.n, self.n, 1)
        return (lam[..., i] - lam[..., j]).abs()

    def log_plancherel(self, lam: Tensor) -> Tensor:
        gaps = self._gaps(lam)
        return (torch.log(gaps) + torch.log(torch.tanh(math.pi * gaps))).sum(-1)

    def spectral_base(self, uniforms: Tensor, nu: float) -> Tensor:
        r"""Radii of the proposal :math:`\propto r^{d-1}(1 + r^2)^{-\nu - d/2}` (Matérn) or
        :math:`r^{d-1}e^{-r^2/2}` (heat) and directions with density
        :math:`\propto\prod_{i<j}|\omega_i - \omega_j|` on :math:`S^{n-1}` (the normalised
        eigenvalues of a GOE matrix); ``(L, 1 + n)``, in float64 on the CPU, where SciPy inverts
        the radius's distribution (:meth:`spectral_sample` moves it to the kernel's device)."""
        u = uniforms.detach().to("cpu", torch.float64)
        half_d = self.dim / 2
        if math.isinf(nu):
            radius = (2 * special.gammaincinv(half_d, u[:, 0].numpy())) ** 0.5
        else:
            b = special.betaincinv(half_d, nu, u[:, 0].numpy())
            radius = (b / (1 - b)) ** 0.5
        z = _gaussians(u[:, 1:])
        goe = torch.zeros(u.shape[0], self.n, self.n, dtype=torch.float64)
        i, j = torch.triu_indices(self.n, self.n, 1)
        goe[:, range(self.n), range(self.n)] = z[:, : self.n]
        goe[:, i, j] = z[:, self.n :] / math.sqrt(2)
        eig = torch.linalg.eigvalsh(goe, UPLO="U")
        direction = eig / eig.norm(dim=-1, keepdim=True)
        return torch.cat([torch.as_tensor(radius).reshape(-1, 1), direction], -1)

    def spectral_sample(self, base, nu, lengthscale, shifted=True):
        r"""Frequencies :math:`\lambda = r\omega` with :math:`r` scaled by the kernel's spectral
        scale, and importance weights :math:`\prod_{i<j}\tanh(\pi r|\omega_i - \omega_j|)`
        (the Plancherel density over its homogeneous envelope, in :math:`(0, 1]`)."""
        base = base.to(lengthscale)
        if math.isinf(nu):
            scale = 1 / lengthscale
        else:
            rho2 = float(self.rho.square().sum())
            scale = torch.sqrt(2 * nu / lengthscale.square() + (0.0 if shifted else rho2))
        radius = scale * base[:, 0]  # (*W, L)
        lam = radius.unsqueeze(-1) * base[:, 1:]
        if self.n == 1:
            return lam, torch.zeros_like(radius)
        gaps = self._gaps(base[:, 1:])  # (L, pairs)
        log_weight = torch.log(torch.tanh(math.pi * radius.unsqueeze(-1) * gaps)).sum(-1)
        return lam, log_weight

    def boundary_points(self, uniforms: Tensor) -> Tensor:
        """Haar-random orthogonal matrices, ``(L, n, n)``."""
        z = _gaussians(uniforms.to(torch.float64)).reshape(-1, self.n, self.n)
        return self._orthogonal(z)

    def horocyclic(self, x: Tensor, boundary: Tensor) -> Tensor:
        r""":math:`H(k^\top X k)`: the log-diagonal of its :math:`LDL^\top` factorisation,
        ``(*batch, p, L, n)``.

        The diagonal is the ratios of the leading principal minors :math:`\Delta_i` of
        :math:`k^\top X k`, :math:`\Delta_n = \det X` whatever :math:`k`. For :math:`n = 2`
        this is :math:`(\log q, \log\det X - \log q)` with :math:`q = k_1^\top X k_1`; for
        :math:`n = 3` :math:`\Delta_2 = q\,(k_2^\top X k_2) - (k_1^\top X k_2)^2` is added
        (forward and backward on 256 points and 1024 phases: 0.04 s CPU against 0.53 s for the
        factorisation); otherwise a batched Cholesky factorisation.
        """
        m = _sym(_matrices(x, self.n))
        k = boundary.to(x)
        if self.n == 1:
            return torch.log(m[..., 0]).unsqueeze(-2).expand(*m.shape[:-2], k.shape[0], 1)
        if self.n == 2:
            a, b = k[:, 0, 0], k[:, 1, 0]  # first columns, (L,)
            q = (
                m[..., 0, 0, None] * (a * a)
                + m[..., 0, 1, None] * (2 * a * b)
                + m[..., 1, 1, None] * (b * b)
            )  # (*batch, p, L)
            det = m[..., 0, 0] * m[..., 1, 1] - m[..., 0, 1].square()
            log_q = torch.log(q)
            return torch.stack([log_q, torch.log(det).unsqueeze(-1) - log_q], -1)
        if self.n == 3:
            first, second = k[..., 0], k[..., 1]  # (L, 3) each
            m_first = torch.einsum("...ab,lb->...la", m, first)  # (*batch, p, L, 3)
            m_second = torch.einsum("...ab,lb->...la", m, second)
            q = (m_first * first).sum(-1)  # Delta_1, (*batch, p, L)
            minor = q * (m_second * second).sum(-1) - (m_first * second).sum(-1).square()
            log_q, log_minor = torch.log(q), torch.log(minor)
            log_det = torch.logdet(m).unsqueeze(-1)
            return torch.stack([log_q, log_minor - log_q, log_det - log_minor], -1)
        y = k.transpose(-1, -2) @ m.unsqueeze(-3) @ k  # (*batch, p, L, n, n)
        chol = torch.linalg.cholesky(_sym(y))
        return 2 * torch.log(torch.diagonal(chol, dim1=-2, dim2=-1))
