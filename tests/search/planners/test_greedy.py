"""Greedy Bayes: each candidate leg's POS per hour by hand; the best one within the endurance."""

import pytest
import torch
from search.planners.conftest import state

from manibo.geo import EARTH_RADIUS_KM, GLOBE
from manibo.search.legs import Leg, total_hazard
from manibo.search.planners import GreedyBayes, leg_rates


def test_leg_rates_are_each_legs_probability_of_success_per_hour(brief):
    decision = state(brief, 2, 3.0, brief.assets[2].start, float("inf"))
    decision.belief.hazard = torch.rand(
        400, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )
    water = brief.prior_particles[:5]
    rates, pos, points = leg_rates(decision, brief, water)
    ship = brief.assets[2]
    for k in range(5):
        hours = float(GLOBE.distance(ship.start, points[k])) * EARTH_RADIUS_KM / ship.speed_kmh
        leg = Leg(2, ship.start, points[k], 3.0, 3.0 + hours, ship.sweep)
        found = -torch.expm1(-total_hazard([leg], brief.drift, decision.belief.positions))
        assert float(pos[k]) == pytest.approx(
            float(found @ decision.belief.weights), rel=1e-9, abs=1e-15
        )
        charged = max(hours, 0.05)  # the simulator charges a leg at least 3 minutes
        assert float(rates[k]) == pytest.approx(float(pos[k]) / charged, rel=1e-9, abs=1e-15)


def test_greedy_flies_the_best_leg_that_still_gets_home(brief):
    planner = GreedyBayes(num_candidates=64)
    planner.start(brief, seed=3)
    aircraft = brief.assets[0]
    decision = state(brief, 0, 1.0, brief.datum, 4.0)  # 3 h left, 2 of them to fly home
    point = planner.propose(decision)
    assert float(aircraft.slack_h(brief.datum, point, 1.0, 4.0)) >= -1e-9
    free = state(brief, 0, 1.0, brief.datum, 40.0)
    planner.start(brief, seed=3)
    water = free.belief.positions[free.belief.sample(64, planner.generator)]
    planner.start(brief, seed=3)
    rates, _, points = leg_rates(free, brief, water)
    assert torch.equal(planner.propose(free), points[int(torch.argmax(rates))])
