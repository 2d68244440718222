r"""The mission simulator: several assets fly legs chosen by a planner; the exact belief follows.

Events are the ends of legs, taken in time order over all assets. When an asset ends a leg, the
belief is updated with that leg (its particles diffuse to that time first) and the planner is asked
for the asset's next leg. An aircraft takes off from its base at each of its sortie times and flies
home when the time it has left no longer allows another leg and the way back; a vessel searches
until its endurance or the mission ends. A leg that would break an asset's endurance (the way home
included) is refused with an error: planners must never propose one. A leg lasts at least
:data:`~manibo.search.assets.MIN_LEG_HOURS` (the asset loiters at the end of a shorter one), and
legs still in the air at the end of the mission are cut there.

The planner is never told where the object is, nor that it was detected: the mission is played to
its end, which gives the mission of every possible object at once (see
:mod:`manibo.search.evaluation`).
"""

from __future__ import annotations

import heapq
import math
import numbers
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor

from manibo._stack import user_stacklevel
from manibo.exceptions import ConfigurationError, InputDataError, ManiboWarning
from manibo.geo import check_points, move_fraction
from manibo.search.assets import MIN_LEG_HOURS, Asset
from manibo.search.belief import ParticleBelief
from manibo.search.drift import Drift
from manibo.search.legs import Leg
from manibo.search.ocean import OceanMask
from manibo.search.planners.base import MissionBrief, Planner, PlannerState
from manibo.search.prior import PriorMixture

DEFAULT_PARTICLES = 1500
_TOLERANCE_H = 1e-6


@dataclass(frozen=True, eq=False)
class Scenario:
    """A lost-object mission: the prior, the current, the assets; its landmarks for maps.

    Attributes:
        name: label.
        family: label of the kind of scenario (those built here: ``"arc"``, ``"route"``,
            ``"af447"``).
        datum: the reference point of the search (last known position, middle of the arc), a
            unit vector ``(3,)`` (:func:`~manibo.geo.latlon` makes one from degrees).
        prior: the prior mixture over the object's position at mission time 0 (at sea).
        drift: the current that moves the object.
        assets: the search assets.
        duration_h: the mission's length.
        mask: the ocean mask.
        seed: seeds everything random in the scenario.
        landmarks: named points for maps (e.g. ``"last known position"``), each ``(3,)``.
        lines: named polylines for maps (a route, an arc), each ``(k, 3)``.
    """

    name: str
    family: str
    datum: Tensor
    prior: PriorMixture
    drift: Drift
    assets: tuple[Asset, ...]
    duration_h: float
    mask: OceanMask | None
    seed: int
    landmarks: dict[str, Tensor] = field(default_factory=dict)
    lines: dict[str, Tensor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Check every field before any planning, and warn of assets that cannot reach the datum.

        Raises:
            InputDataError: the datum is not one unit vector (latitude and longitude in degrees
                are not: convert them with :func:`~manibo.geo.latlon`).
            ConfigurationError: a field has the wrong type, or ``duration_h`` is not a finite
                number > 0, or there are no assets.
        """
        check_points("datum", self.datum)
        if self.datum.shape != (3,):
            raise InputDataError(
                f"`datum` must be one unit vector of shape (3,), got shape "
                f"{tuple(self.datum.shape)}; make it with manibo.geo.latlon(lat, lon)."
            )
        for name, kind in (("prior", PriorMixture), ("drift", Drift)):
            if not isinstance(getattr(self, name), kind):
                raise ConfigurationError(
                    f"`{name}` must be a {kind.__name__}, got {type(getattr(self, name)).__name__}."
                )
        if self.mask is not None and not isinstance(self.mask, OceanMask):
            raise ConfigurationError(
                f"`mask` must be an OceanMask or None, got {type(self.mask).__name__}."
            )
        duration = self.duration_h
        number = isinstance(duration, numbers.Real) or (
            isinstance(duration, Tensor) and duration.numel() == 1
        )
        if isinstance(duration, bool) or not (
            number and math.isfinite(float(duration)) and float(duration) > 0
        ):
            raise ConfigurationError(f"`duration_h` must be a finite number > 0, got {duration!r}.")
        object.__setattr__(self, "duration_h", float(duration))
        assets = tuple(self.assets) if isinstance(self.assets, list | tuple) else None
        if not assets or not all(isinstance(a, Asset) for a in assets):
            raise ConfigurationError(
                f"`assets` must be a non-empty tuple of Asset, got {self.assets!r}; make them "
                "with Asset.aircraft(...) and Asset.vessel(...)."
            )
        object.__setattr__(self, "assets", assets)
        for asset in assets:
            self._warn_if_idle(asset)

    def _warn_if_idle(self, asset: Asset) -> None:
        """Warn when ``asset`` cannot reach the datum in time: one that would arrive after the
        mission's end, an aircraft whose round trip exceeds its sortie, a vessel that joins on
        land (it may still reach the edge of the prior nearest to it)."""
        hours = float(asset.hours(asset.start, self.datum.to(asset.start)))
        if asset.available_h + hours >= self.duration_h:
            reason = (
                f"it would reach it at {asset.available_h + hours:.1f} h, after the "
                f"mission's {self.duration_h:g} h"
            )
        elif asset.returns_to_base and 2 * hours >= asset.endurance_h:
            reason = (
                f"the round trip from its base to the datum takes {2 * hours:.1f} h, its "
                f"sortie {asset.endurance_h:g} h"
            )
        elif (
            not asset.returns_to_base
            and self.mask is not None
            and not bool(self.mask.is_ocean(asset.start.reshape(1, 3))[0])
        ):
            reason = "it joins the search on land"
        else:
            return
        warnings.warn(
            f"scenario {self.name!r}: asset {asset.name!r} cannot reach the datum: {reason}.",
            ManiboWarning,
            stacklevel=user_stacklevel(),
        )


@dataclass
class MissionRecord:
    """One planner's mission in one scenario.

    Attributes:
        scenario: the scenario's name; ``planner``: the planner's id.
        legs: every leg flown, in the order they ended.
        pos: probability of success of each leg given that the earlier ones failed (the belief's).
        cumulative_pos: the belief's cumulative probability of success after each leg.
        belief: the exact belief at the end.
        duration_h: the mission's length.
        planner_seconds: CPU seconds spent in the planner.
    """

    scenario: str
    planner: str
    legs: list[Leg]
    pos: list[float]
    cumulative_pos: list[float]
    belief: ParticleBelief
    duration_h: float
    planner_seconds: float


def prior_particles(scenario: Scenario, num_particles: int = DEFAULT_PARTICLES) -> Tensor:
    """The prior sample shared by every planner in ``scenario``, ``(num_particles, 3)``."""
    generator = torch.Generator().manual_seed(scenario.seed * 7919 + 1)
    return scenario.prior.sample(num_particles, generator)


def simulate(
    scenario: Scenario,
    planner: Planner,
    num_particles: int = DEFAULT_PARTICLES,
    on_leg: Callable[[Leg, ParticleBelief], None] | None = None,
) -> MissionRecord:
    """Run one mission to its end.

    Args:
        scenario: the mission.
        planner: chooses every asset's legs.
        num_particles: particles of the exact belief (also the prior sample the planner is told).
        on_leg: called after each leg with the leg and the updated belief.

    Returns:
        The mission record.

    Raises:
        InputDataError: the planner proposed a leg beyond an asset's endurance (or not a point of
            the globe).
    """
    if num_particles < 10:
        raise ConfigurationError(f"`num_particles` must be at least 10, got {num_particles}.")
    particles = prior_particles(scenario, num_particles)
    belief = ParticleBelief(particles)
    brief = MissionBrief(
        datum=scenario.datum,
        prior_particles=particles.clone(),
        drift=scenario.drift,
        assets=scenario.assets,
        duration_h=scenario.duration_h,
        mask=scenario.mask,
    )
    clock = time.process_time()
    planner.start(brief, seed=scenario.seed)
    spent = time.process_time() - clock
    generator = torch.Generator().manual_seed(scenario.seed * 7919 + 3)  # the particles' diffusion
    queue, flights = [], []
    for index, asset in enumerate(scenario.assets):
        sorties = [s for s in asset.sorties(scenario.duration_h) if s[0] < scenario.duration_h]
        flights.append(_Flight(asset, sorties))
        if sorties:
            heapq.heappush(queue, (sorties[0][0], index))
    record = MissionRecord(scenario.name, planner.id, [], [], [], belief, scenario.duration_h, 0.0)
    while queue:
        now, index = heapq.heappop(queue)
        flight = flights[index]
        if flight.leg is not None:
            leg, flight.leg = flight.leg, None
            belief.advance(scenario.drift, now, generator)
            record.pos.append(belief.observe_legs([leg], scenario.drift))
            record.cumulative_pos.append(belief.cumulative_pos)
            record.legs.append(leg)
            if on_leg is not None:
                on_leg(leg, belief)
        if now >= scenario.duration_h - _TOLERANCE_H:
            continue
        point = flight.next_point(now)
        if point is None:  # the planner chooses
            pending = [f.leg for f in flights if f.leg is not None]
            state = PlannerState(
                now, index, flight.position, flight.deadline_h, belief, pending, record.legs
            )
            clock = time.process_time()
            point = planner.propose(state)
            spent += time.process_time() - clock
            _check_proposal(flight, point, now)
        elif point is False:  # between sorties, or done
            if flight.next_takeoff is not None:
                heapq.heappush(queue, (flight.next_takeoff, index))
            continue
        leg = flight.fly(index, point, now, scenario.duration_h)
        heapq.heappush(queue, (leg.arrive_h, index))
    record.planner_seconds = spent
    return record


def _check_proposal(flight: _Flight, point: Tensor, now: float) -> None:
    check_points("the planner's proposal", point)
    if point.shape != (3,):
        raise InputDataError(
            f"a planner proposes one point of shape (3,), got {tuple(point.shape)}."
        )
    slack = float(flight.asset.slack_h(flight.position, point, now, flight.deadline_h))
    if slack < -_TOLERANCE_H * 1e3:
        raise InputDataError(
            f"the planner proposed a leg beyond the endurance of {flight.asset.name!r}: it would "
            f"end {-slack:.3f} h after the sortie's deadline ({flight.deadline_h:.2f} h), the way "
            "home included. Clip proposals with `Asset.within_endurance`."
        )


class _Flight:
    """The state of one asset: where it is, its sorties, its leg in the air."""

    def __init__(self, asset: Asset, sorties: list[tuple[float, float]]) -> None:
        self.asset = asset
        self.sorties = sorties
        self.sortie = -1
        self.position = asset.start
        self.deadline_h = -math.inf
        self.airborne = False
        self.leg: Leg | None = None

    @property
    def next_takeoff(self) -> float | None:
        following = self.sortie + 1
        return self.sorties[following][0] if following < len(self.sorties) else None

    def next_point(self, now: float) -> Tensor | None | bool:
        """None: ask the planner; a point: fly there (home); False: nothing to do now."""
        if not self.airborne:
            following = self.sortie + 1
            if following >= len(self.sorties) or now < self.sorties[following][0] - _TOLERANCE_H:
                return False
            self.sortie, self.airborne = following, True
            self.position, self.deadline_h = self.asset.start, self.sorties[following][1]
        slack = float(self.asset.slack_h(self.position, self.position, now, self.deadline_h))
        if slack >= 2 * MIN_LEG_HOURS:  # room for a leg, however short, and the way home
            return None
        self.airborne = False
        if self.asset.returns_to_base and not torch.equal(self.position, self.asset.start):
            return self.asset.start
        return False

    def fly(self, index: int, point: Tensor, now: float, end_h: float) -> Leg:
        """Start the leg to ``point`` (cut at ``end_h``); the asset is there when it ends.

        A leg lasts at least :data:`MIN_LEG_HOURS`: the asset loiters at the end of a shorter one.
        """
        hours = max(float(self.asset.hours(self.position, point)), MIN_LEG_HOURS)
        if now + hours > end_h:
            fraction = torch.tensor((end_h - now) / hours, dtype=point.dtype)
            point, hours = move_fraction(self.position, point, fraction), end_h - now
        self.leg = Leg(index, self.position, point, now, now + hours, self.asset.sweep)
        self.position = point
        return self.leg
