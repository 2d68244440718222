r"""Legs: an asset's straight (great-circle) tracks in space and time, and their detection hazard.

An asset flies a leg from ``start`` (left at ``depart_h``) to ``end`` (reached at ``arrive_h``)
along the great circle, sweeping with its :class:`~manibo.search.sweep.SweepLaw`. The object
drifts meanwhile. In the frame of the water (the comoving frame of the current, see
:mod:`manibo.search.drift`) the object is still but for its diffusion, and the leg runs from where
the water under ``start`` was at mission time 0 to where the water under ``end`` was: a current
that rotates the globe moves the two ends by the same rotation up to the leg's duration, so the
leg stays a great-circle arc in that frame to within the current's change along the leg (metres
for a 0.5 m/s current over a few hundred km). The hazard of a leg for objects at comoving points is
that of this comoving arc (:func:`~manibo.search.sweep.leg_hazard`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.geo import move_fraction
from manibo.search.drift import Drift
from manibo.search.sweep import SweepLaw, leg_hazard

#: Hazards are capped here before they are summed (exp(-100) is 4e-44: certain detection).
MAX_HAZARD = 100.0


@dataclass(frozen=True, eq=False)
class Leg:
    """One straight leg of one asset.

    Attributes:
        asset: index of the asset in the scenario.
        start: where the leg starts, unit vector ``(3,)`` (geographic).
        end: where it ends, ``(3,)``.
        depart_h: mission time at ``start``; ``arrive_h`` at ``end`` (``>= depart_h``).
        sweep: the asset's lateral range curve.
    """

    asset: int
    start: Tensor
    end: Tensor
    depart_h: float
    arrive_h: float
    sweep: SweepLaw

    def __post_init__(self) -> None:
        if not self.arrive_h >= self.depart_h:
            raise ConfigurationError(
                f"a leg must arrive after it departs, got depart {self.depart_h!r} h and arrive "
                f"{self.arrive_h!r} h."
            )

    def comoving(self, drift: Drift) -> tuple[Tensor, Tensor]:
        """The leg's ends in the water's frame at mission time 0: ``(start (3,), end (3,))``."""
        return (
            drift.to_comoving(self.start, self.depart_h),
            drift.to_comoving(self.end, self.arrive_h),
        )

    def hazard(self, drift: Drift, points: Tensor) -> Tensor:
        """Hazard for objects at comoving points ``(n, 3)``; returns ``(n,)`` (capped)."""
        start, end = self.comoving(drift)
        hazard = leg_hazard(self.sweep, points, start.view(1, 3), end.view(1, 3))[0]
        return hazard.clamp(max=MAX_HAZARD)

    def split(self, pieces: int) -> list[Leg]:
        """The leg cut into ``pieces`` consecutive legs of equal duration (and length)."""
        if pieces < 1:
            raise ConfigurationError(f"`pieces` must be at least 1, got {pieces}.")
        fractions = torch.linspace(0, 1, pieces + 1, dtype=self.start.dtype)
        points = self.point_at(fractions)
        times = [self.depart_h + float(f) * (self.arrive_h - self.depart_h) for f in fractions]
        return [
            Leg(self.asset, points[i], points[i + 1], times[i], times[i + 1], self.sweep)
            for i in range(pieces)
        ]

    def point_at(self, fraction: Tensor) -> Tensor:
        """Where the asset is a ``fraction`` ``(*batch)`` of the way along; ``(*batch, 3)``."""
        fraction = torch.as_tensor(fraction, dtype=self.start.dtype, device=self.start.device)
        if torch.equal(self.start, self.end):
            return self.start.expand(*fraction.shape, 3).clone()
        return move_fraction(self.start, self.end, fraction)


def total_hazard(legs: Sequence[Leg], drift: Drift, points: Tensor) -> Tensor:
    """Summed hazard of ``legs`` for objects at comoving points ``(n, 3)``; returns ``(n,)``.

    The legs are grouped by sweep law and evaluated in one batched call per law.
    """
    total = points.new_zeros(points.shape[0])
    for sweep in {leg.sweep for leg in legs}:
        group = [leg for leg in legs if leg.sweep == sweep]
        ends = [leg.comoving(drift) for leg in group]
        start = torch.stack([a for a, _ in ends]).to(points)
        end = torch.stack([b for _, b in ends]).to(points)
        total = total + leg_hazard(sweep, points, start, end).clamp(max=MAX_HAZARD).sum(0)
    return total
