"""Search assets: aircraft that fly sorties from a base, vessels that stay on scene; their sweeps.

Every asset moves along great circles at its speed and searches continuously along its track
with its own lateral range curve (:class:`~manibo.search.sweep.SweepLaw`). An aircraft flies
sorties: it takes off from its base at fixed times (every ``endurance_h + turnaround_h`` hours from
``available_h``) and must be back at its base within ``endurance_h`` of each take-off. A vessel
joins the search at ``available_h`` where it is (``start``) and searches until its endurance or
the mission ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.geo import EARTH_RADIUS_KM, GLOBE, check_points, move_fraction
from manibo.search.sweep import SweepLaw

#: Hours of slack below which an aircraft heads home instead of asking for another search leg.
MIN_LEG_HOURS = 0.05
_BISECTIONS = 40


@dataclass(frozen=True, eq=False)
class Asset:
    """A search platform.

    Attributes:
        name: label (for tables and maps).
        speed_kmh: speed over the ground while searching.
        sweep: the lateral range curve of its sensors (sweep width and law).
        start: its base (aircraft) or where it joins the search (vessel), unit vector ``(3,)``.
        endurance_h: flight time of one sortie (aircraft) or hours on scene (vessel).
        returns_to_base: True for an aircraft: each sortie starts and ends at ``start``.
        turnaround_h: hours on the ground between two sorties.
        available_h: mission time of the first take-off (or of the vessel's arrival).
    """

    name: str
    speed_kmh: float
    sweep: SweepLaw
    start: Tensor
    endurance_h: float
    returns_to_base: bool = False
    turnaround_h: float = 0.0
    available_h: float = 0.0

    def __post_init__(self) -> None:
        check_points("start", self.start)
        if self.start.shape != (3,):
            raise ConfigurationError(
                f"`start` must be one unit vector of shape (3,), got {tuple(self.start.shape)}."
            )
        for name in ("speed_kmh", "endurance_h"):
            value = getattr(self, name)
            if not (value > 0 and not math.isnan(value)):
                raise ConfigurationError(
                    f"`{name}` of asset {self.name!r} must be > 0, got {value!r}."
                )
        for name in ("turnaround_h", "available_h"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigurationError(
                    f"`{name}` of asset {self.name!r} must be a finite number >= 0, got {value!r}."
                )
        if self.returns_to_base and not math.isfinite(self.endurance_h):
            raise ConfigurationError(
                f"asset {self.name!r} returns to base, so its sortie needs a finite `endurance_h`."
            )

    @classmethod
    def aircraft(
        cls,
        name: str,
        base: Tensor,
        sweep: SweepLaw,
        speed_kmh: float = 450.0,
        endurance_h: float = 11.0,
        turnaround_h: float = 13.0,
        available_h: float = 0.0,
    ) -> Asset:
        """A patrol aircraft (P-3/P-8 class by default) flying sorties from ``base``."""
        return cls(name, speed_kmh, sweep, base, endurance_h, True, turnaround_h, available_h)

    @classmethod
    def vessel(
        cls,
        name: str,
        start: Tensor,
        sweep: SweepLaw,
        speed_kmh: float = 28.0,
        endurance_h: float = math.inf,
        available_h: float = 0.0,
    ) -> Asset:
        """A ship (15 knots by default) that joins at ``start`` and stays on scene."""
        return cls(name, speed_kmh, sweep, start, endurance_h, False, 0.0, available_h)

    def sorties(self, until_h: float) -> list[tuple[float, float]]:
        """``(take-off, deadline)`` of every sortie that starts before ``until_h``, in order."""
        if not self.returns_to_base:
            return [(self.available_h, self.available_h + self.endurance_h)]
        cycle = self.endurance_h + self.turnaround_h
        count = max(0, math.ceil((until_h - self.available_h) / cycle))
        return [
            (self.available_h + i * cycle, self.available_h + i * cycle + self.endurance_h)
            for i in range(count)
        ]

    def hours(self, a: Tensor, b: Tensor) -> Tensor:
        """Great-circle hours between broadcastable unit vectors ``(*batch, 3)``; ``(*batch)``."""
        return EARTH_RADIUS_KM * GLOBE.distance(a, b) / self.speed_kmh

    def slack_h(self, position: Tensor, point: Tensor, time_h: float, deadline_h: float) -> Tensor:
        """Hours to spare after flying to ``point`` (``(*batch, 3)``) and, for an aircraft, home.

        Args:
            position: the asset now, ``(3,)``.
            point: candidate ends of the next leg, ``(*batch, 3)``.
            time_h: mission time now.
            deadline_h: when the sortie (or the time on scene) ends.

        Returns:
            ``(*batch)``; a leg is within the endurance when its slack is >= 0.
        """
        used = self.hours(position, point)
        if self.returns_to_base:
            used = used + self.hours(point, self.start)
        return deadline_h - time_h - used

    def within_endurance(
        self, position: Tensor, point: Tensor, time_h: float, deadline_h: float
    ) -> Tensor:
        """The farthest point towards ``point`` (``(3,)``) along the great circle that keeps slack.

        ``point`` itself when its slack is >= 0; otherwise the last point of the arc from
        ``position`` towards it whose slack is >= 0 (bisection; the slack is continuous along the
        arc and >= 0 at ``position`` when the asset can still get home).

        Raises:
            ConfigurationError: when ``position`` itself has no slack (the asset cannot get home).
            InputDataError: when ``point`` is the antipode of ``position`` (no unique arc).
        """
        if float(self.slack_h(position, point, time_h, deadline_h)) >= 0:
            return point
        if float(self.slack_h(position, position, time_h, deadline_h)) < 0:
            raise ConfigurationError(
                f"asset {self.name!r} cannot reach its base before the sortie ends at "
                f"{deadline_h:.2f} h from its position at {time_h:.2f} h."
            )
        low, high = 0.0, 1.0
        for _ in range(_BISECTIONS):
            middle = (low + high) / 2
            candidate = move_fraction(position, point, torch.tensor(middle, dtype=point.dtype))
            if float(self.slack_h(position, candidate, time_h, deadline_h)) >= 0:
                low = middle
            else:
                high = middle
        return move_fraction(position, point, torch.tensor(low, dtype=point.dtype))
