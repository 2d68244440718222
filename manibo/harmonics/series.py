r"""Streaming sums :math:`\sum_l c_l\, b_l(t)` of level functions, with an autograd rule that never
stores one tensor per level.

A kernel on a compact space is a weighted sum of level reproducing kernels :math:`G_l = s_l b_l(t)`,
where :math:`t` is one scalar per pair of points (:math:`x \cdot y` on spheres, :math:`\cos\theta`
on SO(3)) and :math:`b_l` follows a recurrence. Evaluating level by level keeps memory at a few
tensors of the output's shape: an ``N x N x L`` tensor is never built, in the forward or the
backward pass.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Protocol

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from manibo.harmonics.gegenbauer import harmonic_dimension, iter_normalized_gegenbauer


class LevelRecurrence(Protocol):
    """Level functions b_l(t) with their scales s_l, such that G_l(t) = s_l b_l(t)."""

    def scales(self, num_levels: int) -> list[float]:
        """The scales s_0 .. s_{L-1}."""

    def iter_values(self, t: Tensor) -> Iterator[Tensor]:
        """Yield b_0(t), b_1(t), ... as reusable buffers (valid until the next step)."""

    def iter_derivatives(self, t: Tensor) -> Iterator[Tensor]:
        """Yield b_0'(t), b_1'(t), ... as reusable buffers."""


class GegenbauerLevels(LevelRecurrence):
    r"""Levels of :math:`S^{d-1}`.

    :math:`b_l = P_l^{(\alpha)}`, :math:`s_l = N(d, l)`, :math:`t = x\cdot y`.

    Args:
        d: ambient dimension (``d = 2`` is the circle, with :math:`t = \cos(\theta - \theta')`).
    """

    def __init__(self, d: int) -> None:
        self.d = d
        self.alpha = (d - 2) / 2

    def scales(self, num_levels: int) -> list[float]:
        return [float(harmonic_dimension(self.d, n)) for n in range(num_levels)]

    def iter_values(self, t: Tensor) -> Iterator[Tensor]:
        return iter_normalized_gegenbauer(self.alpha, t, inplace=True)

    def iter_derivatives(self, t: Tensor) -> Iterator[Tensor]:
        yield torch.zeros_like(t)
        n = 1
        buffer = torch.empty_like(t)
        for shifted in iter_normalized_gegenbauer(self.alpha + 1, t, inplace=True):
            torch.mul(shifted, n * (n + 2 * self.alpha) / (2 * self.alpha + 1), out=buffer)
            yield buffer
            n += 1


class EvenLevels(LevelRecurrence):
    r"""The even members of another recurrence: :math:`b'_k = b_{2k}`, :math:`s'_k = s_{2k}`.

    The levels of the real projective space :math:`\mathbb{RP}^{d-1}` are the even levels of
    :math:`S^{d-1}` (functions invariant under :math:`x \mapsto -x`).

    Args:
        levels: the underlying recurrence.
    """

    def __init__(self, levels: LevelRecurrence) -> None:
        self.levels = levels

    def scales(self, num_levels: int) -> list[float]:
        return self.levels.scales(2 * num_levels)[::2]

    def iter_values(self, t: Tensor) -> Iterator[Tensor]:
        return itertools.islice(self.levels.iter_values(t), 0, None, 2)

    def iter_derivatives(self, t: Tensor) -> Iterator[Tensor]:
        return itertools.islice(self.levels.iter_derivatives(t), 0, None, 2)


def _sum_to_shape(x: Tensor, shape: torch.Size) -> Tensor:
    """Sum ``x`` over the dimensions that broadcasting added or expanded, returning ``shape``."""
    lead = x.dim() - len(shape)
    if lead:
        x = x.sum(dim=tuple(range(lead)))
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and x.shape[i] != 1)
    return x.sum(dim=dims, keepdim=True) if dims else x


class _LevelSeries(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t: Tensor, coeffs: Tensor, levels: LevelRecurrence) -> Tensor:
        num_levels = coeffs.shape[-1]
        out_shape = torch.broadcast_shapes(t.shape, coeffs.shape[:-1])
        out = torch.zeros(out_shape, dtype=t.dtype, device=t.device)
        for level, b in zip(range(num_levels), levels.iter_values(t), strict=False):
            out.addcmul_(coeffs[..., level], b)
        ctx.levels = levels
        ctx.save_for_backward(t, coeffs)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out: Tensor):
        t, coeffs = ctx.saved_tensors
        levels, num_levels = ctx.levels, coeffs.shape[-1]
        grad_t = grad_coeffs = None
        if ctx.needs_input_grad[0]:
            slope = torch.zeros_like(grad_out)
            for level, db in zip(range(num_levels), levels.iter_derivatives(t), strict=False):
                slope.addcmul_(coeffs[..., level], db)
            grad_t = _sum_to_shape(slope.mul_(grad_out), t.shape)
        if ctx.needs_input_grad[1]:
            columns = []
            for _, b in zip(range(num_levels), levels.iter_values(t), strict=False):
                columns.append(_sum_to_shape(grad_out * b, coeffs.shape[:-1]))
            grad_coeffs = torch.stack(columns, dim=-1)
        return grad_t, grad_coeffs, None


def level_series(t: Tensor, coeffs: Tensor, levels: LevelRecurrence) -> Tensor:
    r""":math:`\sum_{l<L} c_l\, b_l(t)`, differentiable in ``t`` and ``coeffs``.

    Uses O(|output|) memory.

    Args:
        t: pair arguments, shape ``(*shape)``.
        coeffs: coefficients, shape ``(*cshape, L)`` where ``cshape`` broadcasts against ``shape``
            (for a kernel, :math:`c_l = w_l s_l`).
        levels: the level recurrence.

    Returns:
        Tensor of shape ``broadcast(shape, cshape)``.
    """
    if torch.is_grad_enabled() and (t.requires_grad or coeffs.requires_grad):
        return _LevelSeries.apply(t, coeffs, levels)
    with torch.no_grad():
        return _LevelSeries.forward(_NoContext(), t, coeffs, levels)


class _NoContext:
    """Stands in for autograd's context when the series runs without a graph."""

    def save_for_backward(self, *tensors: Tensor) -> None:
        pass
