"""Tutorial: neural-network surrogates — an activated deep GP and a GPNet — in the same BO loop.

Both plug into the surrogate registry by name, so switching is one argument:

* ``"adgp"``: an activated deep GP. Its layers use the features of an activation (softplus or
  ReLU), so its posterior mean is a neural network; it is trained in two stages (the network,
  then the variational posterior around it) and acquisitions read it by Monte Carlo samples.
* ``"gpnet"``: a GPNet. A network is trained by functional mirror descent to output the GP
  posterior of a geometric prior (here the Matérn kernel of the sphere) at measurement points;
  its cost per step does not grow with the number of observations.

Each runs the same seeded loop on the Styblinski–Tang function on S² next to the exact geometric
GP (``"matern"``), the three with the same five initial points, and random search.
Run with ``SMOKE_TEST=1`` for a quick check.
"""

import os

import torch

from manibo import BayesianOptimizer
from manibo.problems import make_problem

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
budget = 6 if SMOKE_TEST else 30
problem = make_problem("styblinski-tang-sphere2")

regret = {}
for surrogate in ("adgp", "gpnet", "matern"):
    opt = BayesianOptimizer(problem.space, surrogate=surrogate, initial_design=5, seed=0)
    while len(opt.history) < budget:
        x = opt.ask()  # (1, 3): a unit vector
        opt.tell(x, problem.evaluate_true(x))
    regret[surrogate] = opt.best[1] - problem.optimal_value

random_points = problem.space.random(budget, generator=torch.Generator().manual_seed(1))
regret["random"] = float(problem.evaluate_true(random_points).min()) - problem.optimal_value
for name, value in regret.items():
    print(f"{name:7s} simple regret after {budget} evaluations: {value:.4f}")
if not SMOKE_TEST:
    assert regret["adgp"] < regret["random"] and regret["gpnet"] < regret["random"]
