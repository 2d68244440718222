"""Random search: points at sea in the disc holding 99% of the prior, around the drifted datum."""

import torch
from search.planners.conftest import state

from manibo.geo import distance_km
from manibo.search.planners import RandomSearch


def test_random_points_lie_in_the_drifting_search_disc(brief):
    planner = RandomSearch()
    planner.start(brief, seed=0)
    reach = float(torch.quantile(distance_km(brief.prior_particles, brief.datum), 0.99))
    assert planner.radius_km == reach
    ship = brief.assets[2]
    for _ in range(20):
        point = planner.propose(state(brief, 2, 30.0, ship.start, float("inf")))
        assert float(distance_km(point, brief.drift.advect(brief.datum, 30.0))) <= reach + 1e-6
