"""Sweeps along legs against Koopman's closed forms: lateral range, straight legs, random search."""

import math

import numpy as np
import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.geo import EARTH_RADIUS_KM, latlon, local_frame, move_fraction, offset
from manibo.search.sweep import MAX_SWEEP_WIDTH_KM, SweepLaw, leg_coordinates, leg_hazard

LAWS = ("inverse-cube", "definite-range")


def _normal_cdf(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


@pytest.mark.parametrize("law", LAWS)
def test_the_lateral_range_curve_integrates_to_the_sweep_width(law):
    sweep = SweepLaw(18.0, law)
    step = 0.01  # midpoint rule; the definite range's edges at ±9 km fall on cell edges
    x = (torch.arange(-2_000_000, 2_000_000, dtype=torch.float64) + 0.5) * step
    width = sweep.lateral_range(x).sum() * step
    # the inverse-cube tail beyond |x| = X holds W²/(2πX) of the width: 0.0026 km at 20,000 km
    assert float(width) == pytest.approx(18.0, abs=5e-3)


def test_a_finite_inverse_cube_leg_is_the_integral_of_the_detection_rate():
    sweep = SweepLaw(20.0)
    length = torch.tensor(120.0, dtype=torch.float64)
    s = torch.linspace(0, 120, 1_200_001, dtype=torch.float64)
    for cross, along in [(7.0, 40.0), (3.0, -25.0), (15.0, 160.0), (0.4, 119.0), (60.0, 60.0)]:
        rate = (20.0**2 / (8 * math.pi)) / (cross**2 + (s - along) ** 2) ** 1.5
        expected = torch.trapezoid(rate, s)
        h = sweep.hazard(torch.tensor(cross), torch.tensor(along), length)
        assert float(h) == pytest.approx(float(expected), rel=1e-6)
    # an infinitely long pass: the lateral range curve
    h = sweep.hazard(torch.tensor(9.0), torch.tensor(5e7), torch.tensor(1e8))
    assert float(-torch.expm1(-h)) == pytest.approx(float(sweep.lateral_range(torch.tensor(9.0))))


def test_hazards_of_the_two_halves_of_a_great_circle_leg_add_up():
    gen = torch.Generator().manual_seed(0)
    a, b = latlon(-38.0, 95.0), latlon(-33.0, 101.0)
    middle = move_fraction(a, b, torch.tensor(0.37, dtype=torch.float64))
    points = offset(middle, *(torch.randn(2, 500, generator=gen, dtype=torch.float64) * 200))
    sweep = SweepLaw(25.0)
    whole = leg_hazard(sweep, points, a.view(1, 3), b.view(1, 3))
    first = leg_hazard(sweep, points, a.view(1, 3), middle.view(1, 3))
    second = leg_hazard(sweep, points, middle.view(1, 3), b.view(1, 3))
    assert torch.allclose(first + second, whole, rtol=1e-7, atol=1e-12)


def _gaussian_grid(center, sigma, step):
    """Tangent-plane quadrature of an isotropic Gaussian: cell centres at (j + 1/2) * step."""
    half = int(7 * sigma / step)
    ticks = (torch.arange(-half, half, dtype=torch.float64) + 0.5) * step
    east, north = torch.meshgrid(ticks, ticks, indexing="xy")
    weights = torch.exp(-(east**2 + north**2) / (2 * sigma**2)).reshape(-1)
    return offset(center, east.reshape(-1), north.reshape(-1)), weights / weights.sum()


def test_a_definite_range_leg_through_a_gaussian_finds_the_mass_within_half_a_width():
    # the leg runs east through the centre of the Gaussian from -L/2 to L/2; cell edges fall on
    # the sweep's edges (W/2 = 5 cells, L/2 = 75 cells), so the quadrature is second order
    sigma, width, length, center = 50.0, 20.0, 300.0, latlon(-35.0, 100.0)
    points, weights = _gaussian_grid(center, sigma, step=2.0)
    start, end = offset(center, -length / 2, 0.0), offset(center, length / 2, 0.0)
    hazard = leg_hazard(SweepLaw(width, "definite-range"), points, start.view(1, 3), end.view(1, 3))
    hazard = hazard[0]
    pos = float(weights @ -torch.expm1(-hazard))
    across = math.erf(width / (2 * math.sqrt(2) * sigma))
    along = 2 * _normal_cdf(length / (2 * sigma)) - 1
    assert pos == pytest.approx(across * along, abs=1e-3)


def test_an_inverse_cube_leg_through_a_gaussian_matches_koopmans_closed_form():
    # E[1 - exp(-W²/(4π X²))] for X ~ N(0, σ²) is 1 - exp(-W / (sqrt(2π) σ))
    sigma, width, center = 50.0, 20.0, latlon(58.0, -178.0)  # high latitude, at the antimeridian
    points, weights = _gaussian_grid(center, sigma, step=2.0)
    start, end = offset(center, 0.0, -3000.0), offset(center, 0.0, 3000.0)  # a long leg north
    hazard = leg_hazard(SweepLaw(width), points, start.view(1, 3), end.view(1, 3))[0]
    pos = float(weights @ -torch.expm1(-hazard))
    assert pos == pytest.approx(1 - math.exp(-width / (math.sqrt(2 * math.pi) * sigma)), abs=1e-3)


@pytest.mark.parametrize("law", LAWS)
def test_random_search_follows_koopmans_exponential_law(law):
    # objects uniform in a disc of 250 km; random straight tracks (great circles, isotropic, at a
    # uniform offset within 600 km of the centre) each detect an object with probability W / 2ρ,
    # and N of them find a fraction 1 - (1 - W/2ρ)^N ~ 1 - exp(-W L / A) of the objects, with
    # L = N πρ/2 the mean track length within the disc A = πρ² (Koopman's random search)
    gen = torch.Generator().manual_seed(1)
    center, radius, width, tracks, draws = latlon(-40.0, 80.0), 600.0, 5.0, 160, 48
    r = 250.0 * torch.rand(300, generator=gen, dtype=torch.float64).sqrt()
    angle = 2 * math.pi * torch.rand(300, generator=gen, dtype=torch.float64)
    objects = offset(center, r * angle.sin(), r * angle.cos())
    east, north = local_frame(center)
    n = tracks * draws
    miss = (2 * torch.rand(n, generator=gen, dtype=torch.float64) - 1) * radius
    heading = 2 * math.pi * torch.rand(n, generator=gen, dtype=torch.float64)
    tilt = torch.asin(torch.sin(miss / EARTH_RADIUS_KM)).unsqueeze(-1)
    pole = tilt.cos() * (heading.cos()[:, None] * east + heading.sin()[:, None] * north)
    pole = pole + tilt.sin() * center  # the great circle passes `miss` km from the centre
    nearest = center - (pole @ center).unsqueeze(-1) * pole
    nearest = nearest / nearest.norm(dim=-1, keepdim=True)
    along = torch.linalg.cross(pole, nearest, dim=-1)
    half = 3000.0 / EARTH_RADIUS_KM  # 6000 km tracks: straight lines across the disc
    starts, ends = (math.cos(half) * nearest + sign * math.sin(half) * along for sign in (-1, 1))
    hazard = leg_hazard(SweepLaw(width, law), objects, starts, ends).reshape(draws, tracks, -1)
    pod = float(1 - torch.exp(-hazard.sum(1)).mean())
    track_length, area = tracks * math.pi * radius / 2, math.pi * radius**2
    # standard deviation over draws: 0.035 (measured), so 4 standard errors are 0.02
    assert pod == pytest.approx(1 - math.exp(-width * track_length / area), abs=0.02)


def test_legs_of_length_zero_detect_nothing_and_keep_gradients_finite():
    point = latlon(10.0, 20.0).view(1, 3)
    start = point.clone().requires_grad_(True)
    objects = offset(
        latlon(10.0, 20.0), torch.tensor([0.0, 3.0, -40.0]), torch.tensor([0.0, 1.0, 2.0])
    )
    for law in LAWS:
        sweep = SweepLaw(10.0, law)
        assert float(leg_hazard(sweep, objects, start, point).detach().abs().max()) < 1e-12
        smooth = leg_hazard(sweep, objects, start, point, smooth=True)
        length = leg_coordinates(objects, start, point)[2]
        (grad,) = torch.autograd.grad(smooth.sum() + length.sum(), start)
        assert torch.isfinite(grad).all() and float(smooth.detach().max()) < 1e-6


def test_the_smooth_definite_range_sweep_keeps_the_sweep_width_and_the_hard_edges():
    sweep = SweepLaw(20.0, "definite-range")  # logistic edges 1 km wide
    cross = torch.tensor([0.0, 6.0, -6.0, 14.0, 30.0, 5.0, 5.0], dtype=torch.float64)
    along = torch.tensor([50.0, 50.0, 50.0, 50.0, 50.0, -4.0, 104.0], dtype=torch.float64)
    length = torch.tensor(100.0, dtype=torch.float64)
    hard = -torch.expm1(-sweep.hazard(cross, along, length))
    smooth = -torch.expm1(-sweep.smooth_hazard(cross, along, length))
    assert hard.tolist() == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert torch.allclose(smooth, hard, atol=0.02)
    x = (torch.arange(-10_000, 10_000, dtype=torch.float64) + 0.5) * 0.01
    middle = torch.full_like(x, 50.0)
    lateral = -torch.expm1(-sweep.smooth_hazard(x, middle, length))
    assert float(lateral.sum() * 0.01) == pytest.approx(20.0, rel=1e-3)


def test_float32_agrees_with_float64():
    gen = torch.Generator().manual_seed(2)
    a, b = latlon(50.0, 170.0), latlon(52.0, -175.0)  # across the antimeridian
    points = offset(latlon(51.0, 178.0), *(torch.randn(2, 300, generator=gen) * 80).double())
    reference = leg_hazard(SweepLaw(20.0), points, a.view(1, 3), b.view(1, 3))
    single = leg_hazard(SweepLaw(20.0), points.float(), a.float().view(1, 3), b.float().view(1, 3))
    assert single.dtype == torch.float32
    pod64, pod32 = -torch.expm1(-reference), -torch.expm1(-single.double())
    assert torch.allclose(pod32, pod64, atol=2e-3)


def test_bad_laws_are_refused():
    with pytest.raises(ConfigurationError, match="width_km"):
        SweepLaw(0.0)
    with pytest.raises(ConfigurationError, match="law"):
        SweepLaw(10.0, "square-root")


def test_a_width_in_metres_is_refused_with_advice():
    # 20 km given in metres: the planar lateral range formulas need W far below the earth's radius
    for width in (20000.0, np.float64(20000.0)):  # advice in plain numbers, not np.float64(20.0)
        with pytest.raises(ConfigurationError, match=r"(?s)20000.*km.*metres, pass 20\.0\.$"):
            SweepLaw(width)
    assert SweepLaw(MAX_SWEEP_WIDTH_KM).width_km == MAX_SWEEP_WIDTH_KM
