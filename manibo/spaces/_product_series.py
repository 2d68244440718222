r"""Product-space kernel sums, evaluated in bounded memory and with a recomputing backward pass.

A product level's reproducing kernel is :math:`\sum_{\text{tuples}} \prod_i G^{(i)}_{l_i}`. For two
factors, the sum over tuples :math:`(l_1, l_2)` with weights :math:`W_{l_1 l_2}` is evaluated for a
group of outer levels :math:`l_1` at a time: the outer factor's level kernels (its own series with
one-hot weights) times the inner factor's series with weight rows :math:`W_{l_1 \cdot}`, both as
weight-batched factor series. A group holds at most :data:`BATCH_ELEMENTS` output elements, so small
problems take one batched pass and large ones stream. More factors recurse over the first factor's
levels. When there are several groups, autograd sees one :class:`_RecomputedSum` whose backward
recomputes one group at a time, so no graph ever holds a tensor per level.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.autograd.function import once_differentiable
from torch.nn.functional import pad

from manibo.harmonics.series import _sum_to_shape
from manibo.spaces.base import CompactSpace

BATCH_ELEMENTS = 1 << 21
"""Most output elements (outer levels x batch x rows x columns) evaluated together in one group."""

Factor = tuple[CompactSpace, slice]
_Term = Callable[[Any, Tensor, Tensor, Tensor], Tensor]


def product_series(
    factors: list[Factor],
    table: np.ndarray,
    weights: Tensor,
    x1: Tensor,
    x2: Tensor,
    diag: bool,
) -> Tensor:
    r""":math:`\sum_{\text{rows}} w_{\text{level}} \prod_i G^{(i)}_{l_i}` for the rows of ``table``.

    Args:
        factors: ``(space, coordinate slice)`` per factor, outermost first.
        table: integer rows ``(l_1, .., l_k, level)``, sorted lexicographically by ``l_1..l_k``.
        weights: per-level weights, shape ``(*wbatch, L)``.
        x1: points, shape ``(*b1, n, size)``; x2: points, shape ``(*b2, m, size)``.
        diag: evaluate only the diagonal (``n == m``).

    Returns:
        Shape ``(*batch, n, m)``, or ``(*batch, n)`` when ``diag``.
    """
    if len(factors) == 1:
        return _single_factor(factors[0], table, weights, x1, x2, diag)
    plan = _pair_plan if len(factors) == 2 else _outer_plan
    specs, term = plan(factors, table, weights, x1, x2, diag)
    if not (torch.is_grad_enabled() and any(t.requires_grad for t in (weights, x1, x2))):
        with torch.no_grad():
            return _total(term(spec, weights, x1, x2) for spec in specs)
    if len(specs) == 1:
        return term(specs[0], weights, x1, x2)
    return _RecomputedSum.apply(
        lambda w, a, b: (term(spec, w, a, b) for spec in specs), weights, x1, x2
    )


def _single_factor(
    factor: Factor, table: np.ndarray, weights: Tensor, x1: Tensor, x2: Tensor, diag: bool
) -> Tensor:
    """The factor's own series with weights gathered from the product levels in ``table``."""
    space, part = factor
    levels = torch.from_numpy(table[:, 0]).to(weights.device)
    source = weights.index_select(-1, torch.from_numpy(table[:, 1]).to(weights.device))
    inner = weights.new_zeros(*weights.shape[:-1], int(table[:, 0].max()) + 1)
    inner = inner.index_copy(-1, levels, source)
    return space.spectral_sum(inner, x1[..., part], x2[..., part], diag)


def _outer_plan(factors, table, weights, x1, x2, diag) -> tuple[list, _Term]:
    """Three or more factors: one term per level of the first factor, recursing on the rest."""
    (space, part), rest = factors[0], factors[1:]
    outer, starts = np.unique(table[:, 0], return_index=True)
    specs = list(zip(outer.tolist(), starts, [*starts[1:], len(table)], strict=True))

    def term(spec, w: Tensor, a: Tensor, b: Tensor) -> Tensor:
        level, start, stop = spec
        one_hot = torch.zeros(level + 1, dtype=w.dtype, device=w.device)
        one_hot[-1] = 1.0
        kernel = space.spectral_sum(one_hot, a[..., part], b[..., part], diag)
        return kernel * product_series(rest, table[start:stop, 1:], w, a, b, diag)

    return specs, term


def _pair_plan(factors, table, weights, x1, x2, diag) -> tuple[list, _Term]:
    """Two factors: groups of outer levels, each evaluated as two weight-batched factor series."""
    (outer_space, outer_part), (inner_space, inner_part) = factors
    outer, row_of = np.unique(table[:, 0], return_inverse=True)
    # level index of each (outer, inner) pair; L points at an appended zero weight
    index = np.full((len(outer), int(table[:, 1].max()) + 1), weights.shape[-1], dtype=np.int64)
    index[row_of.ravel(), table[:, 1]] = table[:, 2]
    index = torch.from_numpy(index).to(weights.device)
    batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    wbatch = weights.shape[:-1]
    pad_dims = max(len(batch), len(wbatch))
    per_level = math.prod(torch.broadcast_shapes(batch, wbatch)) * x1.shape[-2]
    per_level *= 1 if diag else x2.shape[-2]
    size = max(1, BATCH_ELEMENTS // max(1, per_level))  # no points: one (empty) group
    specs = [slice(s, s + size) for s in range(0, len(outer), size)]

    def term(spec: slice, w: Tensor, a: Tensor, b: Tensor) -> Tensor:
        levels = torch.from_numpy(outer[spec]).to(w.device)
        count = len(levels)
        one_hot = torch.zeros(count, int(levels.max()) + 1, dtype=w.dtype, device=w.device)
        one_hot[torch.arange(count, device=w.device), levels] = 1.0
        one_hot = one_hot.reshape(count, *[1] * pad_dims, one_hot.shape[-1])
        kernels = outer_space.spectral_sum(one_hot, a[..., outer_part], b[..., outer_part], diag)
        rows = pad(w, (0, 1))[..., index[spec]].movedim(-2, 0)  # (count, *wbatch, J)
        rows = rows.reshape(count, *[1] * (pad_dims - len(wbatch)), *wbatch, rows.shape[-1])
        series = inner_space.spectral_sum(rows, a[..., inner_part], b[..., inner_part], diag)
        return (kernels * series).sum(0)

    return specs, term


def _total(terms: Iterator[Tensor]) -> Tensor:
    """Sum of fresh tensors, accumulated in place where shapes allow (only used without a graph)."""
    out = next(terms)
    for term in terms:
        out = out + term if out.shape != term.shape else out.add_(term)
    return out


class _RecomputedSum(torch.autograd.Function):
    """A sum of terms computed without a graph; backward recomputes and differentiates each term."""

    @staticmethod
    def forward(ctx, terms: Callable, weights: Tensor, x1: Tensor, x2: Tensor) -> Tensor:
        ctx.terms = terms
        ctx.save_for_backward(weights, x1, x2)
        return _total(terms(weights, x1, x2))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out: Tensor):
        needs = ctx.needs_input_grad[1:]
        leaves = [
            t.detach().requires_grad_(n) for t, n in zip(ctx.saved_tensors, needs, strict=True)
        ]
        wanted = [leaf for leaf, n in zip(leaves, needs, strict=True) if n]
        totals: list[Tensor | None] = [None] * len(wanted)
        with torch.enable_grad():
            for term in ctx.terms(*leaves):
                grads = torch.autograd.grad(
                    term, wanted, _sum_to_shape(grad_out, term.shape), allow_unused=True
                )
                totals = [
                    g if t is None else t if g is None else t + g
                    for t, g in zip(totals, grads, strict=True)
                ]
        pending = iter(totals)
        return None, *(next(pending) if n else None for n in needs)
