"""The exact belief: legs of several assets keep found + unfound = 1; a leg is the integral of the
detection rate along the drifting track; diffusion moves particles and no weight."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.geo import EARTH_RADIUS_KM, GLOBE, destination, latlon, move_fraction, offset
from manibo.search.belief import ParticleBelief
from manibo.search.drift import Drift
from manibo.search.legs import Leg
from manibo.search.sweep import SweepLaw

DTYPES = [torch.float32, torch.float64]
CENTRE = (-38.0, 95.0)


def _particles(n, dtype=torch.float64, device="cpu", seed=0, spread=150.0):
    gen = torch.Generator().manual_seed(seed)
    east, north = torch.randn(2, n, generator=gen, dtype=torch.float64) * spread
    return offset(latlon(*CENTRE), east, north).to(dtype=dtype, device=device)


def _drift(dtype=torch.float64, device="cpu", diffusion=0.0):
    return Drift.through(latlon(*CENTRE, dtype=dtype, device=device), 250.0, 1.8, 30.0, diffusion)


def _legs(dtype=torch.float64, device="cpu"):
    """Interleaved legs of two aircraft and a ship (each with its own sweep), end times sorted."""
    centre = latlon(*CENTRE, dtype=dtype, device=device)
    sweeps = [SweepLaw(20.0), SweepLaw(16.0), SweepLaw(8.0, "definite-range")]
    speeds = [450.0, 450.0, 28.0]
    legs, gen = [], torch.Generator().manual_seed(3)
    for asset in range(3):
        position, clock = offset(centre, -200.0 + 100 * asset, 50.0 * asset), 0.5 * asset
        for _ in range(4):
            bearing, km = (
                float(torch.rand(1, generator=gen)) * 360,
                40 + 150 * float(torch.rand(1, generator=gen)),
            )
            end = destination(position, bearing, km * (1 if asset < 2 else 0.3))
            hours = float(GLOBE.distance(position, end)) * EARTH_RADIUS_KM / speeds[asset]
            legs.append(Leg(asset, position, end, clock, clock + hours, sweeps[asset]))
            position, clock = end, clock + hours
    return sorted(legs, key=lambda leg: leg.arrive_h)


@pytest.mark.parametrize("dtype", DTYPES)
def test_found_and_unfound_mass_add_up_to_one_with_several_assets(dtype, device="cpu"):
    belief = ParticleBelief(_particles(2000, dtype, device))
    drift = _drift(dtype, device, diffusion=50.0)
    generator = torch.Generator().manual_seed(1)
    found, hazard = 0.0, torch.zeros(2000, dtype=torch.float64, device=device)
    for leg in _legs(dtype, device):
        belief.advance(drift, leg.arrive_h, generator)
        assert belief.cumulative_pos == pytest.approx(found, abs=1e-6)  # diffusion finds nothing
        step = leg.hazard(drift, belief.positions).double()
        pos = belief.observe_legs([leg], drift)
        found = found + (1 - found) * pos  # CumPOS_k = CumPOS_k-1 + (1 - CumPOS_k-1) POS_k
        hazard = hazard + step
        unfound = float((belief.prior.double() * torch.exp(-hazard)).sum())
        assert belief.weights.device.type == torch.device(device).type
        tolerance = 1e-12 if dtype == torch.float64 else 1e-5
        assert belief.cumulative_pos == pytest.approx(found, abs=tolerance)
        assert belief.cumulative_pos + unfound == pytest.approx(1.0, abs=tolerance)
        assert float(belief.weights.sum()) == pytest.approx(1.0, abs=tolerance)
    assert 0.02 < belief.cumulative_pos < 0.95


def test_legs_of_several_assets_at_once_equal_the_same_legs_one_by_one():
    legs, drift = _legs(), _drift()
    together = ParticleBelief(_particles(800))
    together.observe_legs(legs, drift)
    one_by_one = ParticleBelief(_particles(800))
    for leg in reversed(legs):  # any order: independent looks commute
        one_by_one.observe_legs([leg], drift)
    assert torch.allclose(together.weights, one_by_one.weights, rtol=1e-10, atol=1e-15)
    assert together.cumulative_pos == pytest.approx(one_by_one.cumulative_pos, abs=1e-12)


def test_a_leg_is_the_integral_of_the_inverse_cube_rate_along_the_drifting_track():
    # the asset flies a great circle over the ground while the water drifts (0.5 m/s); in the
    # water's frame the rate W² v_rel / (8π r³) is integrated numerically along its true path
    drift, sweep = _drift(), SweepLaw(20.0)
    start = latlon(*CENTRE)
    end = destination(start, 60.0, 400.0)
    depart, arrive = 5.0, 5.0 + 400.0 / 450.0
    objects = offset(
        start, torch.tensor([30.0, 210.0, -15.0, 5.0]), torch.tensor([40.0, 90.0, -60.0, 300.0])
    )
    belief = ParticleBelief(objects)
    belief.observe_legs([Leg(0, start, end, depart, arrive, sweep)], drift)
    t = torch.linspace(depart, arrive, 200_001, dtype=torch.float64)
    fraction = (t - depart) / (arrive - depart)
    water = drift.to_comoving(move_fraction(start, end, fraction), t)  # the track, water's frame
    speed = (water[1:] - water[:-1]).norm(dim=-1) * EARTH_RADIUS_KM / (t[1] - t[0])
    middle = torch.nn.functional.normalize(water[1:] + water[:-1], dim=-1)
    for i, y in enumerate(objects):
        r = EARTH_RADIUS_KM * GLOBE.distance(middle, y.expand_as(middle))
        rate = sweep.width_km**2 / (8 * math.pi) * speed / r**3
        expected = float(rate.sum() * (t[1] - t[0]))
        assert float(belief.hazard[i]) == pytest.approx(expected, rel=2e-3)


def test_a_definite_range_leg_removes_exactly_the_swept_particles():
    start = latlon(*CENTRE)
    end = destination(start, 90.0, 300.0)
    drift = Drift(latlon(90.0, 0.0), 0.0)  # no current
    east = torch.linspace(-47.5, 347.5, 80, dtype=torch.float64)  # never on the leg's ends
    north = torch.tensor([-6.0, -3.9, 0.0, 3.9, 6.0], dtype=torch.float64)
    grid_e, grid_n = torch.meshgrid(east, north, indexing="ij")
    belief = ParticleBelief(offset(start, grid_e.reshape(-1), grid_n.reshape(-1)))
    belief.observe_legs([Leg(0, start, end, 0.0, 1.0, SweepLaw(8.0, "definite-range"))], drift)
    inside = (
        (grid_n.reshape(-1).abs() <= 4.0)
        & (grid_e.reshape(-1) >= 0.5)
        & (grid_e.reshape(-1) <= 299.5)
    )
    assert torch.equal(belief.unfound < 1e-40, inside)  # e^-H with H capped at 100: 4e-44


def test_diffusion_moves_particles_but_no_weight():
    belief = ParticleBelief(_particles(500))
    belief.observe_legs(_legs()[:3], _drift())
    weights, positions = belief.weights.clone(), belief.positions.clone()
    belief.advance(_drift(diffusion=100.0), 24.0, torch.Generator().manual_seed(0))
    assert torch.equal(belief.weights, weights) and belief.time_h == 24.0
    moved = EARTH_RADIUS_KM * GLOBE.distance(belief.positions, positions)
    assert 10.0 < float(moved.mean()) < 40.0  # sqrt(pi/2 * 2 D t) = 24 km per particle
    with pytest.raises(ConfigurationError, match="cannot go back"):
        belief.advance(_drift(), 1.0)


def test_when_every_particle_is_swept_the_posterior_is_the_prior():
    start = latlon(*CENTRE)
    belief = ParticleBelief(_particles(50, spread=1.0))
    belief.observe_legs(
        [
            Leg(
                0,
                destination(start, 270.0, 50.0),
                destination(start, 90.0, 50.0),
                0.0,
                1.0,
                SweepLaw(40.0, "definite-range"),
            )
        ],
        Drift(latlon(90.0, 0.0), 0.0),
    )
    assert belief.cumulative_pos == pytest.approx(1.0, abs=1e-15)
    assert torch.allclose(belief.weights, belief.prior, rtol=1e-12)


def test_bad_particles_are_refused():
    with pytest.raises(InputDataError, match="shape"):
        ParticleBelief(torch.zeros(0, 3, dtype=torch.float64))
    with pytest.raises(InputDataError, match="sum to zero"):
        ParticleBelief(_particles(3), torch.zeros(3, dtype=torch.float64))
