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
from functools import lru_cache

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

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
"""Most (difference, image) elements evaluated together (2 MiB per float64 temporary: n = m =
1000 points with 43 images took 0.62 s at this size, 1.72 s at eight times it)."""

_PAIRS_PER_BLOCK = 1 << 20
"""Most pairs of points whose differences are formed (and their repeats found) together."""


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

    An image :math:`m` lies at least :math:`\pi (\sum_k \max(0, 2|m_k| - 1)^2)^{1/2}` (its distance
    to the cube) from any wrapped :math:`\delta \in [-\pi, \pi)^d`; the images are taken in the
    order of that bound, in whole shells of equal bound, until the ones left out could add at most
    ``tol`` (relative to :math:`\kappa(0) = 1`) at lengthscales up to ``max_lengthscale`` (rounded
    up to a grid of ratio :math:`2^{1/8}`, so the choice is cached). Whole shells make the set
    closed under :math:`m \to -m`, sign flips and permutations of the coordinates, so the kernel
    is symmetric and invariant under the reflections and permutations of the angles. None when
    more than :data:`MAX_IMAGES` are needed.
    """
    return _offsets(_grid(max_lengthscale), nu, dim, tol)


def served_image_offsets(
    lengthscales: Tensor, nu: float, dim: int, tol: float
) -> tuple[Tensor, Tensor] | None:
    """The shifts of :func:`image_offsets` for the longest of ``lengthscales`` ``(N,)`` that at
    most :data:`MAX_IMAGES` images serve, and which lengthscales they serve ``(N,)``: those up to
    it on the grid (more images are needed as the lengthscale grows). None where none is served.
    """
    grids = torch.tensor([_grid(v) for v in lengthscales.tolist()], dtype=torch.float64)
    for grid in grids.unique().flip(0).tolist():
        offsets = _offsets(grid, nu, dim, tol)
        if offsets is not None:
            return offsets, (grids <= grid).to(lengthscales.device)
    return None


def _grid(lengthscale: float) -> float:
    """``lengthscale`` rounded up to the grid of ratio :math:`2^{1/8}` of cached image sets."""
    return 2.0 ** (math.ceil(8 * math.log2(lengthscale)) / 8)


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
    shell = (2 * cube.abs() - 1).clamp_min(0.0).square().sum(-1)  # exact integers
    order = torch.argsort(shell, stable=True)
    cube, shell = cube[order], shell[order]
    weights = euclidean_profile(math.pi * shell.sqrt() / lengthscale, nu)
    left_out = weights.flip(0).cumsum(0).flip(0)  # what is left out if the images stop before i
    keep = max(int((left_out >= tol).sum()), 1)
    keep = int((shell <= shell[keep - 1]).sum())  # the whole of the last shell
    if keep > MAX_IMAGES:
        return None
    return 2 * math.pi * cube[:keep]


def torus_image_kernel(
    x1: Tensor, x2: Tensor, lengthscale: Tensor, offsets: Tensor, nu: float, diag: bool = False
) -> Tensor:
    r"""The normalised geometric Matérn (or heat, ``nu = inf``) kernel of the flat torus.

    Each distinct pair difference is summed over the images once: the joint posterior of a
    Monte Carlo acquisition holds the same baseline pairs in every batch element (with 21
    observations and 256 raw q-batches of one point, 43 distinct differences per batch element
    against 946 pairs).

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
        norm = image_sum(x1.new_zeros(1, x1.shape[-1]), scale, nu, offsets)
        return image_sum(_wrap(x1 - x2), scale, nu, offsets) / norm
    norm = image_sum(x1.new_zeros(1, 1, x1.shape[-1]), lengthscale, nu, offsets)

    def block(a: Tensor, b: Tensor) -> Tensor:
        delta = _wrap(a.unsqueeze(-2) - b.unsqueeze(-3))  # (*batch, rows, m, d)
        return image_sum(delta, lengthscale, nu, offsets)

    return pairwise_in_chunks(block, x1, x2, 1, _PAIRS_PER_BLOCK) / norm


def _wrap(delta: Tensor) -> Tensor:
    """Angle differences wrapped into ``[-π, π)``."""
    return torch.remainder(delta + math.pi, 2 * math.pi) - math.pi


def image_sum(delta: Tensor, lengthscale: Tensor, nu: float, offsets: Tensor) -> Tensor:
    r""":math:`\sum_m \kappa(|\delta + 2\pi m| / \ell)` over ``offsets`` ``(K, d)``.

    Computed once per distinct pair of difference and lengthscale; differentiable in both (first
    derivatives, in closed form).

    Args:
        delta: wrapped differences ``(..., d)``.
        lengthscale: broadcasts against ``delta[..., 0]``.
        nu: one of :data:`IMAGE_NUS`.
        offsets: ``(K, d)``.

    Returns:
        ``delta.shape[:-1]`` broadcast with the lengthscale's shape.
    """
    shape = torch.broadcast_shapes(delta.shape[:-1], lengthscale.shape)
    flat_delta = delta.expand(*shape, delta.shape[-1]).reshape(-1, delta.shape[-1])
    flat_scale = lengthscale.expand(shape).reshape(-1)
    if torch.is_grad_enabled() and (flat_delta.requires_grad or flat_scale.requires_grad):
        return _ImageSum.apply(flat_delta, flat_scale, offsets, nu).reshape(shape)
    values, inverse, _, _ = _distinct_sums(flat_delta, flat_scale, offsets, nu, slopes=False)
    return values[inverse].reshape(shape)


class _ImageSum(torch.autograd.Function):
    """:func:`image_sum` on flat inputs: differences ``(N, d)``, lengthscales ``(N,)``."""

    @staticmethod
    def forward(ctx, delta: Tensor, scale: Tensor, offsets: Tensor, nu: float) -> Tensor:
        values, inverse, d_delta, d_scale = _distinct_sums(delta, scale, offsets, nu, slopes=True)
        ctx.save_for_backward(inverse, d_delta, d_scale)
        return values[inverse]

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        inverse, d_delta, d_scale = ctx.saved_tensors
        grad_delta = grad.unsqueeze(-1) * d_delta[inverse] if ctx.needs_input_grad[0] else None
        grad_scale = grad * d_scale[inverse] if ctx.needs_input_grad[1] else None
        return grad_delta, grad_scale, None, None


def _distinct_sums(
    delta: Tensor, scale: Tensor, offsets: Tensor, nu: float, slopes: bool
) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
    """:func:`_sums` of the distinct rows of differences ``(N, d)`` and lengthscales ``(N,)``,
    with each row's index among them ``(N,)``: ``(values, inverse, d_delta, d_scale)``."""
    distinct, inverse = _distinct_rows(torch.cat([delta, scale.unsqueeze(-1)], dim=-1))
    values, d_delta, d_scale = _sums(distinct[:, :-1], distinct[:, -1], offsets, nu, slopes)
    return values, inverse, d_delta, d_scale


def _distinct_rows(keys: Tensor) -> tuple[Tensor, Tensor]:
    """The distinct rows of ``keys`` ``(N, k)`` and the index of each row among them ``(N,)``.

    Rows are told apart by their bits, hashed to one integer each (every column mixed by
    SplitMix64's finaliser and chained): a one-dimensional sort is 20 times faster than
    ``torch.unique(dim=0)`` on 10^6 rows. Rows that share a hash but differ are found, and then
    sorted row by row (:func:`_sorted_distinct_rows`).
    """
    integers = {torch.float64: torch.int64, torch.float32: torch.int32}.get(keys.dtype)
    if integers is None:
        return _sorted_distinct_rows(keys)
    bits = keys.view(integers).to(torch.int64)
    hashes = torch.zeros(len(keys), dtype=torch.int64, device=keys.device)
    for column in bits.unbind(-1):
        hashes = _mix(hashes ^ column)
    hashes, inverse = torch.unique(hashes, return_inverse=True)
    positions = torch.arange(len(keys), device=keys.device)
    first = torch.full((len(hashes),), len(keys), dtype=torch.int64, device=keys.device)
    first = first.scatter_reduce(0, inverse, positions, reduce="amin")
    if not torch.equal(bits, bits[first][inverse]):
        return _sorted_distinct_rows(keys)
    return keys[first], inverse


def _sorted_distinct_rows(keys: Tensor) -> tuple[Tensor, Tensor]:
    """:func:`_distinct_rows` by sorting whole rows (slow; where hashes collide)."""
    return torch.unique(keys, dim=0, return_inverse=True)


def _mix(z: Tensor) -> Tensor:
    """SplitMix64's finaliser on int64 ``z`` (shifts logical, products wrapping)."""
    z = (z ^ _shift_right(z, 30)) * (0xBF58476D1CE4E5B9 - 2**64)
    z = (z ^ _shift_right(z, 27)) * (0x94D049BB133111EB - 2**64)
    return z ^ _shift_right(z, 31)


def _shift_right(z: Tensor, bits: int) -> Tensor:
    """Logical right shift of int64 ``z`` (torch's ``>>`` keeps the sign)."""
    return (z >> bits) & ((1 << (64 - bits)) - 1)


def _sums(
    delta: Tensor, scale: Tensor, offsets: Tensor, nu: float, slopes: bool
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    r"""Image sums of distinct differences ``(U, d)`` at lengthscales ``(U,)``, and where
    ``slopes`` their derivatives in the difference ``(U, d)`` and the lengthscale ``(U,)``,
    in blocks of :data:`_BLOCK_ELEMENTS` (difference, image) pairs.

    With :math:`v_m = \delta + 2\pi m` and :math:`r_m = |v_m|/\ell`: :math:`\partial_\delta S =
    \sum_m \frac{\kappa'(r_m)}{r_m} \frac{v_m}{\ell^2}` and :math:`\partial_\ell S = -\sum_m
    \frac{\kappa'(r_m)}{r_m}\frac{r_m^2}{\ell}`.
    """
    rows = max(1, _BLOCK_ELEMENTS // offsets.shape[0])
    values, d_delta, d_scale = [], [], []
    square_offsets = offsets.square().sum(-1)
    for start in range(0, max(delta.shape[0], 1), rows):  # one empty block for no pairs
        part, ell = delta[start : start + rows], scale[start : start + rows].unsqueeze(-1)
        # |v|^2 = |delta|^2 + 2 delta.s + |s|^2: one matrix product instead of (U, K, d)
        # temporaries; no cancellation, as every shifted image lies at least pi away
        r2 = (part.square().sum(-1, keepdim=True) + 2 * part @ offsets.T + square_offsets) / (
            ell * ell
        )
        # sqrt's slope at 0 is NaN; the profiles are flat there (nu >= 3/2) or have the kink of
        # nu = 1/2, whose one-sided slope no caller needs at a coincident pair
        r = torch.sqrt(r2.clamp_min(torch.finfo(r2.dtype).tiny))
        values.append(euclidean_profile(r, nu).sum(-1))
        if slopes:
            w = _slope_over_r(r, nu)  # (U, K)
            d_delta.append((part * w.sum(-1, keepdim=True) + w @ offsets) / (ell * ell))
            d_scale.append(-(w * r2).sum(-1) / ell[:, 0])
    if not slopes:
        return torch.cat(values), None, None
    return torch.cat(values), torch.cat(d_delta), torch.cat(d_scale)


def _slope_over_r(r: Tensor, nu: float) -> Tensor:
    r""":math:`\kappa'(r) / r` of :func:`euclidean_profile` (finite at 0 for ``nu >= 3/2``)."""
    if math.isinf(nu):
        return -torch.exp(-0.5 * r * r)
    if nu == 0.5:
        return -torch.exp(-r) / r
    if nu == 1.5:
        return -3.0 * torch.exp(-math.sqrt(3.0) * r)
    if nu == 2.5:
        s = math.sqrt(5.0) * r
        return -(5.0 / 3.0) * (1 + s) * torch.exp(-s)
    raise ValueError(f"no closed form for nu={nu}; the image sum takes {IMAGE_NUS}")
