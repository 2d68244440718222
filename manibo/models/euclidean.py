"""Euclidean baselines.

A Matérn-5/2 GP on ambient coordinates (through the space's embedding), and one on a global chart
(latitude/longitude). Both read a box's coordinates in units of its widths, as the geometric
kernels do: their lengthscale priors are of order 1.
"""

from __future__ import annotations

import torch
from gpytorch.kernels import Kernel, MaternKernel
from torch import Tensor

from manibo.kernels._inputs import ChecksInputShape
from manibo.models.exact_gp import CHECK_OPTIONS, exact_gp, validate_training_data
from manibo.models.inputs import indices_not_coordinates
from manibo.models.registry import register_surrogate
from manibo.spaces.base import Space
from manibo.spaces.box import Box
from manibo.spaces.product import ProductSpace


def box_scaling(space: Space, coordinates: str) -> tuple[Tensor, Tensor]:
    """``(offset, width)``, each ``(k,)``: the affine map ``(c - offset) / width`` that puts the
    coordinates of every box of ``space`` (alone or a factor of a product) in ``[0, 1]`` and leaves
    the other coordinates as they are; ``c = space.<coordinates>(x)`` (``"embed"`` or ``"chart"``,
    both the identity on a box).
    """
    if isinstance(space, Box):
        return space.lower.clone(), space.upper - space.lower
    if isinstance(space, ProductSpace):
        offsets, widths = zip(*(box_scaling(f, coordinates) for f in space.factors), strict=True)
        return torch.cat(offsets), torch.cat(widths)
    point = space.random(1, generator=torch.Generator().manual_seed(0))  # global RNG untouched
    k = getattr(space, coordinates)(point).shape[-1]
    return torch.zeros(k, dtype=torch.float64), torch.ones(k, dtype=torch.float64)


class CoordinateKernel(ChecksInputShape, Kernel):
    """A Euclidean kernel applied to coordinates of the points:
    ``k(x, x') = base(coordinates(x), coordinates(x'))``; subclasses say which coordinates, with
    a box's in units of its widths (:func:`box_scaling`).

    Args:
        space: the space of the inputs.
        base: kernel on the coordinates, e.g. ``MaternKernel(nu=2.5, ard_num_dims=k)``.
    """

    #: The space's method that gives the coordinates: ``"embed"`` or ``"chart"``.
    space_coordinates: str

    def __init__(self, space: Space, base: Kernel) -> None:
        super().__init__()
        self.space = space
        self.base = base
        offset, width = box_scaling(space, self.space_coordinates)
        self.register_buffer("box_offset", offset)
        self.register_buffer("box_width", width)

    def coordinates(self, x: Tensor) -> Tensor:
        """Coordinates of points ``(*batch, d)``: ``(*batch, k)``."""
        raw = getattr(self.space, self.space_coordinates)(x)
        return (raw - self.box_offset.to(raw)) / self.box_width.to(raw)

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params) -> Tensor:
        return self.base.forward(self.coordinates(x1), self.coordinates(x2), diag=diag, **params)


class ChartKernel(CoordinateKernel):
    """A Euclidean kernel applied to chart coordinates: ``k(x, x') = base(chart(x), chart(x'))``.

    Args:
        space: a space with a ``chart`` (spheres: hyperspherical angles; circles and tori: angles).
        base: kernel on chart coordinates, e.g. ``MaternKernel(nu=2.5, ard_num_dims=k)``.
    """

    space_coordinates = "chart"


class EmbeddingKernel(CoordinateKernel):
    """A Euclidean kernel applied to the space's embedding: ``k(x, x') = base(embed(x),
    embed(x'))`` (:meth:`~manibo.spaces.base.Space.embed`: the ambient coordinates, a circle's
    angle as its cosine and sine, an axis of RP^d as ``x xᵀ``).

    Args:
        space: the space of the inputs.
        base: kernel on the embedded coordinates, e.g. ``MaternKernel(nu=2.5, ard_num_dims=E)``.
    """

    space_coordinates = "embed"


def _indices_not_coordinates(space: Space) -> str | None:
    geometric = "a geometric surrogate: 'matern' (the default) or 'heat'"
    advice = (
        f"use {geometric}."
        if _no_global_chart(space)
        else f"use {geometric}, or 'chart' (a Matérn GP on the vertices' positions)."
    )
    return indices_not_coordinates("euclidean", space, advice)


def _no_global_chart(space: Space) -> str | None:
    """Why the 'chart' surrogate cannot model ``space``: the space, or one of its factors, has no
    global chart (a graph's nodes, SO(n) for n > 3); None where :meth:`~Space.chart` answers."""
    point = space.random(1, generator=torch.Generator().manual_seed(0))  # global RNG untouched
    try:
        space.chart(point)
    except NotImplementedError as error:  # UnsupportedError, or a space of the user's own
        advice = (
            "'matern' (the default) models every space of manibo.spaces"
            if type(space).__module__.startswith("manibo.")
            else "'matern' (the default) models a space of your own once a kernel is registered "
            "for it with `@manibo.kernels.matern_kernel.register`"
        )
        return (
            f"the 'chart' surrogate reads coordinates in a global chart, but {space!r} has none "
            f"({str(error).rstrip('.')}); choose another surrogate: {advice}."
        )
    return None


@register_surrogate("euclidean", unsupported=_indices_not_coordinates, check_options=CHECK_OPTIONS)
def ambient_matern_gp(space, train_X, train_Y, **options):
    """Matérn-5/2 ARD GP on the ambient coordinates through the space's embedding (defined off
    the space as well; a torus's angles enter as cosines and sines, an axis ``±x`` of RP^d as
    ``x xᵀ``, so that one point is one input); finite spaces are refused (their points are
    indices, not coordinates). The ``options`` go to :func:`~manibo.models.exact_gp.exact_gp`
    (``fit``, ``fit_iterations``, ``outcome_transform``, ``input_transform``)."""
    validate_training_data(space, train_X, train_Y, max_outputs=1)  # before the kernel reads it
    dims = space.embed(train_X[:1].reshape(1, *space.point_shape)).shape[-1]
    kernel = EmbeddingKernel(space, MaternKernel(nu=2.5, ard_num_dims=dims))
    model = exact_gp(space, train_X, train_Y, kernel, **options)
    model.defined_off_space = True
    return model


@register_surrogate("chart", unsupported=_no_global_chart, check_options=CHECK_OPTIONS)
def chart_matern_gp(space, train_X, train_Y, **options):
    """Matérn-5/2 ARD GP on chart coordinates (latitude/longitude on S²). The ``options`` go to
    :func:`~manibo.models.exact_gp.exact_gp` (``fit``, ``fit_iterations``, ``outcome_transform``,
    ``input_transform``)."""
    validate_training_data(space, train_X, train_Y, max_outputs=1)  # before the kernel reads it
    k = space.chart(train_X[:1]).shape[-1]
    return exact_gp(
        space, train_X, train_Y, ChartKernel(space, MaternKernel(nu=2.5, ard_num_dims=k)), **options
    )
