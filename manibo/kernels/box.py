r"""Matérn kernels on a box: one lengthscale per coordinate, coordinates scaled to the unit cube."""

from __future__ import annotations

import math

import torch
from gpytorch.kernels import Kernel, MaternKernel, RBFKernel
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.kernels._batch import IndexesBatch
from manibo.kernels._inputs import (
    ChecksInputShape,
    check_point_pair,
    check_smoothness,
    reject_ard_num_dims,
    reject_last_dim_is_batch,
)
from manibo.spaces.box import Box

EUCLIDEAN_NUS = (0.5, 1.5, 2.5)


class BoxMaternKernel(ChecksInputShape, IndexesBatch, Kernel):
    r"""Matérn kernel with automatic relevance determination on a :class:`~manibo.spaces.box.Box`.

    Coordinates are first scaled to the unit cube, :math:`u = (x - a) / (b - a)`, so the
    lengthscales are fractions of the box's sides; then
    :math:`k(x, x') = k_\nu(\|(u - u') / \ell\|)` with one :math:`\ell` per coordinate, and
    :math:`k(x, x) = 1` (GPyTorch's ``MaternKernel``, or ``RBFKernel`` for :math:`\nu = \infty`).

    Args:
        space: the box.
        nu: 0.5, 1.5, 2.5, or ``math.inf``.
        **kwargs: passed to the GPyTorch kernel (``lengthscale_prior``, ``batch_shape``, ...).

    Inputs are points of ``space``, ``(*batch, n, D)``; the output is ``(*batch, n, m)``.
    """

    def __init__(self, space: Box, nu: float = 2.5, **kwargs) -> None:
        if not isinstance(space, Box):
            raise ConfigurationError(f"`space` must be a Box, got {type(space).__name__}.")
        nu = check_smoothness(nu, (*EUCLIDEAN_NUS, math.inf), " on a box")
        reject_ard_num_dims(type(self).__name__, kwargs, space.dim)
        super().__init__(batch_shape=kwargs.get("batch_shape", torch.Size()))
        self.space = space
        self.nu = nu
        kwargs = {"ard_num_dims": space.dim, **kwargs}
        self.base = RBFKernel(**kwargs) if math.isinf(nu) else MaternKernel(nu=nu, **kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.space!r}, nu={self.nu})"

    @property
    def lengthscale(self) -> Tensor:
        """Lengthscales in unit-cube coordinates, shape ``(*batch_shape, 1, D)``."""
        return self.base.lengthscale

    @lengthscale.setter
    def lengthscale(self, value) -> None:
        self.base.lengthscale = value

    def forward(
        self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params
    ) -> Tensor:
        reject_last_dim_is_batch(last_dim_is_batch)
        check_point_pair(self.space, x1, x2)
        lower, upper = self.space.lower.to(x1), self.space.upper.to(x1)
        scale = upper - lower
        return self.base.forward((x1 - lower) / scale, (x2 - lower) / scale, diag=diag)
