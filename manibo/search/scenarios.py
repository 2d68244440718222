r"""Mission scenarios at ocean scale: satellite arcs, lost flights on ocean routes, AF447-style.

Every scenario is a search of a few 10⁵ km² of ocean over three days by two patrol aircraft, each
flying one sortie a day from its airfield, and a ship that joins on scene, the object drifting with
a surface current all the while. The object's true position is a draw from the prior, so the
prior is right on average over scenarios.

* :func:`arc_scenario` — the object lies along an arc of a *small* circle, as a satellite's
  range measurement gives (the MH370 search followed such an arc across the southern Indian Ocean):
  an arc of 1500–2800 km with a cross-arc standard deviation of 15–35 km, its middle 700–1600 km
  from an airfield of the high-latitude oceans (both hemispheres, the North Pacific's at the
  antimeridian); along the arc, a uniform part (0.6) and a peak (0.4).
* :func:`route_scenario` — an aircraft lost on a long-haul ocean route: a prior mixing the last
  known position (0.5), a corridor ahead on the route's great circle (0.35) and a reverse-drifted
  debris sighting (0.15), masked to the ocean, as in the Metron analysis of AF447 (Stone et al.,
  *Statistical Science* 2014). The aircraft fly from the two airfields nearest to the last known
  position.
* :func:`af447_scenario` — the same recipe on the public anchor points of the Air France 447
  search: the last ACARS position 2.98°N 30.59°W, the route Rio de Janeiro (GIG) → Paris (CDG), and
  the aircraft from Natal and Dakar, as in June 2009. The sighting and the current are synthetic.

The airfields are public locations (latitude, longitude of the airport); scales, currents and the
assets' performance are synthetic but of the order of real ones: a P-3/P-8-class aircraft at
450 km/h with 11 h of endurance and sweep widths of 16–20 km (inverse-cube law), a ship at 15 knots
with an 8 km definite-range sweep.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError, ManiboWarning
from manibo.geo import (
    EARTH_RADIUS_KM,
    destination,
    distance_km,
    great_circle_track,
    latlon,
    latlon_to_unit,
    move_fraction,
    unit_to_latlon,
)
from manibo.search.assets import Asset
from manibo.search.drift import Drift
from manibo.search.mission import Scenario
from manibo.search.ocean import OceanMask
from manibo.search.prior import ArcBand, GaussianBlob, PriorMixture, RouteCorridor
from manibo.search.sweep import SweepLaw

KMH_PER_MS = 3.6
#: Three days on scene.
DEFAULT_DURATION_H = 72.0
FAMILIES = ("arc", "route", "af447")
_MAX_DRAWS = 2000

AF447_LKP = (2.98, -30.59)
RIO_GIG = (-22.81, -43.25)
PARIS_CDG = (49.01, 2.55)

#: Airfields a patrol aircraft can fly from (name, latitude, longitude of the airport).
AIRFIELDS: tuple[tuple[str, float, float], ...] = (
    ("Perth", -31.94, 115.97),
    ("Learmonth", -22.24, 114.09),
    ("Cocos Islands", -12.19, 96.83),
    ("Hobart", -42.84, 147.51),
    ("Christchurch", -43.49, 172.53),
    ("Auckland", -37.01, 174.79),
    ("Chatham Islands", -43.81, -176.46),
    ("Nadi", -17.76, 177.44),
    ("Noumea", -22.01, 166.21),
    ("Pago Pago", -14.33, -170.71),
    ("Tahiti", -17.55, -149.61),
    ("Easter Island", -27.16, -109.42),
    ("Punta Arenas", -53.00, -70.85),
    ("Mount Pleasant", -51.82, -58.45),
    ("Cape Town", -33.97, 18.60),
    ("Reunion", -20.89, 55.52),
    ("Mauritius", -20.43, 57.68),
    ("St Helena", -15.96, -5.65),
    ("Ascension", -7.97, -14.39),
    ("Natal", -5.91, -35.25),
    ("Recife", -8.13, -34.92),
    ("Rio de Janeiro", -22.81, -43.25),
    ("Dakar", 14.74, -17.49),
    ("Sal", 16.74, -22.95),
    ("Lajes", 38.76, -27.09),
    ("Bermuda", 32.36, -64.68),
    ("St John's", 47.62, -52.75),
    ("Shannon", 52.70, -8.92),
    ("Keflavik", 63.98, -22.61),
    ("Nuuk", 64.19, -51.68),
    ("Anchorage", 61.17, -150.00),
    ("Kodiak", 57.75, -152.49),
    ("Adak", 51.88, -176.64),
    ("Petropavlovsk-Kamchatsky", 53.17, 158.45),
    ("Misawa", 40.70, 141.37),
    ("Guam", 13.48, 144.80),
    ("Wake Island", 19.28, 166.64),
    ("Midway", 28.20, -177.38),
    ("Honolulu", 21.32, -157.92),
    ("San Francisco", 37.62, -122.38),
)
#: The airfields of the high-latitude oceans around which arc scenarios are drawn.
ARC_AIRFIELDS = (
    "Perth",
    "Hobart",
    "Christchurch",
    "Chatham Islands",
    "Punta Arenas",
    "Mount Pleasant",
    "Cape Town",
    "St John's",
    "Shannon",
    "Keflavik",
    "Kodiak",
    "Adak",
    "Petropavlovsk-Kamchatsky",
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


@dataclass(frozen=True)
class MissionSettings:
    """Scales and assets shared by the scenarios.

    Attributes:
        duration_h: the mission's length.
        lkp_sigma_km: standard deviation of the last-known-position blob (truncated at
            ``lkp_max_km``).
        corridor_length_km: how far ahead on the route the aircraft may have flown on;
            ``corridor_sigma_km`` its cross-track standard deviation.
        sighting_sigma_km: standard deviation of the reverse-drift blob, 250–500 km from the LKP.
        weights: mixture weights of (LKP blob, corridor, sighting).
        current_ms: (min, max) surface-current speed in m/s.
        diffusion_km2_per_day: diffusivity of the unresolved currents and leeway.
        max_airfield_km: the aircraft fly from airfields at most this far from the datum.
        aircraft_sweeps_km: sweep widths of the two aircraft (inverse-cube law).
        vessel_sweep_km: sweep width of the ship (definite range).
        aircraft_speed_kmh, aircraft_endurance_h, turnaround_h: the aircraft's performance and
            hours on the ground between sorties; the second one takes off ``stagger_h`` later.
        vessel_speed_kmh: the ship's speed; it joins 300–700 km from the datum at mission time 0.
    """

    duration_h: float = DEFAULT_DURATION_H
    lkp_sigma_km: float = 120.0
    lkp_max_km: float = 400.0
    corridor_length_km: float = 1200.0
    corridor_sigma_km: float = 40.0
    sighting_sigma_km: float = 90.0
    weights: tuple[float, float, float] = (0.5, 0.35, 0.15)
    current_ms: tuple[float, float] = (0.2, 0.6)
    diffusion_km2_per_day: float = 30.0
    max_airfield_km: float = 2200.0
    aircraft_sweeps_km: tuple[float, float] = (20.0, 16.0)
    vessel_sweep_km: float = 8.0
    aircraft_speed_kmh: float = 450.0
    aircraft_endurance_h: float = 11.0
    turnaround_h: float = 13.0
    stagger_h: float = 2.0
    vessel_speed_kmh: float = 28.0


def _airfield(name: str, device=None) -> Tensor:
    for entry in AIRFIELDS:
        if entry[0] == name:
            return latlon(entry[1], entry[2], device=device)
    raise ConfigurationError(f"unknown airfield {name!r}.")


def nearest_airfields(point: Tensor, count: int = 2) -> list[tuple[str, float]]:
    """The ``count`` airfields nearest to ``point`` ``(3,)``: ``[(name, km), ...]``, nearest
    first."""
    fields = latlon_to_unit(
        torch.tensor([a[1] for a in AIRFIELDS], dtype=point.dtype),
        torch.tensor([a[2] for a in AIRFIELDS], dtype=point.dtype),
    ).to(point.device)
    km = distance_km(fields, point)
    order = torch.argsort(km)[:count]
    return [(AIRFIELDS[int(i)][0], float(km[i])) for i in order]


def _assets(settings: MissionSettings, bases: list[Tensor], ship_start: Tensor) -> tuple:
    aircraft = tuple(
        Asset.aircraft(
            f"aircraft {i + 1}",
            base,
            SweepLaw(width),
            speed_kmh=settings.aircraft_speed_kmh,
            endurance_h=settings.aircraft_endurance_h,
            turnaround_h=settings.turnaround_h,
            available_h=i * settings.stagger_h,
        )
        for i, (base, width) in enumerate(zip(bases, settings.aircraft_sweeps_km, strict=True))
    )
    ship = Asset.vessel(
        "ship",
        ship_start,
        SweepLaw(settings.vessel_sweep_km, "definite-range"),
        speed_kmh=settings.vessel_speed_kmh,
    )
    return (*aircraft, ship)


class _Draws:
    """Uniform draws from one scenario's generator."""

    def __init__(self, seed: int) -> None:
        self.generator = torch.Generator().manual_seed(seed * 7919 + 5)

    def uniform(self, low: float, high: float) -> float:
        return low + (high - low) * float(
            torch.rand(1, generator=self.generator, dtype=torch.float64)
        )

    def index(self, n: int) -> int:
        return int(torch.randint(n, (1,), generator=self.generator))


def _at_sea(mask: OceanMask | None, point: Tensor) -> bool:
    return mask is None or bool(mask.is_ocean(point))


def _sea_point(draws: _Draws, mask, around: Tensor, low_km: float, high_km: float) -> Tensor:
    for _ in range(_MAX_DRAWS):
        point = destination(around, draws.uniform(0, 360), draws.uniform(low_km, high_km))
        if _at_sea(mask, point):
            return point
    raise ConfigurationError("no point at sea was found around the datum; move the scenario.")


def _current(draws: _Draws, settings: MissionSettings, datum: Tensor) -> Drift:
    speed = KMH_PER_MS * draws.uniform(*settings.current_ms)
    return Drift.through(
        datum, draws.uniform(0, 360), speed, draws.uniform(0, 60), settings.diffusion_km2_per_day
    )


def _finish(
    name, family, datum, prior, drift, bases, ship, settings, mask, seed, landmarks, lines
) -> Scenario:
    base_points = [b for _, b in bases]
    landmarks = {**landmarks, **{f"airfield: {n}": b for n, b in bases}, "ship joins": ship}
    with warnings.catch_warnings():
        # the ship joins at the edge of the ocean and the aircraft fly from airfields as these
        # families place them: in a mission shorter than a transit (the demo's --budget) an
        # asset arrives too late by design
        warnings.filterwarnings(
            "ignore", "scenario .* cannot reach the datum: it would reach it at", ManiboWarning
        )
        return Scenario(
            name=name,
            family=family,
            datum=datum,
            prior=prior,
            drift=drift,
            assets=_assets(settings, base_points, ship),
            duration_h=settings.duration_h,
            mask=mask,
            seed=seed,
            landmarks=landmarks,
            lines=lines,
        )


def _two_bases(datum: Tensor, settings: MissionSettings, first: str | None = None) -> list:
    near = [(n, km) for n, km in nearest_airfields(datum, 3) if km <= settings.max_airfield_km]
    names = [first] if first is not None else []
    names += [n for n, _ in near if n not in names]
    names = (names + names)[:2]
    return [(n, _airfield(n, datum.device)) for n in names]


def arc_scenario(
    seed: int, settings: MissionSettings | None = None, mask: OceanMask | None = None, device=None
) -> Scenario:
    """A search along a satellite arc near an airfield of the high-latitude oceans (module doc).

    Args:
        seed: determines everything about the scenario.
        settings: scales and assets (default :class:`MissionSettings`).
        mask: the ocean mask (None: no land).
        device: where the scenario's tensors live (float64).
    """
    settings = settings or MissionSettings()
    draws = _Draws(seed)
    home = ARC_AIRFIELDS[draws.index(len(ARC_AIRFIELDS))]
    base = _airfield(home, device)
    datum = _sea_point(draws, mask, base, 700.0, 1600.0)
    radius = draws.uniform(25.0, 60.0)
    pole = destination(datum, draws.uniform(0, 360), radius * math.pi / 180 * EARTH_RADIUS_KM)
    length = draws.uniform(2000.0, 3500.0)
    sigma = draws.uniform(40.0, 80.0)
    peak = draws.uniform(-length / 4, length / 4)
    components = [
        ArcBand(pole, datum, radius, length, sigma, name="arc"),
        ArcBand(pole, datum, radius, length, sigma, length / 6, peak, name="arc peak"),
    ]
    prior = PriorMixture(components, (0.6, 0.4), mask)
    ends = components[0].point(
        torch.linspace(-length / 2, length / 2, 100, dtype=datum.dtype),
        torch.zeros(100, dtype=datum.dtype),
    )
    lat, lon = (float(v) for v in unit_to_latlon(datum))
    name = f"arc near {home} ({_format(lat, lon)}, seed {seed})"
    bases = _two_bases(datum, settings, first=home)
    ship = _sea_point(draws, mask, datum, 300.0, 700.0)
    drift = _current(draws, settings, datum)
    return _finish(
        name,
        "arc",
        datum,
        prior,
        drift,
        bases,
        ship,
        settings,
        mask,
        seed,
        {"arc middle": datum},
        {"satellite arc": ends},
    )


def _route_prior(settings, lkp, toward, sighting, mask) -> PriorMixture:
    components = [
        GaussianBlob(lkp, settings.lkp_sigma_km, settings.lkp_max_km, name="last known position"),
        RouteCorridor(
            lkp, toward, settings.corridor_length_km, settings.corridor_sigma_km, name="corridor"
        ),
        GaussianBlob(sighting, settings.sighting_sigma_km, name="reverse-drift sighting"),
    ]
    return PriorMixture(components, settings.weights, mask)


def route_scenario(
    seed: int, settings: MissionSettings | None = None, mask: OceanMask | None = None, device=None
) -> Scenario:
    """An aircraft lost on a long-haul ocean route (module doc).

    A route of :data:`OCEAN_ROUTES` is drawn uniformly and flown in either direction; the last known
    position is uniform along its great circle among the points at sea within
    ``settings.max_airfield_km`` of an airfield; the sighting's bearing, the current and the ship's
    position are uniform.

    Args:
        seed: determines everything about the scenario.
        settings: scales and assets.
        mask: the ocean mask (None: no land).
        device: where the scenario's tensors live (float64).
    """
    settings = settings or MissionSettings()
    draws = _Draws(seed)
    for _ in range(_MAX_DRAWS):
        (code_a, *end_a), (code_b, *end_b) = OCEAN_ROUTES[draws.index(len(OCEAN_ROUTES))]
        if draws.uniform(0, 1) < 0.5:
            (code_a, end_a), (code_b, end_b) = (code_b, end_b), (code_a, end_a)
        origin, dest = latlon(*end_a, device=device), latlon(*end_b, device=device)
        lkp = move_fraction(
            origin, dest, torch.tensor(draws.uniform(0.02, 0.98), dtype=torch.float64)
        )
        if _at_sea(mask, lkp) and nearest_airfields(lkp, 1)[0][1] <= settings.max_airfield_km:
            break
    else:  # pragma: no cover - the listed routes have many such points
        raise ConfigurationError("no last known position at sea near an airfield was found.")
    sighting = _sea_point(draws, mask, lkp, 250.0, 500.0)
    prior = _route_prior(settings, lkp, dest, sighting, mask)
    lat, lon = (float(v) for v in unit_to_latlon(lkp))
    name = f"{code_a}→{code_b} lost at {_format(lat, lon)} (seed {seed})"
    bases = _two_bases(lkp, settings)
    ship = _sea_point(draws, mask, lkp, 300.0, 700.0)
    drift = _current(draws, settings, lkp)
    landmarks = {"last known position": lkp, "reverse-drift sighting": sighting}
    lines = {"route": great_circle_track(origin, dest, 200)}
    return _finish(
        name, "route", lkp, prior, drift, bases, ship, settings, mask, seed, landmarks, lines
    )


def af447_scenario(
    seed: int = 0,
    settings: MissionSettings | None = None,
    mask: OceanMask | None = None,
    device=None,
) -> Scenario:
    """The AF447-style search: LKP 2.98°N 30.59°W, route GIG → CDG, aircraft from Natal and Dakar.

    Args:
        seed: draws the object's position, the diffusion and the planners' randomness.
        settings: scales and assets.
        mask: the ocean mask (None: no land).
        device: where the scenario's tensors live (float64).
    """
    settings = settings or MissionSettings()
    lkp, origin, dest = (latlon(*p, device=device) for p in (AF447_LKP, RIO_GIG, PARIS_CDG))
    sighting = destination(lkp, 225.0, 350.0)
    prior = _route_prior(settings, lkp, dest, sighting, mask)
    speed = KMH_PER_MS * sum(settings.current_ms) / 2
    drift = Drift.through(lkp, 270.0, speed, 30.0, settings.diffusion_km2_per_day)
    bases = [(n, _airfield(n, device)) for n in ("Natal", "Dakar")]
    ship = destination(lkp, 40.0, 500.0)
    landmarks = {"last known position": lkp, "reverse-drift sighting": sighting}
    lines = {"route": great_circle_track(origin, dest, 200)}
    return _finish(
        f"AF447-style (seed {seed})",
        "af447",
        lkp,
        prior,
        drift,
        bases,
        ship,
        settings,
        mask,
        seed,
        landmarks,
        lines,
    )


def scenario(
    family: str,
    seed: int,
    settings: MissionSettings | None = None,
    mask: OceanMask | None = None,
    device=None,
) -> Scenario:
    """The scenario of ``family`` (one of :data:`FAMILIES`) and ``seed``."""
    if family == "arc":
        return arc_scenario(seed, settings, mask, device)
    if family == "route":
        return route_scenario(seed, settings, mask, device)
    if family == "af447":
        return af447_scenario(seed, settings, mask, device)
    raise ConfigurationError(f"`family` must be one of {FAMILIES}, got {family!r}.")


def _format(lat: float, lon: float) -> str:
    return f"{abs(lat):.0f}°{'N' if lat >= 0 else 'S'} {abs(lon):.0f}°{'E' if lon >= 0 else 'W'}"
