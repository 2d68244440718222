"""Common random numbers: the sensor's outcome law is kept; the world ignores the planner."""

import itertools
import math

import pytest
import torch
from scipy.stats import chi2

from manibo.exceptions import ConfigurationError
from manibo.search.drift import Drift
from manibo.search.geography import EARTH_RADIUS_KM, GLOBE, latlon, tangent_offsets
from manibo.search.sensor import Outcome, Sensor
from manibo.search.truth import DetectionDraws, ObjectTrack

DISTANCES = [35.0, 10.0, 60.0, 0.0, 25.0]  # km from the object, one mission's searches


def test_non_detection_frequency_matches_the_product_of_misses():
    # With c = 1 and no false alarms, "not found after K searches" is "no contact caused", whose
    # probability under independent searches is prod_k (1 - b_k).
    sensor = Sensor(range_km=40.0, max_pod=0.85, false_alarm=0.0, confirm_pod=1.0)
    b = sensor.detection_probability(torch.tensor(DISTANCES, dtype=torch.float64))
    n = 6000
    unfound = torch.zeros(len(DISTANCES), dtype=torch.float64)
    for seed in range(n):
        draws = DetectionDraws(sensor, seed)
        for k, d in enumerate(DISTANCES):
            if draws.outcome(d) == Outcome.FOUND:
                break
            unfound[k] += 1
    expected = torch.cumprod(1 - b, 0)
    sigma = (expected * (1 - expected) / n).sqrt()
    # Monte Carlo tolerance: 4 binomial standard deviations per prefix (miss probability ~1e-4).
    assert ((unfound / n - expected).abs() < 4 * sigma).all(), (unfound / n, expected)


def test_outcome_sequences_have_the_law_of_independent_searches():
    # False alarms, unconfirmed contacts and an imperfect sensor: the 27 outcome patterns of three
    # searches must have the probabilities of three independent draws of the sensor model, also
    # after an unconfirmed contact (a fresh threshold).
    sensor = Sensor(range_km=30.0, max_pod=0.9, false_alarm=0.1, confirm_pod=0.6, reliability=0.8)
    distances = [0.0, 15.0, 40.0]
    n = 6000
    counts = dict.fromkeys(itertools.product(Outcome, repeat=3), 0)
    for seed in range(n):
        draws = DetectionDraws(sensor, 10_000 + seed)
        counts[tuple(draws.outcome(d) for d in distances)] += 1
    d = torch.tensor(distances, dtype=torch.float64)
    like = {o: sensor.likelihood(o, d) for o in Outcome}
    statistic = 0.0
    for pattern, count in counts.items():
        p = math.prod(float(like[o][k]) for k, o in enumerate(pattern))
        statistic += (count - n * p) ** 2 / (n * p)
    assert statistic < chi2.ppf(0.999, df=len(counts) - 1)  # Pearson test at the 0.1% level


def test_more_hazard_on_the_object_never_finds_it_later():
    # The coupling: the same threshold E for every plan, so a plan whose searches are at least as
    # close to the object at each step causes its first contact no later.
    sensor = Sensor(range_km=40.0, false_alarm=0.0, confirm_pod=1.0)
    far = [60.0, 45.0, 70.0, 50.0, 80.0, 40.0]
    near = [30.0, 45.0, 20.0, 50.0, 10.0, 0.0]

    def first_find(distances, seed):
        draws = DetectionDraws(sensor, seed)
        outcomes = [draws.outcome(d) for d in distances]
        return outcomes.index(Outcome.FOUND) if Outcome.FOUND in outcomes else len(distances)

    pairs = [(first_find(near, s), first_find(far, s)) for s in range(300)]
    assert all(a <= b for a, b in pairs)
    assert sum(a < b for a, b in pairs) > 30  # and often strictly earlier
    assert first_find(far, 7) == first_find(list(far), 7)  # same searches, same fate


def test_certain_and_impossible_detections():
    sure = Sensor(max_pod=1.0, confirm_pod=1.0, false_alarm=0.0)
    assert all(DetectionDraws(sure, s).outcome(0.0) == Outcome.FOUND for s in range(50))
    blind = Sensor(max_pod=0.0, false_alarm=0.0)
    draws = DetectionDraws(blind, 0)
    assert all(draws.outcome(0.0) == Outcome.NOTHING for _ in range(200))


def test_track_is_the_drift_without_diffusion_and_does_not_depend_on_query_order():
    start = latlon(3.0, -30.0)
    still = Drift.through(start, 270.0, 1.44, 30.0)
    track = ObjectTrack(start, still, seed=0)
    for hours in (0.0, 7.3, 100.0):
        assert torch.allclose(track.position(hours), still.advect(start, hours), atol=1e-14)
    moving = Drift.through(start, 270.0, 1.44, 30.0, diffusion_km2_per_day=30.0)
    times = [5.2, 40.0, 12.75, 0.0, 160.0]
    forward = ObjectTrack(start, moving, seed=3)
    shuffled = ObjectTrack(start, moving, seed=3)
    first = {t: forward.position(t) for t in sorted(times)}
    for t in reversed(times):
        assert torch.equal(shuffled.position(t), first[t])
        assert abs(float(first[t].norm()) - 1) < 1e-12
    assert not torch.equal(ObjectTrack(start, moving, seed=4).position(40.0), first[40.0])


def test_track_diffuses_with_the_stated_variance():
    # In the comoving frame the object does Brownian motion: E|displacement|^2 = 4 D t (two
    # tangent directions of variance 2 D t each).
    start = latlon(-40.0, 100.0)
    drift = Drift.through(start, 90.0, 1.8, 20.0, diffusion_km2_per_day=48.0)
    hours, n = 48.0, 800
    ends = torch.stack(
        [ObjectTrack(start, drift, seed=s, knot_hours=6.0).position(hours) for s in range(n)]
    )
    comoving = drift.to_comoving(ends, hours)
    squared = (tangent_offsets(start, comoving) ** 2).sum(-1)  # km^2
    expected = 4 * 48.0 * hours / 24
    assert float(squared.mean()) == pytest.approx(expected, rel=0.15)  # 3.5% standard error
    between = ObjectTrack(start, drift, seed=1, knot_hours=6.0)
    a, b = (drift.to_comoving(between.position(t), t) for t in (6.0, 12.0))
    mid = drift.to_comoving(between.position(9.0), 9.0)
    assert float(GLOBE.distance(a, mid) + GLOBE.distance(mid, b)) == pytest.approx(
        float(GLOBE.distance(a, b)), abs=1e-12
    )  # on the arc between the knots
    assert float(GLOBE.distance(a, b)) * EARTH_RADIUS_KM > 0.1


def test_bad_track_arguments_are_rejected():
    drift = Drift.through(latlon(0.0, 0.0), 90.0, 1.0)
    with pytest.raises(ConfigurationError, match="knot_hours"):
        ObjectTrack(latlon(0.0, 0.0), drift, seed=0, knot_hours=0.0)
    with pytest.raises(ConfigurationError, match="hours"):
        ObjectTrack(latlon(0.0, 0.0), drift, seed=0).position(-1.0)
