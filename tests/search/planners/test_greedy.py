"""Greedy Bayes: the best POS per hour by hand; without travel cost it picks the highest POS."""

import pytest
import torch

from manibo.search.assets import Asset
from manibo.search.belief import ParticleBelief
from manibo.search.drift import Drift
from manibo.search.geography import distance_km, latlon, offset
from manibo.search.planners import GreedyBayes, MissionBrief, PlannerState, best_search_rate
from manibo.search.sensor import Sensor


def _setup(speed):
    lkp = latlon(0.0, 0.0)
    gen = torch.Generator().manual_seed(0)
    east, north = torch.randn(2, 600, generator=gen, dtype=torch.float64) * 60
    particles = offset(lkp, east, north)
    near = offset(
        latlon(0.0, 3.0),
        torch.randn(200, generator=gen, dtype=torch.float64) * 5,
        torch.zeros(200, dtype=torch.float64),
    )
    particles = torch.cat([particles, near])  # a tight cluster 330 km east
    drift = Drift(latlon(90.0, 0.0), 0.0)
    asset = Asset(speed_kmh=speed, search_hours=2.0)
    brief = MissionBrief(lkp, particles, drift, Sensor(range_km=30.0), asset, latlon(0.0, -2.0))
    return brief, ParticleBelief(particles)


def test_rate_is_pos_over_transit_plus_search():
    brief, belief = _setup(speed=50.0)
    candidates = belief.positions[:5]
    rates, pos, points = best_search_rate(belief, brief.start, brief, candidates)
    hours = distance_km(candidates, brief.start) / 50.0
    assert torch.allclose(rates, pos / (hours + 2.0))
    assert torch.allclose(points, candidates)  # no current: meet the parcel where it is


def test_travel_cost_changes_the_choice():
    brief, belief = _setup(speed=1e7)  # travel is free: go where POS is highest (the cluster)
    planner = GreedyBayes(num_candidates=400)
    planner.start(brief)
    choice = planner.propose(PlannerState(0.0, brief.start, belief))
    assert float(distance_km(choice, latlon(0.0, 3.0))) < 30.0
    slow_brief, belief = _setup(speed=5.0)  # the cluster is 550 km away: 110 h of transit
    planner.start(slow_brief)
    choice = planner.propose(PlannerState(0.0, slow_brief.start, belief))
    assert float(distance_km(choice, latlon(0.0, 3.0))) > 200.0
    assert float(distance_km(choice, slow_brief.start)) == pytest.approx(
        float(distance_km(choice, slow_brief.start)), rel=1e-12
    )
