r"""One feature-map protocol for every kernel that has one.

A :class:`FeatureMap` maps points ``(*batch, n, *point_shape)`` to features ``(*batch, n, M)``
with :math:`\Phi(x)\Phi(y)^\top = k(x, y)` (``exact``: eigenfunction maps, equal to the kernel
truncated to the levels it uses) or :math:`\mathbb E[\Phi(x)\Phi(y)^\top] = k(x, y)` (random
maps, whose randomness is drawn once, at construction, from a seed). :func:`feature_map` builds
the map of a kernel:

* kernels with a ``feature_map(x)`` method (:class:`~manibo.kernels.GeometricMaternKernel` on
  spaces with explicit eigenfunctions, :class:`~manibo.kernels.ZonalKernel`,
  :class:`~manibo.kernels.HomogeneousLiftKernel`, and the random-phase
  :class:`~manibo.kernels.NoncompactMaternKernel`) use it; the map reads the kernel's current
  hyperparameters at every call;
* :class:`~manibo.kernels.GeometricMaternKernel` on compact spaces without explicit eigenfunctions
  (rotation groups) gets random phases from the addition theorem,
  :math:`\Phi_{l,m}(x) = \sqrt{w_l/M}\, G_l(x, u_m)` with uniform points :math:`u_m`
  (unbiased because :math:`\int G_l(x, u) G_{l'}(u, y)\,du = \delta_{ll'} G_l(x, y)`);
* ``ScaleKernel`` multiplies a map by :math:`\sqrt{\sigma^2}`, and
  :class:`~manibo.kernels.FactorProductKernel` takes the row-wise Kronecker (Khatri–Rao) product
  of its factors' maps.
"""

from __future__ import annotations

import torch
from gpytorch.kernels import Kernel, ScaleKernel
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.kernels.product import FactorProductKernel
from manibo.kernels.spectral import GeometricMaternKernel


class FeatureMap(torch.nn.Module):
    r"""A feature map :math:`\Phi` of a kernel.

    Attributes:
        exact: True when :math:`\Phi\Phi^\top` equals the kernel, False when it equals it in
            expectation over the map's seeded randomness.
    """

    exact: bool

    def forward(self, x: Tensor) -> Tensor:
        """Features of points ``x`` ``(*batch, n, *point_shape)``; returns ``(*batch, n, M)``."""
        raise NotImplementedError

    def gram(self, x1: Tensor, x2: Tensor | None = None) -> Tensor:
        r""":math:`\Phi(x_1)\Phi(x_2)^\top`, shape ``(*batch, n, m)``."""
        phi1 = self(x1)
        phi2 = phi1 if x2 is None else self(x2)
        return phi1 @ phi2.transpose(-1, -2)


class KernelFeatureMap(FeatureMap):
    """The features of a kernel's own ``feature_map(x)`` method.

    Args:
        kernel: a kernel with ``feature_map``; it is shared, not copied.
    """

    def __init__(self, kernel: Kernel) -> None:
        super().__init__()
        self.kernel = kernel
        self.exact = bool(getattr(kernel, "feature_map_exact", True))

    def forward(self, x: Tensor) -> Tensor:
        return self.kernel.feature_map(x)


class AdditionTheoremFeatureMap(FeatureMap):
    r"""Random phases :math:`\Phi_{l,m}(x) = \sqrt{w_l / M}\, G_l(x, u_m)` of a compact-space
    :class:`~manibo.kernels.GeometricMaternKernel` (``L * M`` features, level-major).

    Args:
        kernel: the kernel (shared; its current levels and weights are used at every call).
        num_points: ``M``, uniform points :math:`u_m` of the space drawn once.
        seed: seed of the points.
    """

    def __init__(self, kernel: GeometricMaternKernel, num_points: int, seed: int = 0) -> None:
        super().__init__()
        if isinstance(num_points, bool) or int(num_points) != num_points or num_points < 1:
            raise ConfigurationError(f"`num_points` must be an integer >= 1, got {num_points!r}.")
        self.kernel = kernel
        self.exact = False
        generator = torch.Generator().manual_seed(int(seed))
        points = kernel.space.random(int(num_points), generator=generator)
        self.register_buffer("points", points)

    def forward(self, x: Tensor) -> Tensor:
        self.kernel.space.check(x)
        weights = self.kernel.level_weights().to(x)  # (*batch_shape, L)
        levels = weights.shape[-1]
        batch_dims = x.dim() - 1 - len(self.kernel.space.point_shape)
        one_hot = torch.eye(levels, dtype=x.dtype, device=x.device)
        one_hot = one_hot.reshape(levels, *([1] * batch_dims), levels)
        per_level = self.kernel.space.spectral_sum(one_hot, x, self.points.to(x))  # (L, *b, n, M)
        scale = (weights / self.points.shape[0]).sqrt()  # (*batch_shape, L)
        scaled = per_level.movedim(0, -2) * scale.unsqueeze(-2).unsqueeze(-1)
        return scaled.flatten(-2)


class ScaledFeatureMap(FeatureMap):
    r""":math:`\sqrt{\sigma^2}\,\Phi` for a ``ScaleKernel`` with outputscale :math:`\sigma^2`."""

    def __init__(self, scale_kernel: ScaleKernel, base: FeatureMap) -> None:
        super().__init__()
        self.scale_kernel = scale_kernel
        self.base = base
        self.exact = base.exact

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

    def forward(self, x: Tensor) -> Tensor:
        out = None
        for factor, part in zip(self.factors, self.slices, strict=True):
            phi = factor(x[..., part])
            out = phi if out is None else (out.unsqueeze(-1) * phi.unsqueeze(-2)).flatten(-2)
        return out


def feature_map(
    kernel: Kernel, num_points: int = 1024, seed: int = 0, random: bool | None = None
) -> FeatureMap:
    """The feature map of ``kernel``: exact where it has explicit eigenfunctions, random else.

    An exact map has one feature per eigenfunction of the levels the kernel uses (on SO(3) at
    59 levels that is 280 840); ``random=True`` trades it for ``num_points`` random phases.

    Args:
        kernel: a manibo kernel, optionally in ``ScaleKernel`` and
            :class:`~manibo.kernels.FactorProductKernel`.
        num_points: uniform points of the random maps built here (compact spaces without
            explicit eigenfunctions, or ``random=True``); a non-compact kernel's phases are its
            own (``num_phases``).
        seed: seed of those points (each factor of a product gets ``seed + i``).
        random: for a compact-space :class:`~manibo.kernels.GeometricMaternKernel`, force the
            random (True) or the eigenfunction (False) map; None picks the eigenfunctions when the
            space has them.

    Returns:
        A :class:`FeatureMap` that shares the kernel's hyperparameters.

    Raises:
        ConfigurationError: the kernel has no feature map.
    """
    if isinstance(kernel, ScaleKernel):
        return ScaledFeatureMap(kernel, feature_map(kernel.base_kernel, num_points, seed, random))
    if isinstance(kernel, FactorProductKernel):
        factors = [
            feature_map(k, num_points, seed + i, random)
            for i, k in enumerate(kernel.factor_kernels)
        ]
        return ProductFeatureMap(kernel, factors)
    if isinstance(kernel, GeometricMaternKernel):
        if random is None:
            random = not kernel.space.has_eigenfunctions
        if random:
            return AdditionTheoremFeatureMap(kernel, num_points, seed)
    if callable(getattr(kernel, "feature_map", None)):
        return KernelFeatureMap(kernel)
    raise ConfigurationError(
        f"{type(kernel).__name__} has no feature map; feature maps exist for "
        "GeometricMaternKernel, ZonalKernel (ArcCosineKernel, ChordalMaternKernel), "
        "HomogeneousLiftKernel, NoncompactMaternKernel, and ScaleKernel or FactorProductKernel "
        "of these."
    )
