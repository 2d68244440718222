"""A pose to reach in SE(3): a position in a box and an orientation, with an Ackley cost."""

from __future__ import annotations

import torch
from botorch.test_functions.synthetic import Ackley
from torch import Tensor

from manibo.problems.base import SpaceProblem, evaluate_on_device
from manibo.problems.registry import register_problem
from manibo.problems.rotation import rotation_vector
from manibo.spaces.se3 import SE3


@register_problem("pose-se3")
class PoseAckleySE3(SpaceProblem):
    r"""Reach a target pose: Ackley of (position error, rotation vector of :math:`R_\star^\top R`).

    The space is :class:`~manibo.spaces.SE3` over the workspace ``[-1, 1] x [-1, 1] x [0, 1.5]``
    (metres); the six errors (three in metres, three in radians) enter Ackley's function in six
    dimensions, so the cost is 0 exactly at the target pose, which lies inside the workspace, and
    has many local minima around it.
    """

    optimal_value = 0.0

    def __init__(self, noise_std: float = 0.0) -> None:
        super().__init__(noise_std)
        self.name = "pose-se3"
        self.space = SE3([-1.0, -1.0, 0.0], [1.0, 1.0, 1.5])
        self.position = torch.tensor([0.35, -0.2, 0.9], dtype=torch.float64)
        axis = torch.tensor([0.2, 1.0, -0.6], dtype=torch.float64)
        k = 0.9 * axis / axis.norm()
        skew = torch.tensor(
            [[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]], dtype=torch.float64
        )
        self.rotation = torch.linalg.matrix_exp(skew)
        self._ackley = Ackley(dim=6)

    def evaluate_true(self, x: Tensor) -> Tensor:
        position = self.space.position(x) - self.position.to(x)
        relative = self.rotation.to(x).transpose(-1, -2) @ self.space.rotation(x)
        return evaluate_on_device(
            self._ackley, torch.cat([position, rotation_vector(relative)], -1)
        )

    @property
    def optimizers(self) -> Tensor:
        return torch.cat([self.position, self.rotation.reshape(9)]).unsqueeze(0)
