r"""Kernel sums on SO(n) and SU(n): levels of irreducible representations, characters on the fly.

A level of a compact Lie group is the set of irreducible representations :math:`\pi` sharing one
Casimir eigenvalue; its reproducing kernel is
:math:`G_l(x, y) = \sum_{\pi \in l} d_\pi \chi_\pi(x^{-1} y)`, and
:math:`\sum_l w_l G_l = \sum_\pi w_{l(\pi)} d_\pi \chi_\pi(x^{-1}y)`. Each pair of points is
reduced to the complete homogeneous symmetric polynomials of the eigenvalues of
:math:`U = x^{-1}y` (through traces of powers of :math:`U`), and every character is a small
Jacobi–Trudi determinant of them (:mod:`manibo.harmonics.class_functions`). Pairs are processed in
row blocks; when gradients are needed each block is recomputed in the backward pass
(checkpointing), so memory stays at a block's working set plus the output.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from manibo.exceptions import ConfigurationError
from manibo.harmonics.class_functions import (
    JacobiTrudiCharacters,
    complete_from_elementary,
    elementary_from_power_sums,
)
from manibo.harmonics.weights import GroupWeights
from manibo.spaces.base import pairwise_in_chunks

#: numbers held per pair in a block (the block size is chosen to keep about this many in memory)
_BLOCK_NUMBERS = 1 << 22

#: blocks with more pairs than this are recomputed in the backward pass instead of kept
_CHECKPOINT_PAIRS = 4096

MAX_DEFAULT_COST = 12_000
"""Arithmetic per pair of points (:meth:`JacobiTrudiCharacters.cost`) that a group's default level
cap allows: about 1,300 levels on SO(4) and SO(5), 700 on SU(3), 140 on SO(6) and 80 on SU(4)."""

Relative = Callable[[Tensor, Tensor, bool], Tensor]


def matrix_size(n: object, group: str) -> int:
    """``n`` as an int, or a ``ConfigurationError`` unless it is an integer ``>= 2``."""
    if isinstance(n, bool) or not isinstance(n, (int, float)) or int(n) != n or n < 2:
        raise ConfigurationError(f"`n` must be an integer >= 2, got {group}({n!r}).")
    return int(n)


def attach_characters(
    space, weights: GroupWeights, unitary: bool, relative: Relative
) -> CharacterSum:
    """The character sums of ``space`` (an SO(n) or SU(n)), and its level caps set from them."""
    characters = CharacterSum(weights, space.n, unitary, relative)
    space.default_max_levels = _levels_within(characters.group, unitary, MAX_DEFAULT_COST)
    space.max_scan_levels = 8 * space.default_max_levels
    return characters


@functools.cache
def _levels_within(weights: GroupWeights, unitary: bool, max_cost: int) -> int:
    """:meth:`CharacterSum.levels_within`, once per group (``weights`` is shared per group, see
    :func:`~manibo.harmonics.weights.orthogonal_weights`) and cost."""
    return CharacterSum(weights, 0, unitary, None).levels_within(max_cost)


class CharacterSum:
    r"""Evaluates :math:`\sum_l w_l G_l(x_1, x_2)` on a matrix group.

    Args:
        weights: the group's labels (:class:`~manibo.harmonics.weights.GroupWeights`).
        n: the matrix size.
        unitary: SU(n) (complex matrices, Schur characters) rather than SO(n) (O(n) characters).
        relative: ``relative(a, b, diag)`` returns the matrices :math:`U = a^{-1} b`, shape
            ``(..., r, m, n, n)`` for points ``a (..., r, D)`` and ``b (..., m, D)``, or
            ``(..., r, n, n)`` when ``diag``.
    """

    def __init__(self, weights: GroupWeights, n: int, unitary: bool, relative: Relative) -> None:
        self.group = weights
        self.n = n
        self.unitary = unitary
        self.relative = relative
        self._tables: dict[int, tuple[JacobiTrudiCharacters, Tensor, Tensor]] = {}

    def __deepcopy__(self, memo: dict) -> CharacterSum:
        # a cache of pure maths: copies of models (fantasies) share it instead of copying it
        return self

    def levels(self, num_levels: int) -> tuple[Tensor, Tensor]:
        """Eigenvalues and multiplicities of the lowest levels, float64 ``(num_levels,)`` each."""
        levels = self.group.levels(num_levels)
        eigenvalues = [float(level.eigenvalue) for level in levels]
        multiplicities = [float(level.multiplicity) for level in levels]
        return (
            torch.tensor(eigenvalues, dtype=torch.float64),
            torch.tensor(multiplicities, dtype=torch.float64),
        )

    def levels_within(self, max_cost: int) -> int:
        """The most levels whose character sum costs at most ``max_cost`` per pair (at least 1)."""
        count = 1
        while True:
            more = 2 * count
            cost = JacobiTrudiCharacters(
                [w for level in self.group.levels(more) for w in level.weights],
                orthogonal=not self.unitary,
            ).cost()
            if cost > max_cost:
                break
            count = more
        low, high = count, 2 * count  # cost(low) <= max_cost < cost(high)
        while high - low > 1:
            mid = (low + high) // 2
            labels = [w for level in self.group.levels(mid) for w in level.weights]
            if JacobiTrudiCharacters(labels, orthogonal=not self.unitary).cost() <= max_cost:
                low = mid
            else:
                high = mid
        return low

    def table(self, num_levels: int) -> tuple[JacobiTrudiCharacters, Tensor, Tensor]:
        """Characters of every label in the first ``num_levels`` levels, with level index and
        dimension of each label (``(G,)`` each)."""
        if num_levels not in self._tables:
            levels = self.group.levels(num_levels)
            labels = [w for level in levels for w in level.weights]
            index = [i for i, level in enumerate(levels) for _ in level.weights]
            dims = [float(d) for level in levels for d in level.dimensions]
            if len(self._tables) >= 8:
                self._tables.clear()
            self._tables[num_levels] = (
                JacobiTrudiCharacters(labels, orthogonal=not self.unitary),
                torch.tensor(index),
                torch.tensor(dims, dtype=torch.float64),
            )
        return self._tables[num_levels]

    def complete(self, u: Tensor, count: int) -> Tensor:
        r"""Complete homogeneous symmetric polynomials of the eigenvalues of ``u``.

        Args:
            u: matrices ``(..., n, n)``.
            count: number of polynomials :math:`h_0, \dots, h_{count-1}`.

        Returns:
            Shape ``(..., count, p)`` for ``u`` of shape ``(..., p, n, n)`` (complex for SU(n)).
        """
        half = self.n // 2
        powers = [u]
        while len(powers) < (half + 1) // 2:
            powers.append(powers[-1] @ u)
        sums = []
        for k in range(1, half + 1):
            a, b = (k + 1) // 2, k // 2
            left = powers[a - 1]
            if b == 0:
                sums.append(left.diagonal(dim1=-2, dim2=-1).sum(-1))
            else:
                sums.append((left * powers[b - 1].transpose(-1, -2)).sum((-1, -2)))
        elementary = elementary_from_power_sums(torch.stack(sums, -1), self.n, self.unitary)
        return complete_from_elementary(elementary, count, dim=-2)

    def characters(self, u: Tensor, num_levels: int) -> Tensor:
        r"""Characters of the representations of the first ``num_levels`` levels at ``u``.

        Args:
            u: group elements as matrices ``(..., n, n)``.
            num_levels: number of levels.

        Returns:
            Shape ``(..., G)``, in the order of :meth:`labels` (complex for SU(n)); for even
            ``n`` a label with :math:`\lambda_m > 0` gives the sum of the characters of
            :math:`(\dots, \pm\lambda_m)`.
        """
        table, _, _ = self.table(num_levels)
        h = self.complete(u.reshape(-1, self.n, self.n), table.degree)
        values = table.values(h).transpose(-1, -2)
        return values.reshape(*u.shape[:-2], len(table))

    def labels(self, num_levels: int) -> list[tuple[int, ...]]:
        """Highest weights of the representations of the first ``num_levels`` levels, in order."""
        return self.table(num_levels)[0].labels

    def __call__(self, weights: Tensor, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        """The kernel sum; shapes as in :meth:`~manibo.spaces.base.CompactSpace.spectral_sum`."""
        characters, index, dims = self.table(weights.shape[-1])
        coeffs = weights.index_select(-1, index.to(weights.device)) * dims.to(weights)

        def block(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
            u = self.relative(a, b, diag)
            pairs = u.shape[:-2]  # (*batch, r) or (*batch, r, m)
            h = self.complete(
                u.reshape(*pairs[: -1 - (not diag)], -1, self.n, self.n), characters.degree
            )
            total = characters.weighted_sum(h, c)
            total = total.real if total.is_complex() else total
            return total.reshape(*total.shape[:-1], *pairs[len(pairs) - 1 - (not diag) :])

        needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (weights, x1, x2))

        def run(a: Tensor, b: Tensor) -> Tensor:
            pairs = a.shape[:-1].numel() * (1 if diag else b.shape[-2])
            if needs_grad and pairs > _CHECKPOINT_PAIRS:
                return checkpoint(block, a, b, coeffs, use_reentrant=False)
            return block(a, b, coeffs)

        if diag:
            return run(x1, x2)
        per_pair = 2 * self.n * self.n * (1 + self.n // 4) + 4 * characters.rows * characters.width
        per_pair *= 2 if self.unitary else 1
        target = max(64, _BLOCK_NUMBERS // per_pair)
        return pairwise_in_chunks(run, x1, x2, point_ndim=1, target_elements=target)


def rotation_angles(m: Tensor) -> Tensor:
    r"""Angles :math:`|\arg z| \in [0, \pi]` of the eigenvalues of real or unitary ``(..., n, n)``.

    Returns:
        Shape ``(..., n)``, real.
    """
    z = torch.linalg.eigvals(m)
    return torch.atan2(z.imag.abs(), z.real)
