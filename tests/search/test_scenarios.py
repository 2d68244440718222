"""Scenarios: the AF447 anchor points, reproducible random routes, everything over the ocean."""

import pytest
import torch

from manibo.search.geography import distance_km, latlon, unit_to_latlon
from manibo.search.ocean import ocean_mask
from manibo.search.scenarios import AF447_LKP, MissionSettings, af447_scenario, random_scenario


def test_af447_scenario_anchor_points():
    scenario = af447_scenario(mask=ocean_mask(), seed=0)
    assert torch.allclose(
        unit_to_latlon(scenario.lkp), torch.tensor(AF447_LKP, dtype=torch.float64)
    )
    assert bool(ocean_mask().is_ocean(scenario.truth))
    assert float(distance_km(scenario.start, scenario.lkp)) == pytest.approx(
        MissionSettings().staging_km
    )
    assert float(distance_km(scenario.destination, latlon(49.01, 2.55))) < 1e-6  # Paris CDG


def test_random_scenarios_are_reproducible_on_their_route_and_at_sea():
    mask = ocean_mask()
    for seed in (1, 2, 3, 4):
        a, b = random_scenario(seed, mask=mask), random_scenario(seed, mask=mask)
        assert a.name == b.name and torch.equal(a.truth, b.truth)
        assert bool(mask.is_ocean(a.lkp)) and bool(mask.is_ocean(a.truth))
        pole = torch.linalg.cross(a.origin, a.destination, dim=-1)
        assert abs(float(a.lkp @ pole / pole.norm())) < 1e-9  # the LKP lies on the route
    assert random_scenario(1, mask=mask).name != random_scenario(2, mask=mask).name
