r"""VISH features: the spherical harmonics of a level set, at points on :math:`S^{d-1}` or at
inputs in :math:`\mathbb R^D` lifted onto :math:`S^D` (homogeneous extension with a bias).

The feature of a point is :math:`\phi(x) = r(x)\, Y(z(x)) \in \mathbb R^M`: on the sphere
:math:`r = 1, z = x`; in :math:`\mathbb R^D`, :math:`\tilde x = [(x - c)/\ell, b]`, :math:`r =
\|\tilde x\|` and :math:`z = \tilde x / r` (:class:`~manibo.kernels.HomogeneousLiftKernel`, applied
to inputs centred at a fixed offset :math:`c`). The harmonics are never formed on the data: the
streaming passes work with the *zonal* features :math:`r P_n(z \cdot v_i)`
(:func:`~manibo.harmonics.zonal_features`), which span the same space, and map the sums to harmonic
coordinates once with the block-diagonal :math:`W` (:func:`~manibo.harmonics.harmonic_transform`),
:math:`\phi = r Z W`. That saves the :math:`\sum_n N(d,n)^2` multiply-adds per point that forming
:math:`Y` would cost.

:class:`VISHFeatures` is a :class:`~manibo.kernels.FeatureMap` (exact): called on inputs it returns
:math:`\phi`, whose Gram matrix :math:`\phi(x)\phi(y)^\top = r r' \sum_{n} N(d, n) P_n(z \cdot z')`
is the zonal kernel with unit eigenvalue on each level of the set (the prior weights the levels
separately, :meth:`~manibo.models.vish.VISHPrior.scale`).
"""

from __future__ import annotations

import torch
from torch import Tensor

from manibo._validation import as_tensor_arg, check_finite, check_trailing_shape
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.harmonics.gegenbauer import harmonic_dimension
from manibo.harmonics.spherical_harmonics import harmonic_transform, zonal_features
from manibo.kernels.feature_protocol import FeatureMap
from manibo.kernels.homogeneous import HomogeneousLiftKernel
from manibo.spaces.sphere import Sphere


class VISHFeatures(FeatureMap):
    r"""Fixed harmonic features of a level set, for sphere data or lifted Euclidean data.

    Args:
        d: ambient dimension of the sphere the features live on (``D + 1`` for lifted data).
        levels: strictly increasing degrees (see
            :meth:`~manibo.models.vish.spectrum.ZonalSpectrum.select_levels`).
        lift: for inputs in :math:`\mathbb R^D`, the :class:`~manibo.kernels.HomogeneousLiftKernel`
            whose lengthscale and bias define the lift (``D = d - 1``); None for points on
            :math:`S^{d-1}`. The features are fixed only while these parameters are.
        offset: the centre :math:`c` subtracted from lifted inputs, shape ``(D,)``; zeros by
            default.
    """

    def __init__(
        self,
        d: int,
        levels: tuple[int, ...],
        lift: HomogeneousLiftKernel | None = None,
        offset: Tensor | None = None,
    ) -> None:
        super().__init__()
        self.exact = True
        if lift is not None and lift.input_dim + 1 != d:
            raise ConfigurationError(
                f"the lift maps R^{lift.input_dim} to S^{lift.input_dim} in "
                f"R^{lift.input_dim + 1}, "
                f"but the features live in R^{d}."
            )
        self.d = int(d)
        self.levels = tuple(int(n) for n in levels)
        self.sizes = [harmonic_dimension(self.d, n) for n in self.levels]
        self.lift = lift
        self.register_buffer("transform", harmonic_transform(self.d, self.levels))
        index = torch.repeat_interleave(torch.tensor(self.levels), torch.tensor(self.sizes))
        self.register_buffer("level_index", index, persistent=False)
        if lift is not None:
            offset = torch.zeros(d - 1, dtype=torch.float64) if offset is None else offset
            self.register_buffer("offset", torch.as_tensor(offset, dtype=torch.float64).clone())
        else:
            self.offset = None

    @property
    def num_features(self) -> int:
        """``M``, the number of harmonics."""
        return sum(self.sizes)

    @property
    def input_dim(self) -> int:
        """Trailing size of an input: ``d`` on the sphere, ``d - 1`` for lifted data."""
        return self.d if self.lift is None else self.d - 1

    def check_inputs(self, name: str, X: Tensor) -> None:
        """Raise :class:`~manibo.exceptions.InputDataError` unless ``X`` is ``(*batch, n,
        input_dim)`` and finite (and on the sphere for sphere data)."""
        as_tensor_arg(name, X)
        if X.dim() < 2:
            raise InputDataError(
                f"`{name}` must have shape (*batch, n, {self.input_dim}), got {tuple(X.shape)}."
            )
        if self.lift is None:
            Sphere(self.d - 1).check(X, name)
        else:
            check_trailing_shape(name, X, (self.input_dim,), f"R^{self.input_dim}")
            check_finite(name, X)

    def radius_direction(self, X: Tensor) -> tuple[Tensor, Tensor]:
        r"""Radius :math:`r` ``(*batch, n)`` and direction :math:`z` ``(*batch, n, d)`` of inputs
        ``X``.

        The lift runs in the lift kernel's dtype; the results take ``X``'s dtype.
        """
        if self.lift is None:
            return X.new_ones(X.shape[:-1]), X
        dtype = self.offset.dtype
        radius, direction = self.lift.lift(X.to(dtype) - self.offset)
        return radius.to(X.dtype), direction.to(X.dtype)

    def zonal(self, X: Tensor, dtype: torch.dtype | None = None) -> Tensor:
        r"""Radius-scaled zonal features :math:`r\, P_n(z \cdot v_i)`, computed in ``dtype``.

        Args:
            X: inputs, shape ``(*batch, n, input_dim)``.
            dtype: compute dtype (default ``X.dtype``).

        Returns:
            Shape ``(*batch, n, M)`` in ``dtype`` (without autograd, in the feature-major storage
            of :func:`~manibo.harmonics.zonal_features`).
        """
        return self.zonal_and_radius(X, dtype)[0]

    def zonal_and_radius(
        self, X: Tensor, dtype: torch.dtype | None = None
    ) -> tuple[Tensor, Tensor]:
        r"""The zonal features of :meth:`zonal` and the radius :math:`r`, from one lift.

        Args:
            X: inputs, shape ``(*batch, n, input_dim)``.
            dtype: compute dtype of the features (default ``X.dtype``).

        Returns:
            Features of shape ``(*batch, n, M)`` in ``dtype`` and the radius ``(*batch, n)`` in
            ``X``'s dtype.
        """
        radius, direction = self.radius_direction(X)
        dtype = dtype or X.dtype
        Z = zonal_features(direction.to(dtype), self.levels)
        scale = radius.to(dtype).unsqueeze(-1)
        if Z.requires_grad or scale.requires_grad:
            return Z * scale, radius
        return Z.mul_(scale), radius  # Z is a fresh tensor: scale it in place

    def harmonics(self, X: Tensor) -> Tensor:
        r"""Features :math:`\phi = r\, Y(z)` in harmonic coordinates, float64.

        Args:
            X: inputs, shape ``(*batch, n, input_dim)``.

        Returns:
            Shape ``(*batch, n, M)``, float64 (differentiable in ``X`` and in the lift).
        """
        return self.zonal(X, torch.float64) @ self.transform

    def forward(self, x: Tensor) -> Tensor:
        r"""The features :math:`\phi = r\, Y(z)` of :meth:`harmonics`, in ``x``'s dtype.

        Args:
            x: inputs, shape ``(*batch, n, input_dim)``.

        Returns:
            Shape ``(*batch, n, M)``.
        """
        self.check_inputs("x", x)
        return self.harmonics(x).to(x.dtype)
