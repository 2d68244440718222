"""The simulator: reproducible, finds what it searches on top of, respects endurance."""

import math

import pytest
import torch

from manibo.exceptions import InputDataError
from manibo.search.assets import Asset
from manibo.search.mission import simulate
from manibo.search.planners import ExpandingSquare, Planner
from manibo.search.scenarios import MissionSettings, af447_scenario
from manibo.search.sensor import Sensor

SHORT = MissionSettings(asset=Asset(endurance_hours=40.0))


class _Cheat(Planner):
    """Test double handed the object's hidden position (real planners never get it)."""

    name = "cheat"

    def __init__(self, scenario):
        self.scenario = scenario

    def propose(self, state):
        drift = self.scenario.drift
        return drift.advect(self.scenario.truth, state.time_h + 10.0)  # roughly where it will be


class _Replay(Planner):
    """Test double that searches a given list of points, in order."""

    name = "replay"

    def __init__(self, points):
        self.points = points

    def propose(self, state):
        return self.points[len(state.history)]


class _OffTheGlobe(Planner):
    name = "broken"

    def propose(self, state):
        return torch.tensor([2.0, 0.0, 0.0], dtype=torch.float64)


def test_same_seed_same_mission_and_cumulative_pos_identity():
    scenario = af447_scenario(SHORT, seed=3)
    first = simulate(scenario, ExpandingSquare(), num_particles=400)
    second = simulate(scenario, ExpandingSquare(), num_particles=400)
    assert [s.outcome for s in first.steps] == [s.outcome for s in second.steps]
    assert [s.cumulative_pos for s in first.steps] == [s.cumulative_pos for s in second.steps]
    product = 1.0
    for step in first.steps:
        product *= 1 - step.pos
        assert step.cumulative_pos == pytest.approx(1 - product, rel=1e-10)
    last = first.steps[-1]
    assert last.end_h <= SHORT.asset.endurance_hours + SHORT.asset.investigate_hours
    assert all(s.arrive_h - s.depart_h == pytest.approx(s.transit_km / 40.0) for s in first.steps)


def test_searching_on_top_of_the_object_finds_it():
    settings = MissionSettings(sensor=Sensor(max_pod=1.0, confirm_pod=1.0, range_km=60.0))
    scenario = af447_scenario(settings, seed=1)
    record = simulate(scenario, _Cheat(scenario), num_particles=200)
    assert record.found and len(record.steps) <= 3
    assert math.isfinite(record.time_to_detection_h)
    assert record.steps[-1].truth_distance_km < 60.0


def test_a_proposal_off_the_globe_is_rejected():
    with pytest.raises(InputDataError, match="proposal"):
        simulate(af447_scenario(SHORT, seed=0), _OffTheGlobe(), num_particles=100)


def test_planners_making_the_same_searches_get_the_same_outcomes_and_detection_time():
    # Common random numbers: the object's path and the detection draws belong to the scenario, not
    # to the planner, so replaying a mission's searches (with another planner and a belief of
    # another size, which draws its own particle noise) reproduces every outcome.
    settings = MissionSettings(sensor=Sensor(range_km=60.0), asset=Asset(endurance_hours=60.0))
    scenario = af447_scenario(settings, seed=1)
    first = simulate(scenario, _Cheat(scenario), num_particles=200)
    assert first.found  # the cheat searches near the object
    replay = simulate(scenario, _Replay([s.point for s in first.steps]), num_particles=350)
    assert [s.outcome for s in replay.steps] == [s.outcome for s in first.steps]
    assert replay.time_to_detection_h == first.time_to_detection_h
    assert torch.equal(replay.truth_track, first.truth_track)


def test_a_mission_played_past_its_detection_keeps_its_start_and_its_detection_time():
    # stop_at_detection=False is for evaluation: the same searches up to the detection, the same
    # time to detection, then the plan goes on (told "not confirmed") until the endurance.
    settings = MissionSettings(sensor=Sensor(range_km=60.0), asset=Asset(endurance_hours=60.0))
    scenario = af447_scenario(settings, seed=1)
    stopped = simulate(scenario, _Cheat(scenario), num_particles=200)
    played = simulate(scenario, _Cheat(scenario), num_particles=200, stop_at_detection=False)
    assert stopped.found and played.found
    assert played.time_to_detection_h == stopped.time_to_detection_h
    k = len(stopped.steps)
    assert [s.outcome for s in played.steps[:k]] == [s.outcome for s in stopped.steps]
    assert [s.cumulative_pos for s in played.steps[:k]] == [s.cumulative_pos for s in stopped.steps]
    assert len(played.steps) > k
    assert stopped.steps[-1].end_h < played.steps[-1].end_h <= 60.0 + 1.0  # (+ investigation)
    assert played.steps[-1].cumulative_pos > stopped.steps[-1].cumulative_pos
