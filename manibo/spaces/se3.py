r"""Rigid poses in a box, SE(3) as a product: a position in :math:`\mathbb R^3` times SO(3)."""

from __future__ import annotations

from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.spaces.box import Box
from manibo.spaces.product import ProductSpace
from manibo.spaces.special_orthogonal import SpecialOrthogonal


class SE3(ProductSpace):
    r"""Rigid poses in a box: a position in :math:`\mathbb R^3` times an orientation in SO(3).

    A point is ``(*batch, 12)``: the position ``(x, y, z)`` followed by the rotation matrix
    flattened row-major. The geometry is the product one (distance
    :math:`\sqrt{\|p - p'\|^2 + \theta^2}` with :math:`\theta` the rotation angle between the
    orientations), and the default kernel is a Matérn kernel with one lengthscale per position
    coordinate times the geometric Matérn kernel of SO(3).

    Args:
        lower: lower corner of the position box, three floats.
        upper: upper corner, three floats larger than ``lower``.
    """

    def __init__(self, lower, upper) -> None:
        box = Box(lower, upper)
        if box.dim != 3:
            raise ConfigurationError(
                f"`lower` and `upper` must hold 3 coordinates (x, y, z), got {box.dim}."
            )
        super().__init__(box, SpecialOrthogonal(3))

    def __repr__(self) -> str:
        box = self.factors[0]
        return f"SE3({box.lower.tolist()}, {box.upper.tolist()})"

    def position(self, x: Tensor) -> Tensor:
        """Positions ``(*batch, 3)``."""
        return x[..., :3]

    def rotation(self, x: Tensor) -> Tensor:
        """Rotation matrices ``(*batch, 3, 3)``."""
        return x[..., 3:].reshape(*x.shape[:-1], 3, 3)
