r"""Matérn and heat kernels of a flat torus, summed over periodic images.

On the flat torus :math:`T^d` (angles of period :math:`2\pi`) the eigenfunctions of
:math:`-\Delta` are :math:`e^{i j\cdot\theta}`, :math:`j \in \mathbb{Z}^d`, with eigenvalues
:math:`|j|^2`. The Matérn spectral density :math:`(2\nu/\ell^2 + |j|^2)^{-\nu-d/2}` is, up to a
constant, the Fourier transform of the Euclidean Matérn kernel :math:`\kappa` of the same
:math:`\nu` and :math:`\ell` on :math:`\mathbb{R}^d`, and :math:`e^{-\ell^2|j|^2/2}` that of the
squared exponential. By Poisson summation the geometric kernel of the torus is the periodisation of
the Euclidean one,

.. math::
    k(\theta, \theta') = \frac{\sum_{m \in \mathbb{Z}^d} \kappa(\delta + 2\pi m)}
                              {\sum_{m \in \mathbb{Z}^d} \kappa(2\pi m)},\qquad
    \delta = \theta - \theta' \text{ wrapped into } [-\pi, \pi)^d,

normalised so that :math:`k(\theta, \theta) = 1`, as the level series is. The image sum converges
fastest where the level series converges slowest (short lengthscales), so
:class:`~manibo.kernels.spectral.GeometricMaternKernel` uses it on tori when its level cap would
neglect spectral mass. :math:`\kappa` has a closed form for :math:`\nu \in \{1/2, 3/2, 5/2,
\infty\}`; other smoothnesses keep the level series.
"""

from __future__ import annotations

import math
from functools import lru_cache, partial

import torch
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from manibo.spaces.base import CompactSpace, pairwise_in_chunks
from manibo.spaces.circle import Circle
from manibo.spaces.product import CompactProductSpace

IMAGE_NUS = (0.5, 1.5, 2.5, math.inf)
"""Smoothnesses whose Euclidean kernel has a closed form, so the image sum is available."""

MAX_IMAGES = 4096
"""Most images summed per pair; a lengthscale that needs more keeps the level series."""

_MAX_ENUMERATED = 1 << 18
"""Most lattice points enumerated when choosing the images."""

_BLOCK_ELEMENTS = 1 << 18
"""Most (batch, row, column, image) elements evaluated together (2 MiB per float64 temporary:
n = m = 1000 points with 43 images took 0.62 s at this size, 1.72 s at eight times it)."""


def torus_dimension(space: CompactSpace) -> int | None:
    """Number of angles if ``space`` is a flat torus (a circle, or a product of circles and
    tori), else None."""
    if isinstance(space, Circle):
        return 1
    if isinstance(space, CompactProductSpace):
        dims = [torus_dimension(f) for f in space.factors]
        return None if None in dims else sum(dims)
    return None


def euclidean_profile(r: Tensor, nu: float) -> Tensor:
    r"""The Euclidean Matérn kernel as a function of :math:`r = |v| / \ell`, with value 1 at 0.

    Args:
        r: scaled distances, any shape; nu: one of :data:`IMAGE_NUS`.
    """
    if math.isinf(nu):
        return torch.exp(-0.5 * r * r)
    if nu == 0.5:
        return torch.exp(-r)
    if nu == 1.5:
        s = math.sqrt(3.0) * r
        return (1 + s) * torch.exp(-s)
    if nu == 2.5:
        s = math.sqrt(5.0) * r
        return (1 + s + s * s / 3) * torch.exp(-s)
    raise ValueError(f"no closed form for nu={nu}; the image sum takes {IMAGE_NUS}")


def image_offsets(max_lengthscale: float, nu: float, dim: int, tol: float) -> Tensor | None:
    r"""The shifts :math:`2\pi m` whose images are summed, shape ``(K, dim)``, nearest first.

    An image :math:`m` lies at least :math:`\max(0, 2\pi|m| - \pi\sqrt{d})` from any wrapped
    :math:`\delta \in [-\pi, \pi)^d`; the images are taken in the order of that bound until the
    ones left out could add at most ``tol`` (relative to :math:`\kappa(0) = 1`) at lengthscales up
    to ``max_lengthscale`` (rounded up to a grid of ratio :math:`2^{1/8}`, so the choice is
    cached). None when more than :data:`MAX_IMAGES` are needed.
    """
    grid = 2.0 ** (math.ceil(8 * math.log2(max_lengthscale)) / 8)
    return _offsets(grid, nu, dim, tol)


@lru_cache(maxsize=256)
def _offsets(lengthscale: float, nu: float, dim: int, tol: float) -> Tensor | None:
    def profile(distance: float) -> float:
        return float(euclidean_profile(torch.tensor(distance / lengthscale), nu))

    radius = 1
    while True:  # a cube of images outside which everything is negligible
        nearest_outside = 2 * math.pi * (radius + 1) - math.pi * math.sqrt(dim)
        count = (2 * radius + 3) ** dim
        if nearest_outside > 0 and count * profile(nearest_outside) < 1e-3 * tol:
            break
        radius += 1
        if (2 * radius + 1) ** dim > _MAX_ENUMERATED:
            return None
    axis = torch.arange(-radius, radius + 1, dtype=torch.float64)
    cube = torch.cartesian_prod(*[axis] * dim).reshape(-1, dim)
    bound = (2 * math.pi * cube.norm(dim=-1) - math.pi * math.sqrt(dim)).clamp_min(0.0)
    order = torch.argsort(bound, stable=True)
    weights = euclidean_profile(bound[order] / lengthscale, nu)
    left_out = weights.flip(0).cumsum(0).flip(0)  # what is left out if the images stop before i
    keep = int((left_out >= tol).sum())
    if keep > MAX_IMAGES:
        return None
    return 2 * math.pi * cube[order[: max(keep, 1)]]


def torus_image_kernel(
    x1: Tensor, x2: Tensor, lengthscale: Tensor, offsets: Tensor, nu: float, diag: bool = False
) -> Tensor:
    r"""The normalised geometric Matérn (or heat, ``nu = inf``) kernel of the flat torus.

    Args:
        x1: angles ``(*b1, n, d)``; x2: angles ``(*b2, m, d)``.
        lengthscale: ``(*batch, 1, 1)``.
        offsets: the shifts of :func:`image_offsets`, ``(K, d)``.
        nu: one of :data:`IMAGE_NUS`.
        diag: only the diagonal (``n == m``).

    Returns:
        ``(*batch, n, m)``, or ``(*batch, n)`` with ``diag``.
    """
    offsets = offsets.to(x1)
    if diag:
        scale = lengthscale[..., 0]  # (*batch, 1) against (*batch, n)
        norm = _image_sum(x1.new_zeros(1, x1.shape[-1]), scale, nu, offsets)
        return _image_sum(_wrap(x1 - x2), scale, nu, offsets) / norm
    norm = _image_sum(x1.new_zeros(1, 1, x1.shape[-1]), lengthscale, nu, offsets)

    def block(a: Tensor, b: Tensor) -> Tensor:
        delta = _wrap(a.unsqueeze(-2) - b.unsqueeze(-3))  # (*batch, rows, m, d)
        return _image_sum(delta, lengthscale, nu, offsets)

    images = offsets.shape[0]
    batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2], lengthscale.shape[:-2]).numel()
    blocks = batch * x1.shape[-2] * x2.shape[-2] * images > _BLOCK_ELEMENTS
    graph = torch.is_grad_enabled() and any(t.requires_grad for t in (x1, x2, lengthscale, offsets))
    if blocks and graph:  # keep only each block's inputs; backward recomputes the block
        pair = partial(checkpoint, block, use_reentrant=False)
    else:
        pair = block
    target = max(1, _BLOCK_ELEMENTS // images)  # pairwise_in_chunks divides by m and the batch
    return pairwise_in_chunks(pair, x1, x2, 1, target) / norm


def _wrap(delta: Tensor) -> Tensor:
    """Angle differences wrapped into ``[-π, π)``."""
    return torch.remainder(delta + math.pi, 2 * math.pi) - math.pi


def _image_sum(delta: Tensor, lengthscale: Tensor, nu: float, offsets: Tensor) -> Tensor:
    r""":math:`\sum_m \kappa(\delta + 2\pi m)` over ``offsets`` ``(K, d)``.

    ``delta`` is ``(..., d)``; ``lengthscale`` broadcasts against ``delta[..., 0]``.
    """
    # |delta + s|^2 = |delta|^2 + 2 delta.s + |s|^2: one matrix product instead of (..., K, d)
    # temporaries; no cancellation, as every shifted image lies at least pi away
    scale = lengthscale.square().unsqueeze(-1)
    r2 = delta.square().sum(-1, keepdim=True) + 2 * delta @ offsets.T + offsets.square().sum(-1)
    r2 = r2 / scale
    if math.isinf(nu):
        return torch.exp(-0.5 * r2).sum(-1)
    # sqrt's slope at 0 is NaN; the profiles are flat there (nu >= 3/2) or have the kink of
    # nu = 1/2, whose one-sided slope no caller needs at a coincident pair
    r = torch.sqrt(r2.clamp_min(torch.finfo(r2.dtype).tiny))
    return euclidean_profile(r, nu).sum(-1)
