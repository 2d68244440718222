"""Characters of SO(n) and SU(n) as Jacobi–Trudi determinants: against Weyl's character formula
(a ratio of alternants, evaluated independently in NumPy and in high precision), dimensions at the
identity, and orthonormality by exact quadrature on the maximal torus (Weyl's integration
formula)."""

import itertools
import math

import mpmath
import numpy as np
import pytest
import torch

from manibo.harmonics.class_functions import (
    JacobiTrudiCharacters,
    complete_from_elementary,
    elementary_from_power_sums,
)
from manibo.harmonics.weights import OrthogonalWeights, UnitaryWeights


def _eigenvalues_so(n, angles):
    z = np.exp(1j * np.asarray(angles, dtype=float))
    return np.concatenate([z, 1 / z, [1.0] if n % 2 else []])


def _characters(weights, num_levels, eigenvalues, unitary):
    """Every character of the first levels at points given by their eigenvalues ``(P, n)``."""
    labels = [w for level in weights.levels(num_levels) for w in level.weights]
    table = JacobiTrudiCharacters(labels, orthogonal=not unitary)
    z = torch.as_tensor(np.asarray(eigenvalues, dtype=complex))
    n = z.shape[-1]
    power_sums = torch.stack([(z**k).sum(-1) for k in range(1, n // 2 + 1)], -1)
    if not unitary:
        power_sums = power_sums.real
    elementary = elementary_from_power_sums(power_sums, n, conjugate=unitary)
    complete = complete_from_elementary(elementary, table.degree, dim=-2)  # (K, P)
    return labels, table.values(complete).T.numpy()  # (P, G)


def _weyl_so(n, label, angles):
    """Weyl's ratio of alternants for SO(n) (for even n the sum over ±λ_m when λ_m > 0)."""
    m = n // 2
    rho = [n / 2 - i for i in range(1, m + 1)]
    z = np.exp(1j * np.asarray(angles))

    def alternant(exponents, sign):
        return np.linalg.det([[zj**e + sign * zj ** (-e) for zj in z] for e in exponents])

    shifted = [a + r for a, r in zip(label, rho, strict=True)]
    if n % 2:
        return alternant(shifted, -1) / alternant(rho, -1)
    denominator = alternant(rho, 1)
    value = (alternant(shifted, 1) + alternant(shifted, -1)) / denominator
    if label[-1] > 0:
        flipped = [*shifted[:-1], -shifted[-1]]
        value += (alternant(flipped, 1) + alternant(flipped, -1)) / denominator
    return value


def _weyl_su(label, z):
    n = len(z)
    full = [*label, 0]
    numerator = np.linalg.det([[zj ** (full[i] + n - 1 - i) for zj in z] for i in range(n)])
    return numerator / np.linalg.det([[zj ** (n - 1 - i) for zj in z] for i in range(n)])


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8, 9, 10])
def test_orthogonal_characters_equal_weyls_formula(n):
    rng = np.random.default_rng(n)
    angles = rng.uniform(0, 2 * math.pi, size=(3, n // 2))
    weights = OrthogonalWeights(n)
    labels, values = _characters(weights, 12, [_eigenvalues_so(n, a) for a in angles], False)
    for p, a in enumerate(angles):
        reference = np.array([_weyl_so(n, label, a) for label in labels])
        assert np.abs(reference.imag).max() < 1e-9
        assert np.abs(values[p] - reference.real).max() < 1e-9 * max(1, np.abs(reference).max())


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_unitary_characters_equal_weyls_formula(n):
    rng = np.random.default_rng(10 + n)
    phases = rng.uniform(0, 2 * math.pi, size=(3, n))
    phases[:, -1] = -phases[:, :-1].sum(-1)
    z = np.exp(1j * phases)
    labels, values = _characters(UnitaryWeights(n), 12, z, True)
    for p in range(3):
        reference = np.array([_weyl_su(label, z[p]) for label in labels])
        assert np.abs(values[p] - reference).max() < 1e-9 * max(1, np.abs(reference).max())


@pytest.mark.parametrize(
    "weights, unitary",
    [(OrthogonalWeights(n), False) for n in (2, 3, 4, 5, 6, 7, 8)]
    + [(UnitaryWeights(n), True) for n in (2, 3, 4, 5)],
    ids=lambda v: f"{type(v).__name__}({v.n})" if hasattr(v, "n") else str(v),
)
def test_character_at_the_identity_is_the_dimension(weights, unitary):
    n = weights.n
    levels = weights.levels(30)
    labels, values = _characters(weights, 30, np.ones((1, n)), unitary)
    dims = [d * c for lvl in levels for d, c in zip(lvl.dimensions, lvl.copies, strict=True)]
    assert np.abs(values[0] - np.array(dims)).max() <= 1e-12 * max(dims)


def test_stable_where_eigenvalues_nearly_coincide():
    """Near the identity and near repeated eigenvalues Weyl's ratio is 0/0 in floating point;
    the determinants keep full accuracy (reference: the ratio in 50-digit arithmetic)."""
    n, rho = 5, [1.5, 0.5]
    weights = OrthogonalWeights(n)

    def alternant(exponents, z):
        rows = [[zj**e - zj ** (-e) for zj in z] for e in exponents]
        return rows[0][0] * rows[1][1] - rows[0][1] * rows[1][0]

    for angles in ([1e-7, 2e-7], [1.3, 1.3 + 1e-9], [math.pi - 1e-8, 0.5]):
        labels, values = _characters(weights, 15, [_eigenvalues_so(n, angles)], False)
        with mpmath.workdps(50):
            z = [mpmath.exp(1j * mpmath.mpf(a)) for a in angles]
            for label, value in zip(labels, values[0], strict=True):
                shifted = [a + r for a, r in zip(label, rho, strict=True)]
                reference = float(mpmath.re(alternant(shifted, z) / alternant(rho, z)))
                assert abs(value - reference) < 1e-9 * max(1.0, abs(reference))


def _torus_grid(rank, size):
    axis = 2 * math.pi * np.arange(size) / size
    return np.array(list(itertools.product(axis, repeat=rank)))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_orthogonal_characters_are_orthonormal_by_torus_quadrature(n):
    """Weyl's integration formula on a uniform grid of the maximal torus (exact for these trig
    polynomials): ∫ χ_λ χ_μ = δ_λμ times the number of representations a label stands for."""
    weights = OrthogonalWeights(n)
    m = n // 2
    num_levels = 10 if n < 6 else 7
    levels = weights.levels(num_levels)
    top = max(w[0] for lvl in levels for w in lvl.weights)
    grid = _torus_grid(m, 2 * (2 * top + n) + 2)
    labels, values = _characters(weights, num_levels, [_eigenvalues_so(n, a) for a in grid], False)
    c = np.cos(grid)
    density = np.ones(len(grid))
    for i, j in itertools.combinations(range(m), 2):
        density *= 4 * (c[:, i] - c[:, j]) ** 2
    if n % 2:
        density *= np.prod(4 * np.sin(grid / 2) ** 2, axis=-1)
        order = 2**m * math.factorial(m)
    else:
        order = 2 ** max(m - 1, 0) * math.factorial(m)
    gram = (values * density[:, None]).T @ values / (len(grid) * order)
    copies = [weights.copies(w) for w in labels]
    assert np.abs(gram - np.diag(copies)).max() < 1e-10


@pytest.mark.parametrize("n", [2, 3, 4])
def test_unitary_characters_are_orthonormal_by_torus_quadrature(n):
    weights = UnitaryWeights(n)
    num_levels = {2: 12, 3: 10, 4: 6}[n]
    levels = weights.levels(num_levels)
    top = max(sum(w) for lvl in levels for w in lvl.weights)
    grid = _torus_grid(n - 1, 2 * top + 2 * n)
    phases = np.concatenate([grid, -grid.sum(-1, keepdims=True)], -1)
    z = np.exp(1j * phases)
    labels, values = _characters(weights, num_levels, z, True)
    density = np.ones(len(grid))
    for i, j in itertools.combinations(range(n), 2):
        density *= np.abs(z[:, i] - z[:, j]) ** 2
    gram = (values * density[:, None]).T @ values.conj() / (len(grid) * math.factorial(n))
    assert np.abs(gram - np.eye(len(labels))).max() < 1e-10


def test_weighted_sum_equals_the_weighted_values_with_batched_coefficients():
    weights = UnitaryWeights(4)
    labels = [w for level in weights.levels(12) for w in level.weights]
    table = JacobiTrudiCharacters(labels, orthogonal=False)
    gen = torch.Generator().manual_seed(0)
    phases = torch.rand(7, 4, generator=gen, dtype=torch.float64) * 6
    phases[:, -1] = -phases[:, :-1].sum(-1)
    z = torch.polar(torch.ones_like(phases), phases)
    power_sums = torch.stack([(z**k).sum(-1) for k in (1, 2)], -1)
    complete = complete_from_elementary(
        elementary_from_power_sums(power_sums, 4, True), table.degree, dim=-2
    )
    coeffs = torch.rand(3, 1, len(labels), generator=gen, dtype=torch.float64)
    summed = table.weighted_sum(complete, coeffs.squeeze(1))  # (3, P)
    expected = (table.values(complete) * coeffs.transpose(-1, -2)).sum(-2)
    assert summed.shape == (3, 7)
    assert torch.allclose(summed, expected, atol=1e-10)


def test_triangular_solve_and_recurrence_give_the_same_polynomials():
    from manibo.harmonics import class_functions

    gen = torch.Generator().manual_seed(1)
    phases = torch.rand(1000, 5, generator=gen, dtype=torch.float64) * 6
    phases[:, -1] = -phases[:, :-1].sum(-1)
    z = torch.polar(torch.ones_like(phases), phases)
    power_sums = torch.stack([(z**k).sum(-1) for k in (1, 2)], -1)
    elementary = elementary_from_power_sums(power_sums, 5, True)
    assert elementary.shape[0] * 40**2 > class_functions.SOLVE_ELEMENTS  # the recurrence
    stepped = complete_from_elementary(elementary, 40)
    solved = torch.cat([complete_from_elementary(part, 40) for part in elementary.split(100)])
    assert (stepped - solved).abs().max() < 1e-9 * stepped.abs().max()
    # h_k of eigenvalues z: the coefficients of prod_i 1 / (1 - z_i t)
    series = torch.zeros(1000, 40, dtype=torch.complex128)
    series[:, 0] = 1.0
    for i in range(5):
        geometric = z[:, i : i + 1] ** torch.arange(40)
        series = torch.stack(
            [(series[:, : k + 1] * geometric[:, : k + 1].flip(-1)).sum(-1) for k in range(40)], -1
        )
    assert (stepped - series).abs().max() < 1e-9 * series.abs().max()
