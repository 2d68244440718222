r"""Characters of SO(n) and SU(n) from the characteristic polynomial of a group element.

A character is a symmetric polynomial in the eigenvalues :math:`z_1, \dots, z_n` of the group
element. Weyl's character formula writes it as a ratio of alternants, which is 0/0 wherever two
eigenvalues coincide (at the identity, and on a set of measure zero that points come arbitrarily
close to). Here the ratio is never formed: the Jacobi–Trudi identities write the same polynomial as
a small determinant of complete homogeneous symmetric polynomials :math:`h_k(z)`,

.. math::
    \chi^{\mathrm{SU}(n)}_\lambda = s_\lambda(z) = \det\big[h_{\lambda_i-i+j}\big]_{i,j\le\ell},
    \qquad
    \chi^{\mathrm{O}(n)}_\lambda = \det\big[h_{\lambda_i-i+j} - h_{\lambda_i-i-j}\big]_{i,j\le\ell}

(the second is Koike and Terada's, 1987; :math:`\ell` is the number of non-zero parts of
:math:`\lambda`, :math:`h_k = 0` for :math:`k < 0`). Restricted to SO(n) the O(n) character of a
partition with at most :math:`\lfloor n/2\rfloor` parts is the character of the representation of
highest weight :math:`\lambda`, or, for even ``n`` and :math:`\lambda_m > 0`, the sum of the two
characters of highest weights :math:`(\dots, \pm\lambda_m)`.

The :math:`h_k` come from the characteristic polynomial: power sums
:math:`p_k = \mathrm{tr}(U^k)` give the elementary symmetric polynomials :math:`e_k` by Newton's
identities, only up to :math:`k = \lfloor n/2 \rfloor` because :math:`\det U = 1` makes the
coefficients palindromic (SO(n): :math:`e_{n-k} = e_k`; SU(n): :math:`e_{n-k} = \bar e_k`), and
:math:`\sum_i (-1)^i e_i h_{k-i} = 0` gives every :math:`h_k`. Every step is a polynomial in the
entries of :math:`U` (no eigenvalues, no division but by the integers of Newton's identities), so
the characters and their gradients are smooth everywhere, the identity included.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

import torch
from torch import Tensor

from manibo.harmonics.weights import Weight

_LEIBNIZ_MAX = 4
"""Determinants up to this size are expanded over permutations (smooth gradients everywhere)."""

SOLVE_ELEMENTS = 1 << 20
"""Largest (points x count²) for which :func:`complete_from_elementary` solves one triangular
system instead of stepping the recurrence."""


def elementary_from_power_sums(power_sums: Tensor, n: int, conjugate: bool) -> Tensor:
    r"""Coefficients :math:`e_0, \dots, e_n` of the characteristic polynomial of :math:`U`.

    Args:
        power_sums: :math:`p_k = \mathrm{tr}(U^k)` for :math:`k = 1..\lfloor n/2 \rfloor`, shape
            ``(..., n // 2)`` (real for SO(n), complex for SU(n)).
        n: the matrix size.
        conjugate: SU(n) (:math:`e_{n-k} = \bar e_k`) rather than SO(n) (:math:`e_{n-k} = e_k`).

    Returns:
        Shape ``(..., n + 1)``.
    """
    half = n // 2
    e = [torch.ones_like(power_sums[..., 0])]
    for k in range(1, half + 1):
        total = sum((-1) ** (i - 1) * e[k - i] * power_sums[..., i - 1] for i in range(1, k + 1))
        e.append(total / k)
    for k in range(half + 1, n + 1):
        mirror = e[n - k]
        e.append(mirror.conj() if conjugate else mirror)
    return torch.stack(e, dim=-1)


def complete_from_elementary(elementary: Tensor, count: int, dim: int = -1) -> Tensor:
    r"""Complete homogeneous symmetric polynomials :math:`h_0, \dots, h_{count-1}`.

    They solve :math:`\sum_{i=0}^{\min(k, n)} (-1)^i e_i h_{k-i} = \delta_{k0}`, a lower
    triangular Toeplitz system. Few points (``count**2`` times their number below
    :data:`SOLVE_ELEMENTS`) take one batched triangular solve; many points take the recurrence
    :math:`h_k = \sum_{i=1}^{\min(k, n)} (-1)^{i-1} e_i h_{k-i}`, ``count`` steps over all of them.

    Args:
        elementary: :math:`e_0, \dots, e_n`, shape ``(..., n + 1)``.
        count: number of polynomials.
        dim: where the new index goes in the result.

    Returns:
        Shape ``(..., count)`` (for ``dim=-1``; ``(..., count, p)`` for ``dim=-2``).
    """
    n = elementary.shape[-1] - 1
    signs = torch.tensor([(-1.0) ** i for i in range(n + 1)], device=elementary.device)
    signed = elementary * signs.to(elementary.real.dtype)  # (-1)^i e_i
    if elementary[..., 0].numel() * count * count <= SOLVE_ELEMENTS:
        index = torch.arange(count, device=elementary.device)
        offset = index[:, None] - index[None, :]  # k - j
        padded = torch.cat([signed, signed.new_zeros(*signed.shape[:-1], count)], -1)
        toeplitz = padded[..., offset.clamp(0, n + 1).masked_fill(offset < 0, n + 1)]
        rhs = signed.new_zeros(*signed.shape[:-1], count, 1)
        rhs[..., 0, 0] = 1.0
        h = torch.linalg.solve_triangular(toeplitz, rhs, upper=False, unitriangular=True)[..., 0]
        return h if dim == -1 else h.movedim(-1, dim)
    h = [torch.ones_like(elementary[..., 0])]
    for k in range(1, count):
        total = -signed[..., 1] * h[k - 1]
        for i in range(2, min(k, n) + 1):
            total = total - signed[..., i] * h[k - i]
        h.append(total)
    return torch.stack(h, dim=dim)


@functools.cache
def _permutations(k: int) -> list[tuple[int, tuple[int, ...]]]:
    """Signs and permutations of ``range(k)``."""
    out = []
    for perm in itertools.permutations(range(k)):
        inversions = sum(a > b for i, a in enumerate(perm) for b in perm[i + 1 :])
        out.append((-1 if inversions % 2 else 1, perm))
    return out


class JacobiTrudiCharacters:
    r"""Weighted sums of characters, each a Jacobi–Trudi determinant in :math:`h_k`.

    Row :math:`i` of label :math:`\lambda`'s matrix depends on :math:`a_i = \lambda_i - i` only:
    its entry in column :math:`j` is :math:`C_j(a_i)`, with :math:`C_j(a) = h_{a+j}` (Schur) or
    :math:`h_{a+j} - h_{a-j}` (O(n)). Expanding each determinant along its first row,

    .. math::
        \sum_g c_g \chi_g = \sum_j (-1)^{j-1} \sum_\tau
        \Big(\sum_a W_{\tau a} C_j(a)\Big) M_{\tau j},
        \qquad W_{\tau a} = c_g \text{ for the label } g \text{ with rows } (a, \tau),

    where :math:`\tau` runs over the distinct remaining rows :math:`(a_2, \dots, a_\ell)` and
    :math:`M_{\tau j}` is the minor without column :math:`j`. The inner sums are one matrix
    product per column for all labels at once, and the minors are needed per row tail only (a few
    dozen, however many labels there are).

    Args:
        labels: partitions (non-increasing non-negative integers, zeros allowed).
        orthogonal: the O(n) form rather than the Schur form.
    """

    def __init__(self, labels: Sequence[Weight], orthogonal: bool) -> None:
        self.labels = [tuple(int(v) for v in label) for label in labels]
        self.orthogonal = orthogonal
        lengths = [sum(1 for v in label if v > 0) for label in self.labels]
        self.width = max(lengths, default=0)
        tops = [
            lab[0] + ell - 1 if ell else 0 for lab, ell in zip(self.labels, lengths, strict=True)
        ]
        self.degree = max(tops, default=0) + 1
        r"""Number of :math:`h_k` needed (:math:`k = 0..\mathrm{degree}-1`)."""
        # rows a = λ_i - i range over [-width, degree - 1]; row index r = a + width
        self.rows = self.degree + self.width
        self._groups = []
        for length in sorted(set(lengths)):
            members = [g for g, ell in enumerate(lengths) if ell == length]
            rows = [
                [self.labels[g][i] - i - 1 + self.width for i in range(length)] for g in members
            ]
            tails = sorted({tuple(r[1:]) for r in rows}) if length else []
            position = {t: k for k, t in enumerate(tails)}
            flat = [position[tuple(r[1:])] * self.rows + r[0] for r in rows] if length else []
            self._groups.append(
                (
                    length,
                    torch.tensor(members, dtype=torch.long),
                    torch.tensor(tails, dtype=torch.long).reshape(len(tails), max(length - 1, 0)),
                    torch.tensor(flat, dtype=torch.long),
                )
            )

    def __len__(self) -> int:
        return len(self.labels)

    def columns(self, complete: Tensor) -> list[Tensor]:
        r""":math:`C_j(a)` for ``j = 1..width`` and every row ``a``, each ``(*batch, rows, P)``.

        Args:
            complete: :math:`h_0, \dots, h_{K-1}`, ``K >= degree``, shape ``(*batch, K, P)``.
        """
        complete = complete[..., : self.degree, :]
        pad = complete.new_zeros(*complete.shape[:-2], 2 * self.width + 1, complete.shape[-1])
        # padded[..., k + 2 width + 1, :] = h_k; zeros stand for k < 0 and for k >= degree,
        # which only entries outside every determinant reach
        padded = torch.cat([pad, complete, pad[..., : self.width, :]], -2)
        shift = self.width + 1
        out = []
        for j in range(1, self.width + 1):
            column = padded[..., shift + j : shift + j + self.rows, :]
            if self.orthogonal:
                column = column - padded[..., shift - j : shift - j + self.rows, :]
            out.append(column)
        return out

    def weighted_sum(self, complete: Tensor, coeffs: Tensor) -> Tensor:
        r""":math:`\sum_g c_g \chi_g` over the pairs of a block.

        Args:
            complete: :math:`h_0, \dots, h_{K-1}` with ``K >= degree``, shape
                ``(*batch, K, P)`` (``P`` pairs).
            coeffs: per-label coefficients, shape ``(*cbatch, G)``, ``cbatch`` broadcasting
                against ``batch``.

        Returns:
            Shape ``(*broadcast(batch, cbatch), P)``, of the dtype of ``complete``.
        """
        columns = self.columns(complete)
        coeffs = coeffs.to(complete.dtype)
        total = None
        for length, members, tails, flat in self._groups:
            c = coeffs.index_select(-1, members.to(coeffs.device))
            if length == 0:
                term = c.sum(-1, keepdim=True) * torch.ones_like(complete[..., 0, :])
            else:
                term = self._expansion(columns, c, length, tails, flat)
            total = term if total is None else total + term
        return total

    def values(self, complete: Tensor) -> Tensor:
        r"""Every character, shape ``(*batch, G, P)``.

        Args:
            complete: :math:`h_0, \dots, h_{K-1}` with ``K >= degree``, shape ``(*batch, K, P)``.
        """
        columns = self.columns(complete)
        out = complete.new_zeros(*complete.shape[:-2], len(self.labels), complete.shape[-1])
        for length, members, tails, flat in self._groups:
            members = members.to(complete.device)
            if length == 0:
                out[..., members, :] = 1.0
                continue
            flat = flat.to(complete.device)
            rows = [flat % self.rows, *tails.to(complete.device)[flat // self.rows].unbind(-1)]
            entries = [[columns[j].index_select(-2, row) for j in range(length)] for row in rows]
            out[..., members, :] = _det_entries(entries)
        return out

    def _expansion(self, columns, c: Tensor, length: int, tails: Tensor, flat: Tensor) -> Tensor:
        """First-row expansion of one group's determinants, summed with coefficients ``c``."""
        device = c.device
        count = tails.shape[0]
        weights = c.new_zeros(*c.shape[:-1], count * self.rows)
        weights = weights.index_add(-1, flat.to(device), c)
        weights = weights.reshape(*c.shape[:-1], count, self.rows)
        tail_index = tails.to(device)
        entries: dict[tuple[int, int], Tensor] = {}  # (tail row, column) -> (..., tails, P)

        def entry(i: int, k: int) -> Tensor:
            if (i, k) not in entries:
                entries[(i, k)] = columns[k].index_select(-2, tail_index[:, i])
            return entries[(i, k)]

        total = None
        for j in range(length):
            inner = weights @ columns[j]  # (..., tails, P)
            others = [k for k in range(length) if k != j]
            if others:
                inner = inner * _det_entries(
                    [[entry(i, k) for k in others] for i in range(length - 1)]
                )
            term = inner.sum(-2)
            total = term if total is None else (total - term if j % 2 else total + term)
        return total

    def cost(self) -> int:
        """Arithmetic per pair of :meth:`weighted_sum`, in units of one multiply-add of a matrix
        product (elementwise work counted eight times: it runs from memory, not from cache)."""
        total = 0
        for length, _, tails, _ in self._groups:
            count = tails.shape[0]
            total += length * count * (self.rows + 8 * (length * length + 2))
        return total


def _det_entries(entries: list[list[Tensor]]) -> Tensor:
    """Determinant of a small matrix given as a list of rows of equally shaped tensors."""
    k = len(entries)
    if k > _LEIBNIZ_MAX:
        rows = [torch.stack(row, -1) for row in entries]
        return torch.linalg.det(torch.stack(rows, -2))
    total = None
    for sign, perm in _permutations(k):
        term = math.prod((entries[i][j] for i, j in enumerate(perm)), start=1.0)
        total = term if total is None else (total + term if sign > 0 else total - term)
    return total
