r"""Finite spaces with a Laplacian spectrum (graph nodes, mesh vertices): eigenpairs, levels, paths.

A point is an integer index stored as a float in a trailing dimension of size 1: ``(*batch, 1)``.
The spectrum solves :math:`L\phi = \lambda M\phi` for a sparse symmetric positive semi-definite
``L`` and a positive diagonal mass ``M`` (the identity for graphs, lumped vertex areas for meshes).
Eigenvectors are orthonormal under the normalised measure :math:`M / \operatorname{tr} M`, and
eigenvalues that agree to rounding form one level (:func:`level_starts`), so a kernel never cuts
through a degenerate eigenspace and does not depend on the eigensolver's choice of basis. The
eigenvalue 0 has one copy per connected component. Every tolerance is relative, so the levels do
not change when every weight is multiplied by the same factor.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import scipy.linalg
import scipy.sparse as sps
import scipy.sparse.linalg
import torch
from scipy.sparse.csgraph import connected_components, shortest_path
from torch import Tensor

from manibo._stack import user_stacklevel
from manibo.exceptions import ConfigurationError, TruncationWarning
from manibo.spaces.base import CompactSpace

DENSE_MAX = 2000
"""Largest number of points whose spectrum is computed densely (all eigenpairs) by default."""
DEFAULT_SPARSE_EIGENPAIRS = 500
"""Eigenpairs asked of the sparse solver by default, beyond ``DENSE_MAX`` points."""
FULL_DISTANCE_MAX = 2048
"""Up to this many points, all pairwise shortest-path distances are computed once and cached."""
LEVEL_RTOL = 1e-12
"""Neighbouring eigenvalues closer than this fraction of the operator's scale (its largest absolute
row sum, at least its largest eigenvalue) may be copies of one: the eigensolvers split a
degenerate eigenvalue by about 1e-15 of that scale (graphs and meshes of up to 3,600 points)."""
LEVEL_SELF_RTOL = 1e-8
"""...and they are copies only if they also agree to this fraction of their own size, so that a
heavy edge or a sliver triangle (a scale 1e9 times the smallest eigenvalues) merges no distinct
eigenvalues."""
INDEX_TOL = 1e-9
SPARSE_ATTEMPTS = 4
"""Sparse solutions tried, each asking for more eigenpairs, before :func:`lowest_sparse` stops."""
DENSE_FALLBACK_MAX = 8000
"""Largest component solved densely when the sparse solver's copies cannot be verified."""
CUT_FRACTIONS = (0.5, 0.382, 0.618)
"""Where between two levels :func:`count_below` cuts, in turn, until its factorisation needs no
off-diagonal pivot (a cut on a diagonal entry, such as a regular graph's degree, needs one)."""


def operator_scale(operator: sps.spmatrix) -> float:
    """The largest absolute row sum of ``operator`` ``(n, n)``: a bound on its spectral radius."""
    return float(abs(sps.csr_matrix(operator)).sum(axis=1).max()) if operator.shape[0] else 0.0


def level_starts(eigenvalues: np.ndarray, tol: float) -> np.ndarray:
    """Where a new level starts among sorted ``eigenvalues`` ``(K,)``: a boolean ``(K,)``.

    A neighbour is a copy of the eigenvalue before it when they differ by at most ``tol``
    (``LEVEL_RTOL`` times the operator's scale) and by at most ``LEVEL_SELF_RTOL`` of their size.
    """
    gaps = np.diff(eigenvalues)
    new = (gaps > tol) | (gaps > LEVEL_SELF_RTOL * np.abs(eigenvalues[1:]))
    return np.concatenate([[True], new]) if len(eigenvalues) else np.zeros(0, dtype=bool)


def group_levels(eigenvalues: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """The levels of sorted ``eigenvalues`` ``(K,)``, ``K >= 1``, found by :func:`level_starts`.

    Returns:
        ``(values, multiplicities)`` of shape ``(L,)``: each level's mean eigenvalue and its
        number of eigenvalues.
    """
    starts = np.flatnonzero(level_starts(eigenvalues, tol))
    counts = np.diff(np.append(starts, len(eigenvalues)))
    return np.add.reduceat(eigenvalues, starts) / counts, counts


def whole_levels(eigenvalues: np.ndarray, tol: float, bound: float, most: int) -> tuple[int, float]:
    """How many of the sorted ``eigenvalues`` ``(K,)`` to keep: whole levels only, each below
    ``bound`` and ``most`` eigenvalues in all at most.

    ``eigenvalues`` holds every eigenvalue below ``bound`` (copies included), and perhaps some
    above it; a level with any copy at or above ``bound`` may lack others, and is dropped.

    Returns:
        ``(count, bound)``: the number kept and a lower bound on every eigenvalue not kept.
    """
    starts = np.flatnonzero(level_starts(eigenvalues, tol))
    ends = np.append(starts[1:], len(eigenvalues))  # one past each level's last eigenvalue
    dropped = np.flatnonzero((ends > most) | (eigenvalues[ends - 1] >= bound))
    if not dropped.size:
        return len(eigenvalues), bound
    first = int(starts[dropped[0]])
    return first, min(bound, float(eigenvalues[first]))


def symmetrised(laplacian: sps.spmatrix, mass: np.ndarray) -> sps.csr_matrix:
    r""":math:`M^{-1/2} L M^{-1/2}`, ``laplacian`` ``(n, n)``, ``mass`` the diagonal ``(n,)``."""
    inv_sqrt = sps.diags(1.0 / np.sqrt(mass))
    return sps.csr_matrix(inv_sqrt @ laplacian @ inv_sqrt)


def lowest_levels(
    laplacian: sps.spmatrix, mass: np.ndarray, num_eigenpairs: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    r"""Whole levels of the lowest eigenpairs of :math:`L\phi = \lambda M\phi`, orthonormal under M.

    The problem is symmetrised as :math:`S = M^{-1/2} L M^{-1/2}` and solved connected component
    by connected component; each component's lowest eigenvalue, within rounding of 0, is set to
    exactly 0. Up to ``DENSE_MAX`` points, or when half of the spectrum or more is wanted,
    ``scipy.linalg.eigh`` (divide and conquer) solves each component whole, otherwise
    :func:`lowest_sparse` solves those of more than ``DENSE_MAX`` points: a Krylov solver on the
    whole operator misses copies of an eigenvalue that many components share (the 0 of each
    isolated node).

    Args:
        laplacian: symmetric positive semi-definite, shape ``(n, n)``.
        mass: the positive diagonal of ``M``, shape ``(n,)``.
        num_eigenpairs: the most eigenpairs returned when the whole spectrum is not computed.

    Returns:
        ``(values (L,), multiplicities (L,), eigenvectors (n, K), bound)``: the levels (as
        :func:`group_levels` forms them), their eigenvectors level by level (``K`` the sum of
        the multiplicities), and a lower bound on every eigenvalue not returned (``inf`` when the
        whole spectrum is). Every level is whole: all eigenvalues below ``bound`` are returned.
    """
    n = laplacian.shape[0]
    scaled = symmetrised(laplacian, mass)
    tol = LEVEL_RTOL * operator_scale(scaled)
    whole = n <= DENSE_MAX or num_eigenpairs >= n // 2
    values, vectors, bound = _lowest_by_component(scaled, n if whole else num_eigenpairs, tol)
    if not len(values):
        return np.zeros(0), np.zeros(0, dtype=int), vectors, bound
    levels, counts = group_levels(values, tol)
    return levels, counts, vectors / np.sqrt(mass)[:, None], bound


def _lowest_by_component(
    scaled: sps.csr_matrix, wanted: int, tol: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """Whole levels of the lowest ``wanted`` eigenpairs of the symmetric ``scaled`` ``(n, n)``.

    Returns:
        ``(eigenvalues (K,), eigenvectors (n, K), bound)``, sorted, with ``K <= wanted``: they are
        every eigenvalue below ``bound``, copies included (``bound`` is ``inf`` when ``K = n``).
    """
    n = scaled.shape[0]
    pattern = scaled.copy()
    pattern.eliminate_zeros()
    count, labels = connected_components(pattern, directed=False)
    members = np.argsort(labels, kind="stable")
    edges = np.searchsorted(labels[members], np.arange(count + 1))
    values, blocks = [], []  # per component: eigenvalues, and (its points, its eigenvectors)
    bound = np.inf
    for c in range(count):
        index = members[edges[c] : edges[c + 1]]
        block = scaled[index][:, index]
        if len(index) <= DENSE_MAX or wanted >= len(index) // 2:
            # cut at `wanted`, perhaps inside a level; that level then ends past `wanted` in the
            # union (the other components each add a 0 below it), and whole_levels drops it
            block_values, block_vectors = scipy.linalg.eigh(block.toarray(), driver="evd")
            block_values, block_vectors = block_values[:wanted], block_vectors[:, :wanted]
        else:
            block_values, block_vectors, block_bound = lowest_sparse(block, wanted, tol)
            bound = min(bound, block_bound)
        if len(block_values) and abs(block_values[0]) <= tol:
            block_values[0] = 0.0  # a component's constant (mass-weighted) function
        values.append(np.maximum(block_values, 0.0))
        blocks.append((index, block_vectors))
    values = np.concatenate(values)
    order = np.argsort(values, kind="stable")
    kept, bound = whole_levels(values[order], tol, bound, wanted)
    column = np.full(len(values), -1)  # each eigenpair's column in the result, -1 if not kept
    column[order[:kept]] = np.arange(kept)
    vectors, offset = np.zeros((n, kept)), 0
    for index, block_vectors in blocks:  # only the kept columns: (n, kept), not (n, found)
        mine = column[offset : offset + block_vectors.shape[1]]
        vectors[np.ix_(index, mine[mine >= 0])] = block_vectors[:, mine >= 0]
        offset += block_vectors.shape[1]
    return values[order[:kept]], vectors, bound if kept < n else np.inf


def lowest_sparse(
    operator: sps.csr_matrix, k: int, tol: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """The lowest eigenpairs of the symmetric positive semi-definite ``operator`` ``(n, n)``.

    ``scipy.sparse.linalg.eigsh`` in shift-invert mode just below 0, from a fixed start vector so
    that results reproduce, finds ``k`` of them. A Lanczos solver can miss a copy of a repeated
    eigenvalue, so the eigenvalues below the top level found are counted independently
    (:func:`count_below`) and, while some are missing, more are asked for; after
    ``SPARSE_ATTEMPTS`` tries the dense solver takes over up to ``DENSE_FALLBACK_MAX`` points, and
    beyond it a :class:`~manibo.exceptions.TruncationWarning` says the copies are unverified.

    Args:
        operator: symmetric positive semi-definite, shape ``(n, n)``.
        k: eigenpairs asked of the solver first, ``2 k < n``.
        tol: as for :func:`level_starts`.

    Returns:
        ``(eigenvalues (K,), eigenvectors (n, K), bound)``, sorted: every eigenvalue below
        ``bound`` is among them, with all its copies (unless the warning says otherwise).
    """
    n = operator.shape[0]
    sigma = -1e-6 * operator_scale(operator)
    start = np.random.default_rng(0).standard_normal(n)
    found = None
    for _ in range(SPARSE_ATTEMPTS):
        if 2 * k >= n:
            break
        values, vectors = scipy.sparse.linalg.eigsh(
            operator.tocsc(), k=k, sigma=sigma, which="LM", v0=start
        )
        order = np.argsort(values)
        values, vectors = values[order], vectors[:, order]
        below = int(np.flatnonzero(level_starts(values, tol))[-1])  # under the top level
        if below == 0:
            k *= 2  # a single level: no cut below its top to count at
            continue
        counted, cut = count_below(operator, float(values[below - 1]), float(values[below]))
        found = values[:below], vectors[:, :below], cut if cut is not None else values[below - 1]
        if counted == below:
            return found
        k += abs((counted or 0) - below) + max(10, k // 10)
    if n <= DENSE_FALLBACK_MAX:
        values, vectors = scipy.linalg.eigh(operator.toarray(), driver="evd")
        return values, vectors, np.inf
    warnings.warn(
        TruncationWarning(
            f"the sparse eigensolver's lowest eigenpairs of a component of {n} points could not "
            f"be shown to hold every copy of each eigenvalue ({SPARSE_ATTEMPTS} tries); a "
            "repeated eigenvalue may be short of copies, and a kernel on this space may depend "
            "on the solver's basis. Another `num_eigenpairs` may settle it."
        ),
        stacklevel=user_stacklevel(),
    )
    return found if found is not None else (np.zeros(0), np.zeros((n, 0)), 0.0)


def count_below(
    operator: sps.csr_matrix, low: float, high: float
) -> tuple[int, float] | tuple[None, None]:
    """``(count, cut)``: the number of eigenvalues of the symmetric ``operator`` ``(n, n)`` below a
    ``cut`` in ``(low, high)``, an interval that holds none; ``(None, None)`` when no cut tried
    could count them.

    By Sylvester's law of inertia, the number of negative pivots of a symmetric factorisation of
    ``operator - cut * I``: SuperLU in symmetric mode with diagonal pivots, whose count holds
    only when it kept them (equal row and column permutations); the cuts of
    :data:`CUT_FRACTIONS` are tried in turn until one does.
    """
    identity = sps.eye(operator.shape[0])
    for fraction in CUT_FRACTIONS:
        cut = low + fraction * (high - low)
        try:
            factor = scipy.sparse.linalg.splu(
                sps.csc_matrix(operator - cut * identity),
                permc_spec="MMD_AT_PLUS_A",
                diag_pivot_thresh=0.0,
                options={"SymmetricMode": True},
            )
        except RuntimeError:  # "Factor is exactly singular"
            continue
        if np.array_equal(factor.perm_r, factor.perm_c):
            return int((factor.U.diagonal() < 0).sum()), cut
    return None, None


class EigenvectorSpace(CompactSpace):
    r"""Points are the indices ``0 .. n-1``; the spectrum is that of a sparse Laplacian and a mass.

    ``random`` samples points with probability proportional to their mass; ``distance`` is the
    shortest-path length along the edges of ``edge_lengths`` (``inf`` between disconnected parts).
    Every tensor derived from the spectrum is cached per dtype and device.

    Args:
        laplacian: symmetric positive semi-definite, shape ``(n, n)``.
        mass: positive diagonal mass, shape ``(n,)``.
        edge_lengths: sparse ``(n, n)`` matrix of edge lengths for shortest paths.
        num_eigenpairs: cap on the eigenpairs kept (whole levels only). Default: all ``n`` when
            ``n <= DENSE_MAX``, else the lowest ``DEFAULT_SPARSE_EIGENPAIRS``. When the sparse
            solver is used its highest level is dropped, since it may be an incomplete eigenspace.
            A kernel warns (``TruncationWarning``) when the eigenpairs left out may hold more of
            its spectral mass than its truncation tolerance allows.
    """

    is_discrete = True
    point_shape = (1,)
    _noun = "point"

    def __init__(
        self,
        laplacian: sps.spmatrix,
        mass: np.ndarray,
        edge_lengths: sps.spmatrix,
        num_eigenpairs: int | None,
    ) -> None:
        n = laplacian.shape[0]
        wanted = _resolve_num_eigenpairs(num_eigenpairs, n)
        values, counts, eigenvectors, bound = self._lowest_levels(laplacian, mass, wanted)
        keep = int(np.searchsorted(np.cumsum(counts), wanted, side="right"))
        if keep == 0:
            lowest = f"{int(counts[0])}" if len(counts) else f"more than {wanted}"
            raise ConfigurationError(
                f"`num_eigenpairs` = {wanted} keeps no whole eigenspace of this {self._noun} "
                f"space: its lowest eigenvalue has multiplicity {lowest} (the eigenvalue 0 has "
                "one copy per connected component). Raise `num_eigenpairs`."
            )
        self.num_points = n
        # (count, lowest and mean eigenvalue) of the eigenpairs not kept, None when all are: a
        # spectral kernel bounds the mass it loses with them (the trace is the sum of all n
        # eigenvalues; the lowest left out is the first level not kept, computed or not)
        dropped = n - int(counts[:keep].sum())
        self.dropped_spectrum = None
        if dropped:
            kept = float((values[:keep] * counts[:keep]).sum())
            trace = float(np.sum(sps.csr_matrix(laplacian).diagonal() / mass))
            first = float(values[keep]) if keep < len(values) else bound
            self.dropped_spectrum = (dropped, first, max((trace - kept) / dropped, first))
        self.num_levels_available = keep
        self.default_max_levels = keep
        self._level_values = values[:keep]
        self._multiplicities = counts[:keep]
        self._offsets = np.concatenate([[0], np.cumsum(self._multiplicities)])
        total = int(self._offsets[-1])
        self._eigenvectors = eigenvectors[:, :total] * np.sqrt(mass.sum())
        self._level_index = np.repeat(np.arange(keep), self._multiplicities)
        self._mass = mass
        self._edge_lengths = sps.csr_matrix(edge_lengths)
        self._tensors: dict[tuple[str, torch.dtype, torch.device], Tensor] = {}
        self._peaks: np.ndarray | None = None

    def _lowest_levels(
        self, laplacian: sps.spmatrix, mass: np.ndarray, num_eigenpairs: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """The spectrum as :func:`lowest_levels` returns it; a space that knows it in closed form
        overrides this."""
        return lowest_levels(laplacian, mass, num_eigenpairs)

    def _tensor(
        self, name: str, dtype: torch.dtype, device: torch.device, make: Callable[[], np.ndarray]
    ) -> Tensor:
        """``make()`` as a tensor of ``dtype`` on ``device``, computed and moved once per key."""
        key = (name, dtype, torch.device(device))
        if key not in self._tensors:
            self._tensors[key] = torch.as_tensor(make(), dtype=dtype, device=device)
        return self._tensors[key]

    @staticmethod
    def _indices(x: Tensor) -> Tensor:
        """Integer indices of points ``(*batch, 1)``, shape ``(*batch)``."""
        return x[..., 0].round().long()

    # geometry -------------------------------------------------------------------------------
    def random(self, n, generator=None, dtype=torch.float64, device=None) -> Tensor:
        """Draw ``n`` points with probability proportional to their mass; shape ``(n, 1)``."""
        device = device or "cpu"
        cdf = self._tensor("cdf", dtype, device, lambda: np.cumsum(self._mass) / self._mass.sum())
        uniform = torch.rand(n, generator=generator, dtype=dtype, device=device)
        draws = torch.searchsorted(cdf, uniform, right=True).clamp_(max=self.num_points - 1)
        return draws.to(dtype).unsqueeze(-1)

    def all_points(self, dtype: torch.dtype = torch.float64, device=None) -> Tensor:
        """Every index ``0 .. n-1``, shape ``(n, 1)``."""
        return torch.arange(self.num_points, dtype=dtype, device=device).unsqueeze(-1)

    def _check_membership(self, x: Tensor, name: str) -> None:
        index = x[..., 0]
        fractional = (index - index.round()).abs() > INDEX_TOL
        if fractional.any():
            raise self._membership_error(
                name,
                f"entries must be integer {self._noun} indices (within {INDEX_TOL:g}), but "
                f"{int(fractional.sum())} are not, e.g. {float(index[fractional][0])!r}",
                f"Round them with `space.project({name})`",
            )
        if index.numel() and (index.min() < 0 or index.max() > self.num_points - 1):
            raise self._membership_error(
                name,
                f"{self._noun} indices must lie in [0, {self.num_points}), got values in "
                f"[{float(index.min()):g}, {float(index.max()):g}]",
                f"Use indices 0 .. {self.num_points - 1}, or clamp with `space.project({name})`",
            )

    def project(self, x: Tensor) -> Tensor:
        """Round to the nearest index and clamp into ``[0, n)``."""
        return x.round().clamp(0, self.num_points - 1)

    def to_tangent(self, x: Tensor, v: Tensor) -> Tensor:
        """A finite space has no tangent directions: zeros."""
        return torch.zeros_like(v)

    def retract(self, x: Tensor, v: Tensor) -> Tensor:
        """Points do not move: returns ``x``."""
        return x

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        """Shortest-path length between broadcastable points ``(*batch, 1)``; shape ``(*batch)``."""
        ix, iy = torch.broadcast_tensors(self._indices(x), self._indices(y))
        if self.num_points <= FULL_DISTANCE_MAX:
            table = self._tensor("distance", x.dtype, x.device, lambda: self._shortest_paths(None))
            return table[ix, iy]
        sources, rows = torch.unique(ix, return_inverse=True)
        table = torch.as_tensor(
            self._shortest_paths(sources.cpu().numpy()), dtype=x.dtype, device=x.device
        )
        return table[rows, iy]

    def _shortest_paths(self, sources: np.ndarray | None) -> np.ndarray:
        """Dijkstra distances from ``sources`` (all points if None), shape ``(len(sources), n)``."""
        return shortest_path(self._edge_lengths, method="D", directed=False, indices=sources)

    # spectrum -------------------------------------------------------------------------------
    def _check_num_levels(self, num_levels: int) -> None:
        if not 1 <= num_levels <= self.num_levels_available:
            raise ConfigurationError(
                f"`num_levels` must be between 1 and {self.num_levels_available} for {self!r}, "
                f"got {num_levels}. Ask for fewer levels, or build the space with more "
                "`num_eigenpairs`."
            )

    def levels(self, num_levels: int) -> tuple[Tensor, Tensor]:
        self._check_num_levels(num_levels)
        values = torch.tensor(self._level_values[:num_levels], dtype=torch.float64)
        multiplicities = torch.tensor(self._multiplicities[:num_levels], dtype=torch.float64)
        return values, multiplicities

    def level_peaks(self, num_levels: int) -> Tensor:
        r""":math:`\max_x \sum_{k \in l} \phi_k(x)^2` of each of the first ``num_levels`` levels
        (eigenvectors scaled to a mass-weighted mean square of 1), float64 ``(num_levels,)``."""
        self._check_num_levels(num_levels)
        if self._peaks is None:  # once per space: every kernel built on it reads them
            squares = np.add.reduceat(self._eigenvectors**2, self._offsets[:-1], axis=1)
            self._peaks = squares.max(axis=0)
        return torch.as_tensor(self._peaks[:num_levels], dtype=torch.float64)

    def _eigenvector_table(self, num_levels: int, like: Tensor) -> Tensor:
        """Eigenvectors of the first ``num_levels`` levels at every point, shape ``(n, M)``."""
        table = self._tensor("eigenvectors", like.dtype, like.device, lambda: self._eigenvectors)
        return table[:, : int(self._offsets[num_levels])]

    def spectral_sum(self, weights: Tensor, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        r""":math:`\Phi_1 \mathrm{diag}(w) \Phi_2^\top`, a level's weight repeated per eigenvector.

        Args:
            weights: per-level weights, shape ``(*wbatch, L)``; differentiable.
            x1: points, shape ``(*batch1, n, 1)``.
            x2: points, shape ``(*batch2, m, 1)``.
            diag: return only the diagonal (requires ``n == m``).

        Returns:
            Shape ``(*batch, n, m)``, or ``(*batch, n)`` if ``diag``; ``batch`` is their broadcast.

        Raises:
            InputDataError: ``x1`` or ``x2`` holds an entry that is not an index ``0 .. n-1``.
        """
        self.check(x1, "x1")
        self.check(x2, "x2")
        num_levels = weights.shape[-1]
        self._check_num_levels(num_levels)
        table = self._eigenvector_table(num_levels, x1)
        level_index = self._tensor(
            "level_index", torch.long, weights.device, lambda: self._level_index
        )
        per_vector = weights[..., level_index[: table.shape[-1]]].unsqueeze(-2)  # (*wbatch, 1, M)
        phi1, phi2 = table[self._indices(x1)], table[self._indices(x2)]
        if diag:
            return (phi1 * per_vector * phi2).sum(-1)
        return (phi1 * per_vector) @ phi2.transpose(-1, -2)

    def eigenfunctions(self, x: Tensor, num_levels: int) -> Tensor:
        """Eigenvectors of the first ``num_levels`` levels at ``x`` (``(*batch, n, 1)``).

        Returns:
            Shape ``(*batch, n, M)``, ``M`` the sum of the levels' multiplicities, level by level.

        Raises:
            InputDataError: ``x`` holds an entry that is not an index ``0 .. n-1``.
        """
        self.check(x)
        self._check_num_levels(num_levels)
        return self._eigenvector_table(num_levels, x)[self._indices(x)]


def as_numpy(value) -> np.ndarray:
    """``value`` (a tensor on any device, an array or nested lists) as a NumPy array."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return (value.float() if value.dtype == torch.bfloat16 else value).numpy()  # no bf16
    return np.asarray(value)


def _resolve_num_eigenpairs(num_eigenpairs: int | None, n: int) -> int:
    if num_eigenpairs is None:
        return n if n <= DENSE_MAX else min(n, DEFAULT_SPARSE_EIGENPAIRS)
    if (
        isinstance(num_eigenpairs, bool)
        or int(num_eigenpairs) != num_eigenpairs
        or not (1 <= num_eigenpairs <= n)
    ):
        raise ConfigurationError(
            f"`num_eigenpairs` must be an integer between 1 and the number of points ({n}), "
            f"got {num_eigenpairs!r}. Leave it as None for all eigenpairs up to {DENSE_MAX} points."
        )
    return int(num_eigenpairs)
