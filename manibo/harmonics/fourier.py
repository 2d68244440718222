r"""Fourier harmonics of the circle.

The harmonics :math:`1, \sqrt2\cos l\theta, \sqrt2\sin l\theta` are orthonormal under
:math:`d\theta/2\pi`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def circle_harmonics(cos: Tensor, sin: Tensor, num_levels: int) -> Tensor:
    r"""Orthonormal harmonics of levels ``0..num_levels-1``.

    The angles are given by their cosine and sine. Uses the rotation recurrence
    :math:`e^{il\theta} = e^{i(l-1)\theta} e^{i\theta}` (no ``cos(l*theta)`` calls, and the result
    is polynomial in ``(cos, sin)``, hence smooth in ambient coordinates).

    Args:
        cos: :math:`\cos\theta`, shape ``(*shape)``.
        sin: :math:`\sin\theta`, shape ``(*shape)``.
        num_levels: number of levels ``L``.

    Returns:
        Shape ``(*shape, 2L - 1)``: ``[1, √2 cos θ, √2 sin θ, √2 cos 2θ, √2 sin 2θ, ...]``.
    """
    columns = [torch.ones_like(cos)]
    c, s = torch.ones_like(cos), torch.zeros_like(sin)
    root2 = math.sqrt(2.0)
    for _ in range(1, num_levels):
        c, s = c * cos - s * sin, s * cos + c * sin
        columns.extend([root2 * c, root2 * s])
    return torch.stack(columns, dim=-1)


def angle_harmonics(theta: Tensor, num_levels: int) -> Tensor:
    r"""The harmonics of :func:`circle_harmonics` from the angle itself, in a few vector operations.

    :math:`\cos l\theta` and :math:`\sin l\theta` for all ``l`` at once (no recurrence over
    levels), which matters when the harmonics are evaluated at few points for many levels.

    Args:
        theta: angles, shape ``(*shape)``.
        num_levels: number of levels ``L``.

    Returns:
        Shape ``(*shape, 2L - 1)``, ordered as :func:`circle_harmonics`.
    """
    orders = torch.arange(1, num_levels, dtype=theta.dtype, device=theta.device)
    phase = theta.unsqueeze(-1) * orders
    pairs = torch.stack([torch.cos(phase), torch.sin(phase)], dim=-1) * math.sqrt(2.0)
    return torch.cat([torch.ones_like(theta).unsqueeze(-1), pairs.flatten(-2)], dim=-1)


COSINE_TABLE_ELEMENTS = 1 << 22
"""Largest table ``(*shape, L)`` of cosines a caller of :func:`cosine_series` lets it build, for a
whole kernel matrix: 32 MiB in float64, about six times that at the peak of a backward pass
(the table, its product with the coefficients, their gradients); beyond it a caller sums level
by level."""


def cosine_series(gap: Tensor, coeffs: Tensor) -> Tensor:
    r""":math:`\sum_{l<L} c_l \cos(l\,\delta)`, vectorised over the levels.

    The level-by-level recurrence costs a dozen small tensor operations per level, which on small
    kernel matrices (an acquisition's few points against the data) takes longer than the numbers
    themselves: 129 levels of three circle factors took 0.1 s per posterior; a table of cosines
    is a few operations. It keeps ``(*shape, L)`` values for the backward pass: check the size
    against :data:`COSINE_TABLE_ELEMENTS` first.

    Args:
        gap: angle differences :math:`\delta`, shape ``(*shape)``.
        coeffs: coefficients, shape ``(*cshape, L)``, ``cshape`` broadcasting against ``shape``.

    Returns:
        Shape ``broadcast(shape, cshape)``; differentiable in ``gap`` and ``coeffs``.
    """
    levels = torch.arange(coeffs.shape[-1], dtype=gap.dtype, device=gap.device)
    return (torch.cos(gap.unsqueeze(-1) * levels) * coeffs).sum(-1)
