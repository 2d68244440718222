"""The sensor: lateral-range curve, sweep width, outcome likelihoods, errors."""

import math

import pytest
import torch
from scipy.integrate import quad

from manibo.exceptions import ConfigurationError
from manibo.search.sensor import Outcome, Sensor


@pytest.mark.parametrize("shape", [2.0, 4.0])
def test_sweep_width_is_the_integral_of_the_lateral_range_curve(shape):
    sensor = Sensor(range_km=30.0, max_pod=0.8, shape=shape, reliability=0.9)
    integral, _ = quad(
        lambda r: float(sensor.detection_probability(torch.tensor(r, dtype=torch.float64))),
        -400,
        400,
        points=[0.0],
        limit=200,
    )
    assert sensor.sweep_width_km == pytest.approx(integral, rel=1e-8)
    if shape == 2.0:  # the closed form p * rho * sqrt(2 pi) of a Gaussian beam
        assert sensor.sweep_width_km == pytest.approx(0.9 * 0.8 * 30 * math.sqrt(2 * math.pi))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_detection_probability_falls_with_distance(dtype):
    sensor = Sensor(range_km=25.0, max_pod=0.9)
    d = torch.tensor([0.0, 25.0, 50.0, 500.0], dtype=dtype)
    b = sensor.detection_probability(d)
    expected = 0.9 * torch.exp(-0.5 * (d / 25.0) ** 2)
    assert b.dtype == dtype and torch.allclose(b, expected, rtol=1e-6)


def test_outcome_likelihoods_sum_to_one_and_match_the_formulas():
    sensor = Sensor(max_pod=0.8, false_alarm=0.05, confirm_pod=0.9, reliability=0.7)
    d = torch.linspace(0, 200, 9, dtype=torch.float64)
    total = sum(sensor.likelihood(o, d) for o in Outcome)
    assert torch.allclose(total, torch.ones_like(d))
    b = sensor.detection_probability(d)
    assert torch.allclose(b, 0.7 * 0.8 * torch.exp(-0.5 * (d / sensor.range_km) ** 2))
    assert torch.allclose(sensor.likelihood(Outcome.NOTHING, d), (1 - b) * 0.95)


def test_bad_settings_are_rejected():
    with pytest.raises(ConfigurationError, match="range_km"):
        Sensor(range_km=-1.0)
    with pytest.raises(ConfigurationError, match="max_pod"):
        Sensor(max_pod=1.5)
    with pytest.raises(ConfigurationError, match="false_alarm"):
        Sensor(false_alarm=1.0)
    with pytest.raises(ConfigurationError, match="shape"):
        Sensor(shape=0.0)
