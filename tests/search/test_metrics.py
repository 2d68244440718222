"""Metrics: hours to a fraction by interpolation, paired differences, censored quantiles."""

import math

import pytest
import torch

from manibo.exceptions import InputDataError
from manibo.search.metrics import (
    fraction_found_by,
    hours_to_fraction,
    median,
    paired_difference,
    quantile,
)


def test_hours_to_half_interpolates_between_grid_points():
    hours = torch.tensor([0.0, 10.0, 20.0, 30.0])
    assert hours_to_fraction(hours, torch.tensor([0.0, 0.3, 0.7, 0.9])) == pytest.approx(15.0)
    assert hours_to_fraction(hours, torch.tensor([0.0, 0.1, 0.2, 0.3])) is None
    assert hours_to_fraction(hours, torch.tensor([0.6, 0.7, 0.8, 0.9])) == 0.0
    with pytest.raises(InputDataError, match="same length"):
        hours_to_fraction(hours, torch.tensor([0.1, 0.2]))


def test_paired_difference_is_the_mean_and_standard_error_of_the_differences():
    a = torch.tensor([[0.5, 0.6], [0.4, 0.7], [0.3, 0.9]], dtype=torch.float64)
    b = torch.tensor([[0.4, 0.6], [0.4, 0.5], [0.1, 0.6]], dtype=torch.float64)
    mean, se = paired_difference(a, b)
    diff = a - b
    assert torch.allclose(mean, diff.mean(0))
    assert torch.allclose(se, diff.std(0, unbiased=True) / math.sqrt(3))
    with pytest.raises(InputDataError, match="at least 2"):
        paired_difference(a[:1], b[:1])


def test_realised_fraction_and_censored_quantiles():
    ttd = torch.tensor([[1.0, math.inf], [5.0, 2.0]])
    assert fraction_found_by(ttd, torch.tensor([0.0, 2.0, 10.0])).tolist() == [0.0, 0.5, 0.75]
    assert median([1.0, 2.0, math.inf]) == 2.0
    assert median([1.0, math.inf, math.inf]) == math.inf
    assert quantile([1.0, 3.0], 0.5) == 2.0
    with pytest.raises(InputDataError):
        quantile([], 0.5)
