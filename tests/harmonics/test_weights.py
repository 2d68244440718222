"""Highest weights of SO(n) and SU(n): eigenvalues, dimensions and levels against closed forms."""

import itertools
import math
from fractions import Fraction

import pytest

from manibo.harmonics.weights import OrthogonalWeights, UnitaryWeights


def test_so2_and_so3_levels_are_the_circle_and_the_rotation_group():
    so2 = OrthogonalWeights(2).levels(6)
    assert [lvl.eigenvalue for lvl in so2] == [k * k for k in range(6)]
    assert [lvl.multiplicity for lvl in so2] == [1, 2, 2, 2, 2, 2]  # e^{±ikθ}
    so3 = OrthogonalWeights(3).levels(6)
    assert [lvl.eigenvalue for lvl in so3] == [p * (p + 1) for p in range(6)]
    assert [lvl.multiplicity for lvl in so3] == [(2 * p + 1) ** 2 for p in range(6)]


def test_so4_matches_pairs_of_su2_spins():
    # SO(4) = SU(2) x SU(2) / ±1: spins (j1, j2) with j1 + j2 an integer, dimension
    # (2j1+1)(2j2+1), eigenvalue 2 (j1(j1+1) + j2(j2+1)) in the metric of the weight lattice
    expected = {}
    for a, b in itertools.product(range(0, 30), repeat=2):
        j1, j2 = Fraction(a, 2), Fraction(b, 2)
        if (j1 + j2).denominator != 1:
            continue
        value = 2 * (j1 * (j1 + 1) + j2 * (j2 + 1))
        expected[value] = expected.get(value, 0) + int((2 * j1 + 1) * (2 * j2 + 1)) ** 2
    levels = OrthogonalWeights(4).levels(25)
    assert [(lvl.eigenvalue, lvl.multiplicity) for lvl in levels] == sorted(expected.items())[:25]


def test_so5_dimensions_match_the_symplectic_group():
    # SO(5) = Sp(4) / ±1; Sp(4) weights (x, y), x >= y >= 0, have dimension
    # (x - y + 1)(y + 1)(x + 2)(x + y + 3) / 6; the SO(5) weight (a, b) is x = a + b, y = a - b
    so5 = OrthogonalWeights(5)
    for a in range(8):
        for b in range(a + 1):
            x, y = a + b, a - b
            assert so5.dimension((a, b)) == (x - y + 1) * (y + 1) * (x + 2) * (x + y + 3) // 6


def _hook_content_dimension(partition, n):
    """Dimension of the GL(n) representation of a partition, by the hook-content formula."""
    conjugate = [sum(1 for part in partition if part > j) for j in range(partition[0] or 0)]
    value = Fraction(1)
    for i, row in enumerate(partition):
        for j in range(row):
            hook = row - j + conjugate[j] - i - 1
            value *= Fraction(n + j - i, hook)
    return int(value)


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_su_dimensions_equal_the_hook_content_formula(n):
    weights = UnitaryWeights(n)
    for level in weights.levels(20):
        for label, dim in zip(level.weights, level.dimensions, strict=True):
            assert dim == _hook_content_dimension(label, n)


def test_su2_and_su3_eigenvalues_in_closed_form():
    su2 = UnitaryWeights(2).levels(8)
    assert [lvl.eigenvalue for lvl in su2] == [Fraction(k * (k + 2), 2) for k in range(8)]
    assert [lvl.multiplicity for lvl in su2] == [(k + 1) ** 2 for k in range(8)]
    su3 = UnitaryWeights(3)
    for p, q in itertools.product(range(6), repeat=2):
        # Dynkin labels (p, q): partition (p + q, q); Casimir (p² + q² + pq + 3p + 3q) / 3,
        # doubled in this metric
        value = Fraction(2 * (p * p + q * q + p * q + 3 * p + 3 * q), 3)
        assert su3.eigenvalue((p + q, q)) == value


@pytest.mark.parametrize(
    "weights, box",
    [
        (OrthogonalWeights(4), 14),
        (OrthogonalWeights(5), 12),
        (OrthogonalWeights(6), 9),
        (OrthogonalWeights(7), 8),
        (UnitaryWeights(3), 16),
        (UnitaryWeights(4), 10),
    ],
    ids=lambda v: v if isinstance(v, int) else f"{type(v).__name__}({v.n})",
)
def test_levels_are_every_label_by_eigenvalue(weights, box):
    """The levels equal a brute-force enumeration of a box of labels, grouped by eigenvalue."""
    rank = weights.rank
    found = {}
    for label in itertools.product(range(box + 1), repeat=rank):
        if list(label) != sorted(label, reverse=True):
            continue
        found.setdefault(weights.eigenvalue(label), []).append(label)
    # labels outside the box have eigenvalue >= box² / 2 (both groups), so below that the box is
    # complete
    complete = sorted(v for v in found if v < Fraction(box * box, 2))
    levels = weights.levels(len(complete))
    assert [lvl.eigenvalue for lvl in levels] == complete
    for level in levels:
        assert sorted(level.weights) == sorted(found[level.eigenvalue])
    assert all(a.eigenvalue < b.eigenvalue for a, b in itertools.pairwise(levels))


def test_even_orthogonal_labels_stand_for_two_representations():
    so6 = OrthogonalWeights(6)
    assert so6.copies((2, 1, 1)) == 2 and so6.copies((2, 1, 0)) == 1
    assert OrthogonalWeights(7).copies((2, 1, 1)) == 1
    # (1,1,±1) of SO(6) = SU(4)/±1 are the self-dual and anti-self-dual 3-forms, 10 each
    assert so6.dimension((1, 1, 1)) == math.comb(6, 3) // 2


def test_many_levels_are_enumerated_quickly():
    import time

    start = time.perf_counter()
    levels = OrthogonalWeights(5).levels(1000)
    assert len(levels) == 1000 and time.perf_counter() - start < 2.0
