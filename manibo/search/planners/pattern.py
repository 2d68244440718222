r"""IAMSAR search patterns: parallel sweep over the prior's area, expanding square around the datum.

Both lay their waypoints out once, in the water's frame (the datum and the pattern drift with the
current, as IAMSAR prescribes), and fly them in order; each waypoint is met where its water is when
the asset gets there. A waypoint the asset cannot reach and still get home is approached as far as
the endurance allows and resumed on the next sortie.

* :class:`ParallelSweep` — the rectangle holding the central 90% of the prior along and across its
  principal axes (in the plane tangent at the prior's mean), split among the assets along its
  major axis in proportion to each one's search effort (sweep width × speed × hours); each asset
  sweeps its part in tracks along the major axis, spaced by its own sweep width.
* :class:`ExpandingSquare` — legs of 1, 1, 2, 2, 3, 3, … track spacings around the datum, turning
  clockwise; the assets take the legs in turn.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.geo import offset, tangent_offsets
from manibo.search.planners.base import MissionBrief, Planner, PlannerState, intercept

# Clockwise turns starting northwards: north, east, south, west.
_HEADINGS = ((0.0, 1.0), (1.0, 0.0), (0.0, -1.0), (-1.0, 0.0))
_QUANTILES = (0.05, 0.95)


class _Pattern(Planner):
    """Waypoints in the water's frame, flown in order; ``queues[a]`` lists asset ``a``'s."""

    def propose(self, state: PlannerState) -> Tensor:
        """The next waypoint of the asset's queue, met where its water is; clipped to endurance."""
        queue = self.queue(state.asset)
        asset = self.brief.assets[state.asset]
        index = self.next_index[queue] % self.waypoints[queue].shape[0]
        water = self.waypoints[queue][index : index + 1]
        met, _ = intercept(state.position, water, state.time_h, asset, self.brief.drift)
        target = met[0]
        point = self.within_endurance(state, target)
        if point is target:  # reached: on to the next waypoint
            self.next_index[queue] += 1
        return point

    def queue(self, asset: int) -> int:
        """Which waypoint list asset ``asset`` follows."""
        return asset


class ParallelSweep(_Pattern):
    """Each asset sweeps its share of the prior's rectangle in parallel tracks (module doc)."""

    id = "parallel-sweep"

    def start(self, brief: MissionBrief, seed: int = 0) -> None:
        """Lay out the rectangle and every asset's tracks (see :meth:`Planner.start`)."""
        super().start(brief, seed)
        particles = brief.prior_particles
        mean = particles.mean(0)
        centre = mean / mean.norm()
        plane = tangent_offsets(centre, particles)
        _, _, axes = torch.linalg.svd(plane - plane.mean(0), full_matrices=False)
        major, minor = axes[0], axes[1]
        q = torch.tensor(_QUANTILES, dtype=plane.dtype)
        along_lo, along_hi = torch.quantile(plane @ major, q).tolist()
        cross_lo, cross_hi = torch.quantile(plane @ minor, q).tolist()
        effort = [
            a.sweep.width_km * a.speed_kmh * _hours_available(a, brief.duration_h)
            for a in brief.assets
        ]
        bounds = torch.tensor([0.0, *effort]).cumsum(0) / sum(effort)
        self.waypoints, self.next_index = [], []
        for i, asset in enumerate(brief.assets):
            a0 = along_lo + float(bounds[i]) * (along_hi - along_lo)
            a1 = along_lo + float(bounds[i + 1]) * (along_hi - along_lo)
            spacing = asset.sweep.width_km
            tracks = max(1, math.ceil((cross_hi - cross_lo) / spacing))
            corners = []
            for t in range(tracks):
                c = cross_lo + (t + 0.5) * spacing
                ends = (a0, a1) if t % 2 == 0 else (a1, a0)
                corners += [(ends[0], c), (ends[1], c)]
            grid = torch.tensor(corners, dtype=plane.dtype)
            xy = grid[:, :1] * major + grid[:, 1:] * minor
            corners = offset(centre, xy[:, 0], xy[:, 1])
            if float(corners[-1] @ asset.start) > float(corners[0] @ asset.start):
                corners = corners.flip(0)  # start at the end nearer to the asset
            self.waypoints.append(corners)
            self.next_index.append(0)


class ExpandingSquare(_Pattern):
    """The assets share one expanding square around the datum, leg by leg (module doc).

    Args:
        spacing_km: track spacing; default: the widest sweep among the assets.
        max_points: length of the pattern laid out.
    """

    id = "expanding-square"

    def __init__(self, spacing_km: float | None = None, max_points: int = 400) -> None:
        self.spacing_km = spacing_km
        self.max_points = max_points

    def start(self, brief: MissionBrief, seed: int = 0) -> None:
        """Lay out the square around the datum (see :meth:`Planner.start`)."""
        super().start(brief, seed)
        spacing = self.spacing_km or max(a.sweep.width_km for a in brief.assets)
        grid = expanding_square_offsets(self.max_points, spacing).to(brief.datum)
        self.waypoints = [offset(brief.datum, grid[:, 0], grid[:, 1])]
        self.next_index = [0]

    def queue(self, asset: int) -> int:
        """Every asset follows the one square."""
        return 0


def expanding_square_offsets(num_points: int, spacing_km: float) -> Tensor:
    """East and north offsets (km) of the corners of an expanding square, centre first.

    Legs of 1, 1, 2, 2, 3, 3, ... track spacings, turning 90° clockwise after each leg.

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
        steps = leg // 2 + 1
        east, north = east + de * spacing_km * steps, north + dn * spacing_km * steps
        points.append((east, north))
        leg += 1
    return torch.tensor(points[:num_points], dtype=torch.float64)


def _hours_available(asset, duration_h: float) -> float:
    return sum(min(end, duration_h) - start for start, end in asset.sorties(duration_h))
