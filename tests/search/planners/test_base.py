"""The planner interface: intercepting drifting water parcels."""

import torch

from manibo.search.assets import Asset
from manibo.search.drift import Drift
from manibo.search.geography import distance_km, latlon, offset
from manibo.search.planners import MissionBrief, intercept
from manibo.search.sensor import Sensor


def test_intercept_meets_the_parcel_where_it_has_drifted_on_arrival():
    start = latlon(30.0, -40.0)
    drift = Drift.through(start, 45.0, 3.0, 30.0)  # a fast current, to make the effect visible
    asset = Asset(speed_kmh=25.0)
    brief = MissionBrief(start, start.unsqueeze(0), drift, Sensor(), asset, start)
    parcels = offset(start, torch.tensor([150.0, -300.0]), torch.tensor([80.0, 20.0]))
    points, hours = intercept(start, parcels, brief)
    assert torch.allclose(drift.advect(parcels, hours), points, atol=1e-9)  # it is there on arrival
    assert torch.allclose(
        distance_km(points, start) / 25.0, hours, rtol=1e-8
    )  # and it takes that long
    assert float((points - parcels).norm(dim=-1).min()) > 1e-4  # the parcels did move meanwhile
