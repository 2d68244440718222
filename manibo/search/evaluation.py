r"""Playing a plan against hidden objects: expected fraction found and realised detections.

A planner is never told where the object is, and until the first detection every search it makes
depends only on "not found yet". So a mission played to the end without telling the planner of any
detection (:func:`~manibo.search.mission.simulate` does exactly that) gives, for *every* possible
object, the mission that would have happened: identical legs up to the object's detection, which
would have ended it. :class:`HiddenObjects` draws objects from a scenario's prior, each with its
own diffusion path in the water's frame (the current carries them all alike) and its own detection
threshold :math:`E \sim \mathrm{Exp}(1)`; the object is detected when the hazard of the legs it has
been exposed to first exceeds :math:`E`, which happens on each leg with the probability
:math:`1 - e^{-H}` of the sensor model, independently of the earlier legs (the exponential is
memoryless). Every planner of a scenario meets the same objects and thresholds (common random
numbers).

:func:`evaluate` returns, on a time grid, the **expected fraction found** (the mean over the
objects of :math:`1 - e^{-H(t)}`: the plan's probability of success by :math:`t` over the prior,
free of the luck of the detection dice) and the **realised time to detection** of each object.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.geo import EARTH_RADIUS_KM, GLOBE
from manibo.search.drift import Drift
from manibo.search.legs import MAX_HAZARD, Leg
from manibo.search.sweep import leg_hazard

#: Spacing of the knots of the objects' diffusion paths, in hours.
KNOT_HOURS = 1.0
#: A leg is cut into pieces of at most one sweep width (between these counts) to time a detection.
MIN_PIECES, MAX_PIECES = 4, 64


class HiddenObjects:
    """Objects drawn from a prior, with their diffusion paths and detection thresholds.

    Args:
        starts: the objects' positions at mission time 0 (which is also their comoving position),
            unit vectors ``(m, 3)``.
        drift: the current and diffusion that move them.
        horizon_h: the paths are drawn up to this mission time.
        seed: seeds the paths and the thresholds.
        knot_hours: spacing of the paths' knots; between knots the comoving path is interpolated.
    """

    def __init__(
        self,
        starts: Tensor,
        drift: Drift,
        horizon_h: float,
        seed: int,
        knot_hours: float = KNOT_HOURS,
    ) -> None:
        if not (math.isfinite(horizon_h) and horizon_h >= 0 and knot_hours > 0):
            raise ConfigurationError(
                f"need a finite horizon_h >= 0 and knot_hours > 0, got {horizon_h!r} and "
                f"{knot_hours!r}."
            )
        generator = torch.Generator().manual_seed(int(seed))
        self.drift = drift
        self.knot_hours = float(knot_hours)
        knots = [starts]
        for _ in range(math.ceil(horizon_h / knot_hours) + 1):
            knots.append(drift.diffuse(knots[-1], self.knot_hours, generator))
        self.knots = torch.stack(knots, dim=1)  # (m, K, 3)
        u = torch.rand(starts.shape[0], generator=generator, dtype=torch.float64)
        self.thresholds = (-torch.log1p(-u)).to(starts)  # Exp(1)

    def __len__(self) -> int:
        return self.knots.shape[0]

    def comoving(self, hours: float) -> Tensor:
        """The objects' comoving positions at mission time ``hours``, ``(m, 3)``."""
        position = min(max(hours, 0.0) / self.knot_hours, self.knots.shape[1] - 1.0)
        index = min(int(position), self.knots.shape[1] - 2)
        fraction = position - index
        mixed = (1 - fraction) * self.knots[:, index] + fraction * self.knots[:, index + 1]
        return mixed / mixed.norm(dim=-1, keepdim=True)

    def position(self, hours: float) -> Tensor:
        """The objects' geographic positions at mission time ``hours``, ``(m, 3)``."""
        return self.drift.advect(self.comoving(hours), hours)


@dataclass
class Evaluation:
    """A plan played against hidden objects.

    Attributes:
        hours: the time grid ``(G,)``.
        expected_found: mean probability of having found the object by each time, ``(G,)``.
        time_to_detection_h: realised time to detection of each object (``inf``: never), ``(m,)``.
        detection_leg: index (into the legs given) of the detecting leg, -1 if none, ``(m,)``.
        detection_point: where the asset was when it detected it (geographic; NaN if never),
            ``(m, 3)``.
    """

    hours: Tensor
    expected_found: Tensor
    time_to_detection_h: Tensor
    detection_leg: Tensor
    detection_point: Tensor

    def expected_found_by(self, hours: float) -> float:
        """The expected fraction found at ``hours``, linear between the grid's times (the first
        or last value outside the grid)."""
        grid, values = self.hours.tolist(), self.expected_found.tolist()
        if hours <= grid[0]:
            return values[0]
        for i in range(1, len(grid)):
            if hours <= grid[i]:
                share = (hours - grid[i - 1]) / (grid[i] - grid[i - 1])
                return values[i - 1] + share * (values[i] - values[i - 1])
        return values[-1]


def evaluate(legs: Sequence[Leg], objects: HiddenObjects, hours: Tensor) -> Evaluation:
    """Expected fraction found on ``hours`` and the realised detections of ``objects``.

    Each leg is cut into pieces about a sweep width long (:data:`MIN_PIECES` to
    :data:`MAX_PIECES`) whose hazards are evaluated for the objects at their comoving positions at
    the end of the leg (as the belief does); a piece's hazard accrues at its end, and linearly
    within it to time a detection.

    Args:
        legs: every leg of the mission (all assets).
        objects: the hidden objects.
        hours: the time grid ``(G,)``.

    Returns:
        The evaluation (see :class:`Evaluation`).
    """
    dtype, device = objects.knots.dtype, objects.knots.device
    hours = torch.as_tensor(hours, dtype=dtype).to(device)
    m = len(objects)
    never = Evaluation(
        hours,
        torch.zeros_like(hours),
        torch.full((m,), math.inf, dtype=dtype, device=device),
        torch.full((m,), -1, dtype=torch.long, device=device),
        torch.full((m, 3), math.nan, dtype=dtype, device=device),
    )
    if not legs:
        return never
    hazards, starts, ends, owners = [], [], [], []
    for k, leg in enumerate(legs):
        km = float(GLOBE.distance(leg.start, leg.end)) * EARTH_RADIUS_KM
        pieces = leg.split(min(max(math.ceil(km / leg.sweep.width_km), MIN_PIECES), MAX_PIECES))
        water = [piece.comoving(objects.drift) for piece in pieces]
        points = objects.comoving(leg.arrive_h)
        hazard = leg_hazard(
            leg.sweep,
            points,
            torch.stack([a for a, _ in water]).to(points),
            torch.stack([b for _, b in water]).to(points),
        )
        hazards.append(hazard.clamp(max=MAX_HAZARD))  # (pieces, m)
        starts += [piece.depart_h for piece in pieces]
        ends += [piece.arrive_h for piece in pieces]
        owners += [(k, piece) for piece in pieces]
    hazard = torch.cat(hazards).T  # (m, P)
    ends_t = torch.tensor(ends, dtype=dtype, device=device)
    order = torch.argsort(ends_t, stable=True)
    hazard, ends_t = hazard[:, order], ends_t[order]
    starts_t = torch.tensor(starts, dtype=dtype, device=device)[order]
    cumulative = hazard.cumsum(dim=1)  # (m, P), non-decreasing in floating point too
    accrued = torch.searchsorted(ends_t, hours.to(ends_t), right=True)  # pieces ended by each hour
    padded = torch.cat([torch.zeros_like(cumulative[:, :1]), cumulative], dim=1)
    by_hour = padded.T[accrued].contiguous()  # (G, m): each hour's mean in the same order
    expected = (-torch.expm1(-by_hour)).mean(1)
    crossed = cumulative >= objects.thresholds.unsqueeze(-1)
    detected = crossed.any(dim=1)
    first = crossed.to(torch.int8).argmax(dim=1)  # 0 where never: masked below
    before = torch.where(
        first > 0,
        cumulative.gather(1, (first - 1).clamp_min(0).unsqueeze(-1))[:, 0],
        torch.zeros(m, dtype=dtype, device=device),
    )
    own = hazard.gather(1, first.unsqueeze(-1))[:, 0]
    share = ((objects.thresholds - before) / own.clamp_min(1e-300)).clamp(0, 1)
    times = starts_t[first] + share * (ends_t[first] - starts_t[first])
    ttd = torch.where(detected, times, never.time_to_detection_h)
    points = never.detection_point.clone()
    leg_index = never.detection_leg.clone()
    for j in torch.nonzero(detected).flatten().tolist():
        k, piece = owners[int(order[first[j]])]
        leg_index[j] = k
        points[j] = piece.point_at(share[j])
    return Evaluation(hours, expected, ttd, leg_index, points)


def scenario_objects(scenario, count: int) -> HiddenObjects:
    """``count`` hidden objects of ``scenario`` (a :class:`~manibo.search.mission.Scenario`):
    drawn from its prior with its seed, the same for every planner, and independent of the
    particles the planners are told."""
    generator = torch.Generator().manual_seed(scenario.seed * 7919 + 11)
    starts = scenario.prior.sample(count, generator)
    return HiddenObjects(starts, scenario.drift, scenario.duration_h, scenario.seed * 7919 + 12)
