"""Metrics: cumulative POS, step curves, survival with censoring, travel share, regret."""

import math

import pytest
import torch

from manibo.exceptions import InputDataError
from manibo.search.belief import ParticleBelief
from manibo.search.geography import latlon
from manibo.search.metrics import (
    cumulative_pos,
    found_given_object,
    median,
    pos_against_effort,
    pos_against_time,
    quantile,
    regret,
    survival,
    time_to_detection,
    travel_share,
)
from manibo.search.mission import MissionRecord, StepRecord
from manibo.search.sensor import Outcome, Sensor
from manibo.search.truth import DetectionDraws


def _record(steps, found=False, ttd=None):
    point = latlon(0.0, 0.0)
    records = [
        StepRecord(i, point, d, a, e, 10.0 * (a - d), Outcome.NOTHING, p, c, v, bv, br, 100.0)
        for i, (d, a, e, p, c, v, bv, br) in enumerate(steps)
    ]
    return MissionRecord(
        "s",
        "p",
        point,
        records,
        found,
        ttd,
        point.unsqueeze(0),
        ParticleBelief(point.unsqueeze(0)),
        100.0,
        4.0,
    )


def test_cumulative_pos_closed_form():
    pos = [0.1, 0.2, 0.5]
    expected = [0.1, 1 - 0.9 * 0.8, 1 - 0.9 * 0.8 * 0.5]
    assert torch.allclose(cumulative_pos(pos), torch.tensor(expected, dtype=torch.float64))
    with pytest.raises(InputDataError, match="probabilities"):
        cumulative_pos([0.5, 1.5])


def test_curves_travel_share_and_regret_of_a_hand_made_mission():
    # (depart, arrive, end, pos, cumulative, value, best value, best rate)
    rec = _record([(0, 2, 6, 0.1, 0.1, 0.1, 0.2, 0.05), (6, 7, 11, 0.2, 0.28, 0.2, 0.2, 0.04)])
    hours = torch.tensor([0.0, 5.9, 6.0, 10.0, 11.0, 50.0], dtype=torch.float64)
    assert pos_against_time(rec, hours).tolist() == pytest.approx([0, 0, 0.1, 0.1, 0.28, 0.28])
    effort = torch.tensor([3.9, 4.0, 8.0], dtype=torch.float64)
    assert pos_against_effort(rec, effort).tolist() == pytest.approx([0, 0.1, 0.28])
    assert travel_share(rec) == pytest.approx(3 / 11)
    r = regret(rec)
    assert r["myopic"] == pytest.approx(0.1)
    assert r["travel"] == pytest.approx(0.05 * 3)  # lambda = best POS per hour at the start
    assert r["adjusted"] == pytest.approx(0.25)
    assert time_to_detection(rec) == math.inf
    assert time_to_detection(_record([], True, 12.5)) == 12.5


def test_found_given_the_object_is_the_closed_form_and_the_simulators_frequency():
    sensor = Sensor(range_km=40.0, max_pod=0.85, confirm_pod=0.95)
    rec = _record(
        [(0, 2, 6, 0, 0, 0, 0, 0), (6, 7, 11, 0, 0, 0, 0, 0), (11, 12, 16, 0, 0, 0, 0, 0)]
    )
    distances = [0.0, 40.0, 200.0]
    for step, d in zip(rec.steps, distances, strict=True):
        step.truth_distance_km = d
    first, second = 0.95 * 0.85, 0.95 * 0.85 * math.exp(-0.5)  # c * b(d), Gaussian beam
    third = 0.95 * 0.85 * math.exp(-0.5 * 25)
    hours = torch.tensor([5.9, 6.0, 11.0, 16.0], dtype=torch.float64)
    expected = [0, first, 1 - (1 - first) * (1 - second)]
    expected.append(1 - (1 - first) * (1 - second) * (1 - third))
    assert found_given_object(rec, sensor, hours).tolist() == pytest.approx(expected, abs=1e-12)
    # the simulator's dice (common random numbers) find the object that often at each step
    runs, found = 4000, torch.zeros(3)
    for seed in range(runs):
        draws = DetectionDraws(sensor, seed)
        hit = [draws.outcome(d) == Outcome.FOUND for d in distances]
        found += torch.tensor([any(hit[: k + 1]) for k in range(3)], dtype=torch.float32)
    assert (found / runs).tolist() == pytest.approx(expected[1:], abs=0.025)


def test_survival_and_quantiles_with_censored_missions():
    ttd = [10.0, 20.0, math.inf, 40.0]
    hours = torch.tensor([0.0, 10.0, 15.0, 40.0, 1000.0], dtype=torch.float64)
    assert survival(ttd, hours).tolist() == pytest.approx([1.0, 0.75, 0.75, 0.25, 0.25])
    assert median(ttd) == pytest.approx(30.0)
    assert median([1.0, math.inf, math.inf]) == math.inf
    assert quantile(ttd, 0.0) == 10.0 and quantile(ttd, 1.0) == math.inf
    with pytest.raises(InputDataError):
        median([])
