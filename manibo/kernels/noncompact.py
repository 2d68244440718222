r"""Matérn and heat kernels on non-compact symmetric spaces (hyperbolic spaces, SPD matrices).

With the spectrum of the shifted Laplacian :math:`-\Delta - |\rho|^2` (the default, as in
GeometricKernels; ``shifted_laplacian=False`` uses :math:`-\Delta`),

.. math::
    S_\nu(\lambda) = \left(\tfrac{2\nu}{\ell^2} + |\lambda|^2\right)^{-\nu - d/2},\qquad
    S_\infty(\lambda) = e^{-\ell^2|\lambda|^2/2},\qquad
    k(x, y) = \frac{\int S(\lambda)\,\varphi_\lambda(x, y)\,|c(\lambda)|^{-2}d\lambda}
                   {\int S(\lambda)\,|c(\lambda)|^{-2}d\lambda},

so :math:`k(x, x) = 1` (Azangulov, Smolensky, Terenin and Borovitskiy 2024). Two evaluations:

* ``"exact"`` (rank-one spaces, :class:`~manibo.spaces.Hyperbolic`): the heat kernel in closed form
  (:math:`\frac{r}{\sinh r}e^{-r^2/2\ell^2}` on :math:`H^3`) or tabulated from closed forms; a
  Matérn kernel as the superposition :math:`S_\nu(\lambda) \propto \int_0^\infty
  t^{\nu + d/2 - 1} e^{-t (2\nu/\ell^2)} e^{-t\lambda^2} dt` of heat kernels, by the
  trapezoidal rule in :math:`\log t` (accurate to about :math:`10^{-10}`); on :math:`H^3` with
  :math:`\nu \in \{1/2, 3/2, 5/2\}` the closed form :math:`\frac{r}{\sinh r} M_\nu(ar)` with the
  Euclidean Matérn profile :math:`M_\nu` and :math:`a^2 = 2\nu/\ell^2`.
* ``"features"``: :math:`K = \Phi\Phi^\top` with random-phase features
  :math:`\Phi_l(x) = \sqrt{w_l}\, e^{\rho\cdot H(k_l x)}\,[\cos, \sin](\lambda_l\cdot H(k_l x))`
  (positive semi-definite by construction, unbiased). The :math:`L` frequencies and boundary points
  come from one scrambled Sobol sequence drawn at construction (``seed``), mapped through the
  space's reparametrised spectral sampler, so :math:`K` is deterministic and smooth in the
  lengthscale and in the inputs (for L-BFGS), and the quasi-Monte Carlo error is several times
  below plain Monte Carlo's.
"""

from __future__ import annotations

import math
import warnings

import torch
from gpytorch.kernels import Kernel
from torch import Tensor
from torch.quasirandom import SobolEngine

from manibo._stack import user_stacklevel
from manibo.exceptions import ConfigurationError, ManiboWarning, TruncationWarning
from manibo.harmonics.hyperbolic import r_over_sinh
from manibo.kernels._batch import IndexesBatch
from manibo.kernels._inputs import (
    ChecksInputShape,
    check_forward,
    check_parameters_match,
    check_point_pair,
    check_smoothness,
    reject_ard_num_dims,
)
from manibo.spaces.base import NoncompactSpace, pairwise_in_chunks
from manibo.spaces.hyperbolic import Hyperbolic
from manibo.spaces.spd import SymmetricPositiveDefinite

DEFAULT_NUM_PHASES = 4096
"""Random phases ``L`` of the features (``2L`` features) when none are given."""
METHODS = ("auto", "exact", "features")
FEATURE_SD_WARNING = 0.1
"""Standard deviation of the random-phase estimate of :math:`k(x, x) = 1` (its bound at the edge
of the domain) above which a kernel with ``method="features"`` warns at construction."""
FEATURE_DIAGONAL_WARNING = 0.5
"""Distance of a random-phase estimate of :math:`k(x, x) = 1` from 1 at which a kernel with
``method="features"`` warns (once per space) when it computes one."""
SMALLEST_TABULATED_LENGTHSCALE = 1e-4
"""Below this lengthscale a kernel interpolated from the distance table of
:mod:`manibo.harmonics.hyperbolic` (spacing 2.5e-6 near 0) warns: on H^2 its error grows from
about 3e-7 at 3e-4 to 8e-6 at 1e-4 and 5e-3 at 1e-5 (nu = 3/2)."""
_CLOSED_FORMS_H3 = (0.5, 1.5, 2.5)
_FEATURE_ROWS = 1 << 21  # feature-matrix entries computed per block of points
_HOROCYCLIC_CACHE_ENTRIES = 2
_HOROCYCLIC_CACHE_NUMEL = 1 << 24
"""The horocyclic projections :math:`H(k_l x)` a kernel keeps (of the last inputs that need no
gradient, by content: the training inputs on every posterior call), and the most numbers each
may hold (128 MiB in float64)."""


def _warn_if_features_too_noisy(space: NoncompactSpace, num_phases: int) -> None:
    r"""Warn where the bound on the standard deviation of the random-phase estimate of
    :math:`k(x, x)`, :math:`\sqrt{m / L}` with ``m = space.feature_second_moment()``, exceeds
    :data:`FEATURE_SD_WARNING` (on H² with radius 15 the estimates of k(x, x) = 1 ranged
    0.0009–0.095, and their own standard error, read from the same phases, said 0.0004–0.09)."""
    moment = space.feature_second_moment()
    if moment is None:
        return
    bound = math.sqrt(moment / num_phases)
    if bound > FEATURE_SD_WARNING:
        needed = math.ceil(moment / FEATURE_SD_WARNING**2)
        warnings.warn(
            f"random-phase features on {space!r} with {num_phases} phases: the estimate of "
            f"k(x, x) = 1 may have a standard deviation of up to {bound:.3g} at the edge of the "
            f"domain (it grows like e^(|rho| radius)), and feature_standard_error, estimated "
            f"from the same phases, can understate it. Use method='exact' (the default on "
            f"hyperbolic spaces), a smaller radius, or num_phases >= {needed:,} for a bound of "
            f"{FEATURE_SD_WARNING:g}.",
            ManiboWarning,
            stacklevel=user_stacklevel(),
        )


def _matern_profile(nu: float, z: Tensor) -> Tensor:
    """Euclidean Matérn profile for half-integer ``nu`` in ``z = a r``."""
    if nu == 0.5:
        poly = torch.ones_like(z)
    elif nu == 1.5:
        poly = 1 + z
    else:
        poly = 1 + z + z.square() / 3
    return poly * torch.exp(-z)


class NoncompactMaternKernel(ChecksInputShape, IndexesBatch, Kernel):
    r"""Matérn kernel on a non-compact symmetric space; :math:`\nu = \infty` is the heat kernel.

    Usually built as ``GeometricMaternKernel(space, nu)`` (or ``GeometricHeatKernel(space)``),
    which returns this class for non-compact spaces.

    Args:
        space: a :class:`~manibo.spaces.base.NoncompactSpace`.
        nu: smoothness :math:`\nu > 0`, or ``math.inf`` for the heat kernel.
        method: ``"exact"`` (rank-one spaces), ``"features"``, or ``"auto"`` (exact where the space
            evaluates heat kernels, else features).
        num_phases: number ``L`` of random phases (``2L`` features) of :meth:`feature_map` and of
            the ``"features"`` method; default :data:`DEFAULT_NUM_PHASES`. Powers of two suit the
            Sobol sequence.
        seed: seed of the scrambled Sobol sequence of the phases.
        shifted_laplacian: use the spectrum of :math:`-\Delta - |\rho|^2` (starting at 0, as on
            compact spaces and in GeometricKernels) rather than of :math:`-\Delta`. The heat
            kernel is the same either way.
        truncation_tol: a :class:`~manibo.exceptions.TruncationWarning` is emitted once when the
            exact superposition neglects more than this mass at the ends of its time grid (only for
            lengthscales outside about :math:`[10^{-3}, 10^4]`).
        **kwargs: passed to :class:`gpytorch.kernels.Kernel` (``batch_shape``, priors, ...).

    Inputs are points of ``space``, ``(*batch, n, *point_shape)``; the output is
    ``(*batch, n, m)``, or ``(*batch, n)`` with ``diag=True``.
    """

    has_lengthscale = True
    _batchless_buffers = ("spectral_base", "boundary")

    def __init__(
        self,
        space: NoncompactSpace,
        nu: float = 2.5,
        method: str = "auto",
        num_phases: int | None = None,
        seed: int = 0,
        shifted_laplacian: bool = True,
        truncation_tol: float = 1e-6,
        **kwargs,
    ) -> None:
        if not isinstance(space, NoncompactSpace):
            raise ConfigurationError(
                "`space` must be a non-compact space (Hyperbolic, SymmetricPositiveDefinite), got "
                f"{type(space).__name__}; for compact spaces use GeometricMaternKernel."
            )
        for name in ("num_levels", "max_levels"):
            if kwargs.pop(name, None) is not None:
                raise ConfigurationError(
                    f"`{name}` applies to compact spaces; {space!r} has a continuous spectrum "
                    "(set `num_phases` for the random-phase features instead)."
                )
        nu = check_smoothness(nu)
        if method not in METHODS:
            raise ConfigurationError(f"`method` must be one of {METHODS}, got {method!r}.")
        exact_available = type(space).heat_kernel is not NoncompactSpace.heat_kernel
        if method == "exact" and not exact_available:
            raise ConfigurationError(
                f"{space!r} has no exact heat kernels; use method='features' (or 'auto')."
            )
        num_phases = DEFAULT_NUM_PHASES if num_phases is None else num_phases
        if isinstance(num_phases, bool) or int(num_phases) != num_phases or num_phases < 1:
            raise ConfigurationError(f"`num_phases` must be an integer >= 1, got {num_phases!r}.")
        if not 0 < truncation_tol < 1:
            raise ConfigurationError(f"`truncation_tol` must lie in (0, 1), got {truncation_tol}.")
        reject_ard_num_dims(type(self).__name__, kwargs)
        super().__init__(**kwargs)
        self.space = space
        self.nu = nu
        self.method = ("exact" if exact_available else "features") if method == "auto" else method
        self.num_phases = int(num_phases)
        self.seed = int(seed)
        if self.method == "features":
            _warn_if_features_too_noisy(space, self.num_phases)
        self.shifted_laplacian = bool(shifted_laplacian)
        self.truncation_tol = truncation_tol
        self._warned = False
        self._horocyclic_cache: list[tuple[Tensor, Tensor, int, list[Tensor]]] = []
        spectral, boundary = space.uniform_dims
        uniforms = SobolEngine(spectral + boundary, scramble=True, seed=self.seed).draw(
            self.num_phases, dtype=torch.float64
        )
        self.register_buffer("spectral_base", space.spectral_base(uniforms[:, :spectral], nu))
        self.register_buffer("boundary", space.boundary_points(uniforms[:, spectral:]))
        # start of the time grid of the exact superposition: the weights grow like (t a^2)^nu
        # near 0, with a^2 = 2 nu / l^2 up to 2 nu 1e6; one grid serves every nu >= 1/2
        start = -35.0 / nu - math.log(2 * nu * 1e6) if not math.isinf(nu) else 0.0
        self._log_time_start = min(-90.0, 10.0 * math.floor(start / 10.0))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.space!r}, nu={self.nu}, method={self.method!r})"

    @property
    def feature_map_exact(self) -> bool:
        """False: :meth:`feature_map` is random (:math:`\\Phi\\Phi^\\top = K` in expectation)."""
        return False

    # spectrum -------------------------------------------------------------------------------
    def _scale_squared(self, lengthscale: Tensor) -> Tensor:
        r""":math:`a^2 = 2\nu/\ell^2` (:math:`+ |\rho|^2` without the shift)."""
        shift = 0.0 if self.shifted_laplacian else float(self.space.rho.square().sum())
        return 2 * self.nu / lengthscale.square() + shift

    def _mixture_log_weights(self, lengthscale: Tensor) -> Tensor:
        """Log weights ``(*batch_shape, T)`` of the heat kernels of the exact superposition."""
        log_times, log_origin = self.space.heat_times(self._log_time_start)
        log_times, log_origin = log_times.to(lengthscale), log_origin.to(lengthscale)
        a2 = self._scale_squared(lengthscale)  # (*batch_shape, 1)
        d = self.space.spectral_dim
        log_weights = (self.nu + d / 2) * log_times - a2 * log_times.exp() + log_origin
        self._check_edges(log_weights)
        return log_weights

    def _check_edges(self, log_weights: Tensor) -> None:
        if self._warned:
            return
        with torch.no_grad():
            weights = torch.softmax(log_weights.detach(), -1)
            edge = float(torch.maximum(weights[..., 0], weights[..., -1]).max())
        if edge > self.truncation_tol:
            warnings.warn(
                f"{self!r}: the lengthscale {float(self.lengthscale.detach().min()):.3g} lies "
                f"outside the range the exact evaluation covers; the neglected spectral mass is "
                f"about {edge:.1e}. Keep lengthscales in about [1e-3, 1e4].",
                TruncationWarning,
                stacklevel=user_stacklevel(),
            )
            self._warned = True

    def _check_resolution(self, lengthscale: Tensor) -> None:
        """Warn (once) of a lengthscale finer than the distance table resolves."""
        if self._warned:
            return
        smallest = float(lengthscale.detach().min())
        if smallest < SMALLEST_TABULATED_LENGTHSCALE:
            warnings.warn(
                f"{self!r}: the lengthscale {smallest:.3g} is below "
                f"{SMALLEST_TABULATED_LENGTHSCALE:g}, finer than the table of distances it is "
                "interpolated from resolves (on H^2, errors up to 8e-6 at 1e-4 and 5e-3 at "
                "1e-5). Keep lengthscales in about [1e-4, 1e4], e.g. with a lengthscale "
                "constraint, or use method='features'.",
                TruncationWarning,
                stacklevel=user_stacklevel(),
            )
            self._warned = True

    # features -------------------------------------------------------------------------------
    def feature_map(self, x: Tensor) -> Tensor:
        r"""Random-phase features with :math:`\mathbb E[\Phi(x)\Phi(y)^\top] = k(x, y)`.

        Args:
            x: points, shape ``(*batch, n, *point_shape)``.

        Returns:
            Shape ``(*batch, n, 2L)``: the cosines of the ``L`` phases, then their sines.
        """
        self.space.check(x)
        check_parameters_match(self, x)
        return self._features(x)

    def _features(self, x: Tensor) -> Tensor:
        lam, log_weight = self.space.spectral_sample(
            self.spectral_base, self.nu, self.lengthscale[..., 0], self.shifted_laplacian
        )
        half_weight = 0.5 * torch.log_softmax(log_weight, -1)  # (*batch_shape, L)
        rho = self.space.rho.tolist()
        blocks = []
        for h in self._horocyclic_blocks(x):  # (*batch, p, L, rank) each
            log_amplitude, phase = half_weight.unsqueeze(-2), 0.0
            for i in range(self.space.rank):  # the rank is small: avoid a reduction
                log_amplitude = log_amplitude + rho[i] * h[..., i]
                phase = phase + h[..., i] * lam[..., i].unsqueeze(-2)
            amplitude = torch.exp(log_amplitude)
            blocks.append(
                torch.cat([amplitude * torch.cos(phase), amplitude * torch.sin(phase)], -1)
            )
        return torch.cat(blocks, dim=-2)

    def _horocyclic_blocks(self, x: Tensor) -> list[Tensor]:
        """The space's horocyclic projections of ``x`` ``(*batch, n, *point_shape)`` on the
        boundary points, by blocks of points (each ``(*batch, p, L, rank)``).

        They depend on ``x`` and the ``boundary`` buffer only, not on the lengthscale, so a
        posterior call reuses those of the training inputs: they are kept for the last
        :data:`_HOROCYCLIC_CACHE_ENTRIES` inputs that need no gradient, found again by equal
        content, dtype and device (GPyTorch slices the training inputs out of a new tensor on
        every call) and for the same ``boundary`` tensor, unmodified. Moving the kernel
        (``.to``, ``.double()``) empties the cache. Inputs that require a gradient, and any
        input under ``torch.inference_mode``, are computed afresh, so gradients with respect to
        them are exact; gradients with respect to the hyperparameters never pass through the
        cached values.
        """
        # inference-mode tensors cannot be saved for a later backward: never kept
        cacheable = not (x.requires_grad and torch.is_grad_enabled())
        cacheable = cacheable and not torch.is_inference_mode_enabled()
        if cacheable:
            for index, (key, boundary, version, blocks) in enumerate(self._horocyclic_cache):
                if (
                    boundary is self.boundary
                    and version == self.boundary._version
                    and key.shape == x.shape
                    and key.dtype == x.dtype
                    and key.device == x.device
                    and torch.equal(key, x)
                ):
                    self._horocyclic_cache.insert(0, self._horocyclic_cache.pop(index))
                    return blocks
        n = x.shape[-1 - len(self.space.point_shape)]
        rows = max(1, _FEATURE_ROWS // (self.num_phases * self.space.rank))
        blocks = []
        for start in range(0, max(n, 1), rows):  # one (empty) block when there are no points
            part = x.narrow(x.dim() - 1 - len(self.space.point_shape), start, min(rows, n - start))
            blocks.append(self.space.horocyclic(part, self.boundary))
        if cacheable and sum(h.numel() for h in blocks) <= _HOROCYCLIC_CACHE_NUMEL:
            blocks = [h.detach() for h in blocks]
            entry = (x.detach().clone(), self.boundary, self.boundary._version, blocks)
            self._horocyclic_cache = [entry, *self._horocyclic_cache][:_HOROCYCLIC_CACHE_ENTRIES]
        return blocks

    def _apply(self, fn, *args, **kwargs):
        self._horocyclic_cache = []  # of the old dtype and device
        return super()._apply(fn, *args, **kwargs)

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        return {**state, "_horocyclic_cache": []}  # not pickled nor deep-copied

    def __setstate__(self, state: dict) -> None:
        super().__setstate__({"_horocyclic_cache": [], **state})  # pickled before the cache

    def _distinct_features(self, x: Tensor) -> Tensor:
        r""":meth:`_features` of ``x`` ``(*batch, n, *point_shape)``, computed once along every
        batch dimension whose entries are equal and expanded (a view) to ``(*batch, n, 2L)``.

        GPyTorch's exact prediction expands the training inputs to the batch of the test inputs
        (``b`` restarts of an acquisition optimiser make ``b`` copies); their features would
        otherwise cost ``b`` times over. The values are identical either way. Gradients reach the
        copies through the first one, which is exact for copies of one tensor (``expand``,
        ``repeat``, ``cat``) and is why a leaf tensor that requires grad is never reduced.
        """
        if x.is_leaf and x.requires_grad:
            return self._features(x)
        batch_dims = x.dim() - 1 - len(self.space.point_shape)
        reduced = x
        for dim in range(batch_dims):
            first = reduced.narrow(dim, 0, 1)
            if reduced.shape[dim] > 1 and torch.equal(first.expand_as(reduced), reduced):
                reduced = first
        phi = self._features(reduced)
        if reduced is x:
            return phi
        batch = torch.broadcast_shapes(x.shape[:batch_dims], phi.shape[:-2])
        return phi.expand(*batch, *phi.shape[-2:])

    def feature_standard_error(self, x1: Tensor, x2: Tensor) -> Tensor:
        r"""Standard error of :math:`\Phi(x_1)\Phi(x_2)^\top` as a Monte Carlo mean.

        With normalised weights :math:`\tilde w_l` and per-phase terms :math:`f_l`, the estimate
        is :math:`\hat k = \sum_l \tilde w_l f_l` and the error estimate is
        :math:`(\sum_l \tilde w_l^2 (f_l - \hat k)^2)^{1/2}` (the delta method for
        self-normalised importance sampling; :math:`\hat\sigma/\sqrt L` for equal weights). It is
        the error of plain Monte Carlo with these samples; the scrambled Sobol points make the
        actual error smaller. Memory is :math:`O(n m L)`: meant for small diagnostic sets.

        Args:
            x1: points ``(*batch, n, *point_shape)``.
            x2: points ``(*batch, m, *point_shape)``.

        Returns:
            Shape ``(*batch, n, m)``.
        """
        check_point_pair(self.space, x1, x2)
        check_parameters_match(self, x1)
        _, log_weight = self.space.spectral_sample(
            self.spectral_base, self.nu, self.lengthscale[..., 0], self.shifted_laplacian
        )
        weights = torch.softmax(log_weight, -1).unsqueeze(-2).unsqueeze(-2)  # (*, 1, 1, L)
        phi1, phi2 = self._features(x1), self._features(x2)
        half = self.num_phases
        terms = phi1[..., :half].unsqueeze(-2) * phi2[..., :half].unsqueeze(-3)
        terms = terms + phi1[..., half:].unsqueeze(-2) * phi2[..., half:].unsqueeze(-3)
        estimate = terms.sum(-1, keepdim=True)  # terms = w_l f_l
        return (terms - weights * estimate).square().sum(-1).sqrt()

    # kernel ---------------------------------------------------------------------------------
    def forward(
        self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params
    ) -> Tensor:
        check_forward(self, x1, x2, last_dim_is_batch)
        if self.method == "features":
            phi1 = self._distinct_features(x1)
            phi2 = phi1 if _same_points(x1, x2) else self._distinct_features(x2)
            self._check_diagonal(x1, phi1)
            if diag:
                return (phi1 * phi2).sum(-1)
            return phi1 @ phi2.transpose(-1, -2)
        return self._exact(x1, x2, diag)

    def _check_diagonal(self, x: Tensor, phi: Tensor) -> None:
        """Warn once per space when the estimates of :math:`k(x, x) = 1` at the points ``x``
        ``(*batch, n, *point_shape)``, from their features ``phi`` ``(*batch, n, 2L)``, stray
        more than :data:`FEATURE_DIAGONAL_WARNING` from 1: the prior variance of a GP is then
        off by that factor at those points (on SPD(3) with eigenvalues in [1e-3, 1e3], fitted
        to 20 points, it ranged 0.05-19 over the domain, silently). Once per space, not per
        kernel: a BO loop builds a kernel for every proposal."""
        if getattr(self.space, "_warned_feature_diagonal", False) or phi.shape[-2] == 0:
            return
        with torch.no_grad():  # every forward: one read of the device, on the distinct rows
            distinct = phi.detach()
            for dim in range(distinct.dim() - 2):  # the copies that _distinct_features expanded
                if distinct.stride(dim) == 0:
                    distinct = distinct.narrow(dim, 0, 1)
            diagonal = distinct.square().sum(-1)
            low, high = torch.stack([diagonal.amin(), diagonal.amax()]).tolist()
        if max(1 - low, high - 1) <= FEATURE_DIAGONAL_WARNING:
            return
        self.space._warned_feature_diagonal = True
        diagonal = phi.detach().square().sum(-1)
        worst = int(torch.argmax((diagonal - 1).abs().flatten()))
        points = x.detach().expand(*diagonal.shape, *self.space.point_shape)
        point = points.reshape(-1, *self.space.point_shape)[worst]
        warnings.warn(
            f"{self!r}: its random-phase estimates of k(x, x), which is exactly 1, range "
            f"{low:.3g}-{high:.3g} over {diagonal.numel()} estimates (the worst at "
            f"{_point_text(self.space, point)}), so a GP's prior variance is off by that factor "
            "there. The features are too few for points this far from the centre of the domain "
            "(SPD matrices with very unequal eigenvalues, hyperbolic points far from the origin): "
            "narrow the domain (on SPD, the ratio of the eigenvalue bounds), raise num_phases, "
            "or, on hyperbolic spaces, use method='exact'. Shown once per space.",
            ManiboWarning,
            stacklevel=user_stacklevel(),
        )

    def _exact(self, x1: Tensor, x2: Tensor, diag: bool) -> Tensor:
        ell = self.lengthscale[..., 0]  # (*batch_shape, 1)
        closed_form = isinstance(self.space, Hyperbolic) and self.space.dim == 3
        if not (closed_form and (math.isinf(self.nu) or self.nu in _CLOSED_FORMS_H3)):
            self._check_resolution(ell)
        if math.isinf(self.nu):
            return self.space._unchecked("heat_kernel")(ell.square() / 2, x1, x2, diag)
        if closed_form and self.nu in _CLOSED_FORMS_H3:
            a = self._scale_squared(ell).sqrt()
            scale = a if diag else a.unsqueeze(-1)

            def block(u: Tensor, v: Tensor) -> Tensor:
                r = self.space._unchecked("pairwise_distance")(u, v, diag)  # checked in forward
                return _matern_profile(self.nu, scale * r) * r_over_sinh(r)

            return block(x1, x2) if diag else pairwise_in_chunks(block, x1, x2, point_ndim=1)
        log_weights = self._mixture_log_weights(ell)
        mixture = self.space._unchecked("heat_mixture")  # x1, x2 checked in forward
        return mixture(log_weights, self._log_time_start, x1, x2, diag)


def _point_text(space: NoncompactSpace, point: Tensor) -> str:
    """A point ``point_shape`` as its rounded coordinates; an SPD matrix as its eigenvalues."""
    if isinstance(space, SymmetricPositiveDefinite):
        matrix = point.to(torch.float64).reshape(space.n, space.n)
        values = torch.linalg.eigvalsh(matrix).tolist()
        return "the matrix with eigenvalues " + ", ".join(f"{v:.3g}" for v in values)
    return "[" + ", ".join(f"{v:.3g}" for v in point.tolist()) + "]"


def _same_points(x1: Tensor, x2: Tensor) -> bool:
    """True when ``x2`` is ``x1`` or a view of the same memory (as GPyTorch's lazy kernel slices
    the test block twice): their features are computed once."""
    return x2 is x1 or (
        x1.device == x2.device
        and x1.data_ptr() == x2.data_ptr()
        and x1.shape == x2.shape
        and x1.stride() == x2.stride()
        and x1.requires_grad == x2.requires_grad
    )


class NoncompactHeatKernel(NoncompactMaternKernel):
    r"""The heat kernel on a non-compact symmetric space (:math:`\nu = \infty`).

    Usually built as ``GeometricHeatKernel(space)``.
    """

    def __init__(self, space: NoncompactSpace, **kwargs) -> None:
        super().__init__(space, nu=math.inf, **kwargs)
