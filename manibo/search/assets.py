"""Search assets: a platform that moves along great circles at a speed, with an endurance."""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.search.geography import check_points, distance_km


@dataclass(frozen=True)
class Asset:
    """A search asset (ship, aircraft, AUV): transit, search and investigation times, and endurance.

    The asset flies or sails along great circles; its sensor searches only while it dwells at a
    search point (``search_hours``), not in transit. A contact costs ``investigate_hours`` more. The
    mission
    ends when the next transit plus search would exceed ``endurance_hours`` of mission time.

    Attributes:
        speed_kmh: transit speed (patrol aircraft ≈ 280, ship ≈ 22–40, AUV ≈ 6 km/h).
        endurance_hours: mission time available, transit included.
        search_hours: dwell of one search.
        investigate_hours: time spent investigating one contact.
    """

    speed_kmh: float = 40.0
    endurance_hours: float = 240.0
    search_hours: float = 3.0
    investigate_hours: float = 1.0

    def __post_init__(self) -> None:
        for name in ("speed_kmh", "endurance_hours", "search_hours"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigurationError(
                    f"`{name}` must be positive, got {value!r}. The asset needs a speed, a "
                    "dwell and an endurance greater than zero."
                )
        if not (math.isfinite(self.investigate_hours) and self.investigate_hours >= 0):
            raise ConfigurationError(
                f"`investigate_hours` must be >= 0, got {self.investigate_hours!r}."
            )

    def transit_hours(self, start: Tensor, end: Tensor) -> Tensor:
        """Transit hours between broadcastable unit vectors ``(*batch, 3)``; shape ``(*batch)``."""
        check_points("start", start)
        check_points("end", end)
        return distance_km(start, end) / self.speed_kmh
