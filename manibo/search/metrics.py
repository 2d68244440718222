r"""Mission metrics: time to detection, cumulative POS against effort and time, travel, regret.

* **Time to detection** (TTD): mission hours, transit included, until the object is confirmed; a
  mission that ends without finding it is censored at the asset's endurance (its TTD counts as
  :math:`+\infty` in medians and survival curves).
* **Cumulative POS**: :math:`\mathrm{CumPOS}_K = 1 - \prod_{k \le K}(1 - \mathrm{POS}_k)`, against
  effort (hours of searching) or mission time; over scenarios, the fraction of missions not yet
  successful at time :math:`t` is the empirical survival curve :math:`P(T > t)`.
* **Found given the object**: :math:`1 - \prod_{k}(1 - c\,b(d_k))` over the searches completed by
  :math:`t`, with :math:`d_k` the distance from search :math:`k` to the object: the probability
  that the searches find *this* object, the detection dice averaged out but not where the object
  lies. For a plan that does not depend on the outcomes, it is the expectation of the realised
  indicator "found by :math:`t`".
* **Travel share**: transit hours over all mission hours spent.
* **Travel-cost-adjusted regret** (Dutordoir 2021, §5.4.3: moving costs must enter the regret):
  :math:`R = \sum_k (g^*_k - g_k) + \lambda \sum_k T_k`, where :math:`g_k` is the POS of search
  :math:`k` under the exact posterior, :math:`g^*_k` the best POS available at that decision,
  :math:`T_k` the transit hours and :math:`\lambda` the best POS per hour at the start of the
  mission (what an hour was worth): an hour of travel costs the POS it could have bought.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from manibo.exceptions import InputDataError
from manibo.search.mission import MissionRecord
from manibo.search.sensor import Outcome, Sensor


def cumulative_pos(pos: Sequence[float] | Tensor) -> Tensor:
    r""":math:`1 - \prod_{j \le k}(1 - \mathrm{POS}_j)` for every prefix; ``(K,)`` in and out."""
    pos = torch.as_tensor(pos, dtype=torch.float64)
    if pos.dim() != 1 or ((pos < 0) | (pos > 1)).any():
        raise InputDataError(f"`pos` must be a 1-D sequence of probabilities, got {pos.tolist()}.")
    return 1 - torch.cumprod(1 - pos, dim=0)


def time_to_detection(record: MissionRecord) -> float:
    """Hours to detection, or ``math.inf`` when the mission ended without finding the object."""
    return record.time_to_detection_h if record.found else math.inf


def pos_against_time(record: MissionRecord, hours: Tensor) -> Tensor:
    """Cumulative POS of the searches completed by each time in ``hours`` (shape ``(t,)``)."""
    return _step_curve(
        [s.end_h for s in record.steps], [s.cumulative_pos for s in record.steps], hours
    )


def pos_against_effort(record: MissionRecord, hours: Tensor) -> Tensor:
    """Cumulative POS after each amount of searching (hours on task, transit excluded), ``(t,)``."""
    effort = [record.search_hours * (k + 1) for k in range(len(record.steps))]
    return _step_curve(effort, [s.cumulative_pos for s in record.steps], hours)


def found_given_object(record: MissionRecord, sensor: Sensor, hours: Tensor) -> Tensor:
    r"""Probability that the record's searches completed by each of ``hours`` found its object.

    :math:`1 - \prod_{k:\,\mathrm{end}_k \le t}(1 - P(\text{found} \mid d_k))` with :math:`d_k` the
    step's ``truth_distance_km``; see the module docstring.

    Args:
        record: one mission (a record played to its endurance gives the whole plan's curve).
        sensor: the detection model of the mission.
        hours: mission times, shape ``(t,)``.

    Returns:
        Shape ``(t,)``, float64.
    """
    distances = torch.tensor([s.truth_distance_km for s in record.steps], dtype=torch.float64)
    found = sensor.likelihood(Outcome.FOUND, distances)
    curve = 1 - torch.cumprod(1 - found, dim=0)
    return _step_curve([s.end_h for s in record.steps], curve.tolist(), hours)


def _step_curve(at: list[float], values: list[float], grid: Tensor) -> Tensor:
    grid = torch.as_tensor(grid, dtype=torch.float64)
    if not at:
        return torch.zeros_like(grid)
    at_t = torch.tensor(at, dtype=torch.float64)
    index = torch.searchsorted(at_t, grid, right=True)
    padded = torch.cat(
        [torch.zeros(1, dtype=torch.float64), torch.tensor(values, dtype=torch.float64)]
    )
    return padded[index]


def survival(times_to_detection: Sequence[float], hours: Tensor) -> Tensor:
    """Fraction of missions not yet successful at each of ``hours`` ``(t,)``; TTDs may be inf."""
    ttd = torch.tensor([float(t) for t in times_to_detection], dtype=torch.float64)
    if ttd.numel() == 0:
        raise InputDataError("`times_to_detection` is empty: run at least one mission.")
    grid = torch.as_tensor(hours, dtype=torch.float64)
    return (ttd.unsqueeze(0) > grid.unsqueeze(-1)).double().mean(-1)


def travel_share(record: MissionRecord) -> float:
    """Transit hours over all hours spent (transit, search, investigation); 0 if no search."""
    if not record.steps:
        return 0.0
    transit = sum(s.arrive_h - s.depart_h for s in record.steps)
    total = record.steps[-1].end_h - record.steps[0].depart_h
    return transit / total if total > 0 else 0.0


def regret(record: MissionRecord, hour_value: float | None = None) -> dict[str, float]:
    """Myopic regret, travel cost in POS units, and their sum (the travel-cost-adjusted regret).

    Args:
        record: one mission.
        hour_value: :math:`\\lambda`, POS per hour of travel; default: the best POS per hour at the
            mission's first decision (identical for every planner of a scenario).

    Returns:
        ``{"myopic": ..., "travel": ..., "adjusted": ...}``.
    """
    if not record.steps:
        return {"myopic": 0.0, "travel": 0.0, "adjusted": 0.0}
    lam = record.steps[0].best_rate if hour_value is None else hour_value
    myopic = sum(max(s.best_value - s.value, 0.0) for s in record.steps)
    travel = lam * sum(s.arrive_h - s.depart_h for s in record.steps)
    return {"myopic": myopic, "travel": travel, "adjusted": myopic + travel}


def median(values: Sequence[float]) -> float:
    """Median that accepts ``inf`` (censored missions); ``inf`` when half or more are censored."""
    return quantile(values, 0.5)


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile that accepts ``inf`` entries (``q`` in [0, 1])."""
    ordered = sorted(float(v) for v in values)
    if not ordered or not 0 <= q <= 1:
        raise InputDataError(f"need values and q in [0, 1], got {len(ordered)} values and q={q}.")
    position = q * (len(ordered) - 1)
    low, high = math.floor(position), math.ceil(position)
    if low == high or ordered[low] == ordered[high]:
        return ordered[low]
    if math.isinf(ordered[high]):
        return math.inf
    return ordered[low] + (position - low) * (ordered[high] - ordered[low])
