"""Tutorial: joint angles of a planar robot arm live on a torus.

BO proposes two configurations at once.

The three joint angles of the arm are a point of T³ = S¹ × S¹ × S¹ (angles in [0, 2π)); a kernel on
ambient angles would call 0.01 and 6.27 far apart, the torus kernel knows they are neighbours. Each
``ask`` returns q = 2 configurations (a jointly optimised qLogNEI batch) for two robots in parallel.
The heat kernel is used: its spectrum decays fast on T³, while a Matérn-5/2 kernel at short
lengthscales needs more levels than the default cap (manibo then says so with a TruncationWarning).
Run with ``SMOKE_TEST=1`` for a quick check.
"""

import math
import os

import torch

from manibo import BayesianOptimizer
from manibo.problems import make_problem

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
budget = 7 if SMOKE_TEST else 40
problem = make_problem("arm-torus3")  # squared distance of the end effector to a target
opt = BayesianOptimizer(problem.space, surrogate="heat", q=2, initial_design=5, seed=0)

while len(opt.history) < budget:
    angles = opt.ask()  # (2, 3)
    assert ((angles >= 0) & (angles < 2 * math.pi)).all()
    opt.tell(angles, problem.evaluate_true(angles))

best_angles, best_distance2 = opt.best
random_angles = problem.space.random(budget, generator=torch.Generator().manual_seed(0))
random_best = float(problem.evaluate_true(random_angles).min())
print(f"BO: squared distance {best_distance2:.4f} at angles {best_angles.tolist()}")
print(f"random search with the same budget: {random_best:.4f}")
if not SMOKE_TEST:
    assert best_distance2 < random_best
