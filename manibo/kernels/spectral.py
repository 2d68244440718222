r"""Matérn and heat kernels on any compact space, from its Laplace–Beltrami spectrum.

For eigenvalues :math:`\lambda_l` of :math:`-\Delta` with multiplicities :math:`m_l`,

.. math::
    S_\nu(\lambda) = \left(\tfrac{2\nu}{\ell^2} + \lambda\right)^{-\nu - d/2},\qquad
    S_\infty(\lambda) = e^{-\ell^2\lambda/2},\qquad
    k(x, x') = \sum_{l<L} \frac{S(\lambda_l)}{\sum_{j<L} m_j S(\lambda_j)}\, G_l(x, x'),

so the average prior variance over the space is 1 (GeometricKernels' convention, matched exactly for
the same ``L``). The kernel only turns a spectrum into weights; the space evaluates the sum. On a
flat torus, where a level cap would neglect spectral mass, the kernel is instead summed over
periodic images (:mod:`manibo.kernels.torus_images`), which is exact there.
On a non-compact space (:class:`~manibo.spaces.Hyperbolic`,
:class:`~manibo.spaces.SymmetricPositiveDefinite`) the same constructors return the kernels of
:mod:`manibo.kernels.noncompact`.
"""

from __future__ import annotations

import math
import warnings

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

from manibo._stack import user_stacklevel
from manibo._validation import check_int, check_real
from manibo.exceptions import ConfigurationError, TruncationWarning
from manibo.kernels._batch import IndexesBatch
from manibo.kernels._inputs import (
    ChecksInputShape,
    check_lengthscale,
    check_parameters_match,
    check_point_pair,
    check_smoothness,
    reject_ard_num_dims,
    reject_last_dim_is_batch,
)
from manibo.kernels.feature_protocol import check_feature_count
from manibo.kernels.noncompact import NoncompactHeatKernel, NoncompactMaternKernel
from manibo.kernels.torus_images import (
    IMAGE_NUS,
    MAX_IMAGES,
    served_image_offsets,
    torus_dimension,
    torus_image_kernel,
)
from manibo.spaces.base import CompactSpace, NoncompactSpace

DEFAULT_TRUNCATION_TOL = 1e-6

MIN_EIGENFUNCTIONS = 256
"""Automatic truncation keeps at least the levels holding this many eigenfunctions: a kernel
truncated to ``M`` eigenfunctions has kernel matrices of rank at most ``M``, and a GP on more
points than that collapses onto those functions, an artefact of the truncation that makes
marginal-likelihood fits and acquisition optimisation wander (long lengthscales on smooth
objectives need only a handful of levels by spectral mass)."""

PHASE_IN_RATIO = 0.5
"""With automatic truncation, a level fades in while the mass from it upwards grows from
``PHASE_IN_RATIO * truncation_tol`` to ``truncation_tol``."""

CAP_WARNING_FACTOR = 2.0
"""The cap on the levels is reported when it neglects more than this many times
``truncation_tol`` (a cap that neglects 1.08e-4 where 1e-4 was asked for changes nothing a user
could see); on a flat torus the periodic-image sum takes over from there instead."""

WARN_AGAIN_FACTOR = 10.0
"""A kernel warns of its truncation again when the neglected mass exceeds this many times the
mass of its last warning (a kernel fitted or set to ever shorter lengthscales)."""

IMAGE_TOL_FACTOR = 0.1
"""A torus kernel summed over periodic images leaves out images worth at most this many times
``truncation_tol`` (relative to the kernel's value 1 at coincident points)."""

FLOAT32_MAX_MULTIPLICITY = 1e30
"""The largest multiplicity of a level that a float32 kernel sums in float32: its weights then
stay above float32's smallest normal number (1.2e-38) down to a share of 1e-8 of the mass."""


def log_spectrum(eigenvalues: Tensor, lengthscale: Tensor, nu: float, spectral_dim: int) -> Tensor:
    r"""Unnormalised log spectral density :math:`\log S(\lambda)`.

    Args:
        eigenvalues: shape ``(L,)``.
        lengthscale: shape ``(*batch, 1)``.
        nu: smoothness, ``> 0``; ``math.inf`` gives the heat kernel.
        spectral_dim: the ``d`` of :math:`S_\nu`.

    Returns:
        Shape ``(*batch, L)``.
    """
    if math.isinf(nu):
        return -0.5 * lengthscale**2 * eigenvalues
    return -(nu + spectral_dim / 2) * torch.log(2 * nu / lengthscale**2 + eigenvalues)


class GeometricMaternKernel(ChecksInputShape, IndexesBatch, Kernel):
    r"""Matérn kernel on a compact space.

    Any :math:`\nu > 0` is allowed; :math:`\nu = \infty` is the heat kernel. On a non-compact
    space the constructor returns a :class:`~manibo.kernels.noncompact.NoncompactMaternKernel`
    (with that class's options: ``method``, ``num_phases``, ``seed``, ``shifted_laplacian``), so
    ``GeometricMaternKernel(space, nu)`` works on every space with a Laplacian.

    Args:
        space: a :class:`~manibo.spaces.base.CompactSpace`.
        nu: smoothness :math:`\nu > 0`, or ``math.inf`` for the heat (squared-exponential) kernel.
        num_levels: number of levels ``L``; by default chosen at every call, from the current
            lengthscale, as the fewest levels whose neglected spectral mass is below
            ``truncation_tol``, capped at ``max_levels``.
        truncation_tol: relative spectral mass that may be neglected when ``num_levels`` is None
            (on a graph or mesh each level counts with its peak over the points,
            :meth:`~manibo.spaces.base.CompactSpace.level_peaks`, so that it bounds the error of
            every entry).
        max_levels: cap for the automatic choice (default: the space's ``default_max_levels``); a
            :class:`~manibo.exceptions.TruncationWarning` is emitted when the cap binds and
            neglects more than ``CAP_WARNING_FACTOR`` (2) times ``truncation_tol``, and again
            only where it neglects ``WARN_AGAIN_FACTOR`` (10) times more than when it last
            warned. On a flat
            torus (:class:`~manibo.spaces.Circle`, :class:`~manibo.spaces.Torus` and products of
            them) with :math:`\nu \in \{1/2, 3/2, 5/2, \infty\}` the kernel is summed over periodic
            images instead where the cap neglects that much (blended in smoothly as the neglected
            mass grows from 2 to 4 times ``truncation_tol``), which is exact, unless that takes
            more than :data:`~manibo.kernels.torus_images.MAX_IMAGES` images (long lengthscales
            with small :math:`\nu`, or four or more circles): then the capped series is used
            and the warning is emitted. Each lengthscale of a batch decides for itself.
        **kwargs: passed to :class:`gpytorch.kernels.Kernel` (``batch_shape``,
            ``lengthscale_prior``, ``lengthscale_constraint``, ...).

    Inputs are points of ``space`` with shape ``(*batch, n, *point_shape)``; the output is
    ``(*batch, n, m)``.
    """

    has_lengthscale = True
    _batchless_buffers = ("_eigenvalues", "_log_multiplicities", "_log_peaks")
    # defaults for kernels pickled before these were set in __init__
    _warned_mass, _warned_dropped, _rest = 0.0, False, None
    _noncompact_class: type[Kernel] = NoncompactMaternKernel

    def __new__(cls, space=None, *args, **kwargs):
        if isinstance(space, NoncompactSpace):
            return cls._noncompact_class(space, *args, **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        space: CompactSpace,
        nu: float = 2.5,
        num_levels: int | None = None,
        truncation_tol: float = DEFAULT_TRUNCATION_TOL,
        max_levels: int | None = None,
        **kwargs,
    ) -> None:
        if not isinstance(space, CompactSpace):
            raise ConfigurationError(
                f"`space` must be a compact space with a spectrum ({_classes(CompactSpace)}) or a "
                f"non-compact one ({_classes(NoncompactSpace)}), got {space!r}."
                f"{_other_kernel(space)}"
            )
        nu = check_smoothness(nu)
        available = space.num_levels_available
        if num_levels is not None and (num_levels < 1 or (available and num_levels > available)):
            raise ConfigurationError(
                f"`num_levels` must be between 1 and {available or 'infinity'} for {space!r}, "
                f"got {num_levels}."
            )
        truncation_tol = check_real("truncation_tol", truncation_tol)
        if not 0 < truncation_tol < 1:
            raise ConfigurationError(f"`truncation_tol` must lie in (0, 1), got {truncation_tol}.")
        if max_levels is not None:
            check_int("max_levels", max_levels, minimum=1)
        reject_ard_num_dims(type(self).__name__, kwargs)
        super().__init__(**kwargs)
        self.space = space
        self.nu = nu
        self.num_levels = num_levels
        self.truncation_tol = truncation_tol
        cap = max_levels or space.default_max_levels
        self.max_levels = min(cap, available) if available else cap
        self._warned_mass = 0.0  # the neglected mass of the last warning of the level cap
        self._warned_dropped = False  # the warning of the eigenpairs a large graph or mesh drops
        self._rest: tuple | None = None  # (lengthscales, mass beyond the cap, slope): _log_rest
        scan = self.max_levels if available else max(self.max_levels * 50, 10_000)
        if space.max_scan_levels is not None:
            scan = max(self.max_levels, min(scan, space.max_scan_levels))
        self._scan_levels = min(scan, available) if available else scan
        eigenvalues, multiplicities = space.levels(self._scan_levels)
        holding = int(torch.searchsorted(multiplicities.cumsum(0), MIN_EIGENFUNCTIONS)) + 1
        self._min_levels = min(holding, self.max_levels, len(multiplicities))
        self.register_buffer("_eigenvalues", eigenvalues, persistent=False)
        self.register_buffer("_log_multiplicities", torch.log(multiplicities), persistent=False)
        peaks = space.level_peaks(self._scan_levels)  # levels weighed where they peak (a mesh)
        log_peaks = None if peaks is None else torch.log(torch.maximum(peaks, multiplicities))
        self.register_buffer("_log_peaks", log_peaks, persistent=False)
        # the leading levels a float32 kernel sums in float32 (a count: no device read per call)
        self._float32_levels = int((multiplicities <= FLOAT32_MAX_MULTIPLICITY).cumprod(0).sum())
        # the eigenpairs a large graph or mesh left out: their count, and (mean, lowest) value
        count, lowest, mean = getattr(space, "dropped_spectrum", None) or (None, None, None)
        self._dropped_count = count
        at = None if count is None else torch.tensor([mean, lowest], dtype=torch.float64)
        self.register_buffer("_dropped_eigenvalues", at, persistent=False)
        self._torus_dim = torus_dimension(space) if nu in IMAGE_NUS else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.space!r}, nu={self.nu})"

    def levels_for(self, lengthscale: Tensor, warn: bool = True) -> int:
        """Number of levels used at ``lengthscale`` (shape ``(*batch, 1, 1)``).

        Args:
            lengthscale: the lengthscale.
            warn: emit the :class:`~manibo.exceptions.TruncationWarning` of a binding cap (see
                ``max_levels``); False asks quietly and leaves the warning for the kernel's next
                evaluation.
        """
        return self._truncation(lengthscale, warn)[0]

    def _truncation(self, lengthscale: Tensor, warn: bool = True) -> tuple[int, Tensor | None]:
        r"""Levels used, and the factor by which each enters (None: every level fully).

        With automatic truncation, level :math:`l` enters with the factor :math:`3u^2 - 2u^3`,
        :math:`u = \mathrm{clip}(\log(T_l / (r\,\mathrm{tol})) / \log(1/r), 0, 1)`, where
        :math:`T_l` is the share of the spectral mass in levels :math:`\ge l` and :math:`r` is
        :data:`PHASE_IN_RATIO`: levels whose tail share exceeds ``tol`` enter fully (so the
        neglected mass stays below ``tol``), and the next ones fade in as the lengthscale shrinks;
        the levels holding the first :data:`MIN_EIGENFUNCTIONS` eigenfunctions always enter
        fully.
        The kernel and its derivative are then continuous functions of the lengthscale, instead
        of jumping each time a level is added, which marginal-likelihood optimisers mistake for a
        non-smooth objective. Shapes: ``(*batch, L)``.
        """
        if self.num_levels is not None:
            return self.num_levels, None
        if warn:
            self._warn_if_eigenpairs_dropped(lengthscale)
        log_tail = self._log_tail(lengthscale)
        log_tol = math.log(self.truncation_tol)
        log_start = log_tol + math.log(PHASE_IN_RATIO)
        with torch.no_grad():
            needed = max(1, int((log_tail > log_tol).sum(-1).max()))
            count = max(1, int((log_tail > log_start).sum(-1).max()))
        if needed > self.max_levels:
            if warn:
                self._warn_if_capped(lengthscale, log_tail)
            return self.max_levels, None
        count = min(max(count, self._min_levels), self.max_levels)
        u = ((log_tail[..., :count] - log_start) / -math.log(PHASE_IN_RATIO)).clamp(0.0, 1.0)
        u[..., : self._min_levels] = 1.0
        phase = u * u * (3 - 2 * u)  # smoothstep: the kernel's derivative is continuous too
        return count, phase.reshape(*lengthscale.shape[:-2], count)

    def _warn_if_capped(self, lengthscale: Tensor, log_tail: Tensor) -> None:
        """Warn where the level cap neglects more than ``CAP_WARNING_FACTOR * truncation_tol``
        of the mass at a lengthscale ``(*batch, 1, 1)`` of the batch that the image sum does not
        serve (and more than ``WARN_AGAIN_FACTOR`` times the last warning's), naming the one
        with the most neglected. ``log_tail`` is :meth:`_log_tail`'s ``(prod(batch), L)``."""
        with torch.no_grad():
            neglected = log_tail[..., self.max_levels].exp()  # (prod(batch),)
            if not self._worth_warning(float(neglected.max())):  # images only lower it
                return
            images = self.periodic_images(lengthscale)
            if images is not None:  # the members that sum images are exact
                neglected = neglected.masked_fill(images[0].reshape(-1) > 0, 0.0)
            worst = int(neglected.argmax())
            if not self._worth_warning(float(neglected[worst])):
                return
            every = self._log_tail(lengthscale, every_level=True)[worst]  # past the cap too
            needed = int((every > math.log(self.truncation_tol)).sum())
        images = (
            ""
            if self._torus_dim is None
            else f" (summing periodic images instead would take more than {MAX_IMAGES})"
        )
        warnings.warn(
            f"{self!r}: {needed} levels are needed to neglect less than "
            f"{self.truncation_tol:g} of the spectral mass at lengthscale "
            f"{float(lengthscale.detach().reshape(-1)[worst]):.3g}, "
            f"but `max_levels` = {self.max_levels}; the neglected mass is "
            f"{float(neglected[worst]):.2e}{images}. Raise "
            "`max_levels` (an argument of this kernel and an option of the 'matern' and "
            "'heat' surrogates), or use a smoother kernel (larger `nu`) or a longer "
            f"lengthscale{self._per_factor_advice()}.",
            TruncationWarning,
            stacklevel=user_stacklevel(),
        )
        self._warned_mass = float(neglected[worst])

    def _worth_warning(self, neglected: float) -> bool:
        """Whether a neglected mass is above the warning threshold and, after a warning, above
        ``WARN_AGAIN_FACTOR`` times that warning's mass."""
        threshold = CAP_WARNING_FACTOR * self.truncation_tol
        return neglected > max(threshold, WARN_AGAIN_FACTOR * self._warned_mass)

    def _warn_if_eigenpairs_dropped(self, lengthscale: Tensor) -> None:
        """Warn (once) where the space kept only its lowest eigenpairs (a mesh or graph of more
        than ``DENSE_MAX`` points) and those it left out may hold more than ``CAP_WARNING_FACTOR *
        truncation_tol`` of the spectral mass at ``lengthscale``. Their share lies between two
        bounds, both stated: every left-out eigenpair at their mean eigenvalue (below: the
        spectral density is convex and decreasing) and at the lowest of them (above); the upper
        one decides, so no loss above the threshold goes unreported (on a weighted graph the
        lower bound was 20 times below the share lost)."""
        count = self._dropped_count
        if count is None or self._warned_dropped:  # once: it is due at every lengthscale
            return
        with torch.no_grad():
            ls = lengthscale.detach().reshape(-1, 1).to(self._eigenvalues.dtype)
            spectrum = log_spectrum(self._eigenvalues, ls, self.nu, self.space.spectral_dim)
            kept = torch.logsumexp(self._log_multiplicities + spectrum, dim=-1)
            at = self._dropped_eigenvalues.to(ls)
            lost = math.log(count) + log_spectrum(at, ls, self.nu, self.space.spectral_dim)
            shares = torch.sigmoid(lost - kept.unsqueeze(-1))  # lost / (lost + kept)
            below, above = (float(v) for v in shares.max(0).values)
        if above > CAP_WARNING_FACTOR * self.truncation_tol:
            total = self.space.num_points
            warnings.warn(
                f"{self!r}: the space keeps the lowest {total - count:,} of its {total:,} "
                f"eigenpairs, and those left out hold between {below:.2e} and {above:.2e} of "
                f"the spectral mass at lengthscale {float(lengthscale.detach().min()):.3g}. "
                f"Build the space with more `num_eigenpairs` (up to {total:,}: Graph(..., "
                "num_eigenpairs=...) or Mesh(..., num_eigenpairs=...) in Python; "
                f"graph:FILE?eigenpairs={total} or mesh:FILE?eigenpairs={total} as a space "
                "spec), or use a longer lengthscale.",
                TruncationWarning,
                stacklevel=user_stacklevel(),
            )
            self._warned_dropped = True

    def _log_tail(self, lengthscale: Tensor, every_level: bool = False) -> Tensor:
        """Log share of the spectral mass in levels ``>= l``, shape ``(prod(batch), L)``.

        ``L`` is ``max_levels + 1`` (the levels the kernel may use and the first it may not: all
        that the truncation and the image sum read), or every scanned level with ``every_level``.
        The levels past ``max_levels`` enter through their total alone: a cumulative sum over
        every scanned level (100,000 on a circle) took 5 ms at each evaluation of the kernel.
        On a space whose levels peak above their multiplicity (:meth:`level_peaks`), each level
        of the tail counts with its peak: the share then bounds the error of every kernel entry
        (a level of :math:`G_l(x, x)` up to 13,600 at one vertex of a 400-vertex mesh held 1e-6
        of the mass and moved entries by 8e-4).
        """
        ls = lengthscale.reshape(-1, 1).to(self._eigenvalues.dtype)
        scanned = self._eigenvalues.shape[-1]
        head = scanned if every_level else min(self.max_levels + 1, scanned)
        spectrum = log_spectrum(self._eigenvalues[:head], ls, self.nu, self.space.spectral_dim)
        log_mass = self._log_multiplicities[:head] + spectrum
        tail_mass = self._log_tail_weights()[:head] + spectrum
        log_tail = torch.logcumsumexp(tail_mass.flip(-1), dim=-1).flip(-1)
        if head < scanned:
            log_tail = torch.logaddexp(log_tail, self._log_rest(ls, head))
        if self._buffers.get("_log_peaks") is None:  # the tail's weights are the multiplicities
            return log_tail - log_tail[..., :1]
        return log_tail - torch.logsumexp(log_mass, dim=-1, keepdim=True)

    def _log_tail_weights(self) -> Tensor:
        """Log weight of each scanned level in the tail: its peak over the points
        (:meth:`~manibo.spaces.base.CompactSpace.level_peaks`) where the space has them, else
        its multiplicity; ``(scanned,)``."""
        peaks = self._buffers.get("_log_peaks")  # absent from kernels pickled before it
        return self._log_multiplicities if peaks is None else peaks

    def _log_rest(self, ls: Tensor, head: int) -> Tensor:
        """Log mass of the scanned levels from ``head`` on, ``(prod(batch), 1)`` at the
        lengthscales ``ls`` ``(prod(batch), 1)``, with its gradient. Its value and derivative
        are kept for the last lengthscales, so that an acquisition's many calls at fixed
        hyperparameters pay for them once (on a circle, 98,000 levels: a qLogNEI value and
        gradient on three circles and three boxes took 0.077 s recomputing them, 0.057 s
        without); the result is ``value + slope * (ls - ls.detach())``, exact in value and
        first derivative."""
        weights = self._log_tail_weights()
        if torch.is_inference_mode_enabled():  # no gradient to keep, nor can one be taken
            spectrum = log_spectrum(self._eigenvalues[head:], ls, self.nu, self.space.spectral_dim)
            return torch.logsumexp(weights[head:] + spectrum, -1, keepdim=True)
        key = (ls.detach().cpu().numpy().tobytes(), head, ls.dtype, ls.device, self.nu)
        if self._rest is None or self._rest[0] != key:
            with torch.enable_grad():
                at = ls.detach().requires_grad_()
                rest = log_spectrum(self._eigenvalues[head:], at, self.nu, self.space.spectral_dim)
                rest = torch.logsumexp(weights[head:] + rest, -1, keepdim=True)
                (slope,) = torch.autograd.grad(rest.sum(), at)  # rows are independent
            self._rest = (key, rest.detach(), slope)
        _, value, slope = self._rest
        return value + slope * (ls - ls.detach())

    def periodic_images(self, lengthscale: Tensor) -> tuple[Tensor, Tensor] | None:
        r"""Share of the periodic-image sum in the kernel at ``lengthscale`` ``(*batch, 1, 1)``,
        and the image shifts (:func:`~manibo.kernels.torus_images.image_offsets`).

        None where the kernel is its level series alone: not a flat torus, a smoothness without
        a closed form, ``num_levels`` given, a level cap that neglects at most
        ``CAP_WARNING_FACTOR * truncation_tol`` of the mass at every lengthscale of the batch, or
        more images needed than :data:`~manibo.kernels.torus_images.MAX_IMAGES` at each of them.
        Otherwise the share is a tensor ``(*batch, 1, 1)`` that rises smoothly from 0 to 1 while
        the mass the cap neglects grows from 2 to 4 times ``truncation_tol``, and is 0 at the
        lengthscales of the batch that need more images than that (they keep the series, as they
        would alone); the shifts serve the longest of the others.
        """
        if self._torus_dim is None or self.num_levels is not None:
            return None
        log_tail = self._log_tail(lengthscale)
        if log_tail.shape[-1] <= self.max_levels:
            return None
        start = math.log(CAP_WARNING_FACTOR * self.truncation_tol)
        u = ((log_tail[..., self.max_levels] - start) / math.log(2.0)).clamp(0.0, 1.0)
        if not bool((u > 0).any()):
            return None
        tol = IMAGE_TOL_FACTOR * self.truncation_tol
        used = u.detach() > 0
        lengths = lengthscale.detach().reshape(-1)[used]
        chosen = served_image_offsets(lengths, self.nu, self._torus_dim, tol)
        if chosen is None:
            return None
        offsets, served = chosen
        summed = torch.zeros_like(u).masked_scatter(used, served.to(u))  # 1 where images serve
        return (summed * u * u * (3 - 2 * u)).reshape(lengthscale.shape), offsets

    def _per_factor_advice(self) -> str:
        """On a product of spaces, the way to a kernel per factor, each truncated on its own."""
        if getattr(self.space, "factors", None) is None:
            return ""
        return (
            ". On a product, `per_factor=True` (an option of `matern_kernel` and the 'matern' "
            "surrogate; `--surrogate-option per_factor=true` for `manibo run`, in a new --out) "
            "gives each factor its own kernel and lengthscale, each truncated on its own: a "
            "cheaper cure than raising `max_levels`, whose levels of the product cost time in "
            "proportion to their number (300 of them made one proposal take 31 s)"
        )

    def report_truncation(self) -> int:
        """Levels used at the current lengthscale, warning (again) if the cap binds there.

        Hyperparameter fitting visits trial lengthscales whose truncation says nothing about the
        fitted model; fitting code silences the warning and calls this once at the end.
        """
        self._warned_mass, self._warned_dropped = 0.0, False
        return self.levels_for(self.lengthscale)

    def level_weights(
        self, lengthscale: Tensor | None = None, num_levels: int | None = None
    ) -> Tensor:
        r"""Normalised per-level weights :math:`w_l`, shape ``(*batch_shape, L)``.

        Args:
            lengthscale: shape ``(*batch_shape, 1, 1)`` (default: the kernel's).
            num_levels: use exactly these first ``L`` levels, every one fully, renormalised over
                them (default: the kernel's own truncation).
        """
        lengthscale = self.lengthscale if lengthscale is None else lengthscale
        check_lengthscale(self, lengthscale)
        if num_levels is None:
            num, phase = self._truncation(lengthscale)
        else:
            num, phase = self._fixed_levels(num_levels), None
        eigenvalues = self._eigenvalues[:num].to(lengthscale)
        log_mult = self._log_multiplicities[:num].to(lengthscale)
        log_s = log_spectrum(eigenvalues, lengthscale[..., 0], self.nu, self.space.spectral_dim)
        if phase is None:
            return torch.exp(log_s - torch.logsumexp(log_s + log_mult, dim=-1, keepdim=True))
        phase = phase.to(lengthscale)
        log_phase = torch.log(phase.clamp_min(torch.finfo(phase.dtype).tiny))
        norm = torch.logsumexp(log_s + log_phase + log_mult, dim=-1, keepdim=True)
        return phase * torch.exp(log_s - norm)

    def _fixed_levels(self, num_levels: int) -> int:
        return check_int("num_levels", num_levels, minimum=1, maximum=self._scan_levels)

    def forward(
        self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params
    ) -> Tensor:
        reject_last_dim_is_batch(last_dim_is_batch)
        check_point_pair(self.space, x1, x2)
        check_parameters_match(self, x1)
        lengthscale = self.lengthscale
        images = self.periodic_images(lengthscale)
        if images is None:
            return self._series(x1, x2, diag)
        check_lengthscale(self, lengthscale)
        share, offsets = images
        images = torus_image_kernel(x1, x2, lengthscale, offsets, self.nu, diag=diag)
        if bool((share == 1).all()):
            return images
        series = self._series(x1, x2, diag)
        share = share[..., 0] if diag else share
        return series + share * (images - series)

    def _series(self, x1: Tensor, x2: Tensor, diag: bool) -> Tensor:
        """The level series; in float64 when a level it uses holds more than
        :data:`FLOAT32_MAX_MULTIPLICITY` eigenfunctions, whatever the inputs' precision.

        Its weight times its multiplicity is at most 1, but each alone leaves float32's range: on
        S^32, level 199 holds 4.5e38 harmonics, and the float32 kernel was inf at lengthscale 0.1.
        Shapes as :meth:`forward`'s; the result has the dtype of ``x1``.
        """
        weights = self.level_weights()
        if weights.dtype == torch.float64 or weights.shape[-1] <= self._float32_levels:
            return self.space.spectral_sum(weights, x1, x2, diag=diag)
        weights = self.level_weights(self.lengthscale.double())
        series = self.space.spectral_sum(weights, x1.double(), x2.double(), diag=diag)
        return series.to(x1.dtype)

    def feature_map(self, x: Tensor, num_levels: int | None = None) -> Tensor:
        r"""Explicit features :math:`\Phi` with :math:`K \approx \Phi\Phi^\top`.

        They are exact for the truncated kernel.

        Args:
            x: points, shape ``(*batch, n, *point_shape)``.
            num_levels: the features of the kernel truncated to its first ``L`` levels (weights
                renormalised over them, see :meth:`level_weights`); default: the kernel's levels,
                at most :data:`~manibo.kernels.feature_protocol.DEFAULT_MAX_FEATURES` features.

        Returns:
            Shape ``(*batch, n, M)``, ``M`` the number of eigenfunctions in the levels used.

        Raises:
            ConfigurationError: without ``num_levels``, the kernel's levels hold more than
                :data:`~manibo.kernels.feature_protocol.DEFAULT_MAX_FEATURES` eigenfunctions
                (refused before anything is computed).
        """
        self.space.check(x)
        check_parameters_match(self, x)
        if num_levels is None:
            levels = self.levels_for(self.lengthscale, warn=False)
            count = int(self.space.levels(levels)[1].sum())
            check_feature_count(
                self,
                count,
                f"pass `num_levels` to keep the first levels (`num_levels={levels}` builds all of "
                "them), or build a map with `manibo.kernels.feature_map(kernel, max_features=...)` "
                "or `random=True`.",
            )
        weights = self.level_weights(num_levels=num_levels)
        _, multiplicities = self.space.levels(weights.shape[-1])
        per_feature = torch.repeat_interleave(
            weights, multiplicities.to(torch.long).to(weights.device), dim=-1
        )
        phi = self.space.eigenfunctions(x, weights.shape[-1])
        return phi * per_feature.sqrt().unsqueeze(-2)


class GeometricHeatKernel(GeometricMaternKernel):
    r"""The heat (diffusion, squared-exponential) kernel.

    The kernel is :math:`\sum_l e^{-\ell^2\lambda_l/2} G_l / C`; on a non-compact space the
    constructor returns a :class:`~manibo.kernels.noncompact.NoncompactHeatKernel`.
    """

    _noncompact_class = NoncompactHeatKernel

    def __init__(self, space: CompactSpace, **kwargs) -> None:
        super().__init__(space, nu=math.inf, **kwargs)


def _classes(base: type) -> str:
    """The space classes of ``manibo.spaces`` derived from ``base``, for a message."""
    import manibo.spaces

    names = (
        name
        for name, value in vars(manibo.spaces).items()
        if isinstance(value, type) and issubclass(value, base) and value is not base
    )
    return ", ".join(sorted(names))


def _other_kernel(space: object) -> str:
    """Where the kernel of a space without a spectrum as a whole is, for a message."""
    if hasattr(space, "factors"):
        return (
            " A product with a non-compact factor (a Box, a hyperbolic space, ...) has no "
            "spectrum as a whole: build `manibo.kernels.matern_kernel(space)` (a product of its "
            "factors' kernels, which the 'matern' and 'heat' surrogates use)."
        )
    from manibo.spaces.box import Box

    if isinstance(space, Box):
        return (
            " On a box use `manibo.kernels.matern_kernel(space)` (a BoxMaternKernel, one "
            "lengthscale per coordinate)."
        )
    return ""
