r"""Zonal spherical functions of the Grassmann manifold :math:`\mathrm{Gr}(k, n)`.

:math:`L^2(\mathrm{Gr}(k, n))` splits under :math:`O(n)` into one copy of each irreducible
representation with highest weight :math:`2\mu`, :math:`\mu` a partition with at most
:math:`r = \min(k, n - k)` parts. Its eigenvalue under :math:`-\Delta` (the metric whose distance
is :math:`(\sum_i \theta_i^2)^{1/2}`, :math:`\theta_i` the principal angles) is the Casimir
eigenvalue :math:`\lambda_\mu = \sum_i 2\mu_i(2\mu_i + n - 2i)`, and its zonal spherical function
:math:`\varphi_\mu`, normalised by :math:`\varphi_\mu(o) = 1`, is a symmetric polynomial in the
:math:`r` variables :math:`s_i = 2\sin^2\theta_i - 1` of degree :math:`\mu_1` in each (a Jacobi
polynomial of the root system :math:`BC_r`, Heckman and Opdam 1987; for :math:`r = 1` the even
Gegenbauer polynomials of :math:`\mathbb{RP}^{n-1}`). The level kernel of a representation is
:math:`d_\mu \varphi_\mu`, :math:`d_\mu` its dimension.

The polynomials are found as eigenvectors of the radial part of the Laplace–Beltrami operator
(root multiplicities :math:`m_{e_i} = n - 2r`, :math:`m_{e_i \pm e_j} = 1`), in the variables
:math:`s_i`:

.. math::
    L = \sum_i \Big[4(1 - s_i^2)\,\partial_i^2 + \big(a - b\,s_i\big)\partial_i\Big]
      + \sum_{i<j} 4\,\frac{(1 - s_i^2)\,\partial_i - (1 - s_j^2)\,\partial_j}{s_i - s_j},
    \qquad a = 2n - 4r, \quad b = 2n - 4r + 4,

written in the basis of symmetrised Chebyshev products :math:`S_\beta(s) = \sum_{\alpha \in
S_r\beta} \prod_i T_{\alpha_i}(s_i)` (the cosine series on a maximal torus,
:math:`T_j(s_i) = (-1)^j \cos 2j\theta_i`, whose coefficients stay bounded where monomial ones
grow and alternate). :math:`L` maps the :math:`S_\beta` with :math:`\beta_1 \le D` into their own
span, so its matrix there is exact: it is read off by least squares from :math:`L S_\beta` at a
tensor grid of Chebyshev-like nodes (distinct in every coordinate, so the divided differences are
defined, and well conditioned). In that basis :math:`L` is triangular in the dominance order with
:math:`-\lambda_\beta` on the diagonal, and :math:`\varphi_\mu` is its eigenvector with leading
term :math:`S_\mu`, by back substitution with the exact integer eigenvalue gaps.
"""

from __future__ import annotations

import itertools
import math
from functools import cache

import numpy as np
import torch
from scipy.linalg import solve, solve_triangular
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.harmonics.weights import OrthogonalWeights

Partition = tuple[int, ...]

MAX_COLLOCATION_ENTRIES = 4_000_000
"""The most entries (grid nodes times basis functions) of the collocation matrices from which the
radial Laplacian is read."""

MAX_COLLOCATION_OPERATIONS = 2_000_000_000
"""The most grid values computed to fill them (about ten seconds)."""


def collocation_cost(r: int, degree: int) -> tuple[int, int]:
    """Entries of the collocation matrices and grid values computed to fill them, at rank ``r``
    and largest part ``degree``: the grid is a tensor product of ``prod(D + 1 + i)`` nodes, and
    each of the ``(D + 1)^r`` Chebyshev products is evaluated there with its ``r`` first and
    second derivatives and ``r^2 / 2`` pair terms, so both grow like ``(D + 1)^r``."""
    nodes = math.prod(degree + 1 + i for i in range(r))
    return nodes * math.comb(degree + r, r), nodes * (degree + 1) ** r * max(r * r, 1)


def _affordable(r: int, degree: int) -> bool:
    entries, operations = collocation_cost(r, degree)
    return entries <= MAX_COLLOCATION_ENTRIES and operations <= MAX_COLLOCATION_OPERATIONS


def largest_affordable_degree(r: int) -> int:
    """The largest part ``D`` up to which the zonal functions of rank ``r`` stay within
    :data:`MAX_COLLOCATION_ENTRIES` and :data:`MAX_COLLOCATION_OPERATIONS` (0: only the
    constant function)."""
    degree = 0
    while _affordable(r, degree + 1):
        degree += 1
    return degree


def casimir(mu: Partition, n: int) -> int:
    r""":math:`\lambda_\mu = \sum_i 2\mu_i(2\mu_i + n - 2i)`, the eigenvalue of :math:`-\Delta`."""
    return sum(2 * m * (2 * m + n - 2 * i) for i, m in enumerate(mu, start=1))


def dimension(mu: Partition, n: int) -> int:
    r""":math:`d_\mu`: the dimension of the :math:`O(n)` representation of highest weight
    :math:`2\mu` (Weyl's formula for :math:`SO(n)`, doubled where the :math:`O(n)` representation
    is the sum of the two :math:`SO(2m)` ones with last weight :math:`\pm 2\mu_m`)."""
    weights = OrthogonalWeights(n)
    weight = tuple(2 * m for m in mu) + (0,) * (weights.rank - len(mu))
    return weights.copies(weight) * weights.dimension(weight)


def partitions_up_to(r: int, bound: int, n: int) -> list[Partition]:
    """Every partition ``mu`` with ``r`` parts (zeros included) and ``casimir(mu, n) <= bound``."""
    out: list[Partition] = []

    def extend(prefix: list[int], used: int) -> None:
        i = len(prefix)
        if i == r:
            out.append(tuple(prefix))
            return
        top = prefix[-1] if prefix else math.isqrt(bound)
        for m in range(top + 1):
            cost = 2 * m * (2 * m + n - 2 * (i + 1))
            if used + cost > bound:
                break
            extend([*prefix, m], used + cost)

    extend([], 0)
    return out


def _distinct_permutations(beta: Partition) -> list[Partition]:
    return sorted(set(itertools.permutations(beta)))


def _basis(r: int, degree: int) -> list[Partition]:
    """Partitions with ``r`` parts, each at most ``degree``, by size and then lexicographically."""
    parts = itertools.combinations_with_replacement(range(degree, -1, -1), r)
    return sorted(parts, key=lambda p: (sum(p), p))


def _chebyshev_tables(s: np.ndarray, degree: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:math:`T_j`, :math:`T_j'` and :math:`T_j''` at ``s``, each ``(degree + 1, len(s))``."""
    values = [np.ones_like(s), s]
    first = [np.zeros_like(s), np.ones_like(s)]
    second = [np.zeros_like(s), np.zeros_like(s)]
    for j in range(1, degree):
        values.append(2 * s * values[j] - values[j - 1])
        first.append(2 * values[j] + 2 * s * first[j] - first[j - 1])
        second.append(4 * first[j] + 2 * s * second[j] - second[j - 1])
    return tuple(np.stack(t[: degree + 1]) for t in (values, first, second))


def _grid(r: int, degree: int) -> list[np.ndarray]:
    r"""Per coordinate, ``degree + 1 + i`` nodes :math:`\cos(\pi(p + \delta_i)/N_i)`, with the
    first offsets (of a fixed sequence) that keep every two coordinates' nodes apart by at least
    a fiftieth of the spacing near the ends, so the divided differences stay accurate."""
    sizes = [degree + 1 + i for i in range(r)]
    wanted = 0.02 * (np.pi / max(sizes)) ** 2
    rng = np.random.default_rng(0)
    for _ in range(1000):
        offsets = rng.uniform(0.05, 0.95, size=r)
        nodes = [
            np.cos(np.pi * (np.arange(size) + offset) / size)
            for size, offset in zip(sizes, offsets, strict=True)
        ]
        gap = min(
            (np.abs(a[:, None] - b[None, :]).min() for a, b in itertools.combinations(nodes, 2)),
            default=np.inf,
        )
        if gap >= wanted:
            return nodes
    raise ArithmeticError("found no collocation nodes that keep the coordinates apart")


def _operator_matrix(r: int, n: int, degree: int) -> tuple[list[Partition], np.ndarray]:
    r"""The basis ``betas`` of symmetrised Chebyshev products of degree ``<= degree`` and the matrix
    ``A`` of :math:`L` in it: :math:`L S_\nu = \sum_\kappa A_{\kappa\nu} S_\kappa`."""
    if not _affordable(r, degree):
        entries, operations = collocation_cost(r, degree)
        raise ConfigurationError(
            f"the zonal functions of a Grassmann manifold of rank {r} up to largest part {degree} "
            f"need collocation matrices of {entries:.3g} entries filled by {operations:.3g} "
            f"operations, more than the {MAX_COLLOCATION_ENTRIES:.3g} and "
            f"{MAX_COLLOCATION_OPERATIONS:.3g} this library allows (both grow like "
            f"(largest part + 1)^rank); the largest part affordable at rank {r} is "
            f"{largest_affordable_degree(r)}. Use fewer levels (`max_levels` of the kernel or of "
            "the 'matern' and 'heat' surrogates), a longer lengthscale, or Gr(k, n) with a "
            "smaller min(k, n - k)."
        )
    betas = _basis(r, degree)
    nodes = _grid(r, degree)
    tables = [_chebyshev_tables(s, degree) for s in nodes]
    mesh = np.meshgrid(*nodes, indexing="ij")  # r arrays of the grid's shape
    a, b = 2 * n - 4 * r, 2 * n - 4 * r + 4
    values = np.empty((mesh[0].size, len(betas)))
    images = np.empty_like(values)

    def outer(factors: list[np.ndarray]) -> np.ndarray:
        out = factors[0]
        for f in factors[1:]:
            out = np.multiply.outer(out, f)
        return out

    for column, beta in enumerate(betas):
        value = np.zeros(mesh[0].shape)
        image = np.zeros(mesh[0].shape)
        for alpha in _distinct_permutations(beta):
            plain = [tables[i][0][alpha[i]] for i in range(r)]
            value += outer(plain)
            gradient = []
            for i in range(r):
                first = outer(plain[:i] + [tables[i][1][alpha[i]]] + plain[i + 1 :])
                second = outer(plain[:i] + [tables[i][2][alpha[i]]] + plain[i + 1 :])
                gradient.append(first)
                image += 4 * (1 - mesh[i] ** 2) * second + (a - b * mesh[i]) * first
            for i, j in itertools.combinations(range(r), 2):
                image += (
                    4
                    * ((1 - mesh[i] ** 2) * gradient[i] - (1 - mesh[j] ** 2) * gradient[j])
                    / (mesh[i] - mesh[j])
                )
        values[:, column] = value.reshape(-1)
        images[:, column] = image.reshape(-1)
    # least squares by the normal equations: at these nodes the columns are nearly orthogonal
    # (condition number 2.2 at rank 2 and largest part 50), and this is 5x faster than an SVD
    matrix = solve(values.T @ values, values.T @ images, assume_a="pos", check_finite=False)
    return betas, matrix


@cache
def zonal_coefficients(r: int, n: int, degree: int) -> tuple[tuple[Partition, ...], Tensor]:
    r"""Every :math:`\varphi_\mu` with :math:`\mu_1 \le` ``degree`` in the basis :math:`S_\beta`.

    Args:
        r: the rank :math:`\min(k, n - k)`.
        n: the ambient dimension.
        degree: the largest part.

    Returns:
        ``(betas, coefficients)``: the partitions with ``r`` parts of at most ``degree`` (both the
        :math:`\mu` and the :math:`\beta`), and the float64 matrix ``(len(betas), len(betas))``
        whose row ``mu`` holds :math:`\varphi_\mu = \sum_\beta c_{\mu\beta} S_\beta`.
    """
    if degree == 0:  # the constant function alone
        return ((0,) * r,), torch.ones(1, 1, dtype=torch.float64)
    betas, matrix = _operator_matrix(r, n, degree)
    values = np.array([casimir(beta, n) for beta in betas])
    partial = np.cumsum(np.array(betas), axis=1)  # (B, r) partial sums
    signs = np.array([len(_distinct_permutations(b)) * (-1) ** sum(b) for b in betas], dtype=float)
    coefficients = np.zeros((len(betas), len(betas)))
    for row in range(len(betas)):
        # the partitions below betas[row] in the dominance order, betas[row] first, then in the
        # reverse of the basis order (by size, then lexicographically), where L is triangular
        below = np.flatnonzero((partial <= partial[row]).all(axis=1))[::-1]
        rest = below[1:]
        system = matrix[np.ix_(rest, rest)]  # solve_triangular reads its lower triangle only
        gaps = (values[row] - values[rest]).astype(float)  # diagonal of L - e_mu, e = -casimir
        rhs = -matrix[rest, row]
        tied = gaps == 0  # a tie below mu: that coefficient is 0
        system[tied] = 0.0
        np.fill_diagonal(system, np.where(tied, 1.0, gaps))
        rhs[tied] = 0.0
        found = np.concatenate(
            [[1.0], solve_triangular(system, rhs, lower=True, check_finite=False)]
        )
        # phi(o) = 1: at the base point every s_i = -1, where T_j = (-1)^j
        coefficients[row, below] = found / (found @ signs[below])
    return tuple(betas), torch.from_numpy(coefficients)


@cache
def _symmetric_index(betas: tuple[Partition, ...]) -> Tensor:
    """For every multi-index ``alpha`` in ``[0, D]^r`` (row-major), the position of its sorted
    partition in ``betas`` (``len(betas)`` where it has none)."""
    position = {beta: i for i, beta in enumerate(betas)}
    r, degree = len(betas[0]), max(max(beta) for beta in betas)
    grid = itertools.product(range(degree + 1), repeat=r)
    index = [position.get(tuple(sorted(alpha, reverse=True)), len(betas)) for alpha in grid]
    return torch.tensor(index, dtype=torch.long)


def chebyshev_series(s: Tensor, coefficients: Tensor, betas: tuple[Partition, ...]) -> Tensor:
    r""":math:`\sum_\beta c_\beta S_\beta(s)` with the symmetrised Chebyshev products
    :math:`S_\beta(s) = \sum_{\alpha \in S_r\beta}\prod_i T_{\alpha_i}(s_i)`.

    The coefficients are spread over the symmetric tensor
    :math:`C_\alpha = c_{\mathrm{sort}(\alpha)}` and contracted with the Chebyshev values one
    coordinate at a time (a matrix product, then elementwise products), ``(D + 1)^r`` operations
    per point.

    Args:
        s: ``(*batch, m, r)`` values in :math:`[-1, 1]`.
        coefficients: ``(*cbatch, B)``, ``B = len(betas)``, with ``cbatch`` broadcasting against
            ``batch`` (the points' last batch dimension ``m`` is not part of it).
        betas: partitions with ``r`` parts, the largest part ``D``.

    Returns:
        ``(*batch, m)``.
    """
    r = s.shape[-1]
    degree = max(max(beta) for beta in betas)
    size = degree + 1
    values = [torch.ones_like(s), s]
    for _ in range(1, degree):
        values.append(2 * s * values[-1] - values[-2])
    table = torch.stack(values[:size], dim=-1)  # (*batch, m, r, D + 1)
    padded = torch.cat([coefficients, coefficients.new_zeros(*coefficients.shape[:-1], 1)], -1)
    tensor = padded[..., _symmetric_index(tuple(betas)).to(s.device)]  # (*cbatch, size^r)
    # contract the last coordinate by one matrix product: (*batch, m, D+1) @ (*cbatch, D+1, rest)
    matrix = tensor.reshape(*tensor.shape[:-1], size ** (r - 1), size).transpose(-1, -2)
    out = table[..., r - 1, :] @ matrix  # (*batch, m, size^(r-1))
    for i in range(r - 2, -1, -1):
        out = (out.reshape(*out.shape[:-1], size**i, size) * table[..., i, None, :]).sum(-1)
    return out.squeeze(-1)
