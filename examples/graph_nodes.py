"""Tutorial: choose nodes of a road-network-like graph with the graph heat kernel.

A ``Graph`` takes an adjacency matrix; the heat kernel of its Laplacian correlates nodes that are
close along the edges, not in the plane: two nodes on either side of a removed edge are far apart.
Run with ``SMOKE_TEST=1`` for a quick check.
"""

import os

import torch

from manibo import BayesianOptimizer
from manibo.problems import make_problem

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
budget = 8 if SMOKE_TEST else 30
problem = make_problem("bumps-graph")  # a 15 × 15 grid with 20% of the edges removed
graph = problem.space
print(f"{graph!r}: {graph.num_points} nodes")

opt = BayesianOptimizer(graph, surrogate="heat", initial_design=5, seed=0)
for _ in range(budget):
    node = opt.ask()  # (1, 1): a node index stored as a float
    opt.tell(node, problem.evaluate_true(node))

best_node, best_value = opt.best
random_nodes = graph.random(budget, generator=torch.Generator().manual_seed(0))
print(f"best node {int(best_node)}: {best_value:.4f} (optimum {problem.optimal_value:.4f})")
print(f"random search, same budget: {float(problem.evaluate_true(random_nodes).min()):.4f}")
if not SMOKE_TEST:
    assert best_value == problem.optimal_value
