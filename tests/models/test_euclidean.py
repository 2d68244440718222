"""The Euclidean baselines: the ambient-coordinate GP reads each point once (a torus's angles as
cosines and sines, an axis of RP² by x xᵀ); the chart GP reads the chart, seam included."""

import math

import pytest
import torch
from gpytorch.kernels import MaternKernel

import manibo
from manibo.models import EmbeddingKernel, build_surrogate
from manibo.spaces import RealProjectiveSpace, Sphere, Torus


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
