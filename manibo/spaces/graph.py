r"""The nodes of an undirected weighted graph, with the spectrum of its (normalised) Laplacian."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps
import torch

from manibo._validation import check_int
from manibo.exceptions import InputDataError
from manibo.spaces.base import content_digest
from manibo.spaces.eigenvector_space import EigenvectorSpace, as_numpy

SYMMETRY_RTOL = 1e-10


class Graph(EigenvectorSpace):
    r"""Nodes ``0 .. n-1`` of an undirected graph; points are node indices as floats, ``(*b, 1)``.

    The spectrum is that of :math:`L = D - A` or, with ``normalized=True``, of
    :math:`I - D^{-1/2} A D^{-1/2}` (an isolated node gets a zero row, as in Chung's convention).
    Eigenvectors are orthonormal and scaled by :math:`\sqrt{n}` (orthonormal under the uniform
    probability on nodes) and ``spectral_dim = 0``, as in GeometricKernels; eigenvalues equal
    within ``1e-12`` of the Laplacian's largest row sum form one level. ``distance`` counts hops:
    every edge has length 1 whatever its weight, and it is ``inf`` between disconnected
    components.

    Weights are similarities, not lengths: the Laplacian grows with them, so a kernel's
    lengthscale is in hops across edges of weight 1, and an edge of weight ``w`` is roughly as
    long as ``1 / sqrt(w)`` of them (exactly: multiplying every weight by ``c`` lengthens the
    lengthscale ``sqrt(c)`` times, unless ``normalized``). A road of length ``d`` enters as e.g.
    ``1 / d**2``.

    Args:
        adjacency: symmetric non-negative real ``(n, n)`` weights: a NumPy array, nested lists,
            a dense or sparse (COO, CSR, CSC) torch tensor, or a ``scipy.sparse`` matrix or
            array; self-loops count towards the degree. A networkx graph is not accepted:
            convert it yourself with ``networkx.to_scipy_sparse_array(G, nodelist=sorted(G))``
            (node ``i`` is then the ``i``-th of ``nodelist``).
        normalized: use the symmetric normalised Laplacian.
        num_eigenpairs: cap on the eigenpairs kept (see
            :class:`~manibo.spaces.eigenvector_space.EigenvectorSpace`).
    """

    dim = 0
    spectral_dim = 0
    _noun = "node"

    def __init__(
        self, adjacency, normalized: bool = False, num_eigenpairs: int | None = None
    ) -> None:
        weights = _adjacency_matrix(adjacency)
        degree = np.asarray(weights.sum(axis=1)).ravel()
        if normalized:
            connected = degree > 0
            inv_sqrt = np.zeros_like(degree)
            inv_sqrt[connected] = degree[connected] ** -0.5
            scaling = sps.diags(inv_sqrt)
            laplacian = sps.diags(connected.astype(np.float64)) - scaling @ weights @ scaling
        else:
            laplacian = sps.diags(degree) - weights
        hops = weights.copy()
        hops.data[:] = 1.0
        n = weights.shape[0]
        super().__init__(sps.csr_matrix(laplacian), np.ones(n), hops, num_eigenpairs)
        self.normalized = bool(normalized)
        self.num_edges = int(sps.triu(weights, k=1).nnz)
        weights.sum_duplicates()  # canonical CSR: sorted indices, so equal graphs hash equally
        self._adjacency_digest = content_digest(weights.indptr, weights.indices, weights.data)

    def fingerprint(self) -> str:
        """Hash of the adjacency weights, the Laplacian's kind and the eigenpairs kept."""
        return content_digest(
            "Graph", self._adjacency_digest, self.normalized, self.num_levels_available
        )

    def __repr__(self) -> str:
        flag = ", normalized" if self.normalized else ""
        return f"Graph({self.num_points} nodes, {self.num_edges} edges{flag})"

    @classmethod
    def from_edges(
        cls,
        edges,
        num_nodes: int,
        weights=None,
        normalized: bool = False,
        num_eigenpairs: int | None = None,
    ) -> Graph:
        """Build a graph from an edge list; repeated edges add their weights.

        Args:
            edges: integer node pairs, shape ``(E, 2)``, each undirected edge listed once.
            num_nodes: number of nodes ``n``; nodes without edges are isolated.
            weights: positive edge weights, shape ``(E,)``; default 1.
            normalized, num_eigenpairs: as for :class:`Graph`.
        """
        num_nodes = check_int("num_nodes", num_nodes, minimum=1)
        pairs = _edge_pairs(edges)
        if pairs.size and (pairs.min() < 0 or pairs.max() >= num_nodes):
            raise InputDataError(
                f"`edges` must hold node indices in [0, {num_nodes}) (`num_nodes` = {num_nodes}), "
                f"got values in [{pairs.min()}, {pairs.max()}]. Raise `num_nodes` or fix `edges`."
            )
        loops = np.flatnonzero(pairs[:, 0] == pairs[:, 1])
        if loops.size:
            raise InputDataError(
                f"`edges` holds {loops.size} self-loop(s), e.g. edge {loops[0]} = "
                f"{tuple(pairs[loops[0]].tolist())}; a graph from an edge list has none. Drop "
                "them, or pass an adjacency matrix to Graph."
            )
        w = _edge_weights(weights, pairs)
        rows = np.concatenate([pairs[:, 0], pairs[:, 1]])
        cols = np.concatenate([pairs[:, 1], pairs[:, 0]])
        adjacency = sps.coo_matrix(
            (np.concatenate([w, w]), (rows, cols)), shape=(num_nodes, num_nodes)
        )
        return cls(adjacency.tocsr(), normalized=normalized, num_eigenpairs=num_eigenpairs)


def _edge_pairs(edges) -> np.ndarray:
    """``edges`` as integer node pairs, shape ``(E, 2)`` (``(0, 2)`` for an empty list)."""
    pairs = as_numpy(edges)
    if pairs.size == 0:
        pairs = pairs.reshape(0, 2)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.dtype.kind not in "iuf":
        raise InputDataError(
            f"`edges` must be integer node pairs of shape (E, 2), got shape {pairs.shape} and "
            f"dtype {pairs.dtype}. Pass e.g. [[0, 1], [1, 2]]."
        )
    whole = np.isfinite(pairs) & (pairs == np.round(pairs))
    if not whole.all():
        k = int(np.flatnonzero(~whole.all(axis=1))[0])
        raise InputDataError(
            f"`edges` must hold integer node indices, got edge {k} = ({pairs[k, 0]:g}, "
            f"{pairs[k, 1]:g}) ({int((~whole).sum())} non-integer entries in all). Node indices "
            "count from 0."
        )
    return pairs.astype(np.int64)


def _edge_weights(weights, pairs: np.ndarray) -> np.ndarray:
    """One finite positive weight per edge of ``pairs`` ``(E, 2)``, shape ``(E,)``; default 1."""
    if weights is None:
        return np.ones(len(pairs))
    w = as_numpy(weights)
    try:
        if w.dtype.kind not in "biufO":  # complex, text, dates: not weights
            raise TypeError(f"dtype {w.dtype}")
        w = w.astype(np.float64)  # object arrays of Python numbers (2**70, Fraction) convert
    except (TypeError, ValueError) as error:
        raise InputDataError(
            f"`weights` must be real numbers, one positive weight per edge, got {error}."
        ) from None
    if w.shape != (len(pairs),):
        raise InputDataError(
            f"`weights` must hold one weight per edge, shape ({len(pairs)},), got shape "
            f"{w.shape}. Pass one positive weight per row of `edges`."
        )
    bad = np.flatnonzero(~(np.isfinite(w) & (w > 0)))
    if bad.size:
        k = int(bad[0])
        raise InputDataError(
            f"`weights` must be finite and positive, got weight {k} = {w[k]:g} for edge "
            f"{tuple(pairs[k].tolist())} ({bad.size} such weights in all). Leave out absent edges "
            "instead of giving weight 0."
        )
    return w


def _adjacency_matrix(adjacency) -> sps.csr_matrix:
    """Validate ``adjacency`` and return it as an exactly symmetric float64 CSR matrix."""
    if type(adjacency).__module__.split(".")[0] == "networkx":
        raise InputDataError(
            f"`adjacency` must be a matrix, got a networkx {type(adjacency).__name__}. Convert "
            "it with `networkx.to_scipy_sparse_array(G, nodelist=sorted(G))` (weights from the "
            "edges' 'weight' attribute, 1 where absent); node i is then the i-th of `nodelist`."
        )
    if isinstance(adjacency, torch.Tensor) and adjacency.layout != torch.strided:
        adjacency = _scipy_from_torch_sparse(adjacency)
    try:
        values = adjacency if sps.issparse(adjacency) else as_numpy(adjacency)
        if np.issubdtype(values.dtype, np.complexfloating):
            raise InputDataError(
                f"`adjacency` must be real, got dtype {values.dtype}; edge weights are real "
                "similarities. Pass its real part (`A.real`) if the imaginary parts are meant to "
                "be 0."
            )
        matrix = sps.csr_matrix(values.astype(np.float64))
    except (TypeError, ValueError) as error:
        if isinstance(error, InputDataError):
            raise
        raise InputDataError(
            f"`adjacency` must be a square numeric matrix (array, tensor or scipy.sparse), got "
            f"{type(adjacency).__name__} ({error})."
        ) from error
    n_rows, n_cols = matrix.shape
    if n_rows != n_cols or n_rows == 0:
        raise InputDataError(
            f"`adjacency` must be a non-empty square (n, n) matrix, got shape {matrix.shape}."
        )
    data = matrix.data
    if not np.all(np.isfinite(data)):
        raise InputDataError(
            f"`adjacency` contains {int((~np.isfinite(data)).sum())} NaN or infinite entries. "
            "Use 0 for absent edges and finite positive weights otherwise."
        )
    if np.any(data < 0):
        raise InputDataError(
            f"`adjacency` must be non-negative, got a minimum of {data.min():g}. Edge weights "
            "measure similarity; use 0 for absent edges."
        )
    asymmetry = abs(matrix - matrix.T).tocoo()
    scale = float(np.abs(data).max()) if data.size else 0.0
    if asymmetry.nnz and asymmetry.data.max() > SYMMETRY_RTOL * scale:
        k = int(asymmetry.data.argmax())
        i, j = int(asymmetry.row[k]), int(asymmetry.col[k])
        raise InputDataError(
            f"`adjacency` must be symmetric (an undirected graph), but A[{i}, {j}] = "
            f"{float(matrix[i, j])!r} and A[{j}, {i}] = {float(matrix[j, i])!r}. Symmetrise "
            "it, e.g. with (A + A.T) / 2."
        )
    matrix = ((matrix + matrix.T) / 2).tocsr()
    matrix.eliminate_zeros()
    return matrix


def _scipy_from_torch_sparse(adjacency: torch.Tensor) -> sps.coo_matrix:
    """A torch sparse tensor (COO, CSR, CSC or BSR), shape ``(n, n)``, as a SciPy COO matrix."""
    if adjacency.dim() != 2:
        raise InputDataError(
            f"`adjacency` must be a square (n, n) matrix, got a sparse tensor of shape "
            f"{tuple(adjacency.shape)}."
        )
    coo = adjacency.detach().cpu().to_sparse_coo().coalesce()
    rows, cols = coo.indices().numpy()
    values = coo.values()  # SciPy takes neither float16 nor bfloat16; complex is refused later
    values = values if values.is_complex() else values.to(torch.float64)
    return sps.coo_matrix((values.numpy(), (rows, cols)), shape=tuple(coo.shape))
