r"""An integer parameter: the integers ``low .. high``, the nodes of a path graph."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sps
import torch
from torch import Tensor

from manibo._validation import check_int
from manibo.exceptions import ConfigurationError
from manibo.spaces.base import content_digest
from manibo.spaces.eigenvector_space import INDEX_TOL
from manibo.spaces.graph import Graph

MAX_VALUES = 10_000
"""The most integers a range may hold (its eigenvectors are an ``(n, min(n, 500))`` table)."""


class Integers(Graph):
    r"""The integers ``low .. high`` as the nodes of a path graph: a point is the integer itself,
    as a float, ``(*batch, 1)``.

    Neighbouring integers are joined by edges of weight :math:`(n - 1)^2`, :math:`n` the number of
    values, so the kernels are the graph kernels of Borovitskiy et al. (2021) on a path with a
    lengthscale in units of the whole range, as a :class:`~manibo.spaces.Box`'s is in units of
    its width: the Laplacian's spectrum tends to the interval's, :math:`(\pi k)^2`, and a
    lengthscale of 1 suits a function that varies once across the range whatever ``low`` and
    ``high`` are. ``distance`` is :math:`|x - y|`, in steps. The spectrum is known in closed form,
    :math:`\lambda_k = (n - 1)^2 (2 - 2\cos(\pi k / n))` and
    :math:`\phi_k(i) \propto \cos(\pi k (i + \tfrac12) / n)`, :math:`k = 0 .. n-1` (the
    discrete cosine transform), so the space is built in milliseconds for any range up to
    :data:`MAX_VALUES` values. In a product with continuous factors (``sphere2*integers?range=1:8``)
    it models an ordinal setting beside a point on a manifold.

    Args:
        low, high: the smallest and the largest integer, ``low < high``.
        num_eigenpairs: cap on the eigenpairs kept (see :class:`~manibo.spaces.Graph`).
    """

    _noun = "integer"
    is_setting = True

    def __init__(self, low: int, high: int, num_eigenpairs: int | None = None) -> None:
        low, high = check_int("low", low, minimum=None), check_int("high", high, minimum=None)
        if not low < high:
            raise ConfigurationError(
                f"`Integers` needs low < high (at least two values), got low={low}, high={high}."
            )
        if high - low + 1 > MAX_VALUES:
            raise ConfigurationError(
                f"`Integers({low}, {high})` holds {high - low + 1} values, more than {MAX_VALUES}; "
                "for a range this wide use a box coordinate (Box) and round it in your objective."
            )
        n = high - low + 1
        steps = np.arange(n - 1)
        weight = float(n - 1) ** 2
        path = sps.coo_matrix((np.full(n - 1, weight), (steps, steps + 1)), shape=(n, n))
        self.low, self.high = low, high
        super().__init__((path + path.T).tocsr(), num_eigenpairs=num_eigenpairs)

    def _lowest_levels(self, laplacian, mass, num_eigenpairs):
        n = laplacian.shape[0]
        k = np.arange(n if n <= num_eigenpairs else num_eigenpairs)
        values = (n - 1) ** 2 * (2.0 - 2.0 * np.cos(np.pi * k / n))
        vectors = np.cos(np.pi * np.outer(np.arange(n) + 0.5, k) / n)
        vectors /= np.linalg.norm(vectors, axis=0)
        bound = math.inf if len(k) == n else (n - 1) ** 2 * (2 - 2 * math.cos(math.pi * len(k) / n))
        return values, np.ones(len(k), dtype=int), vectors, bound

    def fingerprint(self) -> str:
        """Hash of the range and the eigenpairs kept."""
        return content_digest("Integers", self.low, self.high, self.num_levels_available)

    def __repr__(self) -> str:
        return f"Integers({self.low}, {self.high})"

    def _indices(self, x: Tensor) -> Tensor:
        return (x[..., 0].round() - self.low).long()

    def random(self, n, generator=None, dtype=torch.float64, device=None) -> Tensor:
        """Draw ``n`` integers uniformly; shape ``(n, 1)``."""
        self._check_dtype_holds_the_range(dtype)
        return super().random(n, generator=generator, dtype=dtype, device=device) + self.low

    def all_points(self, dtype: torch.dtype = torch.float64, device=None) -> Tensor:
        """Every integer ``low .. high``, shape ``(n, 1)``."""
        self._check_dtype_holds_the_range(dtype)
        return super().all_points(dtype=dtype, device=device) + self.low

    def _check_dtype_holds_the_range(self, dtype: torch.dtype) -> None:
        exact = 2 / torch.finfo(dtype).eps  # every integer up to it has its own float
        if max(abs(self.low), abs(self.high)) > exact:
            raise ConfigurationError(
                f"{self!r} holds integers beyond {exact:.0f}, which {dtype} cannot tell apart "
                "(neighbours round to one value); use torch.float64."
            )

    def _check_membership(self, x: Tensor, name: str) -> None:
        value = x[..., 0]
        fractional = (value - value.round()).abs() > INDEX_TOL
        if fractional.any():
            raise self._membership_error(
                name,
                f"entries must be integers (within {INDEX_TOL:g}), but {int(fractional.sum())} "
                f"are not, e.g. {float(value[fractional][0])!r}",
                f"Round them with `space.project({name})`",
            )
        if value.numel() and (value.min() < self.low or value.max() > self.high):
            raise self._membership_error(
                name,
                f"entries must lie in {self.low} .. {self.high}, got values in "
                f"[{float(value.min()):g}, {float(value.max()):g}]",
                f"Clamp them with `space.project({name})`",
            )

    def project(self, x: Tensor) -> Tensor:
        """Round to the nearest integer and clamp into ``low .. high``."""
        return x.round().clamp(self.low, self.high)

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        """:math:`|x - y|` of broadcastable points ``(*batch, 1)``; shape ``(*batch)``."""
        return (x[..., 0] - y[..., 0]).round().abs()
