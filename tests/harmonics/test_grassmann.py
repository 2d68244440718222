"""Zonal spherical functions of Grassmann manifolds against representation theory, the
Gegenbauer polynomials of RP^(n-1) and an exact rational computation in monomials."""

import itertools
import math
from fractions import Fraction

import pytest
import torch
from scipy.special import eval_gegenbauer

from manibo.harmonics.grassmann import (
    casimir,
    chebyshev_series,
    collocation_cost,
    dimension,
    largest_affordable_degree,
    partitions_up_to,
    zonal_coefficients,
)
from manibo.harmonics.weights import OrthogonalWeights


def zonal(mu, n, y, degree=None):
    """phi_mu at the squared sines ``y`` ``(..., r)`` of the principal angles."""
    betas, coefficients = zonal_coefficients(len(mu), n, degree or max(mu[0], 1))
    return chebyshev_series(2 * y - 1, coefficients[betas.index(mu)], betas)


# ----------------------------------------------------------- an exact reference in monomials
def laplacian_on_monomials(nu, n):
    """The radial Laplacian in y_i = sin^2(theta_i), applied to the monomial symmetric polynomial
    m_nu, as exact coefficients of the sorted monomials: derived from the root multiplicities
    independently of the Chebyshev form the package uses."""
    r = len(nu)
    out = {}

    def add(alpha, value):
        if value and list(alpha) == sorted(alpha, reverse=True):
            out[tuple(alpha)] = out.get(tuple(alpha), 0) + value

    for alpha in set(itertools.permutations(nu)):
        for i, a in enumerate(alpha):  # 4y(1-y)d^2 + (2(n-2r+1) - (2n-4r+4)y)d on y^a
            if a:
                lower = list(alpha)
                lower[i] -= 1
                add(lower, 4 * a * (a - 1) + 2 * (n - 2 * r + 1) * a)
                add(alpha, -(4 * a * (a - 1) + (2 * n - 4 * r + 4) * a))
        for i, j in itertools.combinations(range(r), 2):
            a, b = alpha[i], alpha[j]
            if a < b:
                continue  # the pair (alpha, alpha with i and j swapped) is taken at a > b
            if a == b:
                add(alpha, -4 * a)
                continue
            for factor, p, q in [(4 * (a - b), a, b), (-4 * a, a + 1, b), (-4 * b, b + 1, a)]:
                # (y_i^p y_j^q - y_i^q y_j^p) / (y_i - y_j)
                sign, high, low = (1, p, q) if p > q else (-1, q, p)
                for t in range(high - low):
                    moved = list(alpha)
                    moved[i], moved[j] = low + t, high - 1 - t
                    add(moved, sign * factor)
    return out


def exact_zonal(mu, n):
    """phi_mu in monomial symmetric polynomials of y, exact, phi(0) = 1."""
    columns, pending = {}, [mu]
    while pending:
        nu = pending.pop()
        columns[nu] = laplacian_on_monomials(nu, n)
        pending += [kappa for kappa in columns[nu] if kappa not in columns and kappa not in pending]
    order = sorted(columns, key=lambda p: (sum(p), p), reverse=True)
    eigenvalue = columns[mu].get(mu, 0)
    found = {mu: Fraction(1)}
    for kappa in order[1:]:
        total = sum(columns[nu].get(kappa, 0) * c for nu, c in found.items())
        gap = eigenvalue - columns[kappa].get(kappa, 0)
        found[kappa] = Fraction(total) / gap if gap else Fraction(0)
    constant = found[(0,) * len(mu)]
    return {kappa: c / constant for kappa, c in found.items()}


def evaluate_monomials(coefficients, y):
    total = torch.zeros(y.shape[:-1], dtype=torch.float64)
    for kappa, c in coefficients.items():
        for alpha in set(itertools.permutations(kappa)):
            total = total + float(c) * torch.prod(y ** torch.tensor(alpha), dim=-1)
    return total


# ----------------------------------------------------------------------------------------- tests
@pytest.mark.parametrize(("r", "n"), [(1, 3), (1, 6), (2, 4), (2, 5), (2, 7), (3, 6), (3, 8)])
def test_the_radial_laplacian_has_the_casimir_eigenvalues_on_its_diagonal(r, n):
    # the operator comes from the root multiplicities; its diagonal must be minus the Casimir
    # eigenvalue of the O(n) representation of highest weight 2 mu
    weights = OrthogonalWeights(n)
    for mu in partitions_up_to(r, 300, n):
        highest = tuple(2 * m for m in mu) + (0,) * (weights.rank - r)
        assert laplacian_on_monomials(mu, n).get(mu, 0) == -weights.scaled_eigenvalue(highest)
        assert casimir(mu, n) == weights.scaled_eigenvalue(highest)


@pytest.mark.parametrize(("r", "n", "degree"), [(2, 4, 6), (2, 7, 5), (3, 6, 4), (3, 7, 3)])
def test_zonal_functions_match_the_exact_rational_computation(r, n, degree):
    y = torch.rand(50, r, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    betas, _ = zonal_coefficients(r, n, degree)
    for mu in betas:
        assert torch.allclose(zonal(mu, n, y, degree), evaluate_monomials(exact_zonal(mu, n), y),
                              atol=1e-10)  # fmt: skip


@pytest.mark.parametrize("n", [3, 4, 7])
def test_rank_one_zonal_functions_are_the_even_gegenbauer_polynomials(n):
    theta = torch.linspace(0.0, math.pi / 2, 11, dtype=torch.float64)
    y = torch.sin(theta).square().unsqueeze(-1)
    alpha = (n - 2) / 2
    for m in range(40):
        reference = eval_gegenbauer(2 * m, alpha, theta.cos().numpy()) / eval_gegenbauer(
            2 * m, alpha, 1.0
        )
        assert zonal((m,), n, y, 40).numpy() == pytest.approx(reference, abs=1e-11)


@pytest.mark.parametrize(("r", "n", "degree"), [(2, 4, 24), (2, 5, 16), (3, 6, 8)])
def test_zonal_functions_are_one_at_the_base_point_bounded_and_symmetric(r, n, degree):
    y = torch.rand(300, r, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    betas, coefficients = zonal_coefficients(r, n, degree)
    at_base = chebyshev_series(-torch.ones(1, r, dtype=torch.float64), coefficients, betas)
    assert torch.allclose(at_base, torch.ones_like(at_base), atol=1e-10)
    values = chebyshev_series(2 * y - 1, coefficients, betas)  # (mu, point)
    assert values.abs().max() <= 1 + 1e-8  # |phi| <= phi(o), a positive-definite function
    for perm in itertools.permutations(range(r)):
        moved = chebyshev_series(2 * y[:, list(perm)] - 1, coefficients, betas)
        assert torch.allclose(moved, values, atol=1e-10)
    # a smaller degree gives the same functions
    small, low = zonal_coefficients(r, n, degree // 2)
    for i, mu in enumerate(small):
        assert torch.allclose(
            chebyshev_series(2 * y - 1, low[i], small),
            values[betas.index(mu)],
            atol=1e-9,
        )


def test_dimensions_are_those_of_the_orthogonal_group_doubled_where_o_n_pairs_two():
    # Gr(2, 4): highest weights (2, 0) and (2, 2) of SO(4); (2, 2) and (2, -2) pair in O(4)
    assert dimension((1, 0), 4) == 9 and dimension((1, 1), 4) == 2 * 5
    # Gr(1, n) = RP^(n-1): the dimension of the degree-2m spherical harmonics of S^(n-1)
    assert [dimension((m,), 3) for m in range(4)] == [1, 5, 9, 13]
    assert dimension((1,), 5) == 14 and dimension((0, 0), 7) == 1


def test_collocation_cost_counts_the_tensor_grid_and_the_budget_follows():
    # rank 2, largest part 1: nodes 2 x 3, basis (0,0), (1,0), (1,1); the 4 Chebyshev products
    # times 2^2 derivative and pair terms at each node
    assert collocation_cost(2, 1) == (6 * 3, 6 * 4 * 4)
    # rank 3, largest part 2: 3 * 4 * 5 nodes, C(5, 3) = 10 partitions, 27 products, 9 terms
    assert collocation_cost(3, 2) == (60 * 10, 60 * 27 * 9)
    degrees = [largest_affordable_degree(r) for r in range(1, 10)]
    assert degrees[1:] == [51, 15, 7, 4, 2, 1, 0, 0]
    for r, degree in zip(range(1, 10), degrees, strict=True):
        entries, operations = collocation_cost(r, degree + 1)
        assert entries > 4_000_000 or operations > 2_000_000_000  # the next degree is over
        if degree:
            entries, operations = collocation_cost(r, degree)
            assert entries <= 4_000_000 and operations <= 2_000_000_000
