"""Random search: uniform points at sea in the prior's search area around the drifting LKP."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo.search.geography import distance_km, offset
from manibo.search.planners.base import MissionBrief, Planner, PlannerState, intercept

_MAX_DRAWS = 100


class RandomSearch(Planner):
    """Search a uniform point (by area) of the disc around the drifted LKP holding 99% of the prior.

    Points over land are redrawn. The reference point for a planner that uses the prior's extent and
    the drift, but not the outcomes of its searches.
    """

    name = "random"

    def start(self, brief: MissionBrief, seed: int = 0) -> None:
        """Measure the search area: the radius around the LKP holding 99% of the prior particles."""
        super().start(brief, seed)
        d = distance_km(brief.prior_particles, brief.lkp)
        self.radius_km = float(torch.quantile(d, 0.99))

    def propose(self, state: PlannerState) -> Tensor:
        """A uniform random point of the search area, met where its water drifts to."""
        datum = self.brief.drift.advect(self.brief.lkp, state.time_h)
        for _ in range(_MAX_DRAWS):
            u = torch.rand(2, generator=self.generator, dtype=torch.float64)
            r = self.radius_km * math.sqrt(float(u[0]))
            angle = 2 * math.pi * float(u[1])
            point = offset(datum, r * math.sin(angle), r * math.cos(angle))
            if self.brief.mask is None or bool(self.brief.mask.is_ocean(point)):
                break
        target, _ = intercept(state.position, point.unsqueeze(0), self.brief)
        return target[0]
