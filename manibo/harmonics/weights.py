r"""Highest weights of SO(n) and SU(n): Casimir eigenvalues, Weyl dimensions, and levels.

The irreducible representations of a compact connected Lie group are labelled by dominant highest
weights :math:`\lambda`. With the bi-invariant metric for which the coordinates
:math:`\varepsilon_i` of the weight lattice are orthonormal (GeometricKernels' convention), the
Laplace–Beltrami operator acts on the matrix coefficients of :math:`\pi_\lambda` by the Casimir
eigenvalue :math:`\|\lambda + \rho\|^2 - \|\rho\|^2`, and the dimension of :math:`\pi_\lambda` is
Weyl's :math:`\prod_{\alpha > 0} \langle\lambda + \rho, \alpha\rangle / \langle\rho, \alpha\rangle`.

* **SO(n)**, rank :math:`m = \lfloor n/2 \rfloor`, :math:`\rho_i = n/2 - i`: weights
  :math:`\lambda_1 \ge \dots \ge \lambda_m \ge 0` (and :math:`\lambda_m < 0` too for even ``n``).
  The labels here are the irreducible representations of O(n) restricted to SO(n): for even ``n``
  and :math:`\lambda_m > 0` one label stands for the two representations
  :math:`(\dots, \pm\lambda_m)`, which share eigenvalue and dimension (``copies = 2``), and its
  character is the sum of theirs. The eigenvalue is the integer
  :math:`\sum_i \lambda_i(\lambda_i + n - 2i)`.
* **SU(n)**, rank :math:`n - 1`, :math:`\rho_i = (n + 1)/2 - i`: partitions
  :math:`\lambda_1 \ge \dots \ge \lambda_{n-1} \ge \lambda_n = 0`, with eigenvalue
  :math:`\|\tilde\lambda\|^2 + \sum_i \lambda_i (n + 1 - 2i)`, :math:`\tilde\lambda` the
  trace-free part of :math:`\lambda`: an integer multiple of :math:`1/n`.

Integer arithmetic (eigenvalues scaled to integers) keeps equal eigenvalues equal, so a level
gathers every irreducible representation of one eigenvalue.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

Weight = tuple[int, ...]


@dataclass(frozen=True)
class Level:
    """One eigenvalue of the Laplace–Beltrami operator and the representations that share it.

    Attributes:
        eigenvalue: the Casimir eigenvalue (exact).
        weights: labels of the representations in the level.
        dimensions: dimension of each representation.
        copies: how many irreducible representations each label stands for (1, or 2 for the
            pairs :math:`(\\dots, \\pm\\lambda_m)` of SO(2m)).
    """

    eigenvalue: Fraction
    weights: tuple[Weight, ...]
    dimensions: tuple[int, ...]
    copies: tuple[int, ...]

    @property
    def multiplicity(self) -> int:
        """Dimension of the eigenspace, :math:`\\sum d_\\pi^2` over its representations."""
        return sum(c * d * d for d, c in zip(self.dimensions, self.copies, strict=True))


class GroupWeights:
    """Labels of one group's representations, enumerated by eigenvalue and grouped into levels.

    Subclasses define ``rank``, ``scale`` (eigenvalues times ``scale`` are integers),
    :meth:`scaled_eigenvalue`, :meth:`dimension`, :meth:`copies` and :meth:`up_to_scaled`.
    """

    rank: int
    scale: int = 1

    def __init__(self) -> None:
        self._levels: list[Level] = []
        self._bound = 0

    def __deepcopy__(self, memo: dict) -> GroupWeights:
        # pure maths with a growing cache: copies of models (fantasies) share it
        return self

    def scaled_eigenvalue(self, weight: Weight) -> int:
        """The Casimir eigenvalue of ``weight`` times ``scale``."""
        raise NotImplementedError

    def eigenvalue(self, weight: Weight) -> Fraction:
        """The Casimir eigenvalue of ``weight`` (exact)."""
        return Fraction(self.scaled_eigenvalue(weight), self.scale)

    def dimension(self, weight: Weight) -> int:
        """The dimension of the representation (Weyl's formula, exact)."""
        raise NotImplementedError

    def copies(self, weight: Weight) -> int:
        """How many irreducible representations the label ``weight`` stands for."""
        return 1

    def up_to_scaled(self, bound: int) -> list[Weight]:
        """Every label whose scaled eigenvalue is ``<= bound`` (in any order)."""
        raise NotImplementedError

    def levels(self, num_levels: int) -> list[Level]:
        """The ``num_levels`` lowest levels (cached; the enumeration bound doubles as needed)."""
        bound = self._bound
        while len(self._levels) < num_levels:
            bound = max(4 * self.scale, 2 * bound)
            grouped: dict[int, list[Weight]] = {}
            for weight in self.up_to_scaled(bound):
                grouped.setdefault(self.scaled_eigenvalue(weight), []).append(weight)
            self._levels = [
                Level(
                    Fraction(value, self.scale),
                    tuple(sorted(ws)),
                    tuple(self.dimension(w) for w in sorted(ws)),
                    tuple(self.copies(w) for w in sorted(ws)),
                )
                for value, ws in sorted(grouped.items())
            ]
            self._bound = bound
        return self._levels[:num_levels]


def _exact_ratio(numerators: list[int], denominators: list[int]) -> int:
    num = math.prod(numerators)
    den = math.prod(denominators)
    value, rest = divmod(num, den)
    if rest:
        raise ArithmeticError(
            "Weyl's dimension formula gave a non-integer"
        )  # never for valid input
    return value


class OrthogonalWeights(GroupWeights):
    """Labels of the irreducible representations of SO(n), ``n >= 2`` (see the module docstring).

    Args:
        n: the matrix size.
    """

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n
        self.rank = n // 2
        self._two_rho = [n - 2 * i for i in range(1, self.rank + 1)]

    def scaled_eigenvalue(self, weight: Weight) -> int:
        return sum(l * (l + s) for l, s in zip(weight, self._two_rho, strict=True))

    def dimension(self, weight: Weight) -> int:
        # doubled coordinates 2(λ + ρ) and 2ρ are integers
        shifted = [2 * l + s for l, s in zip(weight, self._two_rho, strict=True)]
        rho = self._two_rho
        numerators, denominators = [], []
        for i in range(self.rank):
            for j in range(i + 1, self.rank):
                numerators.append(shifted[i] ** 2 - shifted[j] ** 2)
                denominators.append(rho[i] ** 2 - rho[j] ** 2)
            if self.n % 2:
                numerators.append(shifted[i])
                denominators.append(rho[i])
        return _exact_ratio(numerators, denominators)

    def copies(self, weight: Weight) -> int:
        return 2 if self.n % 2 == 0 and weight[-1] > 0 else 1

    def up_to_scaled(self, bound: int) -> list[Weight]:
        # each term l_i (l_i + n - 2i) is non-negative and increasing in l_i: prune partial sums
        out: list[Weight] = []

        def extend(prefix: list[int], used: int) -> None:
            i = len(prefix)
            if i == self.rank:
                out.append(tuple(prefix))
                return
            top = prefix[-1] if prefix else math.isqrt(bound)
            for l in range(top + 1):
                cost = l * (l + self._two_rho[i])
                if used + cost > bound:
                    break
                extend([*prefix, l], used + cost)

        extend([], 0)
        return out


class UnitaryWeights(GroupWeights):
    """Partitions labelling the irreducible representations of SU(n), ``n >= 2``.

    A label is :math:`(\\lambda_1, \\dots, \\lambda_{n-1})`; :math:`\\lambda_n = 0` is implied.

    Args:
        n: the matrix size.
    """

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n
        self.rank = n - 1
        self.scale = n

    def scaled_eigenvalue(self, weight: Weight) -> int:
        total = sum(weight)
        squares = sum(l * l for l in weight)
        linear = sum(l * (self.n + 1 - 2 * i) for i, l in enumerate(weight, start=1))
        return self.n * (squares + linear) - total * total

    def dimension(self, weight: Weight) -> int:
        full = (*weight, 0)
        numerators, denominators = [], []
        for i in range(self.n):
            for j in range(i + 1, self.n):
                numerators.append(full[i] - full[j] + j - i)
                denominators.append(j - i)
        return _exact_ratio(numerators, denominators)

    def up_to_scaled(self, bound: int) -> list[Weight]:
        # the trace-free part has range l_1, so its squared norm is >= l_1^2 / 2, and
        # <2 rho, l> >= 0 for a partition: n * eigenvalue >= n l_1^2 / 2
        largest = math.isqrt(2 * bound // self.n)
        out: list[Weight] = []

        def extend(prefix: list[int]) -> None:
            if len(prefix) == self.rank:
                if self.scaled_eigenvalue(tuple(prefix)) <= bound:
                    out.append(tuple(prefix))
                return
            top = prefix[-1] if prefix else largest
            for l in range(top + 1):
                extend([*prefix, l])

        extend([])
        return out


@functools.cache
def orthogonal_weights(n: int) -> OrthogonalWeights:
    """The labels of SO(n), one instance per ``n`` for the process: its levels are pure maths,
    enumerated once (about 1 s for the thousands of levels a kernel on SO(5) lists), however many
    spaces and kernels are built."""
    return OrthogonalWeights(n)


@functools.cache
def unitary_weights(n: int) -> UnitaryWeights:
    """The labels of SU(n), one instance per ``n`` for the process (see
    :func:`orthogonal_weights`)."""
    return UnitaryWeights(n)
