r"""The box :math:`\prod_i [a_i, b_i] \subset \mathbb R^D`: Euclidean inputs as a space."""

from __future__ import annotations

import torch
from torch import Tensor

from manibo._validation import as_tensor_arg, check_finite, default_tolerance
from manibo.exceptions import ConfigurationError
from manibo.spaces.base import Space


class Box(Space):
    r"""An axis-aligned box of :math:`\mathbb R^D`, with points ``(*batch, D)``.

    It gives models for Euclidean inputs (random-feature networks, GPNet on :math:`\mathbb R^D`,
    exact GPs with a Matérn kernel per coordinate) the same contract as the manifolds: uniform
    sampling, a membership check, and a retraction (``x + v`` clamped to the box) with a tangent
    projection that drops outward components on the boundary, so Riemannian acquisition
    optimisation respects the bounds, alone or as a factor of a
    :class:`~manibo.spaces.product.ProductSpace`.

    Args:
        lower: lower corner, a sequence or tensor of ``D`` floats.
        upper: upper corner, ``D`` floats, each larger than the matching ``lower``.
    """

    def __init__(self, lower, upper) -> None:
        lower = torch.as_tensor(lower, dtype=torch.float64)
        upper = torch.as_tensor(upper, dtype=torch.float64)
        if lower.dim() > 1 or upper.dim() > 1:
            raise ConfigurationError(
                "`lower` and `upper` must each be a number or a 1-D sequence of coordinates, got "
                f"shapes {tuple(lower.shape)} and {tuple(upper.shape)}; for BoTorch-style "
                "`bounds` of shape (2, d), pass Box(bounds[0], bounds[1])."
            )
        lower, upper = lower.reshape(-1), upper.reshape(-1)
        if lower.shape != upper.shape or lower.numel() == 0:
            raise ConfigurationError(
                f"`lower` and `upper` must hold the same number (>= 1) of coordinates, got "
                f"{lower.numel()} and {upper.numel()}."
            )
        if not (torch.isfinite(lower).all() and torch.isfinite(upper).all()):
            raise ConfigurationError("`lower` and `upper` must be finite.")
        if not (upper > lower).all():
            raise ConfigurationError(
                f"every `upper` coordinate must exceed `lower`, got lower={lower.tolist()} and "
                f"upper={upper.tolist()}."
            )
        self.lower, self.upper = lower, upper
        self.dim = int(lower.numel())
        self.point_shape = (self.dim,)

    def __repr__(self) -> str:
        return f"Box({self.lower.tolist()}, {self.upper.tolist()})"

    def _bounds_like(self, x: Tensor) -> tuple[Tensor, Tensor]:
        return self.lower.to(x), self.upper.to(x)

    def random(self, n, generator=None, dtype=torch.float64, device=None) -> Tensor:
        u = torch.rand(n, self.dim, generator=generator, dtype=dtype, device=device)
        lower, upper = self._bounds_like(u)
        return lower + (upper - lower) * u

    def _check_membership(self, x: Tensor, name: str) -> None:
        lower, upper = self._bounds_like(x)
        tol = default_tolerance(x.dtype) * (upper - lower)
        below, above = x < lower - tol, x > upper + tol
        outside = below | above
        if outside.any():
            first = tuple(int(i) for i in outside.nonzero()[0])
            *batch, j = first
            value = x[first].item()
            value = repr(value) if x.dtype == torch.float64 else f"{value:.7g}"
            broken = (
                f"< lower bound {float(self.lower[j])!r}"
                if below[first]
                else f"> upper bound {float(self.upper[j])!r}"
            )
            where = f", at batch index {tuple(batch)}" if batch else ""
            points = outside.any(-1)
            raise self._membership_error(
                name,
                f"{int(points.sum())} of {points.numel()} point(s) lie outside the box "
                f"({int(outside.sum())} coordinate(s) in all); the first{where}: coordinate {j} "
                f"of the box = {value} {broken}",
                f"Clamp them with `space.project({name})`, or build a larger box.",
            )

    def _check_on_manifold(self, x: Tensor, name: str) -> None:
        """Any point of R^d: distances and the chart are defined outside the box too."""

    def project(self, x: Tensor) -> Tensor:
        lower, upper = self._bounds_like(as_tensor_arg("x", x))
        check_finite("x", x)
        return torch.maximum(torch.minimum(x, upper), lower)

    def to_tangent(self, x: Tensor, v: Tensor) -> Tensor:
        """``v`` without the components that point out of the box at points on its boundary.

        The projection onto the cone of feasible directions: an ascent direction built from it
        stays feasible, and its norm vanishes at a constrained optimum on a face of the box.
        """
        lower, upper = self._bounds_like(x)
        outward = ((x >= upper) & (v > 0)) | ((x <= lower) & (v < 0))
        return torch.where(outward, torch.zeros_like(v), v)

    def retract(self, x: Tensor, v: Tensor) -> Tensor:
        """``x + v`` clamped to the box (the identity retraction at interior points)."""
        return self.project(x + v)

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        return (x - y).norm(dim=-1)

    def scaled_distance(self, x: Tensor, y: Tensor) -> Tensor:
        """Euclidean distance with each coordinate in units of the box's width along it,
        shape ``(*batch)``."""
        lower, upper = self._bounds_like(x)
        return ((x - y) / (upper - lower)).norm(dim=-1)

    def chart(self, x: Tensor) -> Tensor:
        """The coordinates themselves, ``(*batch, D)``."""
        return x

    def ambient_bounds(self) -> Tensor:
        """``(2, D)``: the lower and upper corners."""
        return torch.stack([self.lower, self.upper])
