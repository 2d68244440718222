"""Legs: ends in the water's frame, pieces whose hazards add up, hazards grouped by sweep."""

import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.geo import destination, distance_km, latlon, offset
from manibo.search.drift import Drift
from manibo.search.legs import Leg, total_hazard
from manibo.search.sweep import SweepLaw

START = latlon(52.0, -178.0)  # crosses the antimeridian eastwards


def _leg(sweep=None, asset=0):
    return Leg(asset, START, destination(START, 80.0, 600.0), 3.0, 4.5, sweep or SweepLaw(20.0))


def test_the_water_frame_carries_each_end_back_from_its_own_time():
    drift = Drift.through(START, 90.0, 2.0, 20.0)
    leg = _leg()
    start, end = leg.comoving(drift)
    assert torch.allclose(drift.advect(start, 3.0), leg.start, atol=1e-12)
    assert torch.allclose(drift.advect(end, 4.5), leg.end, atol=1e-12)


def test_the_pieces_of_a_leg_add_up_to_the_leg():
    drift = Drift.through(START, 90.0, 2.0, 20.0)
    gen = torch.Generator().manual_seed(0)
    points = offset(
        destination(START, 80.0, 300.0),
        *(torch.randn(2, 300, generator=gen, dtype=torch.float64) * 80),
    )
    water = drift.to_comoving(points, 4.5)
    leg = _leg()
    pieces = leg.split(8)
    assert [p.depart_h for p in pieces][:2] == [3.0, 3.1875] and pieces[-1].arrive_h == 4.5
    assert torch.equal(pieces[0].start, leg.start) and torch.allclose(pieces[-1].end, leg.end)
    whole = leg.hazard(drift, water)
    # in the water's frame the pieces are a polyline within about 100 m of the leg's arc (the
    # current changes along the leg, so its track there is not quite a great circle)
    pieces_pod = -torch.expm1(-total_hazard(pieces, drift, water))
    assert torch.allclose(pieces_pod, -torch.expm1(-whole), atol=5e-3)
    middle = leg.point_at(torch.tensor(0.5))
    assert float(distance_km(middle, leg.start)) == pytest.approx(300.0, rel=1e-9)
    with pytest.raises(ConfigurationError, match="pieces"):
        leg.split(0)


def test_total_hazard_sums_the_legs_of_every_sweep_law():
    drift = Drift(latlon(90.0, 0.0), 0.0)
    points = offset(START, torch.tensor([50.0, 300.0, 200.0]), torch.tensor([3.0, -8.0, 30.0]))
    legs = [_leg(), _leg(SweepLaw(16.0), 1), _leg(SweepLaw(8.0, "definite-range"), 2)]
    total = total_hazard(legs, drift, points)
    assert torch.allclose(total, sum(leg.hazard(drift, points) for leg in legs))
    with pytest.raises(ConfigurationError, match="arrive after"):
        Leg(0, START, START, 2.0, 1.0, SweepLaw(5.0))
