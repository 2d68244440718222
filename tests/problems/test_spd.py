"""SPD(2) benchmarks: optimum at 2I, normal coordinates measure the affine-invariant distance,
and the Cholesky pull-back covers the domain and evaluates the same function."""

import math

import pytest
import torch

from manibo.problems import make_problem
from manibo.problems.spd import CholeskyPullback, cholesky_box
from manibo.spaces import SymmetricPositiveDefinite

NAMES = ["ackley-spd2", "rosenbrock-spd2", "styblinski-tang-spd2", "ackley-spd3"]


@pytest.mark.parametrize("name", NAMES)
def test_optimum_attained_at_2i_and_random_points_above(name):
    problem = make_problem(name)
    best = problem.optimizers
    n = problem.space.n
    assert torch.equal(best, 2 * torch.eye(n, dtype=torch.float64).reshape(1, -1))
    problem.space.check(best)
    assert float(problem.evaluate_true(best)) == pytest.approx(problem.optimal_value, abs=1e-9)
    x = problem.space.random(2000, generator=torch.Generator().manual_seed(0))
    assert float(problem.evaluate_true(x).min()) > problem.optimal_value


def test_normal_coordinates_measure_the_geodesic_distance_at_2i():
    problem = make_problem("ackley-spd2")
    x = problem.space.random(200, generator=torch.Generator().manual_seed(1))
    base = problem.base.expand_as(x)
    z = problem.normal_coordinates(x)
    assert z.shape == (200, 3)
    assert torch.allclose(z.norm(dim=-1), problem.space.distance(base, x), atol=1e-9)
    # diagonal matrices: the log-ratios of the diagonal to 2, no off-diagonal coordinate
    diagonal = torch.tensor([[2 * math.e, 0.0, 0.0, 1.0]], dtype=torch.float64)
    expected = torch.tensor([[1.0, math.log(0.5), 0.0]], dtype=torch.float64)
    assert torch.allclose(problem.normal_coordinates(diagonal), expected, atol=1e-12)


def test_styblinski_tang_uses_factor_five():
    problem = make_problem("styblinski-tang-spd2")
    x = torch.tensor([[2 * math.exp(0.1), 0.0, 0.0, 2.0]], dtype=torch.float64)
    u = [5 * 0.1 - 2.903534, -2.903534, -2.903534]
    expected = 0.5 * sum(t**4 - 16 * t**2 + 5 * t for t in u)
    assert float(problem.evaluate_true(x)) == pytest.approx(expected, rel=1e-10)


def test_cholesky_box_covers_the_domain():
    space = SymmetricPositiveDefinite(3)
    box = cholesky_box(space)
    x = space.random(500, generator=torch.Generator().manual_seed(2))
    factor = torch.linalg.cholesky(x.reshape(-1, 3, 3))
    rows, cols = torch.tril_indices(3, 3)
    box.check(factor[:, rows, cols])
    assert box.lower[0] == pytest.approx(math.sqrt(1e-3), rel=1e-15)


def test_cholesky_pullback_evaluates_the_spd_problem():
    problem = make_problem("rosenbrock-spd2")
    pulled = CholeskyPullback(problem)
    assert pulled.optimal_value == problem.optimal_value
    assert torch.allclose(pulled.matrices(pulled.optimizers), problem.optimizers, atol=1e-14)
    assert float(pulled.evaluate_true(pulled.optimizers)) == pytest.approx(0.0, abs=1e-20)
    coords = pulled.space.random(300, generator=torch.Generator().manual_seed(3))
    matrices = pulled.matrices(coords)
    problem.space.check(matrices)  # a real SPD matrix of the domain
    inside = problem.space.random(50, generator=torch.Generator().manual_seed(4))
    assert torch.allclose(pulled.matrices(pulled.coordinates(inside)), inside, atol=1e-12)
    assert torch.equal(pulled.evaluate_true(coords), problem.evaluate_true(matrices))
    # inside the domain the matrix is L L^T itself, unclamped
    inner = torch.tensor([[1.2, 0.3, 1.1]], dtype=torch.float64)
    product = torch.tensor([[1.44, 0.36, 0.36, 0.09 + 1.21]], dtype=torch.float64)
    assert torch.allclose(pulled.matrices(inner), product, atol=1e-14)
