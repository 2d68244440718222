"""Assets: sortie schedules, great-circle hours, the slack that keeps the way home, clipping."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.geo import EARTH_RADIUS_KM, destination, distance_km, latlon
from manibo.search.assets import Asset
from manibo.search.sweep import SweepLaw

BASE = latlon(-31.94, 115.97)


def _aircraft(**kw):
    return Asset.aircraft("P-8", BASE, SweepLaw(20.0), **kw)


def test_sorties_repeat_every_endurance_plus_turnaround():
    sorties = _aircraft(endurance_h=10.0, turnaround_h=14.0, available_h=2.0).sorties(72.0)
    assert sorties == [(2.0, 12.0), (26.0, 36.0), (50.0, 60.0)]
    ship = Asset.vessel("ship", BASE, SweepLaw(8.0, "definite-range"), available_h=5.0)
    assert ship.sorties(72.0) == [(5.0, math.inf)] and not ship.returns_to_base


def test_hours_are_great_circle_km_over_speed():
    a, b = latlon(0.0, 0.0), latlon(0.0, 1.0)
    asset = _aircraft(speed_kmh=300.0)
    assert float(asset.hours(a, b)) == pytest.approx(
        math.pi * EARTH_RADIUS_KM / 180 / 300, rel=1e-12
    )
    assert asset.hours(a, torch.stack([a, b])).shape == (2,)


def test_slack_counts_the_way_home_for_aircraft_only():
    far = destination(BASE, 250.0, 900.0)
    point = destination(BASE, 250.0, 1350.0)
    aircraft = _aircraft(speed_kmh=450.0)
    slack = float(aircraft.slack_h(far, point, 3.0, 11.0))
    assert slack == pytest.approx(8.0 - 450.0 / 450.0 - 1350.0 / 450.0, rel=1e-9)
    ship = Asset.vessel("ship", far, SweepLaw(8.0), speed_kmh=30.0, endurance_h=40.0)
    assert float(ship.slack_h(far, point, 3.0, 43.0)) == pytest.approx(40.0 - 15.0, rel=1e-9)


def test_within_endurance_clips_to_the_farthest_point_that_still_gets_home():
    aircraft = _aircraft(speed_kmh=450.0)
    position = destination(BASE, 200.0, 1500.0)
    deadline, now = 11.0, 6.5  # 4.5 h left; 3.33 h of them to fly home from here
    away = destination(BASE, 200.0, 2500.0)
    clipped = aircraft.within_endurance(position, away, now, deadline)
    assert float(aircraft.slack_h(position, clipped, now, deadline)) == pytest.approx(0.0, abs=1e-9)
    # straight away from base: out d, back 1500 + d, with (1500 + 2d) / 450 = 4.5 h: d = 262.5 km
    assert float(distance_km(position, clipped)) == pytest.approx(262.5, abs=1e-3)
    near = destination(position, 0.0, 50.0)
    assert aircraft.within_endurance(position, near, now, deadline) is near
    with pytest.raises(ConfigurationError, match="cannot reach its base"):
        aircraft.within_endurance(position, near, 9.0, deadline)
    with pytest.raises(InputDataError, match="antipodal"):
        aircraft.within_endurance(position, -position, now, deadline)


@pytest.mark.parametrize("field", ["speed_kmh", "endurance_h"])
def test_non_positive_settings_are_rejected(field):
    with pytest.raises(ConfigurationError, match=field):
        _aircraft(**{field: 0.0})


def test_bad_times_and_points_are_rejected():
    with pytest.raises(ConfigurationError, match="turnaround_h"):
        _aircraft(turnaround_h=-1.0)
    with pytest.raises(ConfigurationError, match="finite"):
        Asset("glider", 100.0, SweepLaw(5.0), BASE, math.inf, returns_to_base=True)
    with pytest.raises(InputDataError, match="start"):
        Asset.vessel("ship", torch.tensor([2.0, 0.0, 0.0], dtype=torch.float64), SweepLaw(8.0))
