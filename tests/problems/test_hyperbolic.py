"""H^d benchmarks: optimum at the origin, normal coordinates are the log map at the origin."""

import math

import pytest
import torch

from manibo.problems import make_problem

NAMES = ["ackley-hyperbolic3", "rosenbrock-hyperbolic3", "styblinski-tang-hyperbolic3"]


@pytest.mark.parametrize("name", [*NAMES, "ackley-hyperbolic2"])
def test_optimum_attained_at_the_origin_and_random_points_above(name):
    problem = make_problem(name)
    best = problem.optimizers
    assert torch.equal(best[0], problem.space.origin())
    problem.space.check(best)
    assert float(problem.evaluate_true(best)) == pytest.approx(problem.optimal_value, abs=1e-9)
    x = problem.space.random(2000, generator=torch.Generator().manual_seed(0))
    assert float(problem.evaluate_true(x).min()) > problem.optimal_value
    assert problem.space.radius == 3.0


def test_normal_coordinates_are_the_log_map_at_the_origin():
    problem = make_problem("ackley-hyperbolic3")
    space = problem.space
    x = space.random(200, generator=torch.Generator().manual_seed(1))
    origin = space.origin().expand_as(x)
    z = problem.normal_coordinates(x)
    assert torch.allclose(z.norm(dim=-1), space.distance(origin, x), atol=1e-10)
    log = space.log(origin, x)
    assert torch.allclose(log[:, 0], torch.zeros(200, dtype=torch.float64), atol=1e-10)
    assert torch.allclose(z, log[:, 1:], atol=1e-10)
    # a point at distance 2 along the second axis
    point = torch.tensor([[math.cosh(2.0), 0.0, math.sinh(2.0), 0.0]], dtype=torch.float64)
    expected = torch.tensor([[0.0, 2.0, 0.0]], dtype=torch.float64)
    assert torch.allclose(problem.normal_coordinates(point), expected, atol=1e-12)
    assert torch.equal(problem.normal_coordinates(origin[:1]), torch.zeros(1, 3).double())
