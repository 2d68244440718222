"""The expanding-square search pattern (IAMSAR) around the drifting datum."""

from __future__ import annotations

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.search.geography import offset
from manibo.search.planners.base import MissionBrief, Planner, PlannerState, intercept

# Clockwise turns starting northwards: north, east, south, west.
_HEADINGS = ((0.0, 1.0), (1.0, 0.0), (0.0, -1.0), (-1.0, 0.0))


def expanding_square_offsets(num_points: int, spacing_km: float) -> Tensor:
    """East and north offsets (km) of the search points of an expanding square, centre first.

    Legs of 1, 1, 2, 2, 3, 3, ... track spacings, turning 90° clockwise after each leg; one search
    point every ``spacing_km`` along the legs.

    Returns:
        Shape ``(num_points, 2)`` in float64.
    """
    if num_points < 1 or spacing_km <= 0:
        raise ConfigurationError(
            f"need num_points >= 1 and spacing_km > 0, got {num_points} and {spacing_km}."
        )
    points, east, north, leg = [(0.0, 0.0)], 0.0, 0.0, 0
    while len(points) < num_points:
        de, dn = _HEADINGS[leg % 4]
        for _ in range(leg // 2 + 1):
            east, north = east + de * spacing_km, north + dn * spacing_km
            points.append((east, north))
        leg += 1
    return torch.tensor(points[:num_points], dtype=torch.float64)


class ExpandingSquare(Planner):
    """Search the expanding square around the last known position, carried along by the current.

    The pattern is laid out around the LKP at mission time 0 and every point of it drifts with the
    water (the datum is drift-corrected, as IAMSAR prescribes); pattern points over land are
    skipped.

    Args:
        spacing_km: track spacing; default: the sensor's sweep width.
        max_points: length of the pattern laid out.
    """

    name = "expanding square"

    def __init__(self, spacing_km: float | None = None, max_points: int = 2000) -> None:
        self.spacing_km = spacing_km
        self.max_points = max_points

    def start(self, brief: MissionBrief, seed: int = 0) -> None:
        """Lay out the pattern around the LKP (see :meth:`Planner.start`)."""
        super().start(brief, seed)
        spacing = self.spacing_km or brief.sensor.sweep_width_km
        grid = expanding_square_offsets(self.max_points, spacing).to(brief.lkp)
        pattern = offset(brief.lkp, grid[:, 0], grid[:, 1])
        if brief.mask is not None:
            pattern = pattern[brief.mask.is_ocean(pattern)]
        self.pattern = pattern
        self.next_index = 0

    def propose(self, state: PlannerState) -> Tensor:
        """The next pattern point, met where its water has drifted to by arrival."""
        index = min(self.next_index, self.pattern.shape[0] - 1)
        self.next_index += 1
        now = self.brief.drift.advect(self.pattern[index : index + 1], state.time_h)
        point, _ = intercept(state.position, now, self.brief)
        return point[0]
