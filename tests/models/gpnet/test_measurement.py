"""The measurement distribution c(x): on the space, the configured mix, clear errors."""

import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.gpnet import MeasurementDistribution
from manibo.models.gpnet.measurement import lengthscale_noise
from manibo.spaces import Box, Graph, Sphere, Torus


@pytest.mark.parametrize(
    "space", [Sphere(2), Sphere(5), Torus(2), Box([0.0, 0.0], [1.0, 3.0])], ids=repr
)
def test_samples_lie_on_the_space_in_the_configured_mix(space, device="cpu"):
    gen = torch.Generator().manual_seed(0)
    train_X = space.random(30, generator=gen).to(device)
    c = MeasurementDistribution(space, train_X, uniform_fraction=0.25, noise_scale=0.5)
    points = c.sample(40, generator=gen, dtype=torch.float64, device=device)
    assert points.shape == (40, *space.point_shape) and points.device.type == device
    space.check(points)
    # the last 30 come from training inputs: each near one of them, none equal (noise was added)
    gaps = space.distance(points[10:].unsqueeze(1).cpu(), train_X.unsqueeze(0).cpu()).min(1).values
    assert (gaps > 0).all() and gaps.median() < 2.0
    exact = MeasurementDistribution(space, train_X, uniform_fraction=0.0).sample(20, generator=gen)
    assert (
        space.distance(exact.unsqueeze(1), train_X.cpu().unsqueeze(0)).min(1).values < 1e-12
    ).all()
    uniform = MeasurementDistribution(space, uniform_fraction=1.0).sample(5, dtype=torch.float32)
    assert uniform.dtype == torch.float32
    space.check(uniform)


def test_discrete_spaces_use_training_inputs_without_noise():
    a = torch.zeros(5, 5, dtype=torch.float64)
    for i in range(5):
        a[i, (i + 1) % 5] = a[(i + 1) % 5, i] = 1.0
    graph = Graph(a)
    train_X = torch.tensor([[1.0], [3.0]], dtype=torch.float64)
    points = MeasurementDistribution(graph, train_X, 0.0, noise_scale=1.0).sample(6)
    assert set(points.reshape(-1).tolist()) <= {1.0, 3.0}


def test_lengthscale_noise_is_the_official_scale():
    noise = lengthscale_noise(torch.tensor([[2.0, 4.0]]))
    assert torch.allclose(noise, torch.tensor([2.0, 4.0], dtype=torch.float64) / 2**0.5)


def test_configuration_errors():
    space = Sphere(2)
    X = space.random(4)
    with pytest.raises(ConfigurationError, match=r"\[0, 1\]"):
        MeasurementDistribution(space, X, uniform_fraction=1.5)
    with pytest.raises(ConfigurationError, match="`train_X` is required"):
        MeasurementDistribution(space, uniform_fraction=0.5)
    with pytest.raises(ConfigurationError, match="noise_scale"):
        MeasurementDistribution(space, X, noise_scale=-1.0)
    with pytest.raises(InputDataError, match="train_X"):
        MeasurementDistribution(space, 2 * X)
    with pytest.raises(ConfigurationError, match="measurement points"):
        MeasurementDistribution(space, X).sample(0)
