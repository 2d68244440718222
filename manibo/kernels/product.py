r"""Products of per-factor kernels on a product space, each seeing only its factor's coordinates."""

from __future__ import annotations

import torch
from gpytorch.kernels import Kernel
from linear_operator import to_dense
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.kernels._batch import IndexesBatch
from manibo.kernels._inputs import (
    ChecksInputShape,
    check_point_pair,
    reject_last_dim_is_batch,
)
from manibo.spaces.product import ProductSpace


class FactorProductKernel(ChecksInputShape, IndexesBatch, Kernel):
    r""":math:`k(x, x') = \prod_i k_i(x_i, x_i')`, one GPyTorch kernel per factor of a product.

    Each factor kernel has its own hyperparameters (one lengthscale per factor, like ARD) and is
    normalised on its own factor. For finite :math:`\nu` this is not the Matérn kernel of the
    product manifold, which is ``GeometricMaternKernel(space)``; for the heat kernel the two agree
    up to truncation.

    Args:
        space: the :class:`~manibo.spaces.product.ProductSpace`.
        factor_kernels: one kernel per factor, in the order of ``space.factors``; kernel ``i``
            receives points ``(*batch, n, size_i)`` of factor ``i``.
        **kwargs: passed to :class:`gpytorch.kernels.Kernel`.

    Inputs are points of ``space``, shape ``(*batch, n, size)``; the output is ``(*batch, n, m)``,
    or ``(*batch, n)`` with ``diag=True``, where ``batch`` also broadcasts the factor kernels' batch
    shapes.
    """

    def __init__(self, space: ProductSpace, factor_kernels: list[Kernel], **kwargs) -> None:
        if not isinstance(space, ProductSpace):
            raise ConfigurationError(
                f"`space` must be a ProductSpace (or Torus), got {type(space).__name__}."
            )
        factor_kernels = list(factor_kernels)
        if len(factor_kernels) != len(space.factors):
            raise ConfigurationError(
                f"`factor_kernels` must hold one kernel per factor of {space!r} "
                f"({len(space.factors)}), got {len(factor_kernels)}."
            )
        for i, (kernel, factor) in enumerate(zip(factor_kernels, space.factors, strict=True)):
            if not isinstance(kernel, Kernel):
                raise ConfigurationError(
                    f"`factor_kernels[{i}]` must be a gpytorch Kernel, got {type(kernel).__name__}."
                )
            own = getattr(kernel, "space", None)
            if own is not None and repr(own) != repr(factor):
                raise ConfigurationError(
                    f"`factor_kernels[{i}]` is a kernel on {own!r}, but factors[{i}] of {space!r} "
                    f"is {factor!r}."
                )
        shapes = [k.batch_shape for k in factor_kernels]
        kwargs.setdefault("batch_shape", torch.broadcast_shapes(*shapes))
        super().__init__(**kwargs)
        self.space = space
        self.factor_kernels = torch.nn.ModuleList(factor_kernels)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.space!r}, {list(self.factor_kernels)!r})"

    def forward(
        self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params
    ) -> Tensor:
        reject_last_dim_is_batch(last_dim_is_batch)
        check_point_pair(self.space, x1, x2)
        out = None
        for kernel, part in zip(self.factor_kernels, self.space.slices, strict=True):
            value = to_dense(kernel(x1[..., part], x2[..., part], diag=diag, **params))
            out = value if out is None else out * value
        return out
