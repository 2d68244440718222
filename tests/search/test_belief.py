"""The exact particle belief: p ∝ p(1 − POD), POD ≡ 0 changes nothing, the CumPOS identity."""

import math

import pytest
import torch
from scipy.spatial.transform import Rotation

from manibo.exceptions import InputDataError
from manibo.search.belief import ParticleBelief
from manibo.search.drift import Drift
from manibo.search.geography import EARTH_RADIUS_KM, latlon, offset
from manibo.search.sensor import Outcome, Sensor

DTYPES = [torch.float32, torch.float64]


def _particles(n, dtype=torch.float64, device="cpu", seed=0):
    gen = torch.Generator().manual_seed(seed)
    east, north = torch.randn(2, n, generator=gen, dtype=torch.float64) * 150.0
    return offset(latlon(10.0, -30.0), east, north).to(dtype=dtype, device=device)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_search_with_zero_detection_probability_changes_nothing(dtype, device="cpu"):
    belief = ParticleBelief(_particles(500, dtype, device))
    before = (belief.positions.clone(), belief.weights.clone(), belief.unfound.clone())
    for sensor in (Sensor(max_pod=0.0, false_alarm=0.05), Sensor(reliability=0.0)):
        for outcome in (Outcome.NOTHING, Outcome.CONTACT):
            pos = belief.update(sensor, latlon(10.0, -30.0, dtype=dtype, device=device), outcome)
            assert pos == 0.0
    assert torch.equal(belief.positions, before[0])
    assert torch.allclose(belief.weights, before[1], rtol=1e-6)
    assert torch.equal(belief.unfound, before[2])


@pytest.mark.parametrize("dtype", DTYPES)
def test_unsuccessful_search_multiplies_by_one_minus_pod(dtype):
    positions = _particles(300, dtype)
    belief = ParticleBelief(positions)
    sensor = Sensor(range_km=60.0, max_pod=0.9, false_alarm=0.02, confirm_pod=1.0)
    point = latlon(10.2, -30.1, dtype=dtype)
    belief.update(sensor, point, Outcome.NOTHING)
    d = torch.tensor([_haversine(point, p) for p in positions], dtype=dtype)
    expected = 1 - 0.9 * torch.exp(-0.5 * (d / 60.0) ** 2)
    expected = expected / expected.sum()
    # float32: the distance has ~2 km of round-off at short range (documented), hence 0.5%
    assert torch.allclose(belief.weights, expected, rtol=1e-10 if dtype == torch.float64 else 5e-3)


def _haversine(a, b):
    lat1, lon1 = math.asin(float(a[2])), math.atan2(float(a[1]), float(a[0]))
    lat2, lon2 = math.asin(float(b[2])), math.atan2(float(b[1]), float(b[0]))
    h = (
        math.sin((lat2 - lat1) / 2) ** 2
        + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    )
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(h))


def test_cumulative_pos_equals_one_minus_product_of_one_minus_pos():
    """The belief's POS_k against an independent computation on the drifted particles."""
    positions = _particles(800)
    belief = ParticleBelief(positions)
    axis = latlon(60.0, 20.0)
    drift = Drift(axis, speed_kmh=1.8)
    sensor = Sensor(range_km=50.0, max_pod=0.85, false_alarm=0.05, confirm_pod=0.9)
    searches = [(latlon(10.0 + 0.3 * k, -30.0 + 0.2 * k), 6.0 * (k + 1)) for k in range(8)]
    pos, time = [], 0.0
    outcomes = [Outcome.NOTHING, Outcome.CONTACT] * 4
    for (point, when), outcome in zip(searches, outcomes, strict=True):
        belief.drift(drift, when - time)
        time = when
        pos.append(belief.update(sensor, point, outcome))
    identity = 1 - math.prod(1 - p for p in pos)
    # independent: the prior mass whose own drifted trajectory every search failed to find
    unfound = torch.ones(800, dtype=torch.float64) / 800
    for point, when in searches:
        rotation = Rotation.from_rotvec((axis * 1.8 * when / EARTH_RADIUS_KM).numpy()).as_matrix()
        moved = positions @ torch.as_tensor(rotation).T
        d = torch.tensor([_haversine(point, p) for p in moved], dtype=torch.float64)
        unfound = unfound * (1 - 0.9 * 0.85 * torch.exp(-0.5 * (d / 50.0) ** 2))
    assert identity == pytest.approx(float(1 - unfound.sum()), rel=1e-10)
    assert belief.cumulative_pos == pytest.approx(identity, rel=1e-10)


def test_probability_of_success_is_the_weighted_detection_and_chunks_agree():
    belief = ParticleBelief(_particles(700))
    sensor = Sensor(range_km=40.0, confirm_pod=0.8)
    points = _particles(1200, seed=3)
    values = belief.probability_of_success(sensor, points)
    first = torch.tensor([_haversine(points[0], p) for p in belief.positions], dtype=torch.float64)
    direct = float((0.8 * sensor.detection_probability(first) * belief.weights).sum())
    assert float(values[0]) == pytest.approx(direct, rel=1e-9)
    assert values.shape == (1200,)


def test_impossible_outcome_and_bad_particles_are_rejected():
    belief = ParticleBelief(_particles(10))
    with pytest.raises(InputDataError, match="probability 0"):
        belief.update(Sensor(max_pod=0.0), latlon(10.0, -30.0), Outcome.FOUND)
    with pytest.raises(InputDataError, match="positions"):
        ParticleBelief(torch.ones(5, 3, dtype=torch.float64))
    with pytest.raises(InputDataError, match="weights"):
        ParticleBelief(_particles(4), torch.tensor([1.0, -1.0, 1.0, 1.0], dtype=torch.float64))
