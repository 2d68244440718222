"""Euclidean baselines.

A Matérn-5/2 GP on ambient coordinates, and one on a global chart (latitude/longitude).
"""

from __future__ import annotations

from gpytorch.kernels import Kernel, MaternKernel
from torch import Tensor

from manibo.models.exact_gp import exact_gp
from manibo.models.registry import register_surrogate
from manibo.spaces.base import Space


class ChartKernel(Kernel):
    """A Euclidean kernel applied to chart coordinates: ``k(x, x') = base(chart(x), chart(x'))``.

    Args:
        space: a space with a ``chart`` (spheres: hyperspherical angles; circles and tori: angles).
        base: kernel on chart coordinates, e.g. ``MaternKernel(nu=2.5, ard_num_dims=k)``.
    """

    def __init__(self, space: Space, base: Kernel) -> None:
        super().__init__()
        self.space = space
        self.base = base

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params) -> Tensor:
        return self.base.forward(self.space.chart(x1), self.space.chart(x2), diag=diag, **params)


def _ambient_dim(train_X: Tensor, space: Space) -> int:
    return train_X.shape[-1] if len(space.point_shape) == 1 else int(train_X[0].numel())


def _indices_not_coordinates(space: Space) -> str | None:
    if not space.is_discrete:
        return None
    return (
        f"the 'euclidean' surrogate needs coordinates, but the points of {space} are indices; "
        "use 'chart' (a Matérn GP on the vertices' positions, where the space has them) or "
        "a geometric surrogate ('matern', 'heat')."
    )


@register_surrogate("euclidean", unsupported=_indices_not_coordinates)
def ambient_matern_gp(space, train_X, train_Y, **options):
    """Matérn-5/2 ARD GP on the ambient coordinates (defined off the space as well); finite
    spaces are refused (their points are indices, not coordinates)."""
    kernel = MaternKernel(nu=2.5, ard_num_dims=_ambient_dim(train_X, space))
    return exact_gp(space, train_X, train_Y, kernel, **options)


@register_surrogate("chart")
def chart_matern_gp(space, train_X, train_Y, **options):
    """Matérn-5/2 ARD GP on chart coordinates (latitude/longitude on S²)."""
    k = space.chart(train_X[:1]).shape[-1]
    return exact_gp(
        space, train_X, train_Y, ChartKernel(space, MaternKernel(nu=2.5, ard_num_dims=k)), **options
    )
