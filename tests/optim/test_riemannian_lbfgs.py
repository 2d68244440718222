"""The batched Riemannian L-BFGS solver on functions with known maximisers."""

import pytest
import torch

from manibo.exceptions import ConfigurationError, NonFiniteGradientWarning
from manibo.optim import LBFGSOptions, riemannian_lbfgs_ascent
from manibo.spaces import Sphere


def test_finds_the_closest_point_on_the_sphere_for_every_restart():
    space = Sphere(5)
    target = space.random(1, generator=torch.Generator().manual_seed(1))[0]
    x0 = space.random(16, generator=torch.Generator().manual_seed(2)).reshape(8, 2, 6)

    def objective(x):
        return -(space.distance(x, target) ** 2).sum(-1)

    x, values = riemannian_lbfgs_ascent(objective, space, x0)
    assert values.shape == (8,)
    assert float(values.min()) > -1e-12
    assert torch.allclose(x, target.expand_as(x), atol=1e-6)
    assert float((x.norm(dim=-1) - 1).abs().max()) < 1e-12


@pytest.mark.parametrize("context", [torch.no_grad, torch.inference_mode])
def test_the_ascent_runs_inside_a_callers_no_grad(context):
    # `with torch.no_grad(): opt.ask()` stopped with "element 0 of tensors does not require grad"
    space = Sphere(2)
    target = space.random(1, generator=torch.Generator().manual_seed(1))[0]
    x0 = space.random(4, generator=torch.Generator().manual_seed(2)).reshape(4, 1, 3)

    def objective(x):
        return -(space.distance(x, target) ** 2).sum(-1)

    with context():
        x, values = riemannian_lbfgs_ascent(objective, space, x0)
    assert torch.allclose(x, target.expand_as(x), atol=1e-6)


def test_quasi_newton_beats_iteration_budget_on_an_ill_conditioned_quadratic():
    space = Sphere(3)
    weights = torch.tensor([1.0, 30.0, 100.0, 300.0], dtype=torch.float64)

    def objective(x):  # maximised on the sphere at ±e_0 (the smallest weight)
        return -(weights * x[..., 0, :] ** 2).sum(-1)

    x0 = space.random(4, generator=torch.Generator().manual_seed(0)).reshape(4, 1, 4)
    _, values = riemannian_lbfgs_ascent(objective, space, x0, LBFGSOptions(maxiter=60))
    assert torch.allclose(values, torch.full_like(values, -1.0), atol=1e-8)


def test_options_are_checked_when_made():
    for bad, message in [
        ({"maxiter": 0}, "`maxiter` must be an integer >= 1"),
        ({"history": 2.5}, "`history` must be an integer"),
        ({"gtol": -1.0}, "`gtol` must be a finite number >= 0"),
        ({"max_step": float("inf")}, "`max_step` must be a finite number > 0"),
        ({"armijo": 1.0}, r"`armijo` must be a finite number in \(0, 1\)"),
    ]:
        with pytest.raises(ConfigurationError, match=message):
            LBFGSOptions(**bad)
    with pytest.raises(ConfigurationError, match="unknown optimizer option.*'maxit'.*maxiter"):
        LBFGSOptions.from_options({"maxit": 3})
    assert LBFGSOptions.from_options({"maxiter": 3}).maxiter == 3


def test_a_row_whose_gradient_is_not_finite_stops_where_it_is_and_no_nan_point_is_evaluated():
    # The latitude asin(z) has an infinite gradient at the north pole (a chart's singularity):
    # an ascent that reaches the pole must stop there, never evaluate NaN points, and leave the
    # other restarts alone.
    space = Sphere(2)
    evaluated = []

    def objective(x):
        evaluated.append(x.detach().clone())
        return torch.asin(x[..., 2].clamp(-1, 1)).sum(-1)

    x0 = torch.tensor(
        [[[0.0, 0.0, 1.0]], [[0.6, 0.0, 0.8]], [[1.0, 0.0, 0.0]]], dtype=torch.float64
    )
    with pytest.warns(
        NonFiniteGradientWarning, match=r"of 3 restart\(s\).*1 of them at their start"
    ):
        x, values = riemannian_lbfgs_ascent(objective, space, x0, LBFGSOptions(maxiter=30))
    assert all(bool(torch.isfinite(points).all()) for points in evaluated)
    assert bool(torch.isfinite(x).all()) and bool(torch.isfinite(values).all())
    assert float((x.norm(dim=-1) - 1).abs().max()) < 1e-12
    assert torch.equal(x[0], x0[0])  # started at the singular point: not moved
    assert float(values[1]) > float(torch.asin(torch.tensor(0.8))) + 0.1  # the others ascend
    assert float(values[2]) > 0.1
