r"""Data sets generated in code for sparse-GP benchmarks: banana classification and an
airline-shaped regression problem (nothing is downloaded).

* :func:`banana`: two interleaved banana-shaped classes in :math:`\mathbb R^2`, the shape of the
  classification set of Hensman et al. (2015) (generated, not that file).
* :func:`airline_like`: a synthetic stand-in for the 2008 US flight-delay data used by Hensman et
  al. (2013, 2018) and Dutordoir et al. (2020): the same eight covariates with plausible marginals
  and dependencies, and a delay that is a smooth function of them plus heavy-tailed, right-skewed
  noise, scaled so that the signal explains :data:`AIRLINE_SIGNAL_FRACTION` of the variance — on
  the real data the best sparse GPs reach a standardised MSE of 0.81–0.83 (Dutordoir 2021, Table
  3.1).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError

AIRLINE_SIZE = 5_929_413
"""Number of records in the full airline data set (Dutordoir 2021, Table 3.1)."""

AIRLINE_COLUMNS = (
    "month",
    "day_of_month",
    "day_of_week",
    "plane_age",
    "air_time",
    "distance",
    "arrival_time",
    "departure_time",
)
"""The eight covariates, in column order (times as hhmm, air time in minutes, distance in miles)."""

AIRLINE_SIGNAL_FRACTION = 0.18
"""Share of the delay's variance explained by the covariates (the noise has the other 82%)."""


def _check_size(n: int) -> int:
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ConfigurationError(f"`n` must be an integer >= 1, got {n!r}.")
    return int(n)


def banana(n: int, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """Two interleaved banana-shaped classes in the plane, ``n // 2`` points each (float64).

    Class 1 lies along an arc opening downwards, class 0 along a shifted arc opening upwards; both
    carry isotropic Gaussian noise of standard deviation 0.25, so the classes overlap a little.

    Args:
        n: number of points (``>= 2``).
        generator: source of randomness.

    Returns:
        ``(X, y)``: inputs of shape ``(n, 2)`` (roughly in ``[-2.5, 2.5]²``) and labels in {0, 1} of
        shape ``(n,)``.
    """
    n = _check_size(n)
    half = n // 2
    angle = torch.rand(n, generator=generator, dtype=torch.float64) * math.pi
    upper = torch.stack([1.6 * torch.cos(angle) - 0.5, 1.2 * torch.sin(angle) - 0.3], -1)
    lower = torch.stack([1.6 * torch.cos(angle) + 0.5, -1.2 * torch.sin(angle) + 0.5], -1)
    labels = (torch.arange(n) < half).to(torch.float64)
    X = torch.where(labels.bool().unsqueeze(-1), upper, lower)
    X = X + 0.25 * torch.randn(n, 2, generator=generator, dtype=torch.float64)
    order = torch.randperm(n, generator=generator)
    return X[order], labels[order]


def _hhmm(hours: Tensor) -> Tensor:
    hours = torch.remainder(hours, 24.0)
    return torch.floor(hours) * 100 + torch.floor(torch.remainder(hours, 1.0) * 60)


# Standardisation constants, so that any number of records (or chunks of them) share one function:
# the signal's mean and sd estimated from 4e6 records (seed 0), the noise's in closed form
# (Gumbel: mean Euler's gamma, variance pi^2/6; tail: 0.1 x Exp(1) x 3: mean 0.3, variance 1.71).
_SIGNAL_MEAN, _SIGNAL_STD = 0.2595, 0.8368
_NOISE_MEAN = 0.5772156649015329 + 0.3
_NOISE_STD = math.sqrt(math.pi**2 / 6 + 1.71)


def _airline_signal(month, day, weekday, age, distance, dep_hours, arr_hours) -> Tensor:
    season = torch.cos(2 * math.pi * (month - 7) / 12) + 0.8 * torch.exp(-((month - 12) ** 2))
    busy_day = torch.exp(-((weekday - 4.5) ** 2) / 1.5)
    daytime = torch.tanh((dep_hours - 12) / 4) + 0.4 * torch.sin(2 * math.pi * arr_hours / 24)
    return (
        1.0 * daytime
        + 0.6 * season
        + 0.35 * busy_day
        - 0.5 * torch.log(distance / 600)
        + 0.015 * age
        + 0.3 * daytime * season
        + 0.1 * torch.cos(2 * math.pi * day / 31)
    )


def airline_like(
    n: int, generator: torch.Generator | None = None, dtype: torch.dtype = torch.float64
) -> tuple[Tensor, Tensor]:
    r"""A synthetic flight-delay regression problem with the airline data's eight covariates.

    Covariates (:data:`AIRLINE_COLUMNS`): month and day uniform; plane age
    :math:`\sim` Gamma(2, 6) years capped at 50; distance log-normal (median 600 miles, 30–4,900);
    air time :math:`0.12 \times` distance + 18 min with 8% noise; departure time from a two-peaked
    daily profile (morning and early evening); arrival = departure + air time + up to 3 time zones.

    The delay is :math:`f(x) + \epsilon`: :math:`f` accumulates over the day (departure and arrival
    time), peaks in summer and December, on Thursdays and Fridays, shrinks with distance (long
    flights make up time) and grows slowly with plane age, with a departure-time × month
    interaction; :math:`\epsilon` is a right-skewed heavy-tailed mixture (Gumbel plus a 10%
    exponential tail of long delays). Both are scaled so that :math:`\mathrm{Var} f /
    \mathrm{Var}\, y` is :data:`AIRLINE_SIGNAL_FRACTION` and the delay is in minutes (mean about 7,
    sd about 35).

    Args:
        n: number of records.
        generator: source of randomness (CPU).
        dtype: dtype of the result.

    Returns:
        ``(X, y)``: covariates of shape ``(n, 8)`` and delays of shape ``(n,)``.
    """
    n = _check_size(n)
    g = {"generator": generator, "dtype": torch.float64}
    month = torch.randint(1, 13, (n,), generator=generator).to(torch.float64)
    day = torch.randint(1, 32, (n,), generator=generator).to(torch.float64)
    weekday = torch.randint(1, 8, (n,), generator=generator).to(torch.float64)
    shape = torch.full((n,), 2.0, dtype=torch.float64)
    age = (torch._standard_gamma(shape, generator=generator) * 6.0).clamp(0, 50).round()
    distance = torch.exp(math.log(600) + 0.75 * torch.randn(n, **g)).clamp(30, 4900).round()
    air_time = (0.12 * distance + 18) * (1 + 0.08 * torch.randn(n, **g))
    air_time = air_time.clamp_min(10).round()
    morning = 7.5 + 1.8 * torch.randn(n, **g)
    evening = 17.0 + 2.2 * torch.randn(n, **g)
    dep_hours = torch.where(torch.rand(n, **g) < 0.55, morning, evening).clamp(5.0, 23.9)
    zones = torch.randint(-3, 4, (n,), generator=generator).to(torch.float64)
    arr_hours = dep_hours + air_time / 60 + zones
    X = torch.stack(
        [month, day, weekday, age, air_time, distance, _hhmm(arr_hours), _hhmm(dep_hours)], -1
    )

    f = _airline_signal(month, day, weekday, age, distance, dep_hours, arr_hours)
    f = (f - _SIGNAL_MEAN) / _SIGNAL_STD
    gumbel = -torch.log(-torch.log(torch.rand(n, **g).clamp(1e-12, 1 - 1e-12)))
    tail = torch.where(
        torch.rand(n, **g) < 0.1,
        torch.empty(n, dtype=torch.float64).exponential_(1.0, generator=generator) * 3,
        torch.zeros(n, dtype=torch.float64),
    )
    noise = (gumbel + tail - _NOISE_MEAN) / _NOISE_STD
    signal = math.sqrt(AIRLINE_SIGNAL_FRACTION)
    y = 7.0 + 35.0 * (signal * f + math.sqrt(1 - AIRLINE_SIGNAL_FRACTION) * noise)
    return X.to(dtype), y.to(dtype)
