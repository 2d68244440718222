r"""Vertices of a triangle mesh, with the spectrum of its cotangent Laplacian and lumped mass."""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.sparse as sps
import torch
from torch import Tensor

from manibo._stack import user_stacklevel
from manibo.exceptions import ConfigurationError, InputDataError, ManiboWarning
from manibo.spaces.base import content_digest
from manibo.spaces.eigenvector_space import EigenvectorSpace, as_numpy

AREA_RTOL = 1e-12


def cotangent_laplacian(
    vertices: np.ndarray, faces: np.ndarray
) -> tuple[sps.csr_matrix, np.ndarray]:
    r"""Cotangent stiffness matrix and lumped (barycentric) mass of a triangle mesh.

    :math:`L_{ij} = -\tfrac12(\cot\alpha_{ij} + \cot\beta_{ij})` for an edge ``ij`` with
    opposite angles :math:`\alpha_{ij}, \beta_{ij}`, :math:`L_{ii} = -\sum_{j\ne i} L_{ij}`
    (positive semi-definite, constants in its kernel), and :math:`M_{ii}` is a third of the area of
    the faces around vertex ``i``.

    Args:
        vertices: shape ``(V, 3)``.
        faces: vertex indices, shape ``(F, 3)``.

    Returns:
        ``(L, mass)``: sparse ``(V, V)`` and ``(V,)``.
    """
    n = len(vertices)
    corners = vertices[faces]  # (F, 3 corners, 3 coordinates)
    double_area = _double_areas(vertices, faces)
    rows, cols, values = [], [], []
    for c in range(3):
        i, j = (c + 1) % 3, (c + 2) % 3
        u, v = corners[:, i] - corners[:, c], corners[:, j] - corners[:, c]
        half_cot = 0.5 * (u * v).sum(-1) / double_area
        rows += [faces[:, i], faces[:, j]]
        cols += [faces[:, j], faces[:, i]]
        values += [half_cot, half_cot]
    weights = sps.coo_matrix(
        (np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)
    )
    weights = weights.tocsr()
    laplacian = sps.diags(np.asarray(weights.sum(axis=1)).ravel()) - weights
    mass = np.bincount(faces.ravel(), weights=np.repeat(double_area / 6, 3), minlength=n)
    return sps.csr_matrix(laplacian), mass


class Mesh(EigenvectorSpace):
    r"""Vertices ``0 .. V-1`` of a triangle mesh; points are vertex indices as floats, ``(*b, 1)``.

    The spectrum solves the generalised problem :math:`L\phi = \lambda M\phi` of
    :func:`cotangent_laplacian`, which approximates the Laplace–Beltrami operator of the surface
    (eigenvalues scale as ``1 / size**2``). Eigenvectors are :math:`M`-orthonormal and scaled by
    :math:`\sqrt{\mathrm{area}}`, i.e. orthonormal under the normalised area measure
    (GeometricKernels instead re-orthonormalises them in the Euclidean inner product and scales by
    :math:`\sqrt{V}`); ``spectral_dim = 2``. ``random`` is uniform with respect to area (vertices
    drawn with probability proportional to their lumped mass), ``distance`` is the shortest path
    along mesh edges and ``chart`` gives vertex positions.

    Args:
        vertices: positions, shape ``(V, 3)`` (kept as the float64 tensor ``self.vertices``).
        faces: vertex indices of the triangles, shape ``(F, 3)``; every vertex must be used by a
            face (kept as the int64 tensor ``self.faces``). A face that repeats an earlier one
            (the same three vertices in any order or orientation, as double-sided exports write
            them) is dropped with a ``ManiboWarning``: each copy would add its area and cotangent
            weights again and change the spectrum.
        num_eigenpairs: cap on the eigenpairs kept (see
            :class:`~manibo.spaces.eigenvector_space.EigenvectorSpace`).
    """

    dim = 2
    spectral_dim = 2
    _noun = "vertex"

    def __init__(self, vertices, faces, num_eigenpairs: int | None = None) -> None:
        points, triangles = _validate_mesh(vertices, faces)
        _warn_of_duplicate_vertices(points)
        triangles = _drop_repeated_faces(triangles)
        laplacian, mass = cotangent_laplacian(points, triangles)
        super().__init__(laplacian, mass, _edge_lengths(points, triangles), num_eigenpairs)
        self.vertices = torch.from_numpy(points)
        self.faces = torch.from_numpy(triangles)
        self.area = float(mass.sum())
        # the radius of the sphere of this area: 1 for a unit icosphere, 1000 for one in mm
        self.length_unit = math.sqrt(self.area / (4 * math.pi))

    def __repr__(self) -> str:
        return f"Mesh({self.num_points} vertices, {len(self.faces)} faces)"

    def fingerprint(self) -> str:
        """Hash of the vertex positions, the faces and the eigenpairs kept."""
        return content_digest("Mesh", self.vertices, self.faces, self.num_levels_available)

    def _shape_advice(self, x: Tensor, name: str) -> str | None:
        if x.shape[-1:] != (3,):
            return None
        return (
            "A last dimension of 3 looks like vertex positions (x, y, z); points of a Mesh are "
            "vertex indices, one float per point, shape (n, 1). Find the index of the nearest "
            f"vertex with `torch.cdist({name}, mesh.vertices.to({name})).argmin(-1)` and pass "
            f"it as `.unsqueeze(-1).double()`."
        )

    def chart(self, x: Tensor) -> Tensor:
        """Positions of vertices ``x`` (shape ``(*batch, 1)``) in space, shape ``(*batch, 3)``."""
        table = self._tensor("positions", x.dtype, x.device, self.vertices.numpy)
        return table[self._indices(x)]

    @classmethod
    def icosphere(
        cls, subdivisions: int = 2, radius: float = 1.0, num_eigenpairs: int | None = None
    ) -> Mesh:
        """The icosahedron, each face split into 4 ``subdivisions`` times, projected onto a sphere.

        It has ``10 * 4**subdivisions + 2`` vertices; its spectrum approximates the sphere's
        :math:`l(l+1)/r^2` with multiplicity :math:`2l+1` (exactly degenerate where the icosahedral
        symmetry keeps it so, e.g. ``l = 1, 2``).
        """
        if (
            isinstance(subdivisions, bool)
            or int(subdivisions) != subdivisions
            or not 0 <= subdivisions <= 7
        ):
            raise ConfigurationError(
                f"`subdivisions` must be an integer in [0, 7], got {subdivisions!r}."
            )
        if not radius > 0 or not math.isfinite(radius):
            raise ConfigurationError(f"`radius` must be positive and finite, got {radius!r}.")
        t = (1 + math.sqrt(5)) / 2
        vertices = np.array(
            [[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t],
             [0, -1, -t], [0, 1, -t], [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]]
        )  # fmt: skip
        faces = np.array(
            [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4],
             [11, 10, 2], [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8],
             [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]]
        )  # fmt: skip
        for _ in range(int(subdivisions)):
            vertices, faces = _subdivide(vertices, faces)
        vertices = radius * vertices / np.linalg.norm(vertices, axis=1, keepdims=True)
        return cls(vertices, faces, num_eigenpairs=num_eigenpairs)

    @classmethod
    def torus(
        cls,
        major_radius: float = 1.0,
        minor_radius: float = 0.4,
        resolution: tuple[int, int] = (32, 12),
        num_eigenpairs: int | None = None,
    ) -> Mesh:
        """A torus of revolution about the z axis, triangulated on a regular angle grid.

        Args:
            major_radius: distance from the axis to the tube's centre line.
            minor_radius: tube radius, ``< major_radius``.
            resolution: grid points around the axis and around the tube, each ``>= 3``.
        """
        n_major, n_minor = resolution
        if not 0 < minor_radius < major_radius or min(n_major, n_minor) < 3:
            raise ConfigurationError(
                f"need 0 < `minor_radius` < `major_radius` and `resolution` >= (3, 3), got radii "
                f"{minor_radius!r}, {major_radius!r} and resolution {resolution!r}."
            )
        u = 2 * np.pi * np.arange(n_major) / n_major
        v = 2 * np.pi * np.arange(n_minor) / n_minor
        uu, vv = np.meshgrid(u, v, indexing="ij")
        ring = major_radius + minor_radius * np.cos(vv)
        vertices = np.stack(
            [ring * np.cos(uu), ring * np.sin(uu), minor_radius * np.sin(vv)], -1
        ).reshape(-1, 3)
        i, j = np.meshgrid(np.arange(n_major), np.arange(n_minor), indexing="ij")
        a, b = i * n_minor + j, (i + 1) % n_major * n_minor + j
        c, d = (i + 1) % n_major * n_minor + (j + 1) % n_minor, i * n_minor + (j + 1) % n_minor
        faces = np.concatenate(
            [np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)]
        )
        return cls(vertices, faces, num_eigenpairs=num_eigenpairs)


def _face_edges(faces: np.ndarray) -> np.ndarray:
    """Edges 01, 12, 20 of every face as sorted pairs, shape ``(3 * F, 2)``, all edges 01 first."""
    return np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)


def _double_areas(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Twice the area of every face, shape ``(F,)``."""
    p0, p1, p2 = vertices[faces[:, 0]], vertices[faces[:, 1]], vertices[faces[:, 2]]
    return np.linalg.norm(np.cross(p1 - p0, p2 - p0), axis=-1)


def _subdivide(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split every triangle into 4 at its edge midpoints (shared midpoints are one vertex)."""
    unique, inverse = np.unique(_face_edges(faces), axis=0, return_inverse=True)
    midpoint = len(vertices) + inverse.reshape(3, -1)  # midpoint[k, f]: of edge k of face f
    ab, bc, ca = midpoint
    a, b, c = faces.T
    new_faces = np.stack(
        [np.stack(f, -1) for f in ([a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca])]
    )
    new_vertices = np.concatenate([vertices, vertices[unique].mean(axis=1)])
    return new_vertices, new_faces.reshape(-1, 3)


def _edge_lengths(vertices: np.ndarray, faces: np.ndarray) -> sps.csr_matrix:
    """Sparse ``(V, V)`` matrix of Euclidean lengths of the mesh edges (each stored once)."""
    edges = np.unique(_face_edges(faces), axis=0)
    lengths = np.linalg.norm(vertices[edges[:, 0]] - vertices[edges[:, 1]], axis=1)
    n = len(vertices)
    return sps.csr_matrix((lengths, (edges[:, 0], edges[:, 1])), shape=(n, n))


def _validate_mesh(vertices, faces) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(vertices float64 (V, 3), faces int64 (F, 3))`` or raise ``InputDataError``."""
    v = as_numpy(vertices)
    if v.ndim != 2 or v.shape[1] != 3 or not np.issubdtype(v.dtype, np.number):
        raise InputDataError(
            f"`vertices` must be a numeric array of shape (V, 3), got shape {v.shape} and dtype "
            f"{v.dtype}."
        )
    v = v.astype(np.float64)
    if not np.all(np.isfinite(v)):
        raise InputDataError(
            f"`vertices` contains {int((~np.isfinite(v)).sum())} NaN or infinite coordinates; fix "
            "or drop those vertices."
        )
    f = as_numpy(faces)
    if f.ndim != 2 or f.shape[1] != 3 or len(f) == 0 or not np.issubdtype(f.dtype, np.number):
        raise InputDataError(
            f"`faces` must be a non-empty array of vertex-index triples, shape (F, 3), got shape "
            f"{f.shape} and dtype {f.dtype}."
        )
    if not np.issubdtype(f.dtype, np.integer):
        if not (np.all(np.isfinite(f)) and np.array_equal(f, np.round(f))):
            raise InputDataError(
                "`faces` must hold integer vertex indices; some entries are not integers."
            )
    f = f.astype(np.int64)
    if f.min() < 0 or f.max() >= len(v):
        raise InputDataError(
            f"`faces` must index vertices in [0, {len(v)}) (there are {len(v)} vertices), got "
            f"indices in [{f.min()}, {f.max()}]. Indices are 0-based; subtract 1 if the file was "
            "1-based."
        )
    repeated = np.flatnonzero((f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 2] == f[:, 0]))
    double_area = _double_areas(v, f)
    extent = float(np.ptp(v, axis=0).max()) if len(v) > 1 else 0.0
    degenerate = np.union1d(repeated, np.flatnonzero(double_area <= AREA_RTOL * extent**2))
    if degenerate.size:
        k = int(degenerate[0])
        raise InputDataError(
            f"`faces` holds {degenerate.size} degenerate triangle(s) (repeated vertex or zero "
            f"area), e.g. face {k} = {tuple(int(i) for i in f[k])}. Remove them (and merge "
            "duplicate vertices)."
        )
    unused = np.setdiff1d(np.arange(len(v)), f)
    if unused.size:
        raise InputDataError(
            f"`vertices` holds {unused.size} vertices used by no face, e.g. {unused[:5].tolist()}; "
            "they have no area and no Laplacian. Drop them and re-index `faces`."
        )
    return v, f


def _warn_of_duplicate_vertices(points: np.ndarray) -> None:
    """Warn when vertices share a position: exported meshes duplicate them along texture seams,
    and each copy belongs to its own faces only, so the surface is cut there (the distance
    across is infinite and the kernel's correlation 0)."""
    distinct = len(np.unique(points, axis=0))
    if distinct < len(points):
        warnings.warn(
            f"{len(points) - distinct} vertices of the mesh repeat the position of another "
            f"({distinct} distinct positions among {len(points)} vertices): the surface is cut "
            "where they meet, as if its pieces were apart. Merge duplicate vertices (and update "
            "the faces) before building the mesh if it is one surface.",
            ManiboWarning,
            stacklevel=user_stacklevel(),
        )


def _drop_repeated_faces(faces: np.ndarray) -> np.ndarray:
    """``faces`` without those that repeat an earlier face (the same vertex set, in any order or
    orientation), with a warning naming them: each copy would count its triangle again, adding
    its area to the mass and its cotangents to the stiffness, which changes the spectrum."""
    _, first, inverse = np.unique(
        np.sort(faces, axis=1), axis=0, return_index=True, return_inverse=True
    )
    original = first[inverse.ravel()]  # for every face, the first face with its vertices
    repeats = np.flatnonzero(original != np.arange(len(faces)))
    if not repeats.size:
        return faces
    k = int(repeats[0])
    j = int(original[k])
    warnings.warn(
        f"{repeats.size} face(s) of the mesh repeat an earlier face (the same three vertices, in "
        f"any order or orientation), e.g. face {k} = {tuple(int(i) for i in faces[k])} repeats "
        f"face {j} = {tuple(int(i) for i in faces[j])}; they were dropped, since a repeated "
        "triangle would count its area and cotangent weights twice and change the spectrum. "
        "Remove the repeated faces (double-sided or badly merged exports write them) to silence "
        "this.",
        ManiboWarning,
        stacklevel=user_stacklevel(),
    )
    return faces[original == np.arange(len(faces))]
