"""Benchmark problems: the known optimiser attains the optimal value and beats random points."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.problems import make_problem
from manibo.problems.sphere import sphere_log_at_e1

NAMES = [
    "ackley-sphere5",
    "ackley-sphere2",
    "rosenbrock-sphere3",
    "styblinski-tang-sphere2",
    "product-of-sines-sphere3",
    "arm-torus3",
    "orientation-so3",
    "orientation-so4",
    "orientation-so5",
    "pose-se3",
    "bumps-mesh",
    "bumps-graph",
]


@pytest.mark.parametrize("name", NAMES)
def test_optimizer_attains_optimum_and_beats_random_points(name):
    problem = make_problem(name)
    opt = problem.optimizers
    problem.space.check(opt)
    assert torch.allclose(
        problem.evaluate_true(opt),
        torch.tensor(problem.optimal_value, dtype=torch.float64),
        atol=1e-9,
    )
    count = 200 if name in ("orientation-so4", "orientation-so5") else 2000  # a Schur per point
    x = problem.space.random(count, generator=torch.Generator().manual_seed(0))
    assert float(problem.evaluate_true(x).min()) >= problem.optimal_value - 1e-9


def test_log_map_at_e1_has_geodesic_length():
    from manibo.spaces import Sphere

    space = Sphere(4)
    x = space.random(50, generator=torch.Generator().manual_seed(0))
    e1 = torch.zeros(5, dtype=torch.float64)
    e1[0] = 1
    assert torch.allclose(sphere_log_at_e1(x).norm(dim=-1), space.distance(x, e1), atol=1e-12)


def test_noise_and_known_values():
    problem = make_problem("styblinski-tang-sphere2", noise_std=0.5)
    assert problem.optimal_value == pytest.approx(-39.16616570377142 * 2, rel=1e-9)
    x = problem.optimizers.expand(400, 3)
    noisy = problem(x, generator=torch.Generator().manual_seed(0))
    assert 0.4 < float(noisy.std()) < 0.6
    assert make_problem("product-of-sines-sphere3").optimal_value == -100.0
    arm = make_problem("arm-torus3")
    assert float(arm.evaluate_true(torch.zeros(1, 3, dtype=torch.float64))) > 0.1
    assert math.isclose(float(arm.evaluate_true(arm.optimizers)), 0.0, abs_tol=1e-20)


def test_unknown_problem():
    with pytest.raises(ConfigurationError, match="known"):
        make_problem("ackley-cube")


def test_so4_log_coordinates_measure_the_geodesic_distance():
    from manibo.problems.rotation import log_coordinates
    from manibo.spaces import SpecialOrthogonal

    space = SpecialOrthogonal(4)
    x = space.random(20, generator=torch.Generator().manual_seed(1))
    identity = torch.eye(4, dtype=torch.float64).reshape(1, 16).expand_as(x)
    coords = log_coordinates(x.reshape(-1, 4, 4))
    assert coords.shape == (20, 6)
    assert torch.allclose(coords.norm(dim=-1), space.distance(identity, x), atol=1e-9)


def test_pose_cost_separates_position_and_orientation_errors():
    problem = make_problem("pose-se3")
    best = problem.optimizers
    moved = best.clone()
    moved[0, 0] += 0.1  # 10 cm off along x: Ackley of one coordinate of 0.1
    one = torch.zeros(1, 6, dtype=torch.float64)
    one[0, 0] = 0.1
    assert torch.allclose(problem.evaluate_true(moved), problem._ackley.evaluate_true(one))
    assert problem.space.check(best) is best


@pytest.mark.parametrize(
    "name",
    [
        "ackley-sphere1",
        "ackley-sphere2",
        "rosenbrock-sphere3",
        "styblinski-tang-sphere2",
        "product-of-sines-sphere3",
    ],
)
def test_the_antipode_of_the_optimum_takes_a_value_from_its_neighbourhood(name):
    # -e1 is the farthest point from the minimiser e1; it must not be scored as the minimum
    problem = make_problem(name)
    d = problem.space.dim + 1
    antipode = torch.zeros(d, dtype=torch.float64)
    antipode[0] = -1.0
    assert float(sphere_log_at_e1(antipode).norm()) == pytest.approx(math.pi, abs=1e-15)
    near = torch.zeros(d, dtype=torch.float64)  # 1e-9 rad from -e1 towards e2
    near[0], near[1] = -math.cos(1e-9), math.sin(1e-9)
    value, nearby = float(problem.evaluate_true(antipode)), float(problem.evaluate_true(near))
    assert value == pytest.approx(nearby, rel=1e-6, abs=1e-6)
    if name != "product-of-sines-sphere3":  # its limit along e2 is one of its minima, -100
        assert value > problem.optimal_value + 1.0


@pytest.mark.parametrize("noise", [-0.1, math.nan, math.inf, "0.1", True, None])
def test_a_bad_noise_level_is_refused_before_any_evaluation(noise):
    with pytest.raises(ConfigurationError, match="`noise_std` must be a finite real number >= 0"):
        make_problem("ackley-sphere2", noise_std=noise)
