"""The planner interface: what a planner knows at the start and at each decision, what it says."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import torch
from torch import Tensor

from manibo.search.assets import Asset
from manibo.search.belief import ParticleBelief
from manibo.search.drift import Drift
from manibo.search.ocean import OceanMask
from manibo.search.sensor import Outcome, Sensor

INTERCEPT_ITERATIONS = 4


@dataclass(frozen=True)
class MissionBrief:
    """What every planner is told when the mission starts; never the object's position.

    Attributes:
        lkp: last known position, unit vector ``(3,)``.
        prior_particles: samples of the prior at mission time 0, ``(n, 3)``.
        drift: the current model (the same one that moves the object).
        sensor: the detection model.
        asset: the search asset.
        start: the asset's position at mission time 0, ``(3,)``.
        mask: the ocean mask (None: no land).
    """

    lkp: Tensor
    prior_particles: Tensor
    drift: Drift
    sensor: Sensor
    asset: Asset
    start: Tensor
    mask: OceanMask | None = None


@dataclass(frozen=True)
class SearchRecord:
    """A completed search as planners see it: where, when its dwell began (h), what it reported."""

    point: Tensor
    time_h: float
    outcome: Outcome


@dataclass
class PlannerState:
    """The situation at a decision.

    Attributes:
        time_h: mission time now, in hours.
        position: the asset's position now, ``(3,)``.
        belief: the exact posterior over the object's position now (drifted to ``time_h``).
        history: the searches done so far, oldest first.
    """

    time_h: float
    position: Tensor
    belief: ParticleBelief
    history: list[SearchRecord] = field(default_factory=list)


class Planner(ABC):
    """Chooses where the asset searches next.

    A planner is told the mission once (:meth:`start`) and then asked for one search point per
    decision (:meth:`propose`); the simulator moves the asset there along a great circle, searches,
    and records the outcome in the next state's history.
    """

    name: str = "planner"

    def start(self, brief: MissionBrief, seed: int = 0) -> None:
        """Receive the mission brief; ``seed`` seeds any randomness of the planner."""
        self.brief = brief
        self.generator = torch.Generator().manual_seed(int(seed))

    @abstractmethod
    def propose(self, state: PlannerState) -> Tensor:
        """The next search point, a unit vector of shape ``(3,)``."""


def intercept(position: Tensor, target_now: Tensor, brief: MissionBrief) -> tuple[Tensor, Tensor]:
    """Where to meet water parcels that are at ``target_now`` now, and the transit hours there.

    The parcels drift while the asset transits; a few fixed-point iterations of
    ``point = advect(target_now, transit(position, point))`` converge because the current is far
    slower than the asset.

    Args:
        position: the asset, ``(3,)``.
        target_now: parcels' positions now, ``(m, 3)``.
        brief: the mission brief (drift and asset).

    Returns:
        ``(points (m, 3), hours (m,))``.
    """
    hours = brief.asset.transit_hours(position, target_now)
    for _ in range(INTERCEPT_ITERATIONS):
        points = brief.drift.advect(target_now, hours)
        hours = brief.asset.transit_hours(position, points)
    return points, hours
