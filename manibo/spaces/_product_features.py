r"""Product-space kernel sums as matrix products of explicit eigenfunctions.

The eigenfunctions of a product are products of factor eigenfunctions,
:math:`\phi_f(x) = \prod_i \phi^{(i)}_{c_i(f)}(x_i)`, and
:math:`\sum_l w_l G_l(x, x') = \sum_f w_{l(f)} \phi_f(x) \phi_f(x')`, so with
:math:`\Phi_1 = [\phi_f(x_1)]` the kernel matrix is :math:`\Phi_1 \,\mathrm{diag}(w)\, \Phi_2^\top`:
the factors' eigenfunctions are evaluated once per point (``O(N M)``), and the sum over the ``M``
product eigenfunctions is one matrix product (``O(N^2 M)`` multiply-adds at the speed of a matrix
product). This is the fast path whenever every factor has explicit eigenfunctions and ``M`` is not
much larger than the number of tuples of factor levels (tori, circles and spheres of low dimension
at moderate levels); otherwise the level-by-level series of :mod:`manibo.spaces._product_series`
is used. Large ``M`` is split into column blocks whose backward pass is recomputed one block at a
time.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from manibo.spaces._product_series import _RecomputedSum, _total
from manibo.spaces.base import CompactSpace

BLOCK_ELEMENTS = 1 << 22
"""Most feature entries (points x columns) of one block of product eigenfunctions."""


@dataclass(frozen=True)
class FeaturePlan:
    """Which factor eigenfunctions multiply into each product eigenfunction.

    Attributes:
        counts: levels used per factor.
        offsets: first column of each factor's block in the concatenated factor features.
        index: ``(M, k)`` columns of the concatenated factor features, one per factor.
        level: ``(M,)`` the product level of each product eigenfunction.
    """

    counts: tuple[int, ...]
    offsets: tuple[int, ...]
    index: Tensor
    level: Tensor

    @property
    def size(self) -> int:
        """The number ``M`` of product eigenfunctions."""
        return int(self.level.shape[0])

    def prefix(self, num_levels: int) -> FeaturePlan:
        """The plan of the first ``num_levels`` levels (eigenfunctions are ordered by level)."""
        size = int(torch.searchsorted(self.level, torch.tensor(num_levels)))
        return FeaturePlan(self.counts, self.offsets, self.index[:size], self.level[:size])


def feature_plan(factors: list[CompactSpace], table: np.ndarray) -> FeaturePlan:
    """The product eigenfunctions of the tuples in ``table``.

    Args:
        factors: the factor spaces.
        table: integer rows ``(l_1, .., l_k, level)`` sorted by level, then by tuple.

    Returns:
        The plan; columns are ordered by level, then tuple, then factor columns with the first
        factor slowest.
    """
    counts, offsets, ranges = [], [], []
    offset = 0
    for i, factor in enumerate(factors):
        count = int(table[:, i].max()) + 1
        _, multiplicities = factor.levels(count)
        starts = offset + np.concatenate([[0], np.cumsum(multiplicities.numpy().astype(np.int64))])
        ranges.append([range(starts[l], starts[l + 1]) for l in range(count)])
        counts.append(count)
        offsets.append(offset)
        offset = int(starts[-1])
    index, level = [], []
    for row in table:
        combos = list(itertools.product(*(r[l] for r, l in zip(ranges, row[:-1], strict=True))))
        index.extend(combos)
        level.extend([row[-1]] * len(combos))
    return FeaturePlan(
        tuple(counts),
        tuple(offsets),
        torch.tensor(index, dtype=torch.long).reshape(-1, len(factors)),
        torch.tensor(level, dtype=torch.long),
    )


def factor_features(factors, slices, plan: FeaturePlan, x: Tensor) -> Tensor:
    """The factors' eigenfunctions at their parts of ``x``, stacked: ``(*batch, sum m_i, n)``.

    Eigenfunctions run along the second-to-last dimension, so that gathering them copies
    contiguous rows.
    """
    parts = [
        f.eigenfunctions(x[..., s], c).transpose(-1, -2)
        for f, s, c in zip(factors, slices, plan.counts, strict=True)
    ]
    return torch.cat(parts, dim=-2)


def product_features(plan: FeaturePlan, features: Tensor, columns: slice = slice(None)) -> Tensor:
    """Product eigenfunctions ``columns`` from stacked factor features: ``(*batch, c, n)``."""
    index = plan.index[columns].to(features.device)
    out = None
    for i in range(index.shape[1]):
        picked = features.index_select(-2, index[:, i])
        out = picked if out is None else out * picked
    return out


def feature_sum(
    factors, slices, plan: FeaturePlan, weights: Tensor, x1: Tensor, x2: Tensor, diag: bool
) -> Tensor:
    r""":math:`\Phi_1\,\mathrm{diag}(w)\,\Phi_2^\top` (or its diagonal).

    Args:
        factors, slices: the factor spaces and their coordinate slices.
        plan: the product eigenfunctions.
        weights: per-level weights ``(*wbatch, L)``.
        x1: ``(*b1, n, size)``; x2: ``(*b2, m, size)``.
        diag: only the diagonal (``n == m``).

    Returns:
        ``(*batch, n, m)``, or ``(*batch, n)`` when ``diag``.
    """
    a = factor_features(factors, slices, plan, x1)
    b = a if (x2 is x1 and not diag) else factor_features(factors, slices, plan, x2)
    points = x1.shape[:-1].numel() + (0 if b is a else x2.shape[:-1].numel())
    width = max(64, BLOCK_ELEMENTS // max(1, points))
    blocks = [slice(s, s + width) for s in range(0, plan.size, width)]

    def run(columns: slice, w: Tensor, fa: Tensor, fb: Tensor) -> Tensor:
        scale = w.index_select(-1, plan.level[columns].to(w.device)).unsqueeze(-1)
        left = product_features(plan, fa, columns)  # (*b1, c, n)
        right = left if fb is fa else product_features(plan, fb, columns)
        if diag:
            return (left * scale * right).sum(-2)
        return (left * scale).transpose(-1, -2) @ right

    if len(blocks) == 1:
        return run(blocks[0], weights, a, b)
    if not (torch.is_grad_enabled() and any(t.requires_grad for t in (weights, a, b))):
        with torch.no_grad():
            return _total(run(c, weights, a, b) for c in blocks)
    return _RecomputedSum.apply(
        lambda w, fa, fb: (run(c, w, fa, fb) for c in blocks), weights, a, b
    )
