"""Coordinates, great circles and rotations on the Earth against closed forms."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.geo import (
    EARTH_RADIUS_KM,
    destination,
    distance_km,
    great_circle_track,
    latlon,
    latlon_to_unit,
    local_frame,
    move_fraction,
    offset,
    pairwise_distance_km,
    rotation_matrix,
    tangent_offsets,
    unit_to_latlon,
)

DTYPES = [torch.float32, torch.float64]


@pytest.mark.parametrize("dtype", DTYPES)
def test_latlon_round_trip_and_axes(dtype, device="cpu"):
    lat = torch.tensor([0.0, 45.0, -80.0, 90.0, 10.0], dtype=dtype, device=device)
    lon = torch.tensor([10.0, -170.0, 179.0, 0.0, -45.0], dtype=dtype, device=device)
    x = latlon_to_unit(lat, lon)
    assert x.dtype == dtype and x.device.type == device
    back = unit_to_latlon(x)
    tol = 1e-9 if dtype == torch.float64 else 1e-3
    assert torch.allclose(back[[0, 1, 2, 4]], torch.stack([lat, lon], -1)[[0, 1, 2, 4]], atol=tol)
    assert torch.allclose(x[3], torch.tensor([0.0, 0.0, 1.0], dtype=dtype), atol=tol)  # North Pole


def test_distance_paris_new_york_matches_haversine():
    paris, new_york = latlon(48.8566, 2.3522), latlon(40.7128, -74.0060)
    p1, l1, p2, l2 = map(math.radians, (48.8566, 2.3522, 40.7128, -74.0060))
    hav = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin((l2 - l1) / 2) ** 2
    expected = 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(hav))
    assert float(distance_km(paris, new_york)) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(5837, abs=5)  # the usual figure for this great circle


@pytest.mark.parametrize("dtype", DTYPES)
def test_pairwise_distance_matches_elementwise_and_has_finite_gradients(dtype):
    gen = torch.Generator().manual_seed(0)
    a = torch.nn.functional.normalize(torch.randn(5, 3, generator=gen, dtype=dtype), dim=-1)
    b = torch.cat(
        [
            a[:2],
            torch.nn.functional.normalize(torch.randn(4, 3, generator=gen, dtype=dtype), dim=-1),
        ]
    )
    d = pairwise_distance_km(a, b)
    reference = distance_km(a.unsqueeze(1), b.unsqueeze(0))
    tol = 1e-3 if dtype == torch.float64 else 5.0  # km: round-off in the dot product (documented)
    assert torch.allclose(d, reference, atol=tol)
    x = a.clone().requires_grad_(True)
    pairwise_distance_km(x, b).sum().backward()
    assert torch.isfinite(x.grad).all()  # coincident points (a[0] = b[0]) give gradient 0, not NaN


def test_offset_and_tangent_offsets_are_inverse_and_exact():
    center = latlon(60.0, -20.0)
    east = torch.tensor([100.0, -250.0, 0.0, 700.0], dtype=torch.float64)
    north = torch.tensor([0.0, 40.0, -300.0, 700.0], dtype=torch.float64)
    points = offset(center, east, north)
    assert torch.allclose(distance_km(points, center), torch.hypot(east, north), atol=1e-8)
    assert torch.allclose(
        tangent_offsets(center, points), torch.stack([east, north], -1), atol=1e-8
    )
    # 111.19 km due north is one degree of latitude
    north_point = unit_to_latlon(
        offset(center, torch.tensor(0.0), torch.tensor(math.pi * EARTH_RADIUS_KM / 180))
    )
    assert torch.allclose(north_point, torch.tensor([61.0, -20.0], dtype=torch.float64), atol=1e-9)


def test_destination_due_east_on_the_equator():
    start = latlon(0.0, 10.0)
    end = destination(start, 90.0, 2 * math.pi * EARTH_RADIUS_KM / 36)  # 10 degrees of arc
    assert torch.allclose(
        unit_to_latlon(end), torch.tensor([0.0, 20.0], dtype=torch.float64), atol=1e-9
    )


def test_local_frame_is_orthonormal_even_at_the_pole():
    points = torch.stack([latlon(0.0, 0.0), latlon(45.0, 100.0), latlon(90.0, 0.0)])
    east, north = local_frame(points)
    for v in (east, north):
        assert torch.allclose(v.norm(dim=-1), torch.ones(3, dtype=torch.float64))
        assert torch.allclose((v * points).sum(-1), torch.zeros(3, dtype=torch.float64), atol=1e-12)
    assert torch.allclose((east * north).sum(-1), torch.zeros(3, dtype=torch.float64), atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rotation_matrix_is_orthogonal_and_matches_a_known_rotation(dtype):
    axis = torch.tensor([0.0, 0.0, 1.0], dtype=dtype)
    R = rotation_matrix(axis, torch.tensor(math.pi / 2, dtype=dtype))
    expected = torch.tensor([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], dtype=dtype)
    assert torch.allclose(R, expected, atol=1e-6)
    tilted = torch.nn.functional.normalize(torch.tensor([1.0, 2.0, 3.0], dtype=dtype), dim=0)
    angles = torch.tensor([0.3, -1.2, 2.5], dtype=dtype)
    Rs = rotation_matrix(tilted, angles)
    eye = torch.eye(3, dtype=dtype).expand(3, 3, 3)
    assert torch.allclose(Rs @ Rs.transpose(-1, -2), eye, atol=1e-6)
    assert torch.allclose(rotation_matrix(tilted, -angles), Rs.transpose(-1, -2), atol=1e-6)
    assert torch.allclose(Rs @ tilted, tilted.expand(3, 3), atol=1e-6)  # the axis is fixed


def test_great_circle_track_is_evenly_spaced():
    a, b = latlon(-22.81, -43.25), latlon(49.01, 2.55)
    track = great_circle_track(a, b, 11)
    steps = distance_km(track[1:], track[:-1])
    assert torch.allclose(steps, steps.mean().expand(10), rtol=1e-9)
    assert float(steps.sum()) == pytest.approx(float(distance_km(a, b)), rel=1e-12)
    assert torch.allclose(move_fraction(a, b, torch.tensor(0.5, dtype=torch.float64)), track[5])


def test_bad_input_is_rejected_with_clear_errors():
    with pytest.raises(InputDataError, match="lat_deg"):
        latlon_to_unit(torch.tensor([95.0]), torch.tensor([0.0]))
    with pytest.raises(InputDataError, match="off Sphere"):
        distance_km(torch.tensor([1.0, 1.0, 0.0]), latlon(0.0, 0.0))
    with pytest.raises(InputDataError, match="antipodal"):
        move_fraction(latlon(0.0, 0.0), latlon(0.0, 180.0), torch.tensor(0.5, dtype=torch.float64))
    with pytest.raises(ConfigurationError, match="num"):
        great_circle_track(latlon(0.0, 0.0), latlon(1.0, 0.0), 1)
