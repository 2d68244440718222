"""Tutorial: an orientation on SO(3), e.g. of a camera or a gripper, found with ``manibo.minimize``.

Points of SO(3) are rotation matrices flattened row-major to 9 numbers. The geometric Matérn kernel
of SO(3) is a series of characters of its irreducible representations, and the acquisition is
maximised by Riemannian L-BFGS with the exponential map, so every proposal is an exact rotation.
Run with ``SMOKE_TEST=1`` for a quick check.
"""

import os

import torch

import manibo
from manibo.problems import make_problem

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
budget = 6 if SMOKE_TEST else 50
problem = make_problem("orientation-so3")  # Ackley of the rotation from a target orientation


def cost(x: torch.Tensor) -> float:
    return float(problem.evaluate_true(x))


x_best, y_best = manibo.minimize(cost, problem.space, budget=budget, seed=0, progress=False)
R = x_best.reshape(3, 3)
print(f"best orientation (cost {y_best:.4f}, optimum {problem.optimal_value}):\n{R}")
assert torch.allclose(R @ R.T, torch.eye(3, dtype=R.dtype), atol=1e-10)
assert abs(float(torch.linalg.det(R)) - 1) < 1e-10
angle = problem.space.distance(x_best, problem.optimizers[0])
print(f"geodesic distance to the target orientation: {float(angle):.3f} rad")
if not SMOKE_TEST:
    assert y_best < 2.0  # random orientations score 4.5 on average
