"""The planner interface: intercepting drifting water, clipping a proposal to the endurance."""

import pytest
import torch
from search.planners.conftest import state

from manibo.geo import destination, distance_km, latlon, offset
from manibo.search.assets import Asset
from manibo.search.drift import Drift
from manibo.search.planners import Planner, intercept
from manibo.search.sweep import SweepLaw


def test_intercept_meets_the_water_where_it_has_drifted_on_arrival():
    start = latlon(30.0, -40.0)
    drift = Drift.through(start, 45.0, 3.0, 30.0)  # a fast current, to make the effect visible
    asset = Asset.vessel("ship", start, SweepLaw(8.0), speed_kmh=25.0)
    water = offset(start, torch.tensor([150.0, -300.0]), torch.tensor([80.0, 20.0]))
    points, hours = intercept(start, water, 10.0, asset, drift)
    assert torch.allclose(drift.advect(water, 10.0 + hours), points, atol=1e-9)  # there on arrival
    assert torch.allclose(distance_km(points, start) / 25.0, hours, rtol=1e-8)  # after that long
    assert float((points - drift.advect(water, 10.0)).norm(dim=-1).min()) > 1e-4  # it moved


class _Straight(Planner):
    id = "straight"

    def propose(self, state):
        return self.within_endurance(state, destination(state.position, 180.0, 5000.0))


def test_within_endurance_keeps_the_way_home(brief):
    planner = _Straight()
    planner.start(brief)
    aircraft = brief.assets[0]
    decision = state(brief, 0, 2.0, brief.datum, 9.0)
    point = planner.propose(decision)
    assert float(aircraft.slack_h(brief.datum, point, 2.0, 9.0)) == pytest.approx(0.0, abs=1e-9)
