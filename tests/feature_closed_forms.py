"""Closed forms that the feature-map tests compare against, computed independently of the maps."""

from __future__ import annotations

import math

import torch


def addition_theorem_features(space, weights, points, x):
    r""":math:`\sqrt{w_l / M}\, G_l(x, u_m)`, level-major, with :math:`G_l(x, u) = \sum_k
    \phi_{lk}(x)\phi_{lk}(u)` from the space's explicit eigenfunctions (the maps evaluate
    :math:`G_l` by the space's addition theorem instead).

    Args:
        space: a compact space with eigenfunctions.
        weights: per-level weights, shape ``(L,)``.
        points: the points :math:`u_m`, shape ``(M, *point_shape)``.
        x: shape ``(n, *point_shape)``.

    Returns:
        Shape ``(n, L * M)``.
    """
    levels = weights.shape[-1]
    multiplicities = space.levels(levels)[1].to(torch.long).tolist()
    ex, eu = space.eigenfunctions(x, levels), space.eigenfunctions(points, levels)
    blocks, start = [], 0
    for weight, m in zip(weights.tolist(), multiplicities, strict=True):
        g = ex[:, start : start + m] @ eu[:, start : start + m].T
        blocks.append(math.sqrt(weight / points.shape[0]) * g)
        start += m
    return torch.cat(blocks, dim=-1)
