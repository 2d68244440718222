"""Hidden objects: the expected fraction found is the mean of the realised detections; each
detection lies on the leg and in the time that made it; objects are common to all planners."""

import math

import pytest
import torch

from manibo.geo import EARTH_RADIUS_KM, GLOBE, latlon, offset
from manibo.search.drift import Drift
from manibo.search.evaluation import Evaluation, HiddenObjects, evaluate, scenario_objects
from manibo.search.legs import Leg
from manibo.search.scenarios import MissionSettings, af447_scenario
from manibo.search.sweep import SweepLaw

CENTRE = latlon(-40.0, 100.0)


def _lawnmower(tracks=6, spacing=25.0):
    legs, clock = [], 0.0
    for t in range(tracks):
        a = offset(CENTRE, torch.tensor(-250.0), torch.tensor(-75.0 + t * spacing))
        b = offset(CENTRE, torch.tensor(250.0), torch.tensor(-75.0 + t * spacing))
        a, b = (a, b) if t % 2 == 0 else (b, a)
        hours = float(GLOBE.distance(a, b)) * EARTH_RADIUS_KM / 400.0
        legs.append(Leg(0, a, b, clock, clock + hours, SweepLaw(20.0)))
        clock += hours
    return legs


def _objects(n=4000, diffusion=30.0, device="cpu"):
    gen = torch.Generator().manual_seed(0)
    starts = offset(CENTRE, *(torch.randn(2, n, generator=gen, dtype=torch.float64) * 100))
    drift = Drift.through(CENTRE.to(device), 45.0, 1.5, 10.0, diffusion)
    return HiddenObjects(starts.to(device), drift, 10.0, seed=1)


def test_the_expected_fraction_found_is_the_mean_of_the_realised_detections(device="cpu"):
    objects, hours = _objects(device=device), torch.tensor([0.0, 2.0, 4.0, 6.0, 8.0])
    legs = [
        Leg(k.asset, k.start.to(device), k.end.to(device), k.depart_h, k.arrive_h, k.sweep)
        for k in _lawnmower()
    ]
    result = evaluate(legs, objects, hours)
    assert result.expected_found.device.type == torch.device(device).type
    hours = hours.to(device)
    realised = (result.time_to_detection_h.unsqueeze(-1) <= hours).double().mean(0)
    se = (realised * (1 - realised) / len(objects)).sqrt().clamp_min(1e-3)
    assert torch.all((result.expected_found - realised).abs() <= 4 * se)
    assert result.expected_found[0] == 0 and 0.2 < float(result.expected_found[-1]) < 0.9
    assert torch.all(result.expected_found[1:] >= result.expected_found[:-1])


def test_each_detection_lies_on_the_leg_and_in_the_hours_that_made_it():
    objects, legs = _objects(500), _lawnmower()
    result = evaluate(legs, objects, torch.tensor([0.0, 8.0]))
    found = torch.isfinite(result.time_to_detection_h)
    assert bool(found.any()) and bool((~found).any())
    assert torch.equal(found, result.detection_leg >= 0)
    gaps = []
    for j in torch.nonzero(found).flatten().tolist():
        leg, t = legs[int(result.detection_leg[j])], float(result.time_to_detection_h[j])
        assert leg.depart_h - 1e-9 <= t <= leg.arrive_h + 1e-9
        share = (t - leg.depart_h) / (leg.arrive_h - leg.depart_h)
        assert torch.allclose(
            result.detection_point[j], leg.point_at(torch.tensor(share)), atol=1e-3
        )
        point = objects.position(t)[j]
        gaps.append(float(GLOBE.distance(result.detection_point[j], point)) * EARTH_RADIUS_KM)
    # detections mostly within about a sweep width, as the inverse-cube law makes them
    assert sorted(gaps)[len(gaps) // 2] < 20.0
    assert torch.isnan(result.detection_point[~found]).all()


def test_without_legs_nothing_is_found_and_without_diffusion_objects_ride_the_current():
    objects = _objects(50, diffusion=0.0)
    result = evaluate([], objects, torch.tensor([0.0, 5.0]))
    assert result.expected_found.tolist() == [0.0, 0.0] and math.isinf(
        result.time_to_detection_h.min()
    )
    assert torch.allclose(objects.comoving(7.3), objects.knots[:, 0], atol=1e-12)
    assert torch.allclose(objects.position(7.3), objects.drift.advect(objects.knots[:, 0], 7.3))
    assert float(objects.thresholds.mean()) == pytest.approx(1.0, abs=0.3)  # Exp(1)


def test_every_planner_meets_the_same_objects():
    scenario = af447_scenario(4, MissionSettings(duration_h=12.0))
    a, b = scenario_objects(scenario, 30), scenario_objects(scenario, 30)
    assert torch.equal(a.knots, b.knots) and torch.equal(a.thresholds, b.thresholds)


def test_the_expected_fraction_found_between_grid_times_is_linear():
    zeros = torch.zeros(2)
    result = Evaluation(
        torch.tensor([0.0, 2.0, 6.0], dtype=torch.float64),
        torch.tensor([0.0, 0.4, 0.6], dtype=torch.float64),
        zeros,
        zeros,
        zeros,
    )
    assert result.expected_found_by(2.0) == pytest.approx(0.4)
    assert result.expected_found_by(1.5) == pytest.approx(0.3)
    assert result.expected_found_by(5.0) == pytest.approx(0.55)
    assert result.expected_found_by(-1.0) == 0.0 and result.expected_found_by(9.0) == pytest.approx(
        0.6
    )


def test_the_expected_fraction_found_never_decreases_and_repeats_at_repeated_hours():
    objects = _objects(n=301)
    legs = _lawnmower(tracks=12, spacing=12.0)
    grid = torch.arange(0.0, legs[-1].arrive_h + 1.0, 0.05, dtype=torch.float64)
    hours = torch.cat([grid, torch.full((100,), float(grid[40]), dtype=torch.float64)]).sort()[0]
    expected = evaluate(legs, objects, hours).expected_found
    assert bool((expected[1:] >= expected[:-1]).all())  # exactly, not to a tolerance
    repeated = expected[hours == grid[40]]
    assert repeated.numel() == 101 and bool((repeated == repeated[0]).all())
    assert float(expected[-1]) > 0.3
