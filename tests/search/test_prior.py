"""The prior mixture: blob and corridor shapes against their definitions, weights, the ocean."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.geo import EARTH_RADIUS_KM, destination, distance_km, latlon, tangent_offsets
from manibo.search.ocean import ocean_mask
from manibo.search.prior import ArcBand, GaussianBlob, PriorMixture, RouteCorridor


def test_gaussian_blob_has_the_requested_spread_and_truncation():
    centre = latlon(55.0, -25.0)
    samples = GaussianBlob(centre, 80.0).sample(20000, torch.Generator().manual_seed(0))
    offsets = tangent_offsets(centre, samples)
    assert torch.allclose(
        offsets.std(0), torch.tensor([80.0, 80.0], dtype=torch.float64), rtol=0.03
    )
    assert torch.allclose(offsets.mean(0), torch.zeros(2, dtype=torch.float64), atol=2.5)
    truncated = GaussianBlob(centre, 80.0, max_km=100.0).sample(
        5000, torch.Generator().manual_seed(1)
    )
    assert float(distance_km(truncated, centre).max()) <= 100.0 + 1e-6


def test_route_corridor_along_and_cross_track_match_the_reference_formulas():
    lkp, cdg = latlon(2.98, -30.59), latlon(49.01, 2.55)
    corridor = RouteCorridor(lkp, cdg, length_km=600.0, cross_sigma_km=35.0)
    x = corridor.sample(20000, torch.Generator().manual_seed(2))
    n = torch.linalg.cross(lkp, cdg, dim=-1)
    n = n / n.norm()
    cross = torch.asin((x @ n).clamp(-1, 1)) * EARTH_RADIUS_KM  # cross-track = arcsin(x . n)
    p = x - (x @ n).unsqueeze(-1) * n
    along = torch.atan2(p @ torch.linalg.cross(n, lkp, dim=-1), p @ lkp) * EARTH_RADIUS_KM
    assert float(cross.std()) == pytest.approx(35.0, rel=0.03)
    assert float(along.min()) >= -1e-6 and float(along.max()) <= 600.0 + 1e-6
    assert float(along.mean()) == pytest.approx(300.0, rel=0.02)  # uniform on [0, L]
    # ahead means towards Paris: the corridor's far end is closer to CDG than the LKP is
    assert float(distance_km(x[along > 550].mean(0) / x[along > 550].mean(0).norm(), cdg)) < float(
        distance_km(lkp, cdg)
    )


def test_an_arc_band_lies_along_the_small_circle_with_the_requested_spread():
    # a satellite over the equator at 64.5°E and an arc 40° from its sub-point, as in the MH370
    # search; across the arc the angular distance to the pole is normal, along it uniform
    pole = latlon(0.0, 64.5)
    middle = destination(pole, 140.0, math.radians(40.0) * EARTH_RADIUS_KM)
    band = ArcBand(pole, middle, 40.0, 2400.0, 50.0)
    x = band.sample(20000, torch.Generator().manual_seed(9))
    across = distance_km(x, pole) - math.radians(40.0) * EARTH_RADIUS_KM
    assert float(across.mean()) == pytest.approx(0.0, abs=1.5)
    assert float(across.std()) == pytest.approx(50.0, rel=0.03)
    on_arc = band.point(
        torch.linspace(-1200, 1200, 3, dtype=torch.float64), torch.zeros(3, dtype=torch.float64)
    )
    assert torch.allclose(
        distance_km(on_arc, pole),
        torch.full((3,), math.radians(40.0) * EARTH_RADIUS_KM, dtype=torch.float64),
    )
    assert float(distance_km(on_arc[0], on_arc[1])) == pytest.approx(
        2
        * EARTH_RADIUS_KM
        * math.asin(
            math.sin(math.radians(40))
            * math.sin(1200 / (2 * EARTH_RADIUS_KM * math.sin(math.radians(40))))
        ),
        rel=1e-9,
    )
    # along the arc: the angle around the pole is uniform over the arc's 2400 km
    around = (
        torch.atan2(x @ band.second, x @ band.first)
        * EARTH_RADIUS_KM
        * math.sin(math.radians(40.0))
    )
    assert float(around.min()) >= -1200.0 - 1e-6 and float(around.max()) <= 1200.0 + 1e-6
    assert float(around.std()) == pytest.approx(2400.0 / math.sqrt(12), rel=0.02)
    peaked = ArcBand(pole, middle, 40.0, 2400.0, 50.0, along_sigma_km=200.0, along_offset_km=300.0)
    y = peaked.sample(5000, torch.Generator().manual_seed(10))
    along = (
        torch.atan2(y @ band.second, y @ band.first)
        * EARTH_RADIUS_KM
        * math.sin(math.radians(40.0))
    )
    assert float(along.mean()) == pytest.approx(300.0, abs=10.0)
    with pytest.raises(ConfigurationError, match="middle"):
        ArcBand(pole, latlon(0.0, 0.0), 40.0, 1000.0, 20.0)


def test_mixture_weights_and_ocean_mask():
    a, b = latlon(0.0, -30.0), latlon(0.0, -20.0)
    mixture = PriorMixture([GaussianBlob(a, 20.0), GaussianBlob(b, 20.0)], [3.0, 1.0])
    x = mixture.sample(8000, torch.Generator().manual_seed(3))
    share_a = float((distance_km(x, a) < distance_km(x, b)).double().mean())
    assert share_a == pytest.approx(0.75, abs=0.02)
    coast = GaussianBlob(latlon(43.3, 5.4), 150.0)  # Marseille: half land, half sea
    masked = PriorMixture([coast], [1.0], ocean_mask()).sample(
        2000, torch.Generator().manual_seed(4)
    )
    assert bool(ocean_mask().is_ocean(masked).all())


def test_each_component_keeps_its_weight_when_part_of_it_is_over_land():
    # p0 = sum_j w_j 1{ocean} p_j / Z_j: the half-land coastal blob keeps half of the samples;
    # masking the whole mixture instead would give it Z / (1 + Z) of them, about a third
    mask = ocean_mask()
    coast, open_sea = latlon(43.3, 5.4), latlon(35.0, -40.0)
    coastal = GaussianBlob(coast, 150.0)
    raw = coastal.sample(20000, torch.Generator().manual_seed(7))
    z = float(mask.is_ocean(raw).double().mean())
    assert 0.3 < z < 0.7, z
    mixture = PriorMixture([coastal, GaussianBlob(open_sea, 50.0)], [1.0, 1.0], mask)
    x = mixture.sample(4000, torch.Generator().manual_seed(8))
    share = float((distance_km(x, coast) < distance_km(x, open_sea)).double().mean())
    assert share == pytest.approx(0.5, abs=0.03)
    assert abs(share - z / (1 + z)) > 0.1


def test_a_component_mostly_over_land_is_still_sampled_at_sea():
    # lost off Santander on the way to Rio: the corridor ahead crosses Spain and Portugal, so only
    # a few percent of it lies over the sea; a rejection sampler whose batches shrink with what is
    # still missing needs well over 50 rounds here (it used to give up and raise)
    mask = ocean_mask()
    corridor = RouteCorridor(latlon(43.62, -3.866), latlon(-22.81, -43.25), 600.0, 35.0)
    raw = corridor.sample(20000, torch.Generator().manual_seed(5))
    share = float(mask.is_ocean(raw).double().mean())
    assert 0.005 < share < 0.1, share
    x = PriorMixture([corridor], [1.0], mask).sample(1500, torch.Generator().manual_seed(6))
    assert x.shape == (1500, 3) and bool(mask.is_ocean(x).all())


def test_bad_priors_are_rejected():
    sahara = GaussianBlob(latlon(23.0, 13.0), 30.0, name="Sahara")
    with pytest.raises(ConfigurationError, match="Sahara"):
        PriorMixture([sahara], [1.0], ocean_mask()).sample(10, torch.Generator().manual_seed(0))
    with pytest.raises(ConfigurationError, match="one weight per component"):
        PriorMixture([sahara], [0.5, 0.5])
    with pytest.raises(ConfigurationError, match="non-negative"):
        PriorMixture([sahara], [-1.0])
    with pytest.raises(ConfigurationError, match="sigma_km"):
        GaussianBlob(latlon(0.0, 0.0), -5.0)
    with pytest.raises(ConfigurationError, match="route"):
        RouteCorridor(latlon(0.0, 0.0), latlon(0.0, 0.0), 100.0, 10.0)
    assert math.isfinite(sahara.sigma_km)
