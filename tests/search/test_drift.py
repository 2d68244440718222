"""Drift: rotation preserves probability and is undone by its inverse; velocity, diffusion."""

import math

import pytest
import torch
from scipy.spatial.transform import Rotation

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.geo import EARTH_RADIUS_KM, distance_km, latlon, local_frame
from manibo.search.belief import ParticleBelief
from manibo.search.drift import Drift

DTYPES = [torch.float32, torch.float64]


def _cloud(n, dtype, device, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=gen, dtype=torch.float64) * 0.2 + torch.tensor(
        [1.0, 0.3, 0.2], dtype=torch.float64
    )
    return torch.nn.functional.normalize(x, dim=-1).to(dtype=dtype, device=device)


@pytest.mark.parametrize("dtype", DTYPES)
def test_drift_preserves_probability_and_is_undone_by_the_inverse_rotation(dtype, device="cpu"):
    axis = latlon(50.0, -30.0, dtype=dtype, device=device)
    drift = Drift(axis, speed_kmh=1.8)
    points = _cloud(4000, dtype, device)
    weights = torch.rand(4000, generator=torch.Generator().manual_seed(1), dtype=dtype).to(device)
    belief = ParticleBelief(points, weights)
    cap_centre = latlon(10.0, 15.0, dtype=dtype, device=device)
    mass_in_cap = float(belief.weights[distance_km(points, cap_centre) < 1500].sum())
    belief.advance(drift, 240.0)  # the belief lives in the water's frame: only time moves on
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    assert abs(float(belief.weights.sum()) - 1) < tol  # total probability
    now = belief.present_positions(drift)
    moved_cap = drift.advect(cap_centre, 240.0)  # the same water mass, carried along
    moved = belief.weights[distance_km(now, moved_cap) < 1500].sum()
    assert (
        abs(float(moved) - mass_in_cap) < 1e-3
    )  # only particles within round-off of the edge may differ
    back = drift.advect(now, -240.0)
    assert torch.allclose(back, points, atol=1e-12 if dtype == torch.float64 else 1e-5)
    assert torch.allclose(drift.to_comoving(now, 240.0), back)


def test_rotation_matches_scipy_rotation_vector():
    axis = torch.nn.functional.normalize(torch.tensor([0.3, -0.2, 0.9], dtype=torch.float64), dim=0)
    drift = Drift(axis, speed_kmh=2.0)
    hours = 500.0
    angle = 2.0 * hours / EARTH_RADIUS_KM
    reference = Rotation.from_rotvec((axis * angle).numpy()).as_matrix()
    assert torch.allclose(drift.rotation(hours), torch.as_tensor(reference), atol=1e-14)


def test_advect_applies_scipys_rotation_to_each_point_at_its_own_time():
    axis = torch.nn.functional.normalize(torch.tensor([0.3, -0.2, 0.9], dtype=torch.float64), dim=0)
    drift = Drift(axis, speed_kmh=2.0)
    x = _cloud(6, torch.float64, "cpu")
    hours = torch.tensor([0.0, 10.0, -35.0, 240.0, 1000.0, 5000.0], dtype=torch.float64)
    reference = torch.stack(
        [
            torch.as_tensor(
                Rotation.from_rotvec((axis * 2.0 * float(h) / EARTH_RADIUS_KM).numpy()).apply(p)
            )
            for p, h in zip(x.numpy(), hours, strict=True)
        ]
    )
    assert torch.allclose(drift.advect(x, hours), reference, atol=1e-14)
    assert torch.allclose(drift.advect(x[1], 10.0), reference[1], atol=1e-14)


def test_velocity_is_the_time_derivative_of_the_flow():
    drift = Drift(latlon(70.0, 10.0), speed_kmh=1.5)
    x = _cloud(5, torch.float64, "cpu")
    h = 1e-4
    derivative = (drift.advect(x, h) - drift.advect(x, -h)) / (2 * h) * EARTH_RADIUS_KM
    assert torch.allclose(derivative, drift.velocity_kmh(x), atol=1e-8)


@pytest.mark.parametrize("tilt", [0.0, 45.0])
def test_current_through_a_point_has_the_requested_heading_and_speed(tilt):
    point = latlon(2.98, -30.59)
    drift = Drift.through(point, heading_deg=250.0, speed_kmh=1.44, tilt_deg=tilt)
    v = drift.velocity_kmh(point)
    east, north = local_frame(point)
    assert float(v.norm()) == pytest.approx(1.44, rel=1e-12)
    heading = math.degrees(math.atan2(float(v @ east), float(v @ north))) % 360
    assert heading == pytest.approx(250.0, abs=1e-9)
    far = drift.advect(
        point, 1000.0
    )  # tilted axes curve the streamline: it stays on a small circle
    assert float(far @ drift.axis) == pytest.approx(float(point @ drift.axis), abs=1e-12)


def test_diffusion_has_the_brownian_mean_squared_displacement():
    drift = Drift(latlon(90.0, 0.0), speed_kmh=0.0, diffusion_km2_per_day=100.0)
    start = latlon(-20.0, 60.0).expand(20000, 3).contiguous()
    moved = drift.step(start, 24.0, torch.Generator().manual_seed(0))
    squared = distance_km(moved, start) ** 2
    assert float(squared.mean()) == pytest.approx(4 * 100.0 * 1.0, rel=0.03)  # 2-D: E|dx|^2 = 4 D t
    assert torch.allclose(moved.norm(dim=-1), torch.ones(20000, dtype=torch.float64))


def test_bad_input_is_rejected():
    with pytest.raises(InputDataError, match="axis"):
        Drift(torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64), 1.0)
    with pytest.raises(ConfigurationError, match="diffusion"):
        Drift(latlon(0.0, 0.0), 1.0, diffusion_km2_per_day=-1.0)
    with pytest.raises(ConfigurationError, match="tilt_deg"):
        Drift.through(latlon(0.0, 0.0), 90.0, 1.0, tilt_deg=90.0)
    with pytest.raises(ConfigurationError, match="hours"):
        Drift(latlon(0.0, 0.0), 1.0).step(latlon(1.0, 1.0), -2.0)
