"""The Euclidean baselines: the ambient-coordinate GP reads each point once (a torus's angles as
cosines and sines, an axis of RP² by x xᵀ); the chart GP reads the chart, seam included."""

import math

import pytest
import torch
from gpytorch.kernels import MaternKernel

import manibo
from manibo.models import EmbeddingKernel, build_surrogate
from manibo.spaces import (
    Box,
    ProductSpace,
    RealProjectiveSpace,
    SpecialOrthogonal,
    Sphere,
    Torus,
)


def _two_names_of_one_point(space):
    if isinstance(space, Torus):
        a = torch.tensor([[1e-9, 1.0]], dtype=torch.float64)
        return a, torch.tensor([[2 * math.pi - 1e-9, 1.0]], dtype=torch.float64)
    x = space.random(1, generator=torch.Generator().manual_seed(5))
    return x, -x


@pytest.mark.parametrize("space", [Torus(2), RealProjectiveSpace(2)], ids=repr)
def test_the_ambient_gp_predicts_the_same_for_two_names_of_one_point(space):
    """Before, it read the raw coordinates: on a stranger's data its means differed by 1.57 across
    the torus's seam and by 0.146 between x and -x on RP²."""
    X = space.random(15, generator=torch.Generator().manual_seed(0))
    Y = space.embed(X)[:, :1] + space.embed(X)[:, -1:] ** 2
    model = build_surrogate("euclidean", space, X, Y)
    a, b = _two_names_of_one_point(space)
    with torch.no_grad():
        first, second = model.posterior(a), model.posterior(b)
    assert torch.allclose(first.mean, second.mean, atol=1e-8)
    assert torch.allclose(first.variance, second.variance, atol=1e-8)


def test_the_embedding_kernel_is_the_base_kernel_on_cosines_and_sines():
    torus = Torus(2)
    x = torus.random(7, generator=torch.Generator().manual_seed(1))
    base = MaternKernel(nu=2.5, ard_num_dims=4).double()
    base.lengthscale = torch.tensor([[0.5, 0.9, 1.3, 2.0]], dtype=torch.float64)
    coordinates = torch.stack([x[:, 0].cos(), x[:, 0].sin(), x[:, 1].cos(), x[:, 1].sin()], -1)
    with torch.no_grad():
        mapped = EmbeddingKernel(torus, base).forward(x, x)
        direct = base.forward(coordinates, coordinates)
    assert torch.allclose(mapped, direct, atol=1e-14)


def test_the_chart_gp_keeps_the_seam_of_its_angles():
    torus = Torus(2)
    X = torus.random(15, generator=torch.Generator().manual_seed(0))
    model = build_surrogate("chart", torus, X, X.cos().sum(-1, keepdim=True))
    a, b = _two_names_of_one_point(torus)
    with torch.no_grad():
        assert not torch.allclose(model.posterior(a).mean, model.posterior(b).mean, atol=1e-3)


def test_bo_with_the_chart_gp_on_the_sphere_survives_ascents_that_reach_a_pole():
    # Maximising the first coordinate drives acquisition ascents to the poles, where the latitude
    # chart's gradient is infinite; the loop once evaluated NaN points there and crashed in eigh.
    result = manibo.minimize(
        lambda x: float(x[0]), Sphere(2), budget=7, seed=0, progress=False, surrogate="chart"
    )
    assert result.X.shape == (7, 3)
    assert bool(torch.isfinite(result.X).all())


def _singular_points():
    """Points where a chart's angle is undefined or its slope infinite, by space."""
    e4 = torch.eye(4, dtype=torch.float64)
    half_turn = torch.diag(torch.tensor([1.0, -1.0, -1.0], dtype=torch.float64)).reshape(1, 9)
    return [
        (Sphere(2), torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]], dtype=torch.float64)),
        (Sphere(3), e4[:2]),  # atan2(0, 0) in the second and the last angle
        (
            SpecialOrthogonal(3),
            torch.cat([torch.eye(3, dtype=torch.float64).reshape(1, 9), half_turn]),
        ),
    ]


def _mean_plus_variance(model, x):
    posterior = model.posterior(x)
    return (posterior.mean + posterior.variance).sum()


@pytest.mark.parametrize(
    ("space", "points"), _singular_points(), ids=["S2-poles", "S3-e0-e1", "SO3-identity-half-turn"]
)
def test_the_chart_gp_has_finite_gradients_at_the_singular_points_of_its_chart(space, points):
    """Before, the gradients of the posterior mean and variance were NaN at both poles of S², at
    the identity and the half turns of SO(3) (atan2(0, 0), asin at ±1, a square root or a division
    at 0 in the chart), and the acquisition ascent stopped there."""
    X = torch.cat([space.random(12, generator=torch.Generator().manual_seed(0)), points])
    model = build_surrogate("chart", space, X, space.embed(X)[:, :1] + space.embed(X)[:, -1:] ** 2)
    for point in points:
        x = point.unsqueeze(0).requires_grad_(True)
        (grad,) = torch.autograd.grad(_mean_plus_variance(model, x), x)
        assert bool(torch.isfinite(grad).all()), point


@pytest.mark.parametrize("space", [Sphere(2), Sphere(3), SpecialOrthogonal(3)], ids=repr)
def test_the_chart_gp_gradient_is_the_geodesic_finite_difference_where_the_chart_is_smooth(space):
    # SO(3)'s identity is a regular point of the rotation vector chart, where the gradient was NaN
    X = space.random(14, generator=torch.Generator().manual_seed(0))
    model = build_surrogate("chart", space, X, space.embed(X)[:, :1] + space.embed(X)[:, -1:] ** 2)
    points = space.random(3, generator=torch.Generator().manual_seed(1))
    if isinstance(space, SpecialOrthogonal):
        points = torch.cat([torch.eye(3, dtype=torch.float64).reshape(1, 9), points])
    generator = torch.Generator().manual_seed(2)
    for point in points:
        x = point.unsqueeze(0).requires_grad_(True)
        (grad,) = torch.autograd.grad(_mean_plus_variance(model, x), x)
        v = space.to_tangent(x.detach(), torch.randn(x.shape, generator=generator, dtype=x.dtype))
        v = v / v.norm()
        h = 1e-5
        with torch.no_grad():
            up = _mean_plus_variance(model, space.retract(x, h * v))
            down = _mean_plus_variance(model, space.retract(x, -h * v))
        derivative = float((grad * v).sum())
        assert derivative == pytest.approx(float(up - down) / (2 * h), rel=1e-5, abs=1e-8)


def test_the_chart_surrogate_refuses_points_off_the_manifold_on_every_route():
    """``model(X)`` and ``set_train_data`` reach the kernel without ``posterior``'s check: the
    chart's own check keeps a negated SPD matrix (NaN means) and a NaN entry (LAPACK's eigh
    failing to converge) out."""
    from manibo.exceptions import InputDataError
    from manibo.spaces import SymmetricPositiveDefinite

    space = SymmetricPositiveDefinite(2)
    X = space.random(15, generator=0)
    model = build_surrogate("chart", space, X, X[:, :1].clone(), fit=False)
    model.eval()
    bad = space.random(3, generator=1)
    bad[0] = -bad[0]
    with pytest.raises(InputDataError, match="positive definite|off SymmetricPositiveDefinite"):
        model(bad)
    bad[0, 0] = float("nan")
    with pytest.raises(InputDataError, match="NaN"):
        model(bad)


@pytest.mark.parametrize("surrogate", ["euclidean", "chart"])
@pytest.mark.parametrize("scales", [(1000.0, 1e-3), (1e6, 1e-9)], ids=str)
def test_the_coordinate_gps_read_box_sides_in_units_of_their_widths(surrogate, scales):
    """Before, they read raw box coordinates with lengthscales of order 1: on a box [0, 1000] x
    [0, 1e-3] x SO(3) (a stranger's robot gains) both predicted about the mean, test RMSE 0.86-1.0
    on a function of standard deviation 1 that they fit to 0.014 on the unit box."""
    box = Box([0.0, 0.0], list(scales))
    space = ProductSpace(SpecialOrthogonal(3), box)
    width = torch.tensor(scales, dtype=torch.float64)

    def f(x):
        u = x[:, -2:] / width
        return (torch.sin(6 * u[:, 0]) + torch.cos(5 * u[:, 1])).unsqueeze(-1)

    X = space.random(60, generator=torch.Generator().manual_seed(0))
    test = space.random(200, generator=torch.Generator().manual_seed(1))
    model = build_surrogate(surrogate, space, X, f(X))
    with torch.no_grad():
        rmse = (model.posterior(test).mean - f(test)).pow(2).mean().sqrt()
    assert rmse < 0.1, float(rmse)
