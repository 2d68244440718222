r"""A categorical parameter: ``k`` unordered choices, the nodes of a complete graph."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from manibo._validation import check_int
from manibo.spaces.base import content_digest
from manibo.spaces.graph import Graph

MAX_CHOICES = 2000
"""The most choices (the eigenvectors are a ``(k, k)`` table)."""


class Categorical(Graph):
    r"""``k`` unordered choices ``0 .. k-1`` as the nodes of the complete graph :math:`K_k`; a point
    is the index of a choice, as a float, ``(*batch, 1)``.

    Every pair of choices is joined by an edge of weight 1, so no choice is nearer to one than to
    another: the Laplacian :math:`kI - \mathbf{1}\mathbf{1}^\top` has the eigenvalue 0 once and
    :math:`k` with multiplicity :math:`k - 1`, and every kernel of manibo on this space is
    :math:`a + b\,[x = x']` (the exchangeable kernel of categorical Bayesian optimisation, with
    the lengthscale setting :math:`b / a`). ``distance`` is 0 between equal choices and 1
    otherwise. The spectrum is built in closed form: the constant vector and the Helmert basis of
    the vectors that sum to 0. In a product (``so3*categorical3``) it models a choice beside a
    point on a manifold, such as a gripper among three for a grasp orientation.

    Args:
        k: the number of choices, at least 2.
    """

    _noun = "choice"
    is_setting = True

    def __init__(self, k: int) -> None:
        self.k = check_int("k", k, minimum=2, maximum=MAX_CHOICES)
        super().__init__(np.ones((self.k, self.k)) - np.eye(self.k))

    def _lowest_levels(self, laplacian, mass, num_eigenpairs):
        k = self.k
        # Helmert: the j-th vector is j ones, then -j, then zeros, over sqrt(j (j + 1))
        j = np.arange(1, k)
        vectors = np.triu(np.ones((k, k - 1)))  # entry (i, j - 1) is 1 for i < j
        vectors[j, j - 1] = -j
        vectors /= np.sqrt(j * (j + 1.0))
        constant = np.full((k, 1), k**-0.5)
        values, counts = np.array([0.0, float(k)]), np.array([1, k - 1])
        return values, counts, np.hstack([constant, vectors]), np.inf

    def fingerprint(self) -> str:
        """Hash of the number of choices."""
        return content_digest("Categorical", self.k)

    def __repr__(self) -> str:
        return f"Categorical({self.k})"

    def embed(self, x: Tensor) -> Tensor:
        r"""The choice as a one-hot vector divided by :math:`\sqrt2`, so that two different choices
        are 1 apart as ``distance`` says: ``(*batch, 1)`` → ``(*batch, k)``."""
        one_hot = torch.nn.functional.one_hot(self._indices(x), self.k).to(x.dtype)
        return one_hot / 2**0.5

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        """1 between different choices, 0 between equal ones, of broadcastable points
        ``(*batch, 1)``; shape ``(*batch)``."""
        return (self._indices(x) != self._indices(y)).to(torch.promote_types(x.dtype, y.dtype))
