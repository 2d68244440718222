"""Generated data sets: banana classes, and the airline-shaped regression problem's covariates,
scale and signal share."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.problems import datasets
from manibo.problems.datasets import AIRLINE_COLUMNS, airline_like, banana


def test_banana():
    X, y = banana(301, generator=torch.Generator().manual_seed(0))
    assert X.shape == (301, 2) and y.shape == (301,)
    assert set(y.tolist()) == {0.0, 1.0} and int(y.sum()) == 150
    again, _ = banana(301, generator=torch.Generator().manual_seed(0))
    assert torch.equal(X, again)
    # the classes are separable in the large: their means differ mostly in the vertical direction
    gap = X[y == 1].mean(0) - X[y == 0].mean(0)
    assert gap[1] > 0.5


def test_airline_like():
    n = 200_000
    signals = []
    original = datasets._airline_signal

    def spy(*args):
        signals.append(original(*args))
        return signals[-1]

    datasets._airline_signal = spy
    try:
        X, y = airline_like(n, generator=torch.Generator().manual_seed(1))
    finally:
        datasets._airline_signal = original
    assert X.shape == (n, len(AIRLINE_COLUMNS)) and y.shape == (n,)
    month, day, weekday, age, air_time, distance, arrival, departure = X.T
    assert month.min() == 1 and month.max() == 12 and weekday.max() == 7 and day.max() == 31
    assert age.min() >= 0 and age.max() <= 50 and distance.min() >= 30 and distance.max() <= 4900
    assert arrival.max() < 2400 and departure.min() >= 500
    assert torch.corrcoef(torch.stack([air_time, distance]))[0, 1] > 0.9
    assert abs(float(y.mean()) - 7) < 0.5 and abs(float(y.std()) - 35) < 1.5
    f = (signals[0] - datasets._SIGNAL_MEAN) / datasets._SIGNAL_STD
    explained = 35**2 * datasets.AIRLINE_SIGNAL_FRACTION * float(f.var()) / float(y.var())
    assert abs(explained - datasets.AIRLINE_SIGNAL_FRACTION) < 0.01
    assert (
        abs(float(y.skew() if hasattr(y, "skew") else ((y - y.mean()) ** 3).mean() / y.std() ** 3))
        > 0.5
    )
    with pytest.raises(ConfigurationError, match="`n`"):
        airline_like(0)
    assert math.isfinite(float(y.max()))
