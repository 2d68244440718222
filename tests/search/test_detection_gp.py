"""The detection-field GP: prior moments from particles; a null search lowers the mean as Bayes."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.search.belief import ParticleBelief
from manibo.search.detection_gp import (
    DetectionFieldFeatures,
    ModulatedKernel,
    correlation_kernel,
    detection_field_gp,
)
from manibo.search.geography import (
    EARTH_RADIUS_KM,
    latlon,
    offset,
    pairwise_distance_km,
    rotation_matrix,
    unit_to_latlon,
)
from manibo.search.sensor import Outcome, Sensor

SENSOR = Sensor(range_km=40.0, max_pod=0.85, confirm_pod=0.95)


def _prior(n=1500, dtype=torch.float64, device="cpu"):
    gen = torch.Generator().manual_seed(0)
    east, north = torch.randn(2, n, generator=gen, dtype=torch.float64) * 120.0
    return offset(latlon(45.0, -30.0), east, north).to(dtype=dtype, device=device)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_features_are_the_prior_moments_of_the_detection_field(dtype, device="cpu"):
    particles = _prior(dtype=dtype, device=device)
    features = DetectionFieldFeatures(particles, SENSOR)
    x = particles[:7]
    out = features.transform(x.unsqueeze(0))
    assert out.shape == (1, 7, 5) and out.dtype == dtype and out.device.type == device
    b = SENSOR.detection_probability(pairwise_distance_km(x, particles))
    mean, second = b.mean(-1), (b * b).mean(-1)
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    assert torch.allclose(out[0, :, 3], mean, atol=tol)
    assert torch.allclose(out[0, :, 4], (second - mean**2).sqrt(), atol=10 * tol)
    noise = features.noise_variance(x)
    assert torch.allclose(noise, mean / 0.95 - second, atol=tol)


def test_prior_mean_is_the_expected_pos_and_a_null_search_lowers_it_like_bayes():
    particles = _prior()
    features = DetectionFieldFeatures(particles, SENSOR)
    kernel = correlation_kernel("sphere", SENSOR)
    searched = offset(latlon(45.0, -30.0), torch.tensor([0.0, 60.0]), torch.tensor([0.0, 0.0]))
    prior_gp = detection_field_gp(
        particles.new_zeros(0, 3), particles.new_zeros(0), features, kernel
    )
    east = torch.linspace(-150, 150, 7, dtype=torch.float64)
    query = offset(latlon(45.0, -30.0), east, torch.zeros_like(east))
    belief = ParticleBelief(particles)
    with torch.no_grad():
        prior_mean = prior_gp.posterior(query.unsqueeze(1)).mean.flatten()
    expected = belief.probability_of_success(SENSOR, query) / 0.95
    assert torch.allclose(prior_mean, expected, rtol=1e-10)
    for point in searched:
        belief.update(SENSOR, point, Outcome.NOTHING)
    gp = detection_field_gp(searched, torch.zeros(2, dtype=torch.float64), features, kernel)
    with torch.no_grad():
        posterior = gp.posterior(query.unsqueeze(1))
    # the exact posterior's detection field, unnormalised (the GP does not renormalise)
    unnormalised = belief.weights * (belief.unfound.sum() / belief.weights.sum())
    exact = belief.probability_of_success(SENSOR, query, unnormalised * 0 + belief.unfound) / 0.95
    ratio = posterior.mean.flatten() / exact
    assert float(ratio.min()) > 0.8 and float(ratio.max()) < 1.25, ratio
    assert bool((posterior.mean.flatten() < prior_mean).all())  # not seen lowers, never to zero
    assert bool((posterior.mean.flatten() > 0).all())


def test_sphere_correlation_is_rotation_invariant_and_latlon_is_not():
    sphere, latlon_kernel = (
        correlation_kernel("sphere", SENSOR),
        correlation_kernel("latlon", SENSOR),
    )
    gen = torch.Generator().manual_seed(1)
    a = offset(latlon(0.0, 0.0), *(torch.randn(2, 5, generator=gen, dtype=torch.float64) * 50))
    axis = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    rotation = rotation_matrix(axis, torch.tensor(-math.radians(70.0), dtype=torch.float64))
    b = a @ rotation.T  # the same cluster carried from the equator to 70°N
    assert float(unit_to_latlon(b.mean(0) / b.mean(0).norm())[0]) == pytest.approx(70.0, abs=1.0)
    with torch.no_grad():
        k_a, k_b = sphere.forward(a, a), sphere.forward(b, b)
        l_a, l_b = latlon_kernel.forward(a, a), latlon_kernel.forward(b, b)
    assert torch.allclose(k_a, k_b, atol=1e-12)
    assert float((l_a - l_b).abs().max()) > 0.1  # the chart distorts after moving to high latitude
    lengthscale = math.sqrt(2) * SENSOR.range_km / EARTH_RADIUS_KM
    one_ell = offset(
        latlon(0.0, 0.0), torch.tensor([lengthscale * EARTH_RADIUS_KM]), torch.tensor([0.0])
    )
    k = sphere.forward(latlon(0.0, 0.0).unsqueeze(0), one_ell)
    # exp(-(1 - cos d) / l^2): the Gaussian exp(-d^2 / 2 l^2) up to a relative d^2 / 24 at d = l
    expected = math.exp(-(1 - math.cos(lengthscale)) / lengthscale**2)
    assert float(k) == pytest.approx(expected, rel=1e-6)  # the lengthscale goes through a softplus
    assert float(k) == pytest.approx(math.exp(-0.5), rel=1e-5)


def test_modulated_kernel_is_positive_semidefinite_and_scaled():
    features = DetectionFieldFeatures(_prior(), SENSOR)
    x = features.transform(_prior(40)[None])[0]
    K = ModulatedKernel(correlation_kernel("sphere", SENSOR)).forward(x, x)
    assert torch.allclose(K.diagonal(), x[:, 4] ** 2)
    assert float(torch.linalg.eigvalsh(K).min()) > -1e-12
    with pytest.raises(ConfigurationError, match="kind"):
        correlation_kernel("torus", SENSOR)
