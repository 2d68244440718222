"""Tutorial: Bayesian optimisation on the sphere in ten lines.

Run with SMOKE_TEST=1 for a quick check.
"""

import os

import torch

import manibo
from manibo.problems import make_problem
from manibo.spaces import Sphere

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
problem = make_problem("ackley-sphere2")  # Ackley of the tangent vector at e1; minimum 0 at e1


def objective(x: torch.Tensor) -> float:
    return float(problem.evaluate_true(x))


x_best, y_best = manibo.minimize(
    objective, Sphere(2), budget=8 if SMOKE_TEST else 40, seed=0, progress=False
)
print(f"best point {x_best.tolist()} with value {y_best:.4f} (optimum {problem.optimal_value})")
assert abs(float(x_best.norm()) - 1) < 1e-10  # every candidate lies on the sphere
assert y_best < (4.0 if SMOKE_TEST else 1.0)
