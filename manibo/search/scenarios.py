r"""Mission scenarios: the AF447-style search in the equatorial Atlantic, and random ocean routes.

Both follow the recipe of the Metron analysis of AF447 (Stone et al., *Statistical Science* 2014) at
a scale that a planner can search in days and a map can show: a prior mixing the last known position
(weight 0.5), a corridor along the great-circle route ahead of it (0.35) and a reverse-drifted
debris sighting (0.15), masked to the ocean; a surface current that is a solid-body rotation about a
tilted axis plus diffusion; one search asset staged a few hundred km away. The object's true
position is a draw from the prior, so the prior is correct on average over scenarios.

The AF447 anchor points are public facts: the last ACARS position (2.98°N, 30.59°W) and the route
Rio de Janeiro (GIG) → Paris (CDG). The sighting, the current and the scales are synthetic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from manibo.exceptions import ConfigurationError
from manibo.search.assets import Asset
from manibo.search.drift import Drift
from manibo.search.geography import destination, latlon, move_fraction, unit_to_latlon
from manibo.search.mission import Scenario
from manibo.search.ocean import OceanMask
from manibo.search.prior import GaussianBlob, PriorMixture, RouteCorridor
from manibo.search.sensor import Sensor

KMH_PER_MS = 3.6
#: Ten days on scene: a search vessel's time on task, within the endurance of an offshore patrol
#: vessel; AF447's first debris was found on day 6 and its wreck after about a week of sweeping.
DEFAULT_ENDURANCE_H = 240.0
_MAX_DRAWS = 1000

AF447_LKP = (2.98, -30.59)
RIO_GIG = (-22.81, -43.25)
PARIS_CDG = (49.01, 2.55)


@dataclass(frozen=True)
class MissionSettings:
    """Scales of the prior, the current and the staging, shared by all scenarios.

    Attributes:
        lkp_sigma_km: standard deviation of the last-known-position blob.
        lkp_max_km: truncation radius of that blob.
        corridor_length_km: how far ahead along the route the aircraft may have flown on.
        corridor_sigma_km: cross-track standard deviation of the corridor.
        sighting_sigma_km: standard deviation of the reverse-drift blob.
        weights: mixture weights of (LKP blob, corridor, reverse-drift blob).
        current_ms: (min, max) surface-current speed in m/s for random scenarios.
        diffusion_km2_per_day: diffusivity of the unresolved currents.
        staging_km: distance of the asset's starting point from the LKP.
        sensor: the detection model.
        asset: the search asset (its endurance is the mission's time budget).
    """

    lkp_sigma_km: float = 80.0
    lkp_max_km: float = 250.0
    corridor_length_km: float = 600.0
    corridor_sigma_km: float = 35.0
    sighting_sigma_km: float = 60.0
    weights: tuple[float, float, float] = (0.5, 0.35, 0.15)
    current_ms: tuple[float, float] = (0.2, 0.6)
    diffusion_km2_per_day: float = 30.0
    staging_km: float = 250.0
    sensor: Sensor = field(default_factory=lambda: Sensor(range_km=40.0))
    asset: Asset = field(
        default_factory=lambda: Asset(search_hours=4.0, endurance_hours=DEFAULT_ENDURANCE_H)
    )


def _prior(settings: MissionSettings, lkp, toward, sighting, mask) -> PriorMixture:
    components = [
        GaussianBlob(lkp, settings.lkp_sigma_km, settings.lkp_max_km, name="last known position"),
        RouteCorridor(
            lkp,
            toward,
            settings.corridor_length_km,
            settings.corridor_sigma_km,
            name="route corridor",
        ),
        GaussianBlob(sighting, settings.sighting_sigma_km, name="reverse-drift sighting"),
    ]
    return PriorMixture(components, settings.weights, mask)


def _scenario(name, lkp, origin, dest, sighting, drift, start, settings, mask, seed) -> Scenario:
    prior = _prior(settings, lkp, dest, sighting, mask)
    truth = prior.sample(1, torch.Generator().manual_seed(seed * 7919 + 4))[0]
    return Scenario(
        name=name,
        lkp=lkp,
        origin=origin,
        destination=dest,
        sighting=sighting,
        prior=prior,
        drift=drift,
        sensor=settings.sensor,
        asset=settings.asset,
        start=start,
        truth=truth,
        mask=mask,
        seed=seed,
    )


def af447_scenario(
    settings: MissionSettings | None = None,
    mask: OceanMask | None = None,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> Scenario:
    """The AF447-style mission: LKP 2.98°N 30.59°W, route GIG → CDG, a westward equatorial current.

    Args:
        settings: scales (defaults: :class:`MissionSettings`).
        mask: the ocean mask (None: no land).
        seed: draws the object's true position and the mission's random streams.
        device: where the scenario's tensors live (float64).
    """
    settings = settings or MissionSettings()
    lkp, origin, dest = (latlon(*p, device=device) for p in (AF447_LKP, RIO_GIG, PARIS_CDG))
    sighting = destination(lkp, 225.0, 220.0)
    speed = KMH_PER_MS * sum(settings.current_ms) / 2
    drift = Drift.through(lkp, 270.0, speed, 30.0, settings.diffusion_km2_per_day)
    start = destination(lkp, 215.0, settings.staging_km)
    return _scenario(
        f"AF447-style (seed {seed})",
        lkp,
        origin,
        dest,
        sighting,
        drift,
        start,
        settings,
        mask,
        seed,
    )


#: Long-haul routes over the ocean (IATA code, latitude, longitude of both ends; public data).
OCEAN_ROUTES: tuple[tuple[tuple[str, float, float], tuple[str, float, float]], ...] = (
    (("GIG", -22.81, -43.25), ("CDG", 49.01, 2.55)),
    (("JFK", 40.64, -73.78), ("LHR", 51.47, -0.45)),
    (("BOS", 42.36, -71.01), ("DUB", 53.42, -6.27)),
    (("KEF", 63.98, -22.61), ("JFK", 40.64, -73.78)),
    (("LIS", 38.77, -9.13), ("EWR", 40.69, -74.17)),
    (("SFO", 37.62, -122.38), ("NRT", 35.77, 140.39)),
    (("SEA", 47.45, -122.31), ("ICN", 37.46, 126.44)),
    (("YVR", 49.19, -123.18), ("HKG", 22.31, 113.91)),
    (("HNL", 21.32, -157.92), ("LAX", 33.94, -118.41)),
    (("LAX", 33.94, -118.41), ("SYD", -33.95, 151.18)),
    (("SCL", -33.39, -70.79), ("AKL", -37.01, 174.79)),
    (("GRU", -23.43, -46.47), ("JNB", -26.14, 28.24)),
    (("JNB", -26.14, 28.24), ("PER", -31.94, 115.97)),
    (("KUL", 2.75, 101.71), ("PER", -31.94, 115.97)),
)


def random_scenario(
    seed: int,
    settings: MissionSettings | None = None,
    mask: OceanMask | None = None,
    device: torch.device | str | None = None,
) -> Scenario:
    """A mission on a long-haul ocean route: the aircraft was lost at a random point of it.

    A route of :data:`OCEAN_ROUTES` is drawn uniformly; the LKP is uniform along its great circle
    (by distance) among the points over the ocean; the corridor runs ahead towards the destination.
    The sighting's bearing (150–350 km from the LKP, over the ocean), the current's heading, speed
    and axis tilt, and the asset's staging bearing are uniform.

    Args:
        seed: determines everything about the scenario.
        settings: scales (defaults: :class:`MissionSettings`).
        mask: the ocean mask (None: no land).
        device: where the scenario's tensors live (float64).
    """
    settings = settings or MissionSettings()
    gen = torch.Generator().manual_seed(seed * 7919 + 5)

    def uniform(low: float, high: float) -> float:
        return low + (high - low) * float(torch.rand(1, generator=gen, dtype=torch.float64))

    def at_sea(point: torch.Tensor) -> bool:
        return mask is None or bool(mask.is_ocean(point))

    (code_a, *end_a), (code_b, *end_b) = OCEAN_ROUTES[
        int(torch.randint(len(OCEAN_ROUTES), (1,), generator=gen))
    ]
    if uniform(0, 1) < 0.5:
        (code_a, end_a), (code_b, end_b) = (code_b, end_b), (code_a, end_a)
    origin, dest = latlon(*end_a, device=device), latlon(*end_b, device=device)
    for _ in range(_MAX_DRAWS):
        lkp = move_fraction(origin, dest, torch.tensor(uniform(0.02, 0.98), dtype=torch.float64))
        if at_sea(lkp):
            break
    else:  # pragma: no cover - every listed route crosses an ocean
        raise ConfigurationError(f"the route {code_a}-{code_b} has no point over the ocean.")
    for _ in range(_MAX_DRAWS):
        sighting = destination(lkp, uniform(0, 360), uniform(150, 350))
        if at_sea(sighting):
            break
    speed = KMH_PER_MS * uniform(*settings.current_ms)
    drift = Drift.through(
        lkp, uniform(0, 360), speed, uniform(0, 60), settings.diffusion_km2_per_day
    )
    start = destination(lkp, uniform(0, 360), settings.staging_km)
    lat, lon = (float(v) for v in unit_to_latlon(lkp))
    name = (
        f"{code_a}→{code_b} lost at {abs(lat):.0f}°{'N' if lat >= 0 else 'S'} "
        f"{abs(lon):.0f}°{'E' if lon >= 0 else 'W'} (seed {seed})"
    )
    return _scenario(name, lkp, origin, dest, sighting, drift, start, settings, mask, seed)
