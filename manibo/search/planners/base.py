"""The planner interface: what a planner knows at the start and at each decision, what it says."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import torch
from torch import Tensor

from manibo.search.assets import Asset
from manibo.search.belief import ParticleBelief
from manibo.search.drift import Drift
from manibo.search.legs import Leg
from manibo.search.ocean import OceanMask

INTERCEPT_ITERATIONS = 4


@dataclass(frozen=True, eq=False)
class MissionBrief:
    """What every planner is told when the mission starts; never the object's position.

    Attributes:
        datum: the search's reference point (last known position, middle of an arc), ``(3,)``.
        prior_particles: samples of the prior at mission time 0, ``(n, 3)``.
        drift: the current model (the same one that moves the object).
        assets: the search assets.
        duration_h: the mission's length.
        mask: the ocean mask (None: no land).
    """

    datum: Tensor
    prior_particles: Tensor
    drift: Drift
    assets: tuple[Asset, ...]
    duration_h: float
    mask: OceanMask | None = None


@dataclass
class PlannerState:
    """The situation when an asset needs its next leg.

    Attributes:
        time_h: mission time now.
        asset: index of the asset that needs a leg.
        position: where it is, ``(3,)``.
        deadline_h: when its sortie ends (it must be home by then) or its time on scene ends.
        belief: the exact posterior given that the legs flown so far have not found the object.
        pending: the other assets' legs in the air now (not yet in the belief).
        flown: the legs flown so far by all assets, in the order they ended.
    """

    time_h: float
    asset: int
    position: Tensor
    deadline_h: float
    belief: ParticleBelief
    pending: list[Leg] = field(default_factory=list)
    flown: list[Leg] = field(default_factory=list)


class Planner(ABC):
    """Chooses where each asset flies next.

    A planner is told the mission once (:meth:`start`) and is then asked, whenever an asset ends a
    leg, for the end of that asset's next leg (:meth:`propose`); the asset flies there along the
    great circle and searches on the way. A proposal must leave the asset enough time to get home
    (:meth:`within_endurance` clips one that does not).
    """

    id: str = "planner"

    def start(self, brief: MissionBrief, seed: int = 0) -> None:
        """Receive the mission brief; ``seed`` seeds any randomness of the planner."""
        self.brief = brief
        self.generator = torch.Generator().manual_seed(int(seed))

    @abstractmethod
    def propose(self, state: PlannerState) -> Tensor:
        """The end of the asset's next leg, a unit vector of shape ``(3,)``."""

    def within_endurance(self, state: PlannerState, point: Tensor) -> Tensor:
        """``point`` ``(3,)``, or the farthest point towards it that the asset can fly to and
        still get home in time (see :meth:`~manibo.search.assets.Asset.within_endurance`)."""
        asset = self.brief.assets[state.asset]
        return asset.within_endurance(state.position, point, state.time_h, state.deadline_h)


def intercept(
    position: Tensor, comoving: Tensor, time_h: float, asset: Asset, drift: Drift
) -> tuple[Tensor, Tensor]:
    """Where to meet water parcels, and the hours to get there.

    The parcels are given by their comoving positions (where their water was at mission time 0);
    a few fixed-point iterations of ``point = advect(comoving, now + hours(position, point))``
    converge because the current is far slower than the asset.

    Args:
        position: the asset, ``(3,)``.
        comoving: the parcels, ``(m, 3)``.
        time_h: mission time now.
        asset: the asset (its speed).
        drift: the current.

    Returns:
        ``(points (m, 3), hours (m,))``.
    """
    points = drift.advect(comoving, time_h)
    hours = asset.hours(position, points)
    for _ in range(INTERCEPT_ITERATIONS):
        points = drift.advect(comoving, time_h + hours)
        hours = asset.hours(position, points)
    return points, hours
