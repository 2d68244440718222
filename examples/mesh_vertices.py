"""Tutorial: choose vertices of a surface mesh, never measuring the same vertex twice.

A ``Mesh`` (here an icosphere generated in code) carries the cotangent Laplacian's eigenpairs, so
the geometric Matérn kernel follows the surface. Acquisitions on a finite space are maximised by
enumerating every vertex; ``exclude_evaluated`` (the default) leaves out vertices already measured.
Run with ``SMOKE_TEST=1`` for a quick check.
"""

import os

from manibo import BayesianOptimizer
from manibo.problems import make_problem

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
budget = 8 if SMOKE_TEST else 30
problem = make_problem("bumps-mesh")  # three bumps of different depths on the surface
mesh = problem.space
print(f"{mesh!r}: {mesh.num_points} vertices")

opt = BayesianOptimizer(mesh, initial_design=5, seed=0)
opt.run(lambda v: float(problem.evaluate_true(v)), budget=budget, progress=False)

vertices = [int(e.x[0]) for e in opt.history]
assert len(set(vertices)) == len(vertices)  # no vertex measured twice
best_vertex, best_value = opt.best
print(
    f"best vertex {int(best_vertex)} with value {best_value:.4f}; "
    f"optimum {problem.optimal_value:.4f}"
)
print(f"measured {budget} of {mesh.num_points} vertices")
if not SMOKE_TEST:
    assert best_value == problem.optimal_value  # the deepest bump's vertex is found
