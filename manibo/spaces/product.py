r"""Products of spaces: factorwise geometry; on compact products, kernels summed level by level.

A product with a non-compact factor (a :class:`~manibo.spaces.box.Box`, a hyperbolic space, ...)
has geometry only: its default kernel is the product of the factors' kernels
(:func:`manibo.kernels.matern_kernel`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.spaces._product_features import (
    FeaturePlan,
    factor_features,
    feature_plan,
    feature_sum,
    product_features,
)
from manibo.spaces._product_levels import FactorSpectrum, level_tuples, lowest_sums, sums_up_to
from manibo.spaces._product_series import product_series
from manibo.spaces.base import (
    CompactSpace,
    Space,
    UnsupportedError,
    content_digest,
    pairwise_in_chunks,
    safe_sqrt,
)
from manibo.spaces.circle import Circle

MAX_DEFAULT_TUPLES = 2048
"""Tuples of factor levels that the default level cap of a product space allows."""

MAX_DEFAULT_FEATURES = 4096
"""Product eigenfunctions that the default level cap allows when the factors have them."""

FEATURES_PER_TUPLE = 16
"""Product eigenfunctions per tuple of factor levels up to which kernel sums are matrix products
of eigenfunctions rather than level series (the torus has at most 2^k per tuple)."""


class ProductSpace(Space):
    r"""The product :math:`M_1 \times \dots \times M_k` of spaces with 1-D point shapes.

    A point is the concatenation of its factor points: ``(*batch, sum of factor sizes)``. Geometry
    is factorwise, with distance :math:`\sqrt{\sum_i d_i^2}`; on a :class:`~manibo.spaces.box.Box`
    factor a step is clamped to the box and the tangent projection drops the components that
    point out of it at the boundary, so acquisition optimisation respects the bounds.

    When every factor is compact the product is a
    :class:`~manibo.spaces.base.CompactSpace` (an instance of :class:`CompactProductSpace`) with the
    spectrum of the product manifold; otherwise it has no spectrum, and its default kernel is the
    product of the factors' kernels (:func:`manibo.kernels.matern_kernel`).

    Args:
        *factors: spaces whose ``point_shape`` has one dimension.
    """

    def __new__(cls, *factors: Space):
        if cls is ProductSpace and factors and all(isinstance(f, CompactSpace) for f in factors):
            cls = CompactProductSpace
        return super().__new__(cls)

    def __init__(self, *factors: Space) -> None:
        if not factors:
            raise ConfigurationError("`ProductSpace` needs at least one factor space.")
        for i, factor in enumerate(factors):
            if not isinstance(factor, Space) or len(factor.point_shape) != 1:
                raise ConfigurationError(
                    f"factors[{i}] must be a space with 1-D points (Sphere, Circle, Box, "
                    f"SpecialOrthogonal, Graph, Mesh, ...), got {factor!r}."
                )
        for i, factor in enumerate(factors):
            if factor.is_setting and not factor.is_discrete:
                raise ConfigurationError(
                    f"factors[{i}], {factor!r}, sets is_setting but not is_discrete: the values "
                    "of a factor of settings are enumerated, so it must be a finite space "
                    "(is_discrete = True, with all_points)."
                )
        self.factors = tuple(factors)
        sizes = [f.point_shape[0] for f in factors]
        edges = np.cumsum([0, *sizes])
        self.slices = tuple(
            slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)
        )
        self.point_shape = (int(edges[-1]),)
        self.dim = sum(f.dim for f in factors)
        self.is_discrete = all(f.is_discrete for f in factors)

    def __repr__(self) -> str:
        return f"ProductSpace({', '.join(map(repr, self.factors))})"

    def fingerprint(self) -> str:
        """Hash of the class and the factors' fingerprints, in order."""
        cls = type(self)
        return content_digest(cls.__qualname__, *(f.fingerprint() for f in self.factors))

    def split(self, x: Tensor) -> list[Tensor]:
        """The factor points of ``x``: one ``(*batch, size_i)`` tensor per factor."""
        return [x[..., s] for s in self.slices]

    # geometry -------------------------------------------------------------------------------
    def random(self, n, generator=None, dtype=torch.float64, device=None) -> Tensor:
        parts = [f.random(n, generator=generator, dtype=dtype, device=device) for f in self.factors]
        return torch.cat(parts, dim=-1)

    def _shape_advice(self, x: Tensor, name: str) -> str | None:
        """Where each factor's coordinates go in a point, and how to build one."""
        layout = "; ".join(
            f"`{name}[..., {s.start}:{s.stop}]`: {factor!r}"
            + (
                f" (a {factor.matrix_shape[0]}x{factor.matrix_shape[1]} matrix flattened row-major)"
                if factor.matrix_shape is not None
                else ""
            )
            for factor, s in zip(self.factors, self.slices, strict=True)
        )
        sizes = " + ".join(str(s.stop - s.start) for s in self.slices)
        return (
            f"A point of the product is its factors' points side by side ({sizes} numbers): "
            f"{layout}. Build points with `torch.cat([p0, p1, ...], dim=-1)`, and stack them "
            "along the leading dimensions."
        )

    def _check_membership(self, x: Tensor, name: str) -> None:
        self._check_factors(x, name, "_check_membership")

    def _check_on_manifold(self, x: Tensor, name: str) -> None:
        self._check_factors(x, name, "_check_on_manifold")

    def _check_factors(self, x: Tensor, name: str, check: str) -> None:
        """Apply the factors' method ``check`` (``"_check_membership"`` or
        ``"_check_on_manifold"``) to their slices of ``x``, naming the factor on failure."""
        for index, (factor, s) in enumerate(zip(self.factors, self.slices, strict=True)):
            part = f"{name}[..., {s.start}:{s.stop}]"
            try:
                getattr(factor, check)(x[..., s], part)
            except InputDataError as err:
                # the factor's advice names `space`, the user's name for the product: its calls
                # on the slice `part` are the factor's
                advice = str(err).replace("`space.", f"`space.factors[{index}].")
                whole = (  # where the factor advises projecting its slice
                    f"; on the product, `space.project({name})` maps every factor of whole points"
                    if f"`space.factors[{index}].project(" in advice
                    else ""
                )
                raise InputDataError(
                    f"{advice} (`{part}` is factors[{index}] of {self!r}: {factor!r}{whole}.)"
                ) from None

    def point_key(self, x: Tensor) -> tuple[float, ...]:
        """The factors' keys one after the other (:meth:`Space.point_key`)."""
        return tuple(
            v for f, p in zip(self.factors, self.split(x), strict=True) for v in f.point_key(p)
        )

    def snap(self, x: Tensor) -> Tensor:
        """Each factor's coordinates snapped by that factor (:meth:`Space.snap`); shapes
        ``(*batch, ambient dimension)``."""
        return torch.cat([f.snap(p) for f, p in zip(self.factors, self.split(x), strict=True)], -1)

    def project(self, x: Tensor) -> Tensor:
        return torch.cat(
            [f.project(p) for f, p in zip(self.factors, self.split(x), strict=True)], dim=-1
        )

    def to_tangent(self, x: Tensor, v: Tensor) -> Tensor:
        pairs = zip(self.factors, self.split(x), self.split(v), strict=True)
        return torch.cat([f.to_tangent(p, u) for f, p, u in pairs], dim=-1)

    def retract(self, x: Tensor, v: Tensor) -> Tensor:
        pairs = zip(self.factors, self.split(x), self.split(v), strict=True)
        return torch.cat([f.retract(p, u) for f, p, u in pairs], dim=-1)

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        r""":math:`\sqrt{\sum_i d_i(x_i, y_i)^2}`, shape ``(*batch)``."""
        return self._combined(lambda f: f._unchecked("distance"), x, y)  # x, y checked here

    def scaled_distance(self, x: Tensor, y: Tensor) -> Tensor:
        """The factors' scaled distances combined as :meth:`distance` combines theirs, shape
        ``(*batch)``."""
        return self._combined(lambda f: f.scaled_distance, x, y)

    def _combined(self, method: Callable, x: Tensor, y: Tensor) -> Tensor:
        r""":math:`\sqrt{\sum_i d_i(x_i, y_i)^2}` with :math:`d_i` = ``method(factor)``."""
        pairs = zip(self.factors, self.split(x), self.split(y), strict=True)
        parts = [method(f)(p, q) ** 2 for f, p, q in pairs]
        return safe_sqrt(torch.stack(parts, dim=-1).sum(-1))

    def ambient_bounds(self) -> Tensor:
        """The factors' boxes side by side, shape ``(2, size)`` (each factor must have one)."""
        return torch.cat([f.ambient_bounds() for f in self.factors], dim=-1)

    def embed(self, x: Tensor) -> Tensor:
        """Factor embeddings concatenated, shape ``(*batch, sum of embedding sizes)``."""
        return torch.cat(
            [f.embed(p) for f, p in zip(self.factors, self.split(x), strict=True)], dim=-1
        )

    def chart(self, x: Tensor) -> Tensor:
        """Factor charts concatenated, shape ``(*batch, sum of chart sizes)``."""
        pairs = zip(self.factors, self.split(x), strict=True)  # x checked here, factor by factor
        return torch.cat([f._unchecked("chart")(p) for f, p in pairs], dim=-1)

    def all_points(self, dtype: torch.dtype = torch.float64, device=None) -> Tensor:
        """Every point of a product of finite spaces (first factor slowest), ``(count, size)``."""
        grids = [f.all_points(dtype=dtype, device=device) for f in self.factors]
        index = torch.cartesian_prod(*[torch.arange(len(g), device=device) for g in grids])
        index = index.reshape(-1, len(grids))
        return torch.cat([g[index[:, i]] for i, g in enumerate(grids)], dim=-1)


class CompactProductSpace(ProductSpace, CompactSpace):
    r"""A product of compact spaces, with the spectrum of the product manifold.

    ``ProductSpace(*factors)`` returns one when every factor is compact. A product level is the
    set of tuples of factor levels :math:`(l_1, \dots, l_k)` that share one eigenvalue
    :math:`\sum_i \lambda^{(i)}_{l_i}`; its multiplicity is
    :math:`\sum_{\text{tuples}} \prod_i m^{(i)}_{l_i}` and its reproducing kernel is
    :math:`\sum_{\text{tuples}} \prod_i G^{(i)}_{l_i}(x_i, x_i')`. So the Matérn kernel of the
    product manifold is ``GeometricMaternKernel(ProductSpace(...))``, and it is symmetric under
    permuting identical factors (GeometricKernels' default torus kernel, which splits a degenerate
    eigenvalue, is not).

    Args:
        *factors: compact spaces whose ``point_shape`` has one dimension.
    """

    def __init__(self, *factors: CompactSpace) -> None:
        super().__init__(*factors)
        for i, factor in enumerate(self.factors):
            if not isinstance(factor, CompactSpace):
                raise ConfigurationError(f"factors[{i}] must be a compact space, got {factor!r}.")
        self.spectral_dim = sum(f.spectral_dim for f in self.factors)
        self._spectra = [FactorSpectrum(f) for f in self.factors]
        self._levels_cache: tuple[np.ndarray, np.ndarray] = (np.zeros(0), np.zeros((0, 2)))
        self._tables: dict[int, np.ndarray] = {}
        self._plan: FeaturePlan | None = None
        self._plan_levels = 0
        if all(f.num_levels_available is not None for f in self.factors):
            top = sum(s.top for s in self._spectra)
            self.num_levels_available = len(sums_up_to(self._spectra, top)[0])

    @functools.cached_property
    def default_max_levels(self) -> int:
        r"""The most levels holding at most :data:`MAX_DEFAULT_TUPLES` tuples in all (and at most
        :data:`MAX_DEFAULT_FEATURES` eigenfunctions when the factors have eigenfunctions).

        A product sum costs about one factor-series step per tuple, or one multiply-add per
        eigenfunction on the matrix-product path, and both grow like :math:`\lambda^{d/2}`, so the
        cap is set by them (773 levels on the 2-torus by tuples, 86 on the 3-torus and 32 on the
        5-torus) rather than by levels.
        """
        count = 64
        while True:
            if self.num_levels_available is not None:
                count = min(count, self.num_levels_available)
            _, counts = self._level_values(count)
            tuples = np.cumsum(counts[:, 1])
            features = np.cumsum(counts[:, 0]) if self._explicit else np.zeros_like(tuples)
            if (
                tuples[-1] > MAX_DEFAULT_TUPLES
                or features[-1] > MAX_DEFAULT_FEATURES
                or count == self.num_levels_available
            ):
                by_tuples = np.searchsorted(tuples, MAX_DEFAULT_TUPLES, side="right")
                by_features = np.searchsorted(features, MAX_DEFAULT_FEATURES, side="right")
                return max(1, int(min(by_tuples, by_features)))
            count *= 2

    # spectrum -------------------------------------------------------------------------------
    def _level_values(self, num_levels: int) -> tuple[np.ndarray, np.ndarray]:
        """Eigenvalues ``(L,)`` and ``(L, 2)`` multiplicities and tuple counts, cached."""
        if len(self._levels_cache[0]) < num_levels:
            count = max(num_levels, 2 * len(self._levels_cache[0]))
            if self.num_levels_available is not None:
                count = max(num_levels, min(count, self.num_levels_available))
            self._levels_cache = lowest_sums(self._spectra, count)
        values, counts = self._levels_cache
        return values[:num_levels], counts[:num_levels]

    def levels(self, num_levels: int) -> tuple[Tensor, Tensor]:
        values, counts = self._level_values(num_levels)
        return torch.from_numpy(values.copy()), torch.from_numpy(counts[:, 0].copy())

    def level_table(self, num_levels: int) -> np.ndarray:
        """The tuples of factor levels in the first ``num_levels`` levels.

        Returns:
            Integer array ``(R, k + 1)``: factor levels ``l_1..l_k`` and the level index, sorted by
            level and then by tuple.
        """
        if num_levels not in self._tables:
            available = self.num_levels_available
            extra = num_levels + 1 if available is None else min(num_levels + 1, available)
            values, _ = self._level_values(extra)
            if len(self._tables) >= 8:
                self._tables.clear()
            self._tables[num_levels] = level_tuples(self._spectra, values, num_levels)
        return self._tables[num_levels]

    def spectral_sum(self, weights: Tensor, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        r""":math:`\sum_l w_l \sum_{(l_1..l_k) \in l} \prod_i G^{(i)}_{l_i}` in bounded memory.

        When every factor has explicit eigenfunctions and the product eigenfunctions number at
        most :data:`FEATURES_PER_TUPLE` per tuple of factor levels (tori, circles, low-dimensional
        spheres), the sum is :math:`\Phi_1 \mathrm{diag}(w) \Phi_2^\top`, one matrix product
        (:mod:`manibo.spaces._product_features`). Otherwise the factor with the most levels in use
        is innermost: for each outer level, the inner factor's weights over its own levels form
        one factor series, multiplied by the outer factor's level kernel; groups of outer levels
        are batched up to :data:`~manibo.spaces._product_series.BATCH_ELEMENTS` output elements
        and the backward pass recomputes one group at a time. Memory is O(row block x (factors +
        group size)), never one tensor per level (see :mod:`manibo.spaces._product_series`).
        """
        num_levels = weights.shape[-1]
        if self._use_features(num_levels):
            plan = self._feature_plan(num_levels)
            return feature_sum(self.factors, self.slices, plan, weights, x1, x2, diag)
        table = self.level_table(num_levels)
        order = sorted(range(len(self.factors)), key=lambda i: int(table[:, i].max()))
        table = table[:, [*order, -1]]
        table = table[np.lexsort(table[:, :-1].T[::-1])]
        factors = [(self.factors[i], self.slices[i]) for i in order]

        def block(a: Tensor, b: Tensor) -> Tensor:
            return product_series(factors, table, weights, a, b, diag)

        if diag:
            return block(x1, x2)
        return pairwise_in_chunks(block, x1, x2, point_ndim=1)

    @functools.cached_property
    def _explicit(self) -> bool:
        return all(f.has_eigenfunctions for f in self.factors)

    def _use_features(self, num_levels: int) -> bool:
        """Whether kernel sums over the first levels are matrix products of eigenfunctions."""
        if not self._explicit:
            return False
        _, multiplicities = self.levels(num_levels)
        return float(multiplicities.sum()) <= FEATURES_PER_TUPLE * len(self.level_table(num_levels))

    def _feature_plan(self, num_levels: int) -> FeaturePlan:
        """The product eigenfunctions of the first ``num_levels`` levels.

        One plan is kept, for the most levels asked so far (grown by doubling), and cut to size:
        eigenfunctions are ordered by level.
        """
        if not self._explicit:
            raise UnsupportedError(f"{self!r} has a factor without explicit eigenfunctions.")
        if self._plan is None or self._plan_levels < num_levels:
            levels = max(num_levels, 2 * self._plan_levels)
            if self.num_levels_available is not None:
                levels = max(num_levels, min(levels, self.num_levels_available))
            self._plan = feature_plan(list(self.factors), self.level_table(levels))
            self._plan_levels = levels
        return self._plan.prefix(num_levels) if num_levels < self._plan_levels else self._plan

    def eigenfunctions(self, x: Tensor, num_levels: int) -> Tensor:
        """Products of factor eigenfunctions by level (tuples ascending, first factor slowest).

        Args:
            x: points, shape ``(*batch, n, size)``.

        Returns:
            Shape ``(*batch, n, M)``, ``M`` the sum of the first ``num_levels`` multiplicities.
        """
        plan = self._feature_plan(num_levels)
        features = factor_features(self.factors, self.slices, plan, x)
        return product_features(plan, features).transpose(-1, -2)


class Torus(CompactProductSpace):
    r"""The flat torus :math:`(S^1)^n`, points as angles ``(*batch, n)`` in :math:`[0, 2\pi)`.

    Levels group the integer vectors :math:`j` with equal :math:`\|j\|^2`, so the kernel depends
    only on the angle differences and is symmetric under permuting coordinates.

    Args:
        n: number of circles, ``>= 1``.
    """

    def __init__(self, n: int) -> None:
        if int(n) != n or n < 1:
            raise ConfigurationError(f"`n` must be an integer >= 1, got {n!r}.")
        super().__init__(*[Circle() for _ in range(int(n))])

    def __repr__(self) -> str:
        return f"Torus({len(self.factors)})"


def setting_coordinates(space: Space) -> list[tuple[slice, Space]]:
    """The coordinates of ``space``'s points that belong to factors of settings (an integer, a
    choice: ``is_setting``), with those factors: ``(slice of the point, factor)`` for each such
    factor of a product, of nested products too; empty for a space that is not a product. Graph
    and mesh factors are not settings: their points are the points of a domain."""
    found = []
    parts = zip(getattr(space, "factors", ()), getattr(space, "slices", ()), strict=True)
    for factor, part in parts:
        if factor.is_setting:
            found.append((part, factor))
        else:
            for inner, leaf in setting_coordinates(factor):
                found.append((slice(part.start + inner.start, part.start + inner.stop), leaf))
    return found
