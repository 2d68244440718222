r"""One feature-map protocol for every kernel that has one.

A :class:`FeatureMap` maps points ``(*batch, n, *point_shape)`` to features ``(*batch, n, M)``
with :math:`\Phi(x)\Phi(y)^\top = k(x, y)` (``exact``: eigenfunction maps, equal to the kernel
truncated to the levels they use) or :math:`\mathbb E[\Phi(x)\Phi(y)^\top] = k(x, y)` (random
maps, whose randomness is drawn once, at construction, from a seed, on the CPU, and then moved to
the kernel's device). :func:`feature_map` builds the map of a kernel:

* :class:`KernelFeatureMap`: a kernel's own ``feature_map(x)`` method, optionally capped at whole
  levels (:class:`~manibo.kernels.GeometricMaternKernel` on spaces with explicit eigenfunctions,
  :class:`~manibo.kernels.ZonalKernel`, :class:`~manibo.kernels.HomogeneousLiftKernel`, exact;
  the random-phase :class:`~manibo.kernels.NoncompactMaternKernel` on hyperbolic and SPD spaces);
* :class:`AdditionTheoremFeatureMap`: random phases
  :math:`\Phi_{l,m}(x) = \sqrt{w_l/M}\, G_l(x, u_m)` with uniform points :math:`u_m` (unbiased
  because :math:`\int G_l(x, u) G_{l'}(u, y)\,du = \delta_{ll'} G_l(x, y)`), for a
  :class:`~manibo.kernels.GeometricMaternKernel` on a compact space without explicit
  eigenfunctions (rotation and unitary groups), or on request for any compact-space or zonal
  kernel; the points may be trained (kept on the space by ``space.project``; fixed on graphs and
  meshes);
* :class:`~manibo.kernels.fourier_features.RandomFourierFeatureMap`: random Fourier features of
  GPyTorch's ``RBFKernel`` and ``MaternKernel`` (ARD or not) and of
  :class:`~manibo.kernels.BoxMaternKernel`;
* :class:`ScaledFeatureMap` multiplies a map by :math:`\sqrt{\sigma^2}` for a ``ScaleKernel``, and
  :class:`ProductFeatureMap` takes the row-wise Kronecker (Khatri–Rao) product of the maps of a
  :class:`~manibo.kernels.FactorProductKernel`'s factors.

A map shares its kernel's hyperparameters and reads them at every call; ``detach=True`` builds it on
a frozen copy of the kernel instead, so that training the map never moves the kernel and fitting
the kernel never moves the map. :class:`~manibo.models.vish.VISHFeatures` (the harmonics of a
VISH model, with a streaming path that never forms them on the data) is a :class:`FeatureMap` too.

Consumers: the GPNet inference networks (:func:`~manibo.models.gpnet.build_network`: harmonic,
random-phase and random-Fourier networks) build their features with :func:`feature_map`; the VISH
models use :class:`~manibo.models.vish.VISHFeatures`.
"""

from __future__ import annotations

import copy

import torch
from gpytorch.kernels import Kernel, MaternKernel, RBFKernel, ScaleKernel
from torch import Tensor

from manibo._validation import check_int
from manibo.exceptions import ConfigurationError
from manibo.harmonics.gegenbauer import harmonic_dimension
from manibo.kernels.box import BoxMaternKernel
from manibo.kernels.feature_protocol import (
    FeatureMap,
    check_feature_count,
    module_dtype_device,
    point_generator,
    seeded_generator,
)
from manibo.kernels.fourier_features import RandomFourierFeatureMap
from manibo.kernels.homogeneous import HomogeneousLiftKernel
from manibo.kernels.product import FactorProductKernel
from manibo.kernels.spectral import GeometricMaternKernel
from manibo.kernels.zonal import ZonalKernel
from manibo.spaces.base import CompactSpace


def levels_within(multiplicities: list[float], max_features: int) -> int:
    """The largest ``L >= 1`` whose first ``L`` multiplicities sum to at most ``max_features``."""
    total, levels = 0, 0
    for m in multiplicities:
        if total + m > max_features:
            break
        total, levels = total + m, levels + 1
    return max(levels, 1)


def _multiplicities(kernel: Kernel) -> list[float] | None:
    """Eigenfunctions per level of the levels ``kernel`` uses at its current lengthscale (a
    :class:`~manibo.kernels.ZonalKernel`: its ``num_levels``); None for a kernel without levels."""
    zonal = kernel.base_kernel if isinstance(kernel, HomogeneousLiftKernel) else kernel
    if isinstance(zonal, GeometricMaternKernel):
        wanted = zonal.levels_for(zonal.lengthscale, warn=False)
        return zonal.space.levels(wanted)[1].tolist()
    if isinstance(zonal, ZonalKernel):
        d = zonal.sphere.dim + 1
        return [harmonic_dimension(d, n) for n in range(zonal.num_levels)]
    return None


def capped_levels(kernel: Kernel, max_features: int) -> int:
    """Whole levels, in order, whose eigenfunctions number at most ``max_features`` (at least one).

    A :class:`~manibo.kernels.GeometricMaternKernel` keeps at most the levels it uses at its
    current lengthscale, a :class:`~manibo.kernels.ZonalKernel` (or the one inside a
    :class:`~manibo.kernels.HomogeneousLiftKernel`) at most its ``num_levels``.

    Args:
        kernel: the kernel.
        max_features: the feature budget, ``>= 1``.

    Raises:
        ConfigurationError: the kernel has no levels of eigenfunctions.
    """
    max_features = check_int("max_features", max_features, minimum=1)
    multiplicities = _multiplicities(kernel)
    if multiplicities is None:
        raise ConfigurationError(
            "`max_features` caps eigenfunction maps: a GeometricMaternKernel on a compact space, "
            f"a ZonalKernel or a HomogeneousLiftKernel, got {type(kernel).__name__}."
        )
    return levels_within(multiplicities, max_features)


def _probe_point(kernel: Kernel) -> Tensor:
    """One input of ``kernel``, the same on every device (drawn on the CPU, then moved)."""
    dtype, device = module_dtype_device(kernel)
    space = getattr(kernel, "space", None) or getattr(kernel, "sphere", None)
    if space is None:  # a HomogeneousLiftKernel: inputs in R^D
        return torch.zeros(1, kernel.input_dim, dtype=dtype, device=device)
    point = space.random(1, generator=seeded_generator(0), dtype=dtype)
    return point.to(device)


class KernelFeatureMap(FeatureMap):
    """The features of a kernel's own ``feature_map(x)`` method.

    Args:
        kernel: a kernel with ``feature_map``; it is shared, not copied.
        num_levels: for an eigenfunction map, use the kernel truncated to its first ``L`` levels
            (a :class:`~manibo.kernels.GeometricMaternKernel` renormalises its weights over them);
            default: the levels the kernel uses.
    """

    def __init__(self, kernel: Kernel, num_levels: int | None = None) -> None:
        super().__init__()
        self.kernel = kernel
        self.num_levels = None if num_levels is None else check_int("num_levels", num_levels, 1)
        self.exact = bool(getattr(kernel, "feature_map_exact", True))

    def forward(self, x: Tensor) -> Tensor:
        if self.num_levels is None:
            return self.kernel.feature_map(x)
        return self.kernel.feature_map(x, num_levels=self.num_levels)

    @property
    def num_features(self) -> int:
        """``M``, counted on one probe point."""
        with torch.no_grad():
            return int(self(_probe_point(self.kernel)).shape[-1])


def _weighted_space(kernel: GeometricMaternKernel | ZonalKernel) -> CompactSpace:
    return kernel.space if isinstance(kernel, GeometricMaternKernel) else kernel.sphere


class AdditionTheoremFeatureMap(FeatureMap):
    r"""Random phases :math:`\Phi_{l,m}(x) = \sqrt{w_l / M}\, G_l(x, u_m)` of a compact-space kernel
    (``L * M`` features, level-major).

    :math:`G_l` is the reproducing kernel of level :math:`l`, evaluated by the space's
    ``spectral_sum``, so no explicit eigenfunctions are needed.

    Args:
        kernel: a :class:`~manibo.kernels.GeometricMaternKernel` on a compact space (weights
            :math:`w_l` its normalised level weights) or a :class:`~manibo.kernels.ZonalKernel`
            (its Funk–Hecke eigenvalues, clipped at 0); shared, its current levels and weights are
            used at every call.
        num_points: ``M``, uniform points :math:`u_m` of the space drawn once.
        seed: seed of the points, drawn with
            :func:`~manibo.kernels.feature_protocol.point_generator` (a hash of the seed), so never
            the points ``space.random(M, generator=seed)``.
        trainable: make the points a parameter (kept on the space by ``space.project``); points
            of discrete spaces (graphs, meshes) stay fixed.
    """

    def __init__(
        self,
        kernel: GeometricMaternKernel | ZonalKernel,
        num_points: int,
        seed: int = 0,
        trainable: bool = False,
    ) -> None:
        super().__init__()
        if not isinstance(kernel, (GeometricMaternKernel, ZonalKernel)):
            raise ConfigurationError(
                "addition-theorem features need a GeometricMaternKernel on a compact space or a "
                f"ZonalKernel, got {type(kernel).__name__}."
            )
        num_points = check_int("num_points", num_points, minimum=1)
        self.kernel = kernel
        self.space = _weighted_space(kernel)
        self.exact = False
        dtype, device = module_dtype_device(kernel)
        points = self.space.random(num_points, generator=point_generator(seed), dtype=dtype)
        points = points.to(device)
        self.trainable = bool(trainable) and not self.space.is_discrete
        if self.trainable:
            self.raw_points = torch.nn.Parameter(points)
        else:
            self.register_buffer("raw_points", points)

    @property
    def points(self) -> Tensor:
        """The points :math:`u_m` on the space, shape ``(M, *point_shape)``."""
        return self.space.project(self.raw_points) if self.trainable else self.raw_points

    def level_weights(self) -> Tensor:
        r"""Weights :math:`w_l` at the kernel's current hyperparameters, ``(*batch_shape, L)``."""
        if isinstance(self.kernel, GeometricMaternKernel):
            return self.kernel.level_weights()
        return self.kernel.eigenvalues().clamp_min(0)

    @property
    def num_features(self) -> int:
        """``L * M``."""
        with torch.no_grad():
            return self.level_weights().shape[-1] * self.raw_points.shape[0]

    def forward(self, x: Tensor) -> Tensor:
        self.space.check(x, "x")
        weights = self.level_weights().to(x)  # (*batch_shape, L)
        levels = weights.shape[-1]
        batch_dims = x.dim() - 1 - len(self.space.point_shape)
        one_hot = torch.eye(levels, dtype=x.dtype, device=x.device)
        one_hot = one_hot.reshape(levels, *([1] * batch_dims), levels)
        points = self.points.to(x)
        per_level = self.space.spectral_sum(one_hot, x, points)  # (L, *batch, n, M)
        scale = (weights / points.shape[0]).sqrt()  # (*batch_shape, L)
        scaled = per_level.movedim(0, -2) * scale.unsqueeze(-2).unsqueeze(-1)
        return scaled.flatten(-2)


class ScaledFeatureMap(FeatureMap):
    r""":math:`\sqrt{\sigma^2}\,\Phi` for a ``ScaleKernel`` with outputscale :math:`\sigma^2`."""

    def __init__(self, scale_kernel: ScaleKernel, base: FeatureMap) -> None:
        super().__init__()
        self.scale_kernel = scale_kernel
        self.base = base
        self.exact = base.exact

    @property
    def num_features(self) -> int:
        """The base map's ``M``."""
        return self.base.num_features

    def forward(self, x: Tensor) -> Tensor:
        scale = self.scale_kernel.outputscale.to(x).sqrt()
        return scale.reshape(*scale.shape, 1, 1) * self.base(x)


class ProductFeatureMap(FeatureMap):
    r"""Row-wise Kronecker product of per-factor maps, for a
    :class:`~manibo.kernels.FactorProductKernel` (``M`` is the product of the factors' sizes).

    Random factor maps are independent, so the product is unbiased for the product kernel.
    """

    def __init__(self, kernel: FactorProductKernel, factors: list[FeatureMap]) -> None:
        super().__init__()
        self.slices = kernel.space.slices
        self.factors = torch.nn.ModuleList(factors)
        self.exact = all(f.exact for f in factors)

    @property
    def num_features(self) -> int:
        """The product of the factors' ``M``."""
        count = 1
        for factor in self.factors:
            count *= factor.num_features
        return count

    def forward(self, x: Tensor) -> Tensor:
        out = None
        for factor, part in zip(self.factors, self.slices, strict=True):
            phi = factor(x[..., part])
            out = phi if out is None else (out.unsqueeze(-1) * phi.unsqueeze(-2)).flatten(-2)
        return out


def feature_map(
    kernel: Kernel,
    num_points: int = 1024,
    seed: int = 0,
    random: bool | None = None,
    *,
    max_features: int | None = None,
    trainable: bool = False,
    detach: bool = False,
    input_dim: int | None = None,
) -> FeatureMap:
    """The feature map of ``kernel``: exact where it has explicit eigenfunctions, random else.

    An exact map has one feature per eigenfunction of the levels the kernel uses (on SO(3) at
    59 levels that is 280 840); ``max_features`` keeps whole levels up to a budget, and
    ``random=True`` trades the eigenfunctions for ``num_points`` random phases per level. Without
    ``max_features``, an eigenfunction map of more than
    :data:`~manibo.kernels.feature_protocol.DEFAULT_MAX_FEATURES` features is refused before
    anything is computed (pass ``max_features`` at least the count to build it).

    Args:
        kernel: a manibo kernel, GPyTorch's ``RBFKernel`` or ``MaternKernel``, optionally in
            ``ScaleKernel`` and :class:`~manibo.kernels.FactorProductKernel`.
        num_points: uniform points of the random maps built here (compact spaces without
            explicit eigenfunctions, or ``random=True``), or the frequencies ``H`` of random
            Fourier features (``2H`` features); a non-compact kernel's phases are its own
            (``num_phases``).
        seed: seed of those draws (each factor of a product gets ``seed + i``); random points
            on a space come from a hash of it
            (:func:`~manibo.kernels.feature_protocol.point_generator`), so they are never the points
            ``space.random(n, generator=seed)`` of the loop's initial design.
        random: for a compact-space :class:`~manibo.kernels.GeometricMaternKernel` or a
            :class:`~manibo.kernels.ZonalKernel`, force the random (True) or the eigenfunction
            (False) map; None picks the eigenfunctions when the space has them.
        max_features: cap an eigenfunction map at the whole levels, in order, whose
            eigenfunctions number at most this (:func:`capped_levels`; the level count is fixed
            here, the weights follow the kernel). None: all the levels the kernel uses, at most
            :data:`~manibo.kernels.feature_protocol.DEFAULT_MAX_FEATURES` features (the level
            count then follows the kernel).
        trainable: make the random draws parameters: the points of addition-theorem maps on
            continuous spaces, the frequencies and lengthscale of random Fourier features (see
            :class:`~manibo.kernels.fourier_features.RandomFourierFeatureMap`).
        detach: build the map on a deep copy of the kernel whose hyperparameters are frozen
            (``requires_grad=False``): the map keeps the kernel's current values and never shares
            a tensor with it.
        input_dim: ``D`` of an RBF or Matérn kernel without ``ard_num_dims``.

    Returns:
        A :class:`FeatureMap` (sharing the kernel's hyperparameters unless ``detach``).

    Raises:
        ConfigurationError: the kernel has no feature map, ``max_features`` was given for a
            map without levels, or an eigenfunction map without ``max_features`` would have more
            than :data:`~manibo.kernels.feature_protocol.DEFAULT_MAX_FEATURES` features.
    """
    if detach:
        kernel = copy.deepcopy(kernel)
        kernel.requires_grad_(False)
    options = {"max_features": max_features, "trainable": trainable, "input_dim": input_dim}
    return _build(kernel, num_points, seed, random, **options)


def _build(
    kernel: Kernel,
    num_points: int,
    seed: int,
    random: bool | None,
    max_features: int | None,
    trainable: bool,
    input_dim: int | None,
) -> FeatureMap:
    options = {"max_features": max_features, "trainable": trainable, "input_dim": input_dim}
    if isinstance(kernel, ScaleKernel):
        base = _build(kernel.base_kernel, num_points, seed, random, **options)
        return ScaledFeatureMap(kernel, base)
    if isinstance(kernel, FactorProductKernel):
        if max_features is not None:
            raise ConfigurationError(
                "`max_features` caps one eigenfunction map; a FactorProductKernel's map is a "
                "product of its factors' maps (build them with feature_map and ProductFeatureMap)."
            )
        factors = [
            _build(k, num_points, seed + i, random, **options)
            for i, k in enumerate(kernel.factor_kernels)
        ]
        return ProductFeatureMap(kernel, factors)
    if isinstance(kernel, (RBFKernel, MaternKernel, BoxMaternKernel)):
        _refuse_cap(kernel, max_features)
        return RandomFourierFeatureMap(kernel, num_points, seed, input_dim, trainable)
    if isinstance(kernel, (GeometricMaternKernel, ZonalKernel)):
        if random is None:
            random = (
                isinstance(kernel, GeometricMaternKernel) and not kernel.space.has_eigenfunctions
            )
        if random:
            _refuse_cap(kernel, max_features)
            return AdditionTheoremFeatureMap(kernel, num_points, seed, trainable)
    if callable(getattr(kernel, "feature_map", None)):
        if max_features is None:
            _refuse_large(kernel)
            return KernelFeatureMap(kernel)
        return KernelFeatureMap(kernel, capped_levels(kernel, max_features))
    raise ConfigurationError(
        f"{type(kernel).__name__} has no feature map; feature maps exist for "
        "GeometricMaternKernel, ZonalKernel (ArcCosineKernel, ChordalMaternKernel), "
        "HomogeneousLiftKernel, NoncompactMaternKernel, RBFKernel, MaternKernel, "
        "BoxMaternKernel, and ScaleKernel or FactorProductKernel of these."
    )


def _refuse_cap(kernel: Kernel, max_features: int | None) -> None:
    if max_features is not None:
        raise ConfigurationError(
            f"`max_features` caps eigenfunction maps; the map of {type(kernel).__name__} here is "
            "random: set its size with `num_points`."
        )


def _refuse_large(kernel: Kernel) -> None:
    multiplicities = _multiplicities(kernel)
    count = 0 if multiplicities is None else int(sum(multiplicities))
    check_feature_count(
        kernel,
        count,
        "pass `max_features` to keep whole levels up to a budget "
        f"(`max_features={count}` builds all of them), or `random=True` for `num_points` "
        "random phases per level.",
    )
