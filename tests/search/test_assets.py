"""The search asset: transit times along great circles, and bad settings."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.search.assets import Asset
from manibo.search.geography import EARTH_RADIUS_KM, latlon


def test_transit_time_is_great_circle_distance_over_speed():
    asset = Asset(speed_kmh=30.0)
    a, b = latlon(0.0, 0.0), latlon(0.0, 1.0)
    hours = float(asset.transit_hours(a, b))
    assert hours == pytest.approx(math.pi * EARTH_RADIUS_KM / 180 / 30.0, rel=1e-12)
    batch = torch.stack([a, b])
    assert asset.transit_hours(a, batch).shape == (2,)


@pytest.mark.parametrize("field", ["speed_kmh", "endurance_hours", "search_hours"])
def test_non_positive_settings_are_rejected(field):
    with pytest.raises(ConfigurationError, match=field):
        Asset(**{field: -1.0})
    with pytest.raises(ConfigurationError, match=field):
        Asset(**{field: 0.0})


def test_points_off_the_sphere_are_rejected():
    with pytest.raises(InputDataError, match="end"):
        Asset().transit_hours(latlon(0.0, 0.0), torch.tensor([2.0, 0.0, 0.0], dtype=torch.float64))
    with pytest.raises(ConfigurationError, match="investigate_hours"):
        Asset(investigate_hours=-0.5)
