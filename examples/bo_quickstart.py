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


result = manibo.minimize(
    objective, Sphere(2), budget=6 if SMOKE_TEST else 40, seed=0, progress=False
)
print(result.summary())  # best and recommended point, evaluations, time, why it stopped
result.plot("bo_quickstart_convergence.png")  # best value against evaluations and wall time
print(f"optimum {problem.optimal_value}; the figure is in bo_quickstart_convergence.png")
assert abs(float(result.best_x.norm()) - 1) < 1e-10  # every candidate lies on the sphere
assert result.best_y < (4.0 if SMOKE_TEST else 1.0)
assert result.best_y == min(result.Y.tolist()) and result.num_evaluations == result.X.shape[0]
