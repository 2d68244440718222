"""Random search: uniform waypoints at sea in the disc around the drifting datum."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo.geo import distance_km, offset
from manibo.search.planners.base import MissionBrief, Planner, PlannerState

_MAX_DRAWS = 100


class RandomSearch(Planner):
    """Fly to a uniform point (by area) of the disc around the drifted datum that holds 99% of
    the prior.

    Points over land are redrawn; a point beyond the endurance is approached as far as it allows.
    The reference for a planner that knows the prior's extent and the current but not where the
    probability lies within it.
    """

    id = "random"

    def start(self, brief: MissionBrief, seed: int = 0) -> None:
        """Measure the search area: the radius around the datum holding 99% of the prior."""
        super().start(brief, seed)
        d = distance_km(brief.prior_particles, brief.datum)
        self.radius_km = float(torch.quantile(d, 0.99))

    def propose(self, state: PlannerState) -> Tensor:
        """A uniform random point of the search area (at the current time), clipped."""
        datum = self.brief.drift.advect(self.brief.datum, state.time_h)
        for _ in range(_MAX_DRAWS):
            u = torch.rand(2, generator=self.generator, dtype=torch.float64)
            r = self.radius_km * math.sqrt(float(u[0]))
            angle = 2 * math.pi * float(u[1])
            point = offset(datum, r * math.sin(angle), r * math.cos(angle))
            if self.brief.mask is None or bool(self.brief.mask.is_ocean(point)):
                break
        return self.within_endurance(state, point)
