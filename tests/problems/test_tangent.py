"""Re-centred Euclidean test functions: minimum at z = 0, closed-form values elsewhere."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.problems.tangent import recentred_function


@pytest.mark.parametrize("kind", ["ackley", "rosenbrock", "styblinski-tang"])
def test_minimum_at_zero_and_above_elsewhere(kind):
    f, minimum = recentred_function(kind, 3, scale=5.0)
    zero = torch.zeros(1, 3, dtype=torch.float64)
    assert float(f(zero)) == pytest.approx(minimum, abs=1e-12)
    z = 8 * torch.rand(4000, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64) - 6
    assert float(f(z).min()) > minimum


def test_closed_forms():
    z = torch.tensor([[0.5, -0.25]], dtype=torch.float64)
    rosenbrock, _ = recentred_function("rosenbrock", 2)
    a, b = 1.5, 0.75  # z + 1
    assert float(rosenbrock(z)) == pytest.approx(100 * (b - a**2) ** 2 + (1 - a) ** 2, rel=1e-12)
    tang, minimum = recentred_function("styblinski-tang", 2, scale=5.0)
    u = [5 * 0.5 - 2.903534, 5 * -0.25 - 2.903534]
    assert float(tang(z)) == pytest.approx(0.5 * sum(t**4 - 16 * t**2 + 5 * t for t in u))
    assert minimum == pytest.approx(-39.16616570377142 * 2, rel=1e-9)
    ackley, _ = recentred_function("ackley", 2)
    r = math.sqrt((0.25 + 0.0625) / 2)
    cosines = (math.cos(2 * math.pi * 0.5) + math.cos(2 * math.pi * -0.25)) / 2
    expected = -20 * math.exp(-0.2 * r) - math.exp(cosines) + 20 + math.e
    assert float(ackley(z)) == pytest.approx(expected, rel=1e-12)


def test_unknown_kind():
    with pytest.raises(ConfigurationError, match="`kind` must be one of"):
        recentred_function("levy", 2)
