r"""Summaries over scenarios: expected fraction found, hours to half, realised times, paired gaps.

* **Expected fraction found** at :math:`t`: the mean over scenarios of each plan's probability of
  having found its object by :math:`t` (:mod:`manibo.search.evaluation`), which no luck of
  objects or dice enters.
* **Hours to half found**: when that mean first reaches one half (linear between grid points).
* **Realised times to detection**: over every (scenario, hidden object) pair, the time the object
  was detected (``inf`` when the mission ended first); their median counts the missions that
  never found the object as the longest.
* **Paired difference**: planners are compared scenario by scenario (the same objects, currents
  and assets), with the standard error of the mean difference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from manibo.exceptions import InputDataError


def hours_to_fraction(hours: Tensor, curve: Tensor, level: float = 0.5) -> float | None:
    """First time ``curve`` ``(G,)`` on ``hours`` ``(G,)`` reaches ``level``; None if never.

    Linear interpolation between the grid points.
    """
    hours, curve = torch.as_tensor(hours), torch.as_tensor(curve)
    if hours.shape != curve.shape or hours.dim() != 1:
        raise InputDataError(
            f"`hours` and `curve` must be 1-D of the same length, got {tuple(hours.shape)} and "
            f"{tuple(curve.shape)}."
        )
    above = torch.nonzero(curve >= level).flatten()
    if above.numel() == 0:
        return None
    i = int(above[0])
    if i == 0:
        return float(hours[0])
    h0, h1, c0, c1 = (float(v) for v in (hours[i - 1], hours[i], curve[i - 1], curve[i]))
    return h0 + (level - c0) / (c1 - c0) * (h1 - h0)


def paired_difference(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """Mean and standard error of ``a - b`` over scenarios.

    Args:
        a: values of one planner, ``(S, *shape)`` (scenario first).
        b: the other planner's on the same scenarios, same shape.

    Returns:
        ``(mean (*shape), standard_error (*shape))``.
    """
    if a.shape != b.shape or a.shape[0] < 2:
        raise InputDataError(
            f"need two arrays of one shape with at least 2 scenarios, got {tuple(a.shape)} and "
            f"{tuple(b.shape)}."
        )
    difference = (a - b).double()
    return difference.mean(0), difference.std(0) / math.sqrt(difference.shape[0])


def fraction_found_by(times_to_detection: Tensor, hours: Tensor) -> Tensor:
    """Fraction of realised missions whose detection came by each of ``hours`` ``(G,)``."""
    ttd = torch.as_tensor(times_to_detection, dtype=torch.float64).flatten()
    if ttd.numel() == 0:
        raise InputDataError("`times_to_detection` is empty: evaluate at least one mission.")
    grid = torch.as_tensor(hours, dtype=torch.float64)
    return (ttd.unsqueeze(0) <= grid.unsqueeze(-1)).double().mean(-1)


def median(values: Sequence[float]) -> float:
    """Median that accepts ``inf`` (missions that never found the object)."""
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
