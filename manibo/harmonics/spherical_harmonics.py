r"""Orthonormal real spherical harmonics on :math:`S^{d-1}` for any ``d``, from fundamental systems.

For level :math:`n` take :math:`N = N(d, n)` unit vectors :math:`V` whose Gram matrix
:math:`P_n(VV^\top)` is non-singular (a *fundamental system*, Dai & Xu): the zonal functions
:math:`z_i(x) = G_n(v_i \cdot x)` then span the level-:math:`n` harmonics, and by the reproducing
property their exact :math:`L^2(\bar\sigma)` Gram matrix is :math:`A = G_n(VV^\top)`. With
:math:`A = LL^\top`, :math:`Y(x) = L^{-1} z(x)` is an orthonormal basis under the normalised surface
measure :math:`\bar\sigma`, and :math:`\sum_k Y_{nk}(x) Y_{nk}(y) = G_n(x \cdot y)`.

:math:`V` is chosen greedily, by pivoted Cholesky of :math:`P_n` over a seeded random pool of unit
vectors (the north pole :math:`e_d` first): each step adds the candidate that maximises the
determinant of the Gram matrix, which keeps it well conditioned (condition numbers ~1e2 to ~4e3 for
the levels this library uses). The points are deterministic given ``(d, n)`` and are stored on disk
(one ``.npz`` per level, see :func:`manibo._cache.cache_dir`); :math:`V` and :math:`L^{-1}` are also
kept in memory per ``(d, n, device)``. All arithmetic is float64, whatever the input dtype.
"""

from __future__ import annotations

import itertools
import math
import warnings
import zipfile
from functools import lru_cache

import numpy as np
import torch
from torch import Tensor

from manibo._cache import cache_dir, save_npz_atomically
from manibo._validation import as_tensor_arg, check_finite, default_tolerance
from manibo.exceptions import ConfigurationError, InputDataError, ManiboError, ManiboWarning
from manibo.harmonics.fourier import circle_harmonics
from manibo.harmonics.gegenbauer import (
    harmonic_dimension,
    iter_normalized_gegenbauer,
    recurrence_coefficients,
)

_FORMAT_VERSION = 1
_POOL_FACTOR = 20
"""Candidate pool size, in multiples of N(d, n)."""
_MAX_POOL_ENTRIES = 1 << 24
"""Cap on (pool size) x N(d, n), the size of the pivoted-Cholesky factor (128 MiB in float64)."""
_MIN_PIVOT = 1e-9
"""Smallest accepted Schur complement when adding a point (a singular system falls below it)."""
_HORNER_GROWTH = 8.0
r"""Largest sum of absolute power-basis coefficients of :math:`P_n` evaluated by Horner's rule
(its rounding error is then at most about that many units in the last place, as
:math:`|P_n| \le 1`)."""


def _gegenbauer_degree(n: int, alpha: float, t: Tensor) -> Tensor:
    """The normalised Gegenbauer polynomial :math:`P_n(t)` alone (shape of ``t``)."""
    return next(itertools.islice(iter_normalized_gegenbauer(alpha, t), n, None))


@lru_cache(maxsize=256)
def _power_coefficients(n: int, alpha: float) -> tuple[float, ...] | None:
    r""":math:`P_n(t) = t^{n \bmod 2} \sum_j a_j t^{2j}`: the :math:`a_j`, highest first, or None
    when :math:`\sum_j |a_j|` exceeds :data:`_HORNER_GROWTH` (then the power basis loses too many
    digits to cancellation and the recurrence is used)."""
    older, old = np.array([1.0]), np.array([0.0, 1.0])
    for k in range(2, n + 1):
        a, b = recurrence_coefficients(k, alpha)
        new = np.concatenate([[0.0], a * old])
        new[: k - 1] -= b * older
        older, old = old, new
    coefficients = (older if n == 0 else old)[n % 2 :: 2]
    if np.abs(coefficients).sum() > _HORNER_GROWTH:
        return None
    return tuple(float(c) for c in coefficients[::-1])


def _gegenbauer_degree_(n: int, alpha: float, t: Tensor) -> Tensor:
    r"""Overwrite ``t`` with :math:`P_n(t)` (no autograd); returns ``t``.

    Low degrees (where :func:`_power_coefficients` allows it) use Horner's rule in :math:`t^2`,
    one fused multiply-add pass per coefficient. Otherwise the three-term recurrence of
    :func:`~manibo.harmonics.gegenbauer.iter_normalized_gegenbauer` runs, two elementwise passes
    per degree, in a copy of the argument and at most two scratch buffers; the last degree is
    written into ``t`` itself.
    """
    if n == 0:
        return t.fill_(1.0)
    if n == 1:
        return t
    coefficients = _power_coefficients(n, alpha)
    if coefficients is not None:
        odd = n % 2 == 1
        if len(coefficients) == 2:  # a t^2 + b, in one pass (into t itself for even n)
            polynomial = torch.addcmul(
                t.new_tensor(coefficients[1]), t, t, value=coefficients[0], out=None if odd else t
            )
        else:
            square = t * t
            polynomial = torch.add(t.new_tensor(coefficients[1]), square, alpha=coefficients[0])
            for j, c in enumerate(coefficients[2:], start=3):
                out = t if j == len(coefficients) and not odd else polynomial
                polynomial = torch.addcmul(t.new_tensor(c), polynomial, square, out=out)
        return t.mul_(polynomial) if odd else t
    x = t.clone()
    older, old = None, x  # P_{k-2} (None: the constant P_0 = 1) and P_{k-1}
    for k in range(2, n + 1):
        a, b = recurrence_coefficients(k, alpha)
        if k == n:
            new = t
        elif older is None or older is x:
            new = torch.empty_like(x)
        else:
            new = older  # P_{k-2} is not needed after this step
        if older is None:
            new.fill_(-b)
        else:
            torch.mul(older, -b, out=new)
        new.addcmul_(x, old, value=a)
        older, old = old, new
    return t


def _greedy_fundamental_system(d: int, n: int) -> np.ndarray:
    """A fundamental system of degree ``n`` on :math:`S^{d-1}` by greedy pivoted Cholesky.

    Returns:
        float64 array of shape ``(N(d, n), d)``.
    """
    size = harmonic_dimension(d, n)
    pool_size = min(_POOL_FACTOR * size, max(4 * size, _MAX_POOL_ENTRIES // size))
    rng = np.random.default_rng([_FORMAT_VERSION, d, n])
    pool = rng.standard_normal((pool_size, d))
    pool[0] = 0.0
    pool[0, -1] = 1.0  # the north pole e_d comes first
    pool = torch.from_numpy(pool / np.linalg.norm(pool, axis=1, keepdims=True))
    alpha = (d - 2) / 2
    residual = torch.ones(pool_size, dtype=torch.float64)  # P_n(1) = 1 on the diagonal
    factor = torch.zeros(size, pool_size, dtype=torch.float64)
    chosen = []
    pivot = 0
    for i in range(size):
        schur = float(residual[pivot])
        if schur < _MIN_PIVOT:
            raise ManiboError(
                f"could not complete a fundamental system for d={d}, n={n}: after {i} of {size} "
                f"points the best candidate adds only {schur:.2e} to the Gram determinant. Please "
                "report this."
            )
        column = _gegenbauer_degree(n, alpha, pool @ pool[pivot]) - factor[:i, pivot] @ factor[:i]
        factor[i] = column / math.sqrt(schur)
        residual -= factor[i] ** 2
        chosen.append(pivot)
        residual[pivot] = -math.inf
        pivot = int(torch.argmax(residual))
    return pool[chosen].numpy()


def _system_path(d: int, n: int):
    return cache_dir() / "fundamental_systems" / f"v{_FORMAT_VERSION}_d{d}_n{n}.npz"


def _load_system(path, d: int, n: int) -> np.ndarray | None:
    """The stored points if the file exists and holds ``N(d, n)`` finite unit vectors, else None."""
    try:
        with np.load(path) as archive:
            points = np.asarray(archive["points"], dtype=np.float64)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None
    if points.shape != (harmonic_dimension(d, n), d) or not np.isfinite(points).all():
        return None
    if np.abs(np.linalg.norm(points, axis=1) - 1).max() > 1e-12:
        return None
    return points


def fundamental_system(d: int, n: int) -> np.ndarray:
    """The fundamental system of degree ``n`` on :math:`S^{d-1}`, from disk or computed and stored.

    A file that is missing, unreadable or inconsistent is recomputed and rewritten (a file whose
    points are unit vectors but not a fundamental system is found, and replaced, when the basis is
    built). If the cache folder is not writable, a :class:`~manibo.exceptions.ManiboWarning` is
    emitted and the points are still returned.

    Args:
        d: ambient dimension, ``>= 3``.
        n: degree, ``>= 0``.

    Returns:
        float64 array of shape ``(N(d, n), d)`` with unit rows, the first being :math:`e_d`.
    """
    if int(d) != d or d < 3:
        raise ConfigurationError(
            f"fundamental systems need `d` >= 3, got {d!r}; d = 2 is the circle."
        )
    points = _load_system(_system_path(int(d), int(n)), d, n)
    return _compute_and_store(int(d), int(n)) if points is None else points


def _compute_and_store(d: int, n: int) -> np.ndarray:
    """Compute the fundamental system of degree ``n`` and (over)write its cache file."""
    path = _system_path(d, n)
    points = _greedy_fundamental_system(d, n)
    try:
        save_npz_atomically(path, points=points)
    except OSError as err:
        warnings.warn(
            f"could not store the fundamental system for d={d}, n={n} in {path.parent} "
            f"({err}); another process will compute it again. Set MANIBO_CACHE_DIR to a "
            "writable folder.",
            ManiboWarning,
            stacklevel=3,
        )
    return points


def _gram_factor(points: Tensor, d: int, n: int) -> Tensor | None:
    r"""Cholesky factor of :math:`P_n(VV^\top)`, or None when the points are not a fundamental
    system (a pivot below :data:`_MIN_PIVOT`, which the greedy construction never leaves)."""
    gram = _gegenbauer_degree(n, (d - 2) / 2, points @ points.T)
    lower, info = torch.linalg.cholesky_ex(gram)
    if int(info) != 0 or float(lower.diagonal().min()) ** 2 < _MIN_PIVOT / 2:
        return None
    return lower


@lru_cache(maxsize=256)
def _level_basis(d: int, n: int, device: torch.device) -> tuple[Tensor, Tensor]:
    r"""Points ``V`` ``(N, d)`` and ``W = \sqrt{N} L_P^{-\top}`` ``(N, N)``, float64 on ``device``.

    :math:`L_P` is the Cholesky factor of :math:`P_n(VV^\top) = A / N`, so that the harmonics in row
    form are :math:`Y(x) = P_n(x V^\top) W`. A cached system that turns out degenerate (a damaged
    or foreign file of unit vectors) is recomputed and its file rewritten.
    """
    points = torch.from_numpy(fundamental_system(d, n))
    lower = _gram_factor(points, d, n)
    if lower is None:
        points = torch.from_numpy(_compute_and_store(d, n))
        lower = _gram_factor(points, d, n)
    eye = torch.eye(len(points), dtype=torch.float64)
    inverse = torch.linalg.solve_triangular(lower, eye, upper=False)
    weights = math.sqrt(len(points)) * inverse.T
    return points.to(device), weights.to(device)


@lru_cache(maxsize=64)
def _stacked_basis(d: int, levels: tuple[int, ...], device: torch.device):
    """The levels' points stacked ``(M, d)``, their per-level ``W`` and sizes ``N(d, n)``."""
    bases = [_level_basis(d, n, device) for n in levels]
    points = torch.cat([p for p, _ in bases])
    return points, [w for _, w in bases], [len(p) for p, _ in bases]


def _check_levels(levels) -> tuple[int, ...]:
    try:
        levels = tuple(int(n) for n in levels)
        ok = all(n >= 0 for n in levels) and all(
            a < b for a, b in zip(levels, levels[1:], strict=False)
        )
    except (TypeError, ValueError):
        ok = False
    if not ok or not levels:
        raise ConfigurationError(
            f"`levels` must be a non-empty, strictly increasing sequence of degrees >= 0, got "
            f"{levels!r}."
        )
    return levels


def harmonic_transform(d: int, levels, device: torch.device | str | None = None) -> Tensor:
    r"""Block-diagonal ``W`` that turns :func:`zonal_features` into orthonormal harmonics.

    :math:`Y(x) = Z(x) W`, with one block :math:`\sqrt{N} L_P^{-\top}` per level (see the module
    docstring). Statistics gathered on zonal features map to harmonic coordinates by
    :math:`W^\top (Z^\top Z) W` and :math:`W^\top Z^\top y`.

    Args:
        d: ambient dimension, ``>= 3``.
        levels: strictly increasing degrees.
        device: where the result lives.

    Returns:
        float64 tensor of shape ``(M, M)``, ``M = sum_{n in levels} N(d, n)``.
    """
    levels = _check_levels(levels)
    _, weights, _ = _stacked_basis(int(d), levels, torch.device(device or "cpu"))
    return torch.block_diag(*weights)


def zonal_features(x: Tensor, levels) -> Tensor:
    r"""Zonal functions :math:`P_n(x \cdot v_i)` at the fundamental-system points of each level.

    For each level ``n`` in ``levels`` and each of its :math:`N(d, n)` points :math:`v_i`, the
    normalised Gegenbauer polynomial :math:`P_n(x \cdot v_i)`, by the three-term recurrence on
    the columns of that level. Spans the same space as the harmonics of those levels:
    :math:`Y = Z W` with :func:`harmonic_transform`. Computed in ``x``'s dtype (pass float64
    inputs for float64 accuracy) on ``x``'s device; differentiable in ``x``. Without autograd the
    result is a transposed view of ``(M, prod(batch))`` storage, each feature's values
    contiguous (matrix products take it as it is; ``.contiguous()`` makes it row-major). Inputs
    are not checked (see :func:`spherical_harmonics` for the checked entry point).

    Args:
        x: unit vectors, shape ``(*batch, d)``, ``d >= 3``.
        levels: strictly increasing degrees.

    Returns:
        Shape ``(*batch, M)``, ``M = sum_{n in levels} N(d, n)``, levels in the given order.
    """
    levels = _check_levels(levels)
    d = x.shape[-1]
    points, _, sizes = _stacked_basis(d, levels, x.device)
    points = points.to(x.dtype)
    alpha = (d - 2) / 2
    if torch.is_grad_enabled() and x.requires_grad:
        blocks = (x @ points.T).split(sizes, dim=-1)
        return torch.cat(
            [_gegenbauer_degree(n, alpha, t) for n, t in zip(levels, blocks, strict=True)], dim=-1
        )
    # without autograd: feature-major (M, batch) storage, in which each level is one contiguous
    # block that the recurrence overwrites in place; the result is a transposed view of it
    values = points @ x.reshape(-1, d).T
    for n, block in zip(levels, values.split(sizes), strict=True):
        _gegenbauer_degree_(n, alpha, block)
    return values.T.reshape(*x.shape[:-1], values.shape[0])


def harmonic_level_index(d: int, num_levels: int) -> Tensor:
    """The level of each column of :func:`spherical_harmonics` (circle harmonics for ``d = 2``).

    Returns:
        Long tensor of shape ``(M,)``, ``M = sum_{n < L} N(d, n)``: ``N(d, n)`` copies of ``n``,
        ascending.
    """
    _check_num_levels(num_levels)
    sizes = [harmonic_dimension(d, n) for n in range(num_levels)]
    return torch.repeat_interleave(torch.arange(num_levels), torch.tensor(sizes))


def _check_num_levels(num_levels: int) -> None:
    if int(num_levels) != num_levels or num_levels < 1:
        raise ConfigurationError(f"`num_levels` must be an integer >= 1, got {num_levels!r}.")


def _check_points(x: Tensor) -> None:
    as_tensor_arg("x", x)
    if x.dim() < 1 or x.shape[-1] < 2:
        raise InputDataError(
            f"`x` must have shape (*batch, d) with d >= 2 (unit vectors of S^(d-1)), got "
            f"{tuple(x.shape)}."
        )
    check_finite("x", x)
    err = (x.norm(dim=-1) - 1).abs()
    tol = default_tolerance(x.dtype)
    if (err > tol).any():
        raise InputDataError(
            f"`x` must hold unit vectors (norms 1 within {tol:g}), the worst is off by "
            f"{float(err.max()):.3g}. Normalise with `x / x.norm(dim=-1, keepdim=True)`."
        )


def spherical_harmonics(x: Tensor, num_levels: int) -> Tensor:
    r"""Orthonormal real spherical harmonics of levels ``0..num_levels-1`` at unit vectors ``x``.

    Orthonormal under the normalised surface measure, so that level ``n`` satisfies the addition
    theorem :math:`\sum_k Y_{nk}(x) Y_{nk}(y) = N(d, n) P_n(x \cdot y)`. Computed in float64 and
    cast to ``x.dtype``; the device follows ``x``; differentiable in ``x``. For ``d = 2`` the circle
    harmonics :math:`1, \sqrt2\cos n\theta, \sqrt2\sin n\theta` are returned. The first call for
    a ``(d, n)`` builds (or loads) its fundamental system; on one CPU thread S² with 25 levels takes
    about 0.4 s, ``d = 9`` with 4 levels 0.1 s and with 5 levels 1 s.

    Args:
        x: unit vectors, shape ``(*batch, d)``, ``d >= 2``.
        num_levels: number of levels ``L >= 1``.

    Returns:
        Shape ``(*batch, M)`` with ``M = sum_{n < L} N(d, n)``, levels in ascending order (see
        :func:`harmonic_level_index`).
    """
    _check_points(x)
    _check_num_levels(num_levels)
    d = x.shape[-1]
    if d == 2:
        return circle_harmonics(x[..., 0], x[..., 1], int(num_levels))
    levels = tuple(range(int(num_levels)))
    _, weights, sizes = _stacked_basis(d, levels, x.device)
    zonal = zonal_features(x.to(torch.float64), levels)
    blocks = zonal.split(sizes, dim=-1)
    return torch.cat([z @ w for z, w in zip(blocks, weights, strict=True)], dim=-1).to(x.dtype)
