"""A planar robot arm on the torus: joint angles that bring the end effector to a target."""

from __future__ import annotations

import torch
from torch import Tensor

from manibo.problems.base import SpaceProblem
from manibo.problems.registry import register_problem
from manibo.spaces.product import Torus


@register_problem("arm-torus", parameter="n")
class ArmReachTorus(SpaceProblem):
    r"""Squared distance from a planar arm's end effector to a reachable target.

    Link ``i`` has length ``lengths[i]`` and the joint angles :math:`\theta \in [0, 2\pi)^n` are
    relative, so the end effector is :math:`\sum_i l_i (\cos\phi_i, \sin\phi_i)` with
    :math:`\phi_i = \sum_{j \le i}\theta_j`. The target is the end effector at ``target_angles``, so
    the minimum is 0 (attained on a set of configurations; ``optimizers`` lists ``target_angles``).

    Args:
        num_joints: number of joints ``n`` (the torus dimension).
        noise_std: observation noise.
    """

    optimal_value = 0.0

    def __init__(self, num_joints: int = 3, noise_std: float = 0.0) -> None:
        super().__init__(noise_std)
        self.name = f"arm-torus{num_joints}"
        self.space = Torus(num_joints)
        self.lengths = torch.linspace(1.0, 0.5, num_joints, dtype=torch.float64)
        self.target_angles = torch.tensor(
            [(0.7 + 1.9 * i) % (2 * torch.pi) for i in range(num_joints)], dtype=torch.float64
        )
        self.target = self.end_effector(self.target_angles)

    def end_effector(self, angles: Tensor) -> Tensor:
        """End-effector position; ``(*batch, n)`` → ``(*batch, 2)``."""
        phi = torch.cumsum(angles, dim=-1)
        lengths = self.lengths.to(angles)
        return torch.stack([(lengths * phi.cos()).sum(-1), (lengths * phi.sin()).sum(-1)], -1)

    def evaluate_true(self, x: Tensor) -> Tensor:
        return ((self.end_effector(x) - self.target.to(x)) ** 2).sum(-1)

    @property
    def optimizers(self) -> Tensor:
        return self.target_angles.unsqueeze(0)
