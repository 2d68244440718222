r"""Levels of a product space: the lowest distinct sums of factor eigenvalues, and their tuples.

A product eigenfunction is a product of factor eigenfunctions of levels :math:`(l_1, \dots, l_k)`,
with eigenvalue :math:`\sum_i \lambda^{(i)}_{l_i}`. A product *level* gathers every tuple whose
eigenvalue sum is the same (within :data:`EIGENVALUE_RTOL`), so a truncated kernel never cuts a
degenerate eigenspace. Sums are enumerated under a bound that doubles until enough levels are
complete; partial sums are merged after each factor, so counting levels costs about
(distinct sums) x (factor levels), not (tuples).
"""

from __future__ import annotations

import numpy as np

from manibo.exceptions import ConfigurationError
from manibo.spaces.base import CompactSpace

EIGENVALUE_RTOL = 1e-9
"""Relative tolerance under which two eigenvalue sums count as one eigenvalue."""

_COMPLETE_RTOL = 1e-6
"""Levels this far below the enumeration bound are complete (no member can lie above the bound)."""


def _tolerance(values: np.ndarray | float, rtol: float) -> np.ndarray:
    """Absolute tolerance ``rtol * max(1, |value|)``."""
    return rtol * np.maximum(1.0, np.abs(values))


def group_equal(values: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge values that agree within tolerance, summing their weights.

    Args:
        values: shape ``(n,)``; weights: shape ``(n, c)``.

    Returns:
        ``(distinct, summed)`` of shapes ``(g,)`` and ``(g, c)``, sorted ascending; each distinct
        value is the smallest of its group.
    """
    order = np.argsort(values, kind="stable")
    values, weights = values[order], weights[order]
    starts = np.flatnonzero(np.r_[True, np.diff(values) > _tolerance(values[1:], EIGENVALUE_RTOL)])
    return values[starts], np.add.reduceat(weights, starts, axis=0)


class FactorSpectrum:
    """One factor's levels, fetched lazily in doubling batches and cached.

    Args:
        space: a compact space.
    """

    def __init__(self, space: CompactSpace) -> None:
        self.space = space
        self.available = space.num_levels_available
        self.eigenvalues, self.multiplicities = (a.numpy() for a in space.levels(1))

    @property
    def floor(self) -> float:
        """Lowest eigenvalue."""
        return float(self.eigenvalues[0])

    @property
    def gap(self) -> float:
        """Distance from the lowest to the second-lowest eigenvalue (``inf`` for a single level)."""
        self.up_to(self.floor)  # fetches a second level when there is one
        if len(self.eigenvalues) < 2:
            return np.inf
        return float(self.eigenvalues[1] - self.eigenvalues[0])

    @property
    def top(self) -> float:
        """Largest eigenvalue (``inf`` for an infinite spectrum)."""
        if self.available is None:
            return np.inf
        return float(self.up_to(np.inf)[0][-1])

    def up_to(self, bound: float) -> tuple[np.ndarray, np.ndarray]:
        """Eigenvalues and multiplicities of every level with eigenvalue ``<= bound``."""
        while self.eigenvalues[-1] <= bound and len(self.eigenvalues) != self.available:
            count = 2 * len(self.eigenvalues)
            if self.available is not None:
                count = min(count, self.available)
            self.eigenvalues, self.multiplicities = (a.numpy() for a in self.space.levels(count))
        keep = int(np.searchsorted(self.eigenvalues, bound, side="right"))
        return self.eigenvalues[:keep], self.multiplicities[:keep]


def sums_up_to(factors: list[FactorSpectrum], bound: float) -> tuple[np.ndarray, np.ndarray]:
    """Distinct eigenvalue sums ``<= bound`` with their multiplicities and numbers of tuples.

    Returns:
        ``(values, counts)``: shape ``(g,)``, and ``(g, 2)`` holding the multiplicity (sum over
        tuples of the product of factor multiplicities) and the number of tuples of each value.
    """
    values, counts = np.zeros(1), np.ones((1, 2))
    rest = sum(f.floor for f in factors)
    for factor in factors:
        rest -= factor.floor
        limit = bound - rest
        eigenvalues, multiplicities = factor.up_to(limit - float(values.min()))
        sums = (values[:, None] + eigenvalues[None, :]).ravel()
        scale = np.stack([multiplicities, np.ones_like(multiplicities)], axis=-1)
        keep = sums <= limit
        values, counts = group_equal(
            sums[keep], (counts[:, None, :] * scale[None]).reshape(-1, 2)[keep]
        )
    return values, counts


def lowest_sums(factors: list[FactorSpectrum], num_levels: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``num_levels`` lowest distinct eigenvalue sums, with counts as in :func:`sums_up_to`.

    Raises:
        ConfigurationError: every factor is finite and fewer levels exist.
    """
    floor = sum(f.floor for f in factors)
    top = sum(f.top for f in factors)
    span = min(f.gap for f in factors)
    span = 1.0 if np.isinf(span) else span
    while True:
        bound = min(floor + span, top)
        values, counts = sums_up_to(factors, bound)
        if bound >= top:
            if len(values) < num_levels:
                raise ConfigurationError(
                    f"the product space has only {len(values)} distinct eigenvalues, "
                    f"{num_levels} levels were requested."
                )
            return values[:num_levels], counts[:num_levels]
        margin = _tolerance(bound, _COMPLETE_RTOL)
        complete = int(np.searchsorted(values, bound - margin, side="right"))
        if complete >= num_levels:
            return values[:num_levels], counts[:num_levels]
        span *= 2.0


def level_tuples(
    factors: list[FactorSpectrum], level_values: np.ndarray, num_levels: int
) -> np.ndarray:
    """Every tuple of factor levels whose eigenvalue sum is one of the first ``num_levels`` levels.

    Args:
        factors: the factor spectra.
        level_values: eigenvalues of the first ``num_levels + 1`` product levels (or all of them
            when fewer exist), ascending; the extra level keeps near-degenerate neighbours apart.
        num_levels: number of levels ``L``.

    Returns:
        Integer array ``(R, k + 1)``: factor levels ``l_1..l_k`` and the product level index,
        sorted by level index and then lexicographically by tuple.
    """
    last = level_values[num_levels - 1]
    bound = float(last + _tolerance(last, _COMPLETE_RTOL))
    tuples, sums = np.zeros((1, 0), dtype=np.int64), np.zeros(1)
    rest = sum(f.floor for f in factors)
    for factor in factors:
        rest -= factor.floor
        limit = bound - rest
        eigenvalues, _ = factor.up_to(limit - float(sums.min()))
        new_sums = sums[:, None] + eigenvalues[None, :]
        rows, cols = np.nonzero(new_sums <= limit)
        tuples = np.concatenate([tuples[rows], cols[:, None]], axis=1)
        sums = new_sums[rows, cols]
    # each sum belongs to the nearest level value
    above = np.searchsorted(level_values, sums)
    low = np.clip(above - 1, 0, len(level_values) - 1)
    high = np.clip(above, 0, len(level_values) - 1)
    nearest = np.where(
        np.abs(level_values[low] - sums) <= np.abs(level_values[high] - sums), low, high
    )
    table = np.concatenate([tuples, nearest[:, None]], axis=1)[nearest < num_levels]
    order = np.lexsort([*table[:, :-1].T[::-1], table[:, -1]])
    return table[order]
