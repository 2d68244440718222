r"""The spaces of the kernel-matrix benchmark: points, manibo's kernel and the alternatives.

Every case evaluates the Matérn kernel (ν = 3/2, lengthscale 1, float64) on one space with a fixed
truncation that all implementations share:

* **manibo**: ``GeometricMaternKernel(space, nu=1.5, num_levels=L).forward(X, X)``, the streaming
  series (or :math:`\Phi W \Phi^\top` on meshes and graphs).
* **naive torch**: the textbook evaluation written here in plain torch from the closed-form
  spectrum, independently of manibo: the per-level terms :math:`G_l(x, x')` are stacked into an
  ``[N, N, L]`` tensor and contracted with the normalised weights (what GeometricKernels does on
  these spaces). It exists where the level kernels have a closed form (spheres, the torus, SO(3)).
* **GeometricKernels 1.0.1** (torch backend), with the same number of levels or eigenpairs.

Only the standard library and NumPy are imported at module level: the GeometricKernels worker
imports this module from its own virtualenv, which has torch and NumPy but not manibo.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NU = 1.5
LENGTHSCALE = 1.0

#: Label of each implementation in tables and figures.
IMPLEMENTATIONS = {
    "manibo": "manibo",
    "naive_torch": "naive torch ([N, N, L] tensor)",
    "geometric_kernels": "GeometricKernels 1.0.1 (torch)",
}
#: Packages whose versions each implementation's worker records.
PACKAGES = {
    "manibo": ("manibo", "torch", "gpytorch", "numpy", "scipy"),
    "naive_torch": ("torch",),
    "geometric_kernels": ("geometric-kernels", "torch", "numpy", "scipy"),
}


@dataclass(frozen=True)
class KernelCase:
    """One space of the benchmark.

    Attributes:
        name: identifier, used in file names (``kernel_speed_<name>.json``).
        label: the space in tables and figures.
        sizes: numbers of points N of a full run.
        prepare: ``prepare(workdir, smoke) -> settings``; runs once in the driver (with manibo) and
            returns the JSON-serialisable settings every worker receives (truncation, data files).
        manibo_space: ``manibo_space(settings) -> CompactSpace``.
        geometric_kernels: ``geometric_kernels(settings, X) -> (space, num, X_gk)``.
        note: what is compared and, where an alternative is missing, why.
        naive: ``naive(settings, X) -> compute`` (plain torch), or None where no closed form exists.
        naive_max_n: the largest N for the naive evaluation (its memory grows like ``N² L``).
        gk_max_n: the largest N for GeometricKernels.
        homogeneous: ``k(x, x) = 1`` at every point (else only on average).
        smoke_sizes: numbers of points N of a ``--smoke`` run.
        points: ``points(n, seed, settings) -> array (N, D)``, float64; default: uniform random
            points of ``manibo_space``.
        no_naive: why there is no naive evaluation (where ``naive`` is None).
    """

    name: str
    label: str
    sizes: tuple[int, ...]
    prepare: Callable[[Path, bool], dict]
    manibo_space: Callable[[dict], object]
    geometric_kernels: Callable
    note: str
    naive: Callable | None = None
    naive_max_n: int = 2000
    gk_max_n: int = 2000
    homogeneous: bool = True
    smoke_sizes: tuple[int, ...] = (30, 60)
    points: Callable[[int, int, dict], np.ndarray] | None = None
    no_naive: str = "no closed-form level kernel (both libraries use Φ W Φᵀ)"

    def sample(self, n: int, seed: int, settings: dict) -> np.ndarray:
        """The ``n`` points of a run, shape ``(N, D)``, float64 (seeded)."""
        if self.points is not None:
            return self.points(n, seed, settings)
        import torch

        generator = torch.Generator().manual_seed(seed)
        space = self.manibo_space(settings)
        return space.random(n, generator=generator, dtype=torch.float64).numpy()

    def dense_bytes(self, settings: dict, n: int) -> int:
        """Bytes an alternative needs at N (an estimate, to skip what cannot fit).

        Where the level kernels have a closed form, the alternatives stack an ``[N, N, L]`` tensor
        from per-level matrices; on meshes and graphs they hold a few ``[N, N]`` matrices.
        """
        if self.naive is None:
            return 4 * n * n * 8
        return 2 * n * n * settings.get("tuples", settings["num_levels"]) * 8


def normalised_weights(eigenvalues, multiplicities, spectral_dim: float, like):
    r"""Weights :math:`w_l = S(\lambda_l) / \sum_j m_j S(\lambda_j)` of the Matérn spectrum.

    :math:`S(\lambda) = (2\nu/\ell^2 + \lambda)^{-\nu-d/2}`.

    Args:
        eigenvalues, multiplicities: sequences of length ``L``.
        spectral_dim: the ``d`` of the spectrum.
        like: a tensor whose dtype and device the weights take.

    Returns:
        Shape ``(L,)``.
    """
    import torch

    lam = torch.as_tensor(eigenvalues, dtype=like.dtype, device=like.device)
    mult = torch.as_tensor(multiplicities, dtype=like.dtype, device=like.device)
    spectrum = (2 * NU / LENGTHSCALE**2 + lam) ** (-NU - spectral_dim / 2)
    return spectrum / (mult * spectrum).sum()


def stacked_sum(terms: list, weights):
    """``sum_l weights[l] * terms[l]`` the naive way: stack to ``[N, N, L]``, then contract."""
    import torch

    return torch.einsum("ijl,l->ij", torch.stack(terms, dim=-1), weights)


def _vertex_subset(n: int, seed: int, settings: dict) -> np.ndarray:
    """``n`` distinct vertex or node indices drawn uniformly, as floats, shape ``(n, 1)``."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(settings["num_points"], size=n, replace=False))[:, None].astype(float)


def _gk_params(like):
    import torch

    return {
        "nu": torch.tensor([NU], dtype=like.dtype, device=like.device),
        "lengthscale": torch.tensor([LENGTHSCALE], dtype=like.dtype, device=like.device),
    }


def manibo_compute(case: KernelCase, settings: dict, points) -> Callable:
    """manibo's ``GeometricMaternKernel(space, nu, num_levels).forward(X, X)`` without gradients
    (on non-compact spaces, with ``settings["kernel_options"]`` instead of ``num_levels``)."""
    import torch

    from manibo.kernels.spectral import GeometricMaternKernel

    space = case.manibo_space(settings)
    options = settings.get("kernel_options", {"num_levels": settings.get("num_levels")})
    kernel = GeometricMaternKernel(space, nu=NU, **options)
    kernel.to(device=points.device, dtype=points.dtype)
    kernel.lengthscale = LENGTHSCALE

    def compute():
        with torch.no_grad():
            return kernel.forward(points, points)

    return compute


def gk_compute(settings: dict, points, build: Callable) -> Callable:
    """GeometricKernels' ``K(params, X, X)`` for the space and points that ``build`` returns."""
    import geometric_kernels.torch  # noqa: F401  (registers the torch backend)
    import lab
    import torch
    from geometric_kernels.kernels import MaternGeometricKernel

    space, num, x = build(settings, points)
    if "gk_key" in settings:  # random phases: seeded, the same phases at every call
        key = torch.Generator(device=points.device).manual_seed(settings["gk_key"])
        kernel = MaternGeometricKernel(space, num=num, key=key)
    else:
        kernel = MaternGeometricKernel(space, num=num)
    params = _gk_params(points)

    def compute():
        with torch.no_grad(), lab.on_device(points.device):
            return kernel.K(params, x, x)

    return compute


# --------------------------------------------------------------------------------------------
# hyperspheres
# --------------------------------------------------------------------------------------------
SPHERE_LEVELS = 25  # GeometricKernels' default


def _sphere_space(settings: dict):
    from manibo.spaces import Sphere

    return Sphere(settings["dim"])


def _sphere_naive(settings: dict, x) -> Callable:
    r"""Stacked level kernels :math:`G_l = \frac{l+\alpha}{\alpha} C_l^\alpha(x \cdot y)`.

    Here :math:`\alpha = (d-1)/2` and :math:`C_l^\alpha` is the Gegenbauer polynomial.
    """
    import torch

    d, levels = settings["dim"], settings["num_levels"]
    alpha = (d - 1) / 2
    degrees = range(levels)
    multiplicities = [
        math.comb(l + d, d) - (math.comb(l + d - 2, d) if l >= 2 else 0) for l in degrees
    ]
    weights = normalised_weights([l * (l + d - 1) for l in degrees], multiplicities, d, x)

    def compute():
        with torch.no_grad():
            t = x @ x.T
            gegenbauer = [torch.ones_like(t), 2 * alpha * t]
            for l in range(2, levels):
                previous, before = gegenbauer[-1], gegenbauer[-2]
                gegenbauer.append(
                    (2 * (l + alpha - 1) * t * previous - (l + 2 * alpha - 2) * before) / l
                )
            terms = [(l + alpha) / alpha * c for l, c in zip(degrees, gegenbauer, strict=True)]
            return stacked_sum(terms, weights)

    return compute


def _sphere_gk(settings: dict, x):
    from geometric_kernels.spaces import Hypersphere

    return Hypersphere(dim=settings["dim"]), settings["num_levels"], x


def sphere_case(dim: int) -> KernelCase:
    """S^dim with GeometricKernels' default 25 levels."""
    return KernelCase(
        name=f"sphere{dim}",
        label=f"S{'²' if dim == 2 else '⁵' if dim == 5 else f'^{dim}'}",
        sizes=(200, 500, 1000, 2000, 5000, 10000),
        prepare=lambda workdir, smoke: {"dim": dim, "num_levels": SPHERE_LEVELS},
        manibo_space=_sphere_space,
        naive=_sphere_naive,
        geometric_kernels=_sphere_gk,
        note=f"{SPHERE_LEVELS} levels (degrees 0..{SPHERE_LEVELS - 1}), GeometricKernels' default",
    )


# --------------------------------------------------------------------------------------------
# the flat torus T^3
# --------------------------------------------------------------------------------------------
TORUS_CIRCLES = 3
TORUS_LEVELS = 10


def _torus_space(settings: dict):
    from manibo.spaces import Torus

    return Torus(settings["circles"])


def _torus_prepare(workdir: Path, smoke: bool) -> dict:
    """manibo's levels group the tuples of circle levels by eigenvalue; GK takes the same tuples."""
    space = _torus_space({"circles": TORUS_CIRCLES})
    eigenvalues, multiplicities = space.levels(TORUS_LEVELS)
    return {
        "circles": TORUS_CIRCLES,
        "num_levels": TORUS_LEVELS,
        "max_eigenvalue": float(eigenvalues[-1]),
        "eigenfunctions": int(multiplicities.sum()),
        "tuples": int(len(space.level_table(TORUS_LEVELS))),
    }


def torus_tuples(circles: int, max_eigenvalue: float) -> list[tuple[int, ...]]:
    """Every tuple of circle levels ``(j_1, .., j_k)`` with ``sum j_i² <= max_eigenvalue``."""
    top = math.isqrt(int(max_eigenvalue))
    return [
        j
        for j in itertools.product(range(top + 1), repeat=circles)
        if sum(v * v for v in j) <= max_eigenvalue
    ]


def _torus_naive(settings: dict, x) -> Callable:
    r"""Stacked tuple kernels :math:`\prod_i g_{j_i}(\theta_i - \theta_i')`.

    Here :math:`g_0 = 1` and :math:`g_j(t) = 2\cos(j t)`.
    """
    import torch

    tuples = torus_tuples(settings["circles"], settings["max_eigenvalue"])
    multiplicities = [math.prod(1 if v == 0 else 2 for v in j) for j in tuples]
    weights = normalised_weights(
        [sum(v * v for v in j) for j in tuples], multiplicities, settings["circles"], x
    )
    top = max(max(j) for j in tuples)

    def compute():
        with torch.no_grad():
            factors = []
            for i in range(settings["circles"]):
                gap = x[:, i, None] - x[None, :, i]
                factors.append(
                    [torch.ones_like(gap)] + [2 * torch.cos(v * gap) for v in range(1, top + 1)]
                )
            terms = [math.prod((factors[i][v] for i, v in enumerate(j)), start=1) for j in tuples]
            return stacked_sum(terms, weights)

    return compute


def _torus_gk(settings: dict, x):
    from geometric_kernels.spaces import Circle, ProductDiscreteSpectrumSpace

    tuples = settings["tuples"]
    circles = [Circle() for _ in range(settings["circles"])]
    return ProductDiscreteSpectrumSpace(*circles, num_levels=tuples), tuples, x


TORUS = KernelCase(
    name="torus3",
    label="T³",
    sizes=(200, 500, 1000, 2000, 5000),
    prepare=_torus_prepare,
    manibo_space=_torus_space,
    naive=_torus_naive,
    geometric_kernels=_torus_gk,
    gk_max_n=1000,
    note=(
        f"the Matérn kernel of the product manifold; manibo's {TORUS_LEVELS} levels (eigenvalues "
        "up to 10) are 35 tuples of circle levels, and GeometricKernels' "
        "ProductDiscreteSpectrumSpace gets num_levels = 35, so both sum the same tuples. "
        "GeometricKernels stacks about ten [N, N, 35] arrays (2.2 GB at N = 1000), so it runs up "
        "to N = 1000"
    ),
)


# --------------------------------------------------------------------------------------------
# SO(3)
# --------------------------------------------------------------------------------------------
SO3_LEVELS = 20  # GeometricKernels' default for Lie groups


def _so3_space(settings: dict):
    from manibo.spaces import SpecialOrthogonal

    return SpecialOrthogonal(3)


def _so3_naive(settings: dict, x) -> Callable:
    r"""Stacked :math:`(2p+1)\chi_p = (2p+1) U_{2p}(\cos(\theta/2))`.

    Here :math:`\cos\theta = (\mathrm{tr}(R^\top R') - 1)/2`.
    """
    import torch

    levels = settings["num_levels"]
    weights = normalised_weights(
        [p * (p + 1) for p in range(levels)],
        [(2 * p + 1) ** 2 for p in range(levels)],
        3,
        x,
    )

    def compute():
        with torch.no_grad():
            half_cos = ((x @ x.T + 1) / 4).clamp_min(0).sqrt()  # cos(θ/2) from tr(RᵀR')
            chebyshev = [torch.ones_like(half_cos), 2 * half_cos]
            for _ in range(2, 2 * levels - 1):
                chebyshev.append(2 * half_cos * chebyshev[-1] - chebyshev[-2])
            terms = [(2 * p + 1) * chebyshev[2 * p] for p in range(levels)]
            return stacked_sum(terms, weights)

    return compute


def _so3_gk(settings: dict, x):
    from geometric_kernels.spaces import SpecialOrthogonal

    return SpecialOrthogonal(3), settings["num_levels"], x.reshape(-1, 3, 3)


SO3 = KernelCase(
    name="so3",
    label="SO(3)",
    sizes=(200, 500, 1000, 2000, 5000, 10000),
    prepare=lambda workdir, smoke: {"num_levels": SO3_LEVELS},
    manibo_space=_so3_space,
    naive=_so3_naive,
    geometric_kernels=_so3_gk,
    gk_max_n=500,
    note=(
        f"{SO3_LEVELS} levels (irreducible representations), GeometricKernels' default. "
        "GeometricKernels forms x y⁻¹ for every pair and evaluates each level's character as a "
        "complex polynomial in its eigenvalues; that takes minutes at N = 500, so it runs up to "
        "N = 500 only"
    ),
)


# --------------------------------------------------------------------------------------------
# SO(n) and SU(n) beyond SO(3): characters on the fly against GeometricKernels' tables
# --------------------------------------------------------------------------------------------
GROUP_REPRESENTATIONS = 20  # GeometricKernels' default number of signatures for Lie groups


def _group_space(settings: dict):
    from manibo.spaces import SpecialOrthogonal, SpecialUnitary

    kind = SpecialUnitary if settings["unitary"] else SpecialOrthogonal
    return kind(settings["n"])


def _group_prepare(n: int, unitary: bool) -> Callable[[Path, bool], dict]:
    """The most whole levels holding at most 20 irreducible representations.

    GeometricKernels makes every representation a level of its own, sorted by eigenvalue, and SO(2m)
    pairs (…, ±λ_m) count twice; cutting manibo's levels (whole eigenvalues) at a level boundary
    and giving GeometricKernels that many representations makes both sum the same ones.
    """

    def prepare(workdir: Path, smoke: bool) -> dict:
        settings = {"n": n, "unitary": unitary}
        weights = _group_space(settings)._weights
        count, representations = 0, 0
        for level in weights.levels(GROUP_REPRESENTATIONS + 1):
            more = sum(level.copies)
            if representations + more > GROUP_REPRESENTATIONS:
                break
            count, representations = count + 1, representations + more
        return {**settings, "num_levels": count, "representations": representations}

    return prepare


def _group_gk(settings: dict, x):
    import torch
    from geometric_kernels.spaces import SpecialOrthogonal, SpecialUnitary

    n = settings["n"]
    if settings["unitary"]:
        matrices = torch.complex(x[:, : n * n], x[:, n * n :]).reshape(-1, n, n)
        return SpecialUnitary(n), settings["representations"], matrices
    return SpecialOrthogonal(n), settings["representations"], x.reshape(-1, n, n)


def group_case(n: int, unitary: bool) -> KernelCase:
    """SO(n) or SU(n) at the levels holding GeometricKernels' default 20 representations."""
    name = f"{'su' if unitary else 'so'}{n}"
    return KernelCase(
        name=name,
        label=f"{'SU' if unitary else 'SO'}({n})",
        sizes=(200, 500, 1000, 2000),
        prepare=_group_prepare(n, unitary),
        manibo_space=_group_space,
        geometric_kernels=_group_gk,
        gk_max_n=200,
        no_naive=(
            "a level kernel is a sum of characters of several representations, with no "
            "one-variable closed form"
        ),
        note=(
            "the whole levels holding at most 20 irreducible representations (GeometricKernels' "
            "default for Lie groups); manibo evaluates characters as Jacobi–Trudi determinants in "
            "the characteristic polynomial of x⁻¹y, GeometricKernels as precomputed polynomials in "
            "the eigenvalues of x⁻¹y for every pair (minutes per call at N = 200 on the shared "
            "machine, so it runs at N = 200 only)"
        ),
    )


# --------------------------------------------------------------------------------------------
# non-compact spaces: random phases (GeometricKernels) against manibo's kernels
# --------------------------------------------------------------------------------------------
GK_RANDOM_PHASES = 3000  # GeometricKernels' default


def _noncompact_space(settings: dict):
    from manibo.spaces import Hyperbolic, SymmetricPositiveDefinite

    if settings["space"] == "hyperbolic":
        return Hyperbolic(settings["dim"], radius=settings["radius"])
    return SymmetricPositiveDefinite(
        settings["n"], tuple(settings["eigenvalue_bounds"]), sampling="volume"
    )


def _noncompact_gk(settings: dict, x):
    from geometric_kernels.spaces import Hyperbolic, SymmetricPositiveDefiniteMatrices

    if settings["space"] == "hyperbolic":
        return Hyperbolic(settings["dim"]), settings["gk_phases"], x
    n = settings["n"]
    return SymmetricPositiveDefiniteMatrices(n), settings["gk_phases"], x.reshape(-1, n, n)


def gk_random_phase_matrices(spec_path: str) -> None:
    """GeometricKernels' K(X, X) for several keys, saved for the agreement check.

    Runs in the GeometricKernels virtualenv. The JSON spec names ``points`` (an ``.npy`` file),
    ``settings``, ``keys`` and ``out`` (the ``.npy`` file of the ``(keys, N, N)`` stack).
    """
    import json

    import torch

    spec = json.loads(Path(spec_path).read_text())
    points = torch.from_numpy(np.load(spec["points"]))
    stack = [
        gk_compute({**spec["settings"], "gk_key": key}, points, _noncompact_gk)().numpy()
        for key in spec["keys"]
    ]
    np.save(spec["out"], np.stack(stack))


def noncompact_case(name: str, label: str, settings: dict, note: str) -> KernelCase:
    """H^d or SPD(n): manibo's kernel (``settings["kernel_options"]``) against GeometricKernels'
    random phases (3000, its default, seeded by ``gk_key``). manibo's random-phase estimate is
    unbiased, so its k(x, x) is 1 only on average; the exact kernel's is 1."""
    settings = {**settings, "gk_phases": GK_RANDOM_PHASES, "gk_key": 0}
    return KernelCase(
        name=name,
        label=label,
        sizes=(200, 500, 1000, 2000, 5000),
        prepare=lambda workdir, smoke: dict(settings),
        manibo_space=_noncompact_space,
        geometric_kernels=_noncompact_gk,
        gk_max_n=2000,
        homogeneous=settings["kernel_options"]["method"] == "exact",
        no_naive="a continuous spectrum: no level kernels to stack",
        note=note,
    )


HYPERBOLIC3 = noncompact_case(
    "hyperbolic3",
    "H³ (ball of radius 2)",
    {"space": "hyperbolic", "dim": 3, "radius": 2.0, "kernel_options": {"method": "exact"}},
    "volume-uniform points of the geodesic ball of radius 2; manibo evaluates the Matérn kernel "
    "exactly ((r / sinh r) times a Euclidean Matérn profile), GeometricKernels by 3000 random "
    "phases with each point's features normalised to unit length",
)
SPD2 = noncompact_case(
    "spd2",
    "SPD(2) (eigenvalues in [0.001, 5])",
    {
        "space": "spd",
        "n": 2,
        "eigenvalue_bounds": [1e-3, 5.0],
        "kernel_options": {"method": "features", "seed": 0},
    },
    "volume-uniform points of the eigenvalue box [0.001, 5] (the domain of the S²₊₊ benchmarks); "
    "both libraries use random phases: manibo 4096 (scrambled Sobol, importance weights), "
    "GeometricKernels 3000 (rejection sampling, features normalised per point)",
)


# --------------------------------------------------------------------------------------------
# meshes and graphs: eigenpairs of a sparse Laplacian
# --------------------------------------------------------------------------------------------
EIGENPAIRS = 500  # the most eigenpairs compared; the cut is moved down to a whole eigenspace


def _whole_levels(space, wanted: int) -> tuple[int, int]:
    """The most levels of ``space`` with at most ``wanted`` eigenpairs; and how many they hold."""
    _, multiplicities = space.levels(space.num_levels_available)
    counts = np.cumsum(multiplicities.numpy()).astype(int)
    levels = int(np.searchsorted(counts, wanted, side="right"))
    return levels, int(counts[levels - 1])


def _mesh_space(settings: dict):
    from manibo.spaces import Mesh

    data = np.load(settings["mesh_file"])
    # all eigenpairs (dense solver): the kernel uses the first `num_levels` levels of them
    return Mesh(data["vertices"], data["faces"], num_eigenpairs=settings["num_points"])


def _mesh_prepare(workdir: Path, smoke: bool) -> dict:
    from manibo.spaces import Mesh

    subdivisions = 2 if smoke else 4
    mesh = Mesh.icosphere(subdivisions, num_eigenpairs=2)  # for its geometry; solved again below
    path = Path(workdir) / f"icosphere{subdivisions}.npz"
    np.savez(path, vertices=mesh.vertices.numpy(), faces=mesh.faces.numpy())
    settings = {
        "subdivisions": subdivisions,
        "num_points": mesh.num_points,
        "mesh_file": str(path),
    }
    levels, eigenpairs = _whole_levels(_mesh_space(settings), 60 if smoke else EIGENPAIRS)
    return {**settings, "num_levels": levels, "num_eigenpairs": eigenpairs}


def _mesh_gk(settings: dict, x):
    import torch
    from geometric_kernels.spaces import Mesh

    data = np.load(settings["mesh_file"])
    space = Mesh(data["vertices"], data["faces"])
    return space, settings["num_eigenpairs"], x.round().to(torch.long)


MESH = KernelCase(
    name="mesh",
    label="mesh (icosphere)",
    sizes=(200, 500, 1000, 2000, 2562),
    prepare=_mesh_prepare,
    points=_vertex_subset,
    manibo_space=_mesh_space,
    geometric_kernels=_mesh_gk,
    gk_max_n=2562,
    homogeneous=False,
    note=(
        "the icosphere with 4 subdivisions; the lowest whole eigenspaces up to 500 eigenpairs. "
        "No naive [N, N, L] evaluation: both libraries compute Φ diag(w) Φᵀ. The libraries' "
        "kernels differ by construction: GeometricKernels uses the robust (intrinsic Delaunay, "
        "mollified) Laplacian and re-orthonormalises its eigenvectors in the Euclidean inner "
        "product (scaled by √V), manibo uses the cotangent Laplacian with mass-orthonormal "
        "eigenvectors (scaled by √area)"
    ),
)


GRAPH_NEIGHBOURS = 8


def knn_adjacency(nodes: int, neighbours: int, seed: int):
    """Symmetrised k-nearest-neighbour graph of uniform points in the unit square (scipy CSR)."""
    import scipy.sparse as sps
    from scipy.spatial import cKDTree

    coordinates = np.random.default_rng(seed).random((nodes, 2))
    _, nearest = cKDTree(coordinates).query(coordinates, neighbours + 1)
    rows = np.repeat(np.arange(nodes), neighbours)
    adjacency = sps.coo_matrix(
        (np.ones(rows.size), (rows, nearest[:, 1:].ravel())), shape=(nodes, nodes)
    ).tocsr()
    return ((adjacency + adjacency.T) > 0).astype(np.float64).tocsr()


def _graph_adjacency(settings: dict):
    return knn_adjacency(settings["num_points"], settings["neighbours"], settings["graph_seed"])


def _graph_space(settings: dict):
    from manibo.spaces import Graph

    return Graph(_graph_adjacency(settings), num_eigenpairs=settings["num_points"])


def _graph_prepare(workdir: Path, smoke: bool) -> dict:
    settings = {
        "num_points": 150 if smoke else 2000,
        "neighbours": GRAPH_NEIGHBOURS,
        "graph_seed": 0,
    }
    levels, eigenpairs = _whole_levels(_graph_space(settings), 60 if smoke else EIGENPAIRS)
    return {**settings, "num_levels": levels, "num_eigenpairs": eigenpairs}


def _graph_gk(settings: dict, x):
    import torch
    from geometric_kernels.spaces import Graph

    return (
        Graph(_graph_adjacency(settings)),
        settings["num_eigenpairs"],
        x.round().to(torch.long),
    )


GRAPH = KernelCase(
    name="graph",
    label="graph (8-NN)",
    sizes=(200, 500, 1000, 2000),
    prepare=_graph_prepare,
    points=_vertex_subset,
    manibo_space=_graph_space,
    geometric_kernels=_graph_gk,
    homogeneous=False,
    note=(
        "the symmetrised 8-nearest-neighbour graph of 2000 uniform points in the unit square "
        "(seed 0), unnormalised Laplacian, the lowest 500 eigenpairs. No naive [N, N, L] "
        "evaluation: both libraries compute Φ diag(w) Φᵀ"
    ),
)


CASES = {
    case.name: case
    for case in (
        sphere_case(2),
        sphere_case(5),
        TORUS,
        SO3,
        group_case(4, False),
        group_case(5, False),
        group_case(3, True),
        HYPERBOLIC3,
        SPD2,
        MESH,
        GRAPH,
    )
}
