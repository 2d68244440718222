"""Random search: points inside the prior's 99% disc around the drifted LKP, over the ocean."""

import torch

from manibo.search.assets import Asset
from manibo.search.belief import ParticleBelief
from manibo.search.drift import Drift
from manibo.search.geography import distance_km, latlon, offset
from manibo.search.ocean import ocean_mask
from manibo.search.planners import MissionBrief, PlannerState, RandomSearch
from manibo.search.sensor import Sensor


def test_points_lie_in_the_search_area_and_at_sea():
    lkp = latlon(43.0, 7.0)  # off Nice: land within reach to the north
    gen = torch.Generator().manual_seed(0)
    particles = offset(lkp, *(torch.randn(2, 2000, generator=gen, dtype=torch.float64) * 80))
    drift = Drift(latlon(90.0, 0.0), 0.0)
    brief = MissionBrief(lkp, particles, drift, Sensor(), Asset(speed_kmh=1e7), lkp, ocean_mask())
    planner = RandomSearch()
    planner.start(brief, seed=1)
    belief = ParticleBelief(particles)
    points = torch.stack([planner.propose(PlannerState(0.0, lkp, belief)) for _ in range(60)])
    assert float(distance_km(points, lkp).max()) <= planner.radius_km + 1e-6
    assert bool(ocean_mask().is_ocean(points).all())
    assert float(distance_km(points, lkp).std()) > 30.0  # spread over the area, not stuck
