"""The simulator: sorties from base and back, legs in time order, the belief of every leg, and a
planner that breaks an asset's endurance is stopped."""

import numpy as np
import pytest
import torch

from manibo.exceptions import InputDataError
from manibo.geo import destination
from manibo.search.legs import total_hazard
from manibo.search.mission import prior_particles, simulate
from manibo.search.planners import COMPARED, Planner, make_planner
from manibo.search.scenarios import MissionSettings, af447_scenario

SHORT = MissionSettings(duration_h=30.0, aircraft_endurance_h=9.0, turnaround_h=4.0)


class _Zigzag(Planner):
    """Test double: each asset flies 300 km legs on alternating bearings, clipped to endurance."""

    id = "zigzag"

    def propose(self, state):
        bearing = 30.0 if len(state.flown) % 2 else 150.0
        target = destination(state.position, bearing, 300.0 if state.asset < 2 else 30.0)
        return self.within_endurance(state, target)


class _Rogue(Planner):
    id = "rogue"

    def propose(self, state):
        return destination(state.position, 0.0, 3000.0)  # never clipped


class _OffTheGlobe(Planner):
    id = "broken"

    def propose(self, state):
        return torch.tensor([2.0, 0.0, 0.0], dtype=torch.float64)


def test_aircraft_fly_sorties_from_their_base_and_are_home_by_each_deadline():
    scenario = af447_scenario(0, SHORT)
    record = simulate(scenario, _Zigzag(), num_particles=200)
    ends = [leg.arrive_h for leg in record.legs]
    assert ends == sorted(ends) and max(ends) <= SHORT.duration_h + 1e-9
    for index, asset in enumerate(scenario.assets):
        legs = [leg for leg in record.legs if leg.asset == index]
        assert legs, asset.name
        for before, after in zip(legs[:-1], legs[1:], strict=True):
            assert after.depart_h >= before.arrive_h - 1e-9  # one leg at a time
        if not asset.returns_to_base:
            continue
        for takeoff, deadline in asset.sorties(SHORT.duration_h):
            sortie = [leg for leg in legs if takeoff - 1e-9 <= leg.depart_h < deadline]
            assert sortie[0].depart_h == pytest.approx(takeoff)
            assert torch.equal(sortie[0].start, asset.start)
            assert sortie[-1].arrive_h <= deadline + 1e-6
            if deadline < SHORT.duration_h:
                assert torch.allclose(sortie[-1].end, asset.start)
            for before, after in zip(sortie[:-1], sortie[1:], strict=True):
                assert torch.equal(before.end, after.start)


def test_the_belief_holds_the_hazard_of_every_leg_flown():
    settings = MissionSettings(duration_h=20.0, diffusion_km2_per_day=0.0)
    scenario = af447_scenario(3, settings)
    record = simulate(scenario, _Zigzag(), num_particles=300)
    particles = prior_particles(scenario, 300)
    for k in (0, len(record.legs) // 2, len(record.legs) - 1):
        hazard = total_hazard(record.legs[: k + 1], scenario.drift, particles)
        assert record.cumulative_pos[k] == pytest.approx(
            1 - float(torch.exp(-hazard).mean()), abs=1e-12
        )
    again = simulate(scenario, _Zigzag(), num_particles=300)
    assert [float(leg.arrive_h) for leg in again.legs] == [
        float(leg.arrive_h) for leg in record.legs
    ]


@pytest.mark.filterwarnings("ignore:scenario .* cannot reach the datum")  # 6 h sorties, 14 h
@pytest.mark.parametrize("planner", COMPARED)
def test_no_registered_planner_proposes_a_leg_beyond_an_assets_endurance(planner):
    # the simulator refuses such a leg with InputDataError; short sorties make the limit bite
    settings = MissionSettings(duration_h=14.0, aircraft_endurance_h=6.0, turnaround_h=2.0)
    record = simulate(af447_scenario(1, settings), make_planner(planner), num_particles=100)
    assert record.planner == planner and len(record.legs) >= 6


def test_a_leg_beyond_the_endurance_or_off_the_globe_is_refused():
    with pytest.raises(InputDataError, match="beyond the endurance of 'aircraft 1'"):
        simulate(af447_scenario(0, SHORT), _Rogue(), num_particles=50)
    with pytest.raises(InputDataError, match="proposal"):
        simulate(af447_scenario(0, SHORT), _OffTheGlobe(), num_particles=50)


def _own(**changes):
    """af447 (30 h) with some fields replaced, as a user building their own scenario would."""
    import dataclasses

    return dataclasses.replace(af447_scenario(0, SHORT), **changes)


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"datum": torch.tensor([35.0, -20.0, 0.0], dtype=torch.float64)}, "input", "datum"),
        ({"datum": torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64)}, "input", r"shape \(3,\)"),
        ({"duration_h": float("nan")}, "config", "duration_h"),
        ({"duration_h": float("inf")}, "config", "duration_h"),
        ({"duration_h": -5.0}, "config", "duration_h"),
        ({"duration_h": 0}, "config", "duration_h"),
        ({"assets": ()}, "config", "non-empty tuple of Asset"),
        ({"assets": ("P-8",)}, "config", "non-empty tuple of Asset"),
        ({"prior": None}, "config", "`prior` must be a PriorMixture"),
        ({"drift": None}, "config", "`drift` must be a Drift"),
        ({"mask": "ocean"}, "config", "`mask` must be an OceanMask"),
    ],
)
def test_a_scenario_refuses_bad_fields_when_built(changes, error, message):
    """A datum in degrees planned 2 legs with POS 0.124 (against 31 legs and 0.716); a NaN
    duration stopped deep inside the assets, no assets inside max()."""
    from manibo.exceptions import ConfigurationError

    with pytest.raises(InputDataError if error == "input" else ConfigurationError, match=message):
        _own(**changes)


def test_latitude_and_longitude_given_as_a_pair_are_told_to_use_latlon():
    """A (lat, lon) pair was told to 'stack points along the leading dimensions'."""
    from manibo.search import Asset, SweepLaw

    pair = torch.tensor([50.5, 179.7], dtype=torch.float64)
    with pytest.raises(InputDataError, match=r"latitude and longitude\? .*manibo.geo.latlon"):
        _own(datum=pair)
    with pytest.raises(InputDataError, match=r"latitude and longitude\? .*manibo.geo.latlon"):
        Asset.aircraft("P-8", (51.88, -176.64), SweepLaw(20.0))


def test_assets_that_cannot_reach_the_datum_are_named_in_a_warning():
    import numpy as np

    from manibo.exceptions import ManiboWarning
    from manibo.geo import latlon
    from manibo.search import Asset, OceanMask, SweepLaw

    base = af447_scenario(0, SHORT)
    far = Asset.aircraft("far", latlon(50.0, 100.0), SweepLaw(20.0))
    with pytest.warns(
        ManiboWarning, match=r"'far' cannot reach the datum: the round trip .* 11 h"
    ) as w:
        _own(assets=(*base.assets, far))
    assert {r.filename for r in w} == {__file__}  # the user's line, not the generated __init__
    late = Asset.vessel("late", destination(base.datum, 90.0, 1500.0), SweepLaw(8.0))
    with pytest.warns(ManiboWarning, match=r"'late' cannot reach the datum: it would reach it at"):
        _own(assets=[*base.assets, late])
    ocean = np.ones((180, 360), dtype=bool)
    ocean[:, :180] = False  # land west of Greenwich
    ship = Asset.vessel("ship", destination(base.datum, 90.0, 100.0), SweepLaw(8.0))
    with pytest.warns(ManiboWarning, match="'ship' cannot reach the datum: it joins the search on"):
        built = _own(assets=[*base.assets, ship], mask=OceanMask(ocean))
    assert isinstance(built.assets, tuple) and len(built.assets) == len(base.assets) + 1
    late_plane = Asset.aircraft("late plane", base.datum, SweepLaw(20.0), available_h=500.0)
    with pytest.warns(ManiboWarning, match=r"'late plane' cannot reach the datum: it would reach"):
        _own(assets=(*base.assets, late_plane))


@pytest.mark.parametrize("duration", [np.int64(24), np.float32(24.0), torch.tensor(24.0), 24])
def test_a_scenario_takes_any_real_duration(duration):
    assert _own(duration_h=duration).duration_h == 24.0
