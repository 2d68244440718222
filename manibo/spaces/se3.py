r"""Rigid poses in a box, SE(3) as a product: a position in :math:`\mathbb R^3` times SO(3)."""

from __future__ import annotations

import torch
from torch import Tensor

from manibo._validation import as_tensor_arg
from manibo.exceptions import ConfigurationError, InputDataError
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

    def from_homogeneous(self, T: Tensor) -> Tensor:
        """Points ``(*batch, 12)`` of homogeneous transforms ``T`` ``(*batch, 4, 4)`` (the pose
        format of ROS and URDF: rotation ``T[:3, :3]``, translation ``T[:3, 3]``, last row
        ``(0, 0, 0, 1)``); :meth:`check` them before use (positions outside the box, rotations
        off SO(3)).

        Raises:
            InputDataError: ``T`` is not a floating tensor of shape ``(*batch, 4, 4)``, or its
                last row is not ``(0, 0, 0, 1)``.
        """
        T = as_tensor_arg("T", T)
        if T.dim() < 2 or T.shape[-2:] != (4, 4):
            raise InputDataError(
                f"`T` must hold 4x4 homogeneous transforms, shape (*batch, 4, 4), got "
                f"{tuple(T.shape)}."
            )
        last = torch.tensor([0.0, 0.0, 0.0, 1.0], dtype=T.dtype, device=T.device)
        if not bool((T[..., 3, :] == last).all()):
            raise InputDataError(
                "the last row of each transform in `T` must be (0, 0, 0, 1), got "
                f"{T[..., 3, :].reshape(-1, 4)[0].tolist()} among others: a homogeneous "
                "transform without scaling or projection."
            )
        rotation = T[..., :3, :3].reshape(*T.shape[:-2], 9)
        return torch.cat([T[..., :3, 3], rotation], dim=-1)

    def homogeneous(self, x: Tensor) -> Tensor:
        """The homogeneous transforms ``(*batch, 4, 4)`` of points ``x`` ``(*batch, 12)``: the
        inverse of :meth:`from_homogeneous`."""
        x = as_tensor_arg("x", x)
        self.check_point_shape(x, "x")
        T = torch.zeros(*x.shape[:-1], 4, 4, dtype=x.dtype, device=x.device)
        T[..., :3, :3] = self.rotation(x)
        T[..., :3, 3] = self.position(x)
        T[..., 3, 3] = 1.0
        return T

    def _shape_advice(self, x: Tensor, name: str) -> str | None:
        if x.dim() >= 2 and x.shape[-2:] == (4, 4):
            return (
                f"A 4x4 matrix looks like a homogeneous transform; convert it with "
                f"`space.from_homogeneous({name})` (position then rotation, 3 + 9 numbers)."
            )
        return super()._shape_advice(x, name)
