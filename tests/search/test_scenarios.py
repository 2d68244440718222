"""Scenarios: the AF447 anchors, arcs and routes at ocean scale, high latitudes, the antimeridian;
reproducible, at sea, with aircraft that can reach the datum and get home."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.geo import distance_km, unit_to_latlon
from manibo.search.mission import prior_particles
from manibo.search.ocean import ocean_mask
from manibo.search.scenarios import AF447_LKP, FAMILIES, MissionSettings, af447_scenario, scenario


def _area_km2(particles, datum):
    """Area holding 90% of the prior: cells of a 25 km grid in the azimuthal plane of the datum."""
    from manibo.geo import tangent_offsets

    cells = torch.floor(tangent_offsets(datum, particles) / 25.0)
    _, counts = torch.unique(cells, dim=0, return_counts=True)
    ordered = counts.sort(descending=True).values.cumsum(0)
    return 625.0 * float((ordered < 0.9 * particles.shape[0]).sum() + 1)


def test_the_af447_scenario_keeps_the_public_anchor_points():
    case = af447_scenario(0, mask=ocean_mask())
    assert torch.allclose(unit_to_latlon(case.datum), torch.tensor(AF447_LKP, dtype=torch.float64))
    names = [n for n in case.landmarks if n.startswith("airfield")]
    assert names == ["airfield: Natal", "airfield: Dakar"]
    assert [a.name for a in case.assets] == ["aircraft 1", "aircraft 2", "ship"]


@pytest.mark.parametrize("family", ["arc", "route"])
def test_scenarios_are_reproducible_at_sea_and_within_reach(family):
    mask = ocean_mask()
    settings = MissionSettings()
    for seed in (11, 12, 13):
        a, b = scenario(family, seed, mask=mask), scenario(family, seed, mask=mask)
        assert a.name == b.name and torch.equal(prior_particles(a, 50), prior_particles(b, 50))
        assert bool(mask.is_ocean(a.datum)) and bool(mask.is_ocean(prior_particles(a, 200)).all())
        for asset in a.assets[:2]:  # aircraft: home by the deadline, with time on scene
            assert float(distance_km(asset.start, a.datum)) <= settings.max_airfield_km + 1e-6
        assert not a.assets[2].returns_to_base
    assert scenario(family, 11, mask=mask).name != scenario(family, 12, mask=mask).name


def test_ocean_scale_high_latitudes_and_the_antimeridian():
    mask = ocean_mask()
    areas, latitudes, across_the_antimeridian = [], [], 0
    for seed in range(40, 52):
        case = scenario("arc" if seed % 2 else "route", seed, mask=mask)
        particles = prior_particles(case, 2000)
        areas.append(_area_km2(particles, case.datum))
        latitudes.append(abs(float(unit_to_latlon(case.datum)[0])))
        longitudes = unit_to_latlon(particles)[:, 1]
        across_the_antimeridian += int(bool((longitudes > 170).any() and (longitudes < -170).any()))
    assert 1e5 <= min(areas) and max(areas) <= 1.5e6, areas
    assert sum(lat >= 40 for lat in latitudes) >= 6, latitudes
    assert across_the_antimeridian >= 1


def test_an_arc_is_a_small_circle_arc_of_the_requested_size():
    case = scenario("arc", 7, mask=ocean_mask())
    line = case.lines["satellite arc"]
    band = case.prior.components[0]
    radius = distance_km(line, band.pole)
    assert torch.allclose(radius, radius[0].expand_as(radius), rtol=1e-9)  # constant: a circle
    length = float(distance_km(line[:-1], line[1:]).sum())
    assert 2000.0 <= length <= 3500.0 and 40.0 <= band.cross_sigma_km <= 80.0
    assert math.degrees(float(radius[0]) / 6371.0) < 60.0 + 1e-9


def test_unknown_families_are_refused():
    assert FAMILIES == ("arc", "route", "af447")
    with pytest.raises(ConfigurationError, match="family"):
        scenario("lake", 0)
