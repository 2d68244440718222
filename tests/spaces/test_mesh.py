"""Mesh: Laplacian and kernels against a per-face assembly here; icosphere spectrum, geometry."""

import math

import numpy as np
import pytest
import scipy.linalg
import torch
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.kernels import ScaleKernel
from gpytorch.mlls import ExactMarginalLogLikelihood

import manibo.spaces.eigenvector_space as eigenvector_space
from manibo.exceptions import ConfigurationError, InputDataError, TruncationWarning
from manibo.kernels import GeometricMaternKernel
from manibo.spaces import Mesh
from manibo.spaces.mesh import cotangent_laplacian

DTYPES = [torch.float32, torch.float64]
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


def _tol(dtype):
    return 1e-12 if dtype == torch.float64 else 5e-6


def bumpy_sphere(seed=0):
    """icosphere(1) with randomly displaced vertices: irregular, obtuse triangles, no symmetry."""
    base = Mesh.icosphere(1)
    rng = np.random.default_rng(seed)
    vertices = base.vertices.numpy() * rng.uniform(0.7, 1.4, (len(base.vertices), 1))
    vertices = vertices + 0.15 * rng.standard_normal(vertices.shape)
    return vertices, base.faces.numpy()


def assemble_per_face(vertices, faces):
    """Dense stiffness and lumped mass, one triangle and one angle at a time."""
    n = len(vertices)
    stiffness, mass = np.zeros((n, n)), np.zeros(n)
    for face in faces:
        p = vertices[face]
        area = 0.5 * np.linalg.norm(np.cross(p[1] - p[0], p[2] - p[0]))
        for corner in range(3):
            i, j = face[(corner + 1) % 3], face[(corner + 2) % 3]
            u, v = p[(corner + 1) % 3] - p[corner], p[(corner + 2) % 3] - p[corner]
            angle = math.acos(np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v)))
            w = 0.5 / math.tan(angle)
            stiffness[i, j] -= w
            stiffness[j, i] -= w
            stiffness[i, i] += w
            stiffness[j, j] += w
            mass[face[corner]] += area / 3
    return stiffness, mass


def dense_kernel(vertices, faces, nu, ls):
    """All-eigenpair kernel A Φ diag(S / Σ S) Φᵀ from L φ = λ M φ (Φᵀ M Φ = I)."""
    stiffness, mass = assemble_per_face(vertices, faces)
    lam, phi = scipy.linalg.eigh(stiffness, np.diag(mass))
    lam = np.maximum(lam, 0)
    s = np.exp(-0.5 * ls**2 * lam) if math.isinf(nu) else (2 * nu / ls**2 + lam) ** (-nu - 1)
    return mass.sum() * (phi * (s / s.sum())) @ phi.T, mass


def vertices_of(space, dtype=torch.float64, device="cpu"):
    return torch.arange(space.num_points, dtype=dtype, device=device).unsqueeze(-1)


def full_kernel(space, nu, ls, dtype=torch.float64, device="cpu"):
    k = GeometricMaternKernel(space, nu=nu, num_levels=space.num_levels_available)
    k = k.to(dtype=dtype, device=device)
    k.lengthscale = torch.tensor(ls, dtype=torch.float64)  # a float would be rounded to float32
    return k


def test_cotangent_laplacian_matches_per_face_assembly():
    vertices, faces = bumpy_sphere()
    stiffness, mass = cotangent_laplacian(vertices, faces)
    ref_stiffness, ref_mass = assemble_per_face(vertices, faces)
    assert (ref_stiffness - np.diag(ref_stiffness.diagonal()) > 0).any()  # obtuse pairs: cot < 0
    assert np.abs(stiffness.toarray() - ref_stiffness).max() < 1e-12
    assert np.abs(mass - ref_mass).max() < 1e-14


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("nu", [0.5, 2.5, math.inf])
def test_kernel_equals_dense_generalised_eigenproblem(nu, dtype, device):
    vertices, faces = bumpy_sphere()
    space = Mesh(vertices, faces)
    with torch.no_grad():
        K = full_kernel(space, nu, 0.7, dtype, device)(vertices_of(space, dtype, device)).to_dense()
    ref, mass = dense_kernel(vertices, faces, nu, 0.7)
    assert K.dtype == dtype and K.device.type == device
    K = K.cpu().double().numpy()
    assert np.abs(K - ref).max() < _tol(dtype)
    assert np.abs(K - K.T).max() < _tol(dtype)
    assert np.linalg.eigvalsh(K).min() > -1e-6
    assert abs((mass * np.diag(K)).sum() / mass.sum() - 1) < _tol(
        dtype
    )  # area-weighted mean variance


def test_icosphere_spectrum_approximates_the_sphere():
    space = Mesh.icosphere(2)
    assert space.num_points == 162 and len(space.faces) == 320
    assert abs(space.area / (4 * math.pi) - 1) < 0.02
    stiffness, _ = cotangent_laplacian(space.vertices.numpy(), space.faces.numpy())
    assert abs(stiffness - stiffness.T).max() < 1e-14
    assert np.abs(stiffness @ np.ones(162)).max() < 1e-12  # constants are in the kernel
    values, counts = space.levels(3)
    assert values[0] == 0 and counts.tolist() == [1, 3, 5]
    assert abs(float(values[1]) / 2 - 1) < 0.02  # l = 1: l(l+1) = 2, multiplicity 3
    assert abs(float(values[2]) / 6 - 1) < 0.05  # l = 2: 6, multiplicity 5
    scaled = Mesh.icosphere(2, radius=2.0)
    assert torch.allclose(scaled.levels(3)[0], values / 4, atol=1e-10)


def test_levels_do_not_depend_on_the_size_of_the_mesh():
    # the tolerance had an absolute floor of 1e-8: a unit icosphere scaled to radius 3e4 (a mesh
    # in metres) had 2 levels instead of 44, and its kernel at lengthscale = radius was not the
    # unit sphere's at lengthscale 1
    unit = Mesh.icosphere(2)
    values, counts = unit.levels(unit.num_levels_available)
    big = Mesh.icosphere(2, radius=3e4)
    big_values, big_counts = big.levels(big.num_levels_available)
    assert torch.equal(big_counts, counts)
    assert torch.allclose(big_values * 9e8, values, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("num_eigenpairs", [30, 31, 40])
def test_sparse_solver_finds_every_copy_of_a_repeated_eigenvalue(monkeypatch, num_eigenpairs):
    # asked for 31 eigenpairs of the icosphere, the Lanczos solver returned 4 of the 5 copies of
    # one eigenvalue and went on to the next; now Sylvester's count catches it
    dense = Mesh.icosphere(2)
    monkeypatch.setattr(eigenvector_space, "DENSE_MAX", 50)
    sparse = Mesh.icosphere(2, num_eigenpairs=num_eigenpairs)
    values, counts = sparse.levels(sparse.num_levels_available)
    assert int(counts.sum()) <= num_eigenpairs
    assert torch.equal(counts, dense.levels(len(values))[1])
    assert torch.allclose(values, dense.levels(len(values))[0], atol=1e-8)


def test_sparse_solver_matches_dense_on_whole_levels(monkeypatch):
    dense = Mesh.icosphere(2)
    monkeypatch.setattr(eigenvector_space, "DENSE_MAX", 50)
    sparse = Mesh.icosphere(2, num_eigenpairs=30)
    values, counts = sparse.levels(sparse.num_levels_available)
    assert int(counts.sum()) <= 30
    assert torch.allclose(values, dense.levels(len(values))[0], atol=1e-8)
    assert torch.equal(counts, dense.levels(len(values))[1])
    x = vertices_of(dense)
    kernels = [
        GeometricMaternKernel(s, nu=1.5, num_levels=len(values)).double() for s in (dense, sparse)
    ]
    with torch.no_grad():
        diff = kernels[0](x).to_dense() - kernels[1](x).to_dense()
    assert diff.abs().max() < 1e-8


@pytest.mark.parametrize("dtype", DTYPES)
def test_batched_inputs_equal_a_loop(dtype):
    space = Mesh.icosphere(1)
    kernel = full_kernel(space, 1.5, 0.5, dtype)
    gen = torch.Generator().manual_seed(0)
    x1 = space.random(21, generator=gen, dtype=dtype).reshape(7, 3, 1)
    x2 = space.random(35, generator=gen, dtype=dtype).reshape(7, 5, 1)
    y1 = space.random(8, generator=gen, dtype=dtype).reshape(4, 1, 2, 1)
    with torch.no_grad():
        K = kernel(x1, x2).to_dense()
        assert K.shape == (7, 3, 5)
        for i in range(7):
            assert (K[i] - kernel(x1[i], x2[i]).to_dense()).abs().max() < _tol(dtype)
        K = kernel(y1, x2[:3]).to_dense()
        assert K.shape == (4, 3, 2, 5)
        for i in range(4):
            for j in range(3):
                assert (K[i, j] - kernel(y1[i, 0], x2[j]).to_dense()).abs().max() < _tol(dtype)
        diag = kernel(y1, y1, diag=True)
        assert diag.shape == (4, 1, 2)
        assert (diag - kernel(y1, y1).to_dense().diagonal(dim1=-2, dim2=-1)).abs().max() < _tol(
            dtype
        )
    features = kernel.feature_map(x1)
    with torch.no_grad():
        assert (features @ features.transpose(-1, -2) - kernel(x1).to_dense()).abs().max() < _tol(
            dtype
        )


def test_random_is_uniform_in_area():
    space = Mesh.torus(resolution=(12, 8))  # outer vertices carry more area than inner ones
    mass = cotangent_laplacian(space.vertices.numpy(), space.faces.numpy())[1]
    draws = space.random(40000, generator=torch.Generator().manual_seed(0), dtype=torch.float32)
    assert draws.shape == (40000, 1) and draws.dtype == torch.float32
    freq = np.bincount(draws[:, 0].long().numpy(), minlength=space.num_points) / 40000
    assert np.abs(freq - mass / mass.sum()).max() < 0.004
    assert mass.max() / mass.min() > 2


def test_distance_is_the_shortest_edge_path():
    space = Mesh.icosphere(2)
    x = vertices_of(space)
    table = space.distance(x.unsqueeze(-2), x.unsqueeze(-3))
    assert table.shape == (162, 162)
    assert torch.allclose(table, table.T, atol=1e-12, rtol=0) and (table.diagonal() == 0).all()
    assert (table[:, :, None] <= table[:, None, :] + table.T[None, :, :] + 1e-12).all()  # triangle
    a, b = space.faces[0, 0], space.faces[0, 1]
    assert torch.isclose(table[a, b], (space.vertices[a] - space.vertices[b]).norm())
    # vertices 0 and 3 of the icosahedron are antipodal: a path along edges is at least π
    assert math.pi <= float(table[0, 3]) < 1.15 * math.pi
    pos = space.chart(torch.tensor([[0.0], [3.0]]))
    assert torch.allclose(pos[0], -pos[1]) and pos.shape == (2, 3)


def test_torus_is_a_closed_surface_of_the_right_area():
    space = Mesh.torus(major_radius=1.0, minor_radius=0.4, resolution=(20, 8))
    faces = space.faces.numpy()
    edges = np.unique(
        np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), 1), axis=0
    )
    assert space.num_points - len(edges) + len(faces) == 0  # Euler characteristic of a torus
    assert abs(space.area / (4 * math.pi**2 * 0.4) - 1) < 0.04  # inscribed: 3.5 % smaller
    assert space.levels(1)[1].tolist() == [1.0]  # connected: one constant eigenfunction


def test_bad_inputs_have_helpful_errors():
    vertices, faces = Mesh.icosphere(0).vertices.numpy(), Mesh.icosphere(0).faces.numpy()
    space = Mesh(vertices, faces)
    with pytest.raises(InputDataError, match=r"integer vertex indices.*0\.5.*space\.project"):
        space.check(torch.tensor([[0.5]]))
    with pytest.raises(InputDataError, match=r"\[0, 12\).*\[3, 12\]"):
        space.check(torch.tensor([[3.0], [12.0]]))
    with pytest.raises(InputDataError, match=r"\(\*batch, 1\)"):
        space.check(torch.zeros(3, 3))
    with pytest.raises(InputDataError, match="NaN"):
        space.check(torch.tensor([[float("nan")]]))
    bad = faces.copy()
    bad[2, 1] = 12
    with pytest.raises(InputDataError, match=r"\[0, 12\).*12 vertices.*\[0, 12\].*0-based"):
        Mesh(vertices, bad)
    bad = faces.copy()
    bad[4, 2] = bad[4, 0]
    with pytest.raises(InputDataError, match=r"degenerate.*face 4"):
        Mesh(vertices, bad)
    flat = vertices.copy()
    flat[faces[7]] = flat[faces[7][0]] + np.outer([0, 1, 2], [1.0, 0.5, 0.2])  # collinear corners
    with pytest.raises(InputDataError, match=r"degenerate.*zero area"):
        Mesh(flat, faces)
    with pytest.raises(InputDataError, match=r"used by no face.*\[12\]"):
        Mesh(np.vstack([vertices, [[5.0, 5.0, 5.0]]]), faces)
    nan = vertices.copy()
    nan[1, 2] = np.nan
    with pytest.raises(InputDataError, match="NaN"):
        Mesh(nan, faces)
    with pytest.raises(InputDataError, match=r"\(V, 3\).*\(12, 2\)"):
        Mesh(vertices[:, :2], faces)
    with pytest.raises(InputDataError, match=r"integer"):
        Mesh(vertices, faces + 0.5)
    with pytest.raises(ConfigurationError, match="subdivisions"):
        Mesh.icosphere(-1)
    with pytest.raises(ConfigurationError, match="num_eigenpairs"):
        Mesh(vertices, faces, num_eigenpairs=0)
    with pytest.raises(ConfigurationError, match="minor_radius"):
        Mesh.torus(major_radius=1.0, minor_radius=2.0)


def test_single_task_gp_and_qlognei_on_vertex_indices():
    space = Mesh.icosphere(1)
    gen = torch.Generator().manual_seed(0)
    X = space.random(15, generator=gen)
    Y = space.chart(X)[..., 2:] + 0.01 * torch.randn(15, 1, generator=gen, dtype=X.dtype)
    model = SingleTaskGP(X, Y, covar_module=ScaleKernel(GeometricMaternKernel(space, nu=2.5)))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    acqf = qLogNoisyExpectedImprovement(
        model, X_baseline=X, sampler=SobolQMCNormalSampler(torch.Size([32]), seed=0)
    )
    values = acqf(space.random(21, generator=gen).reshape(7, 3, 1))
    assert values.shape == (7,) and torch.isfinite(values).all()


def test_fingerprint_is_the_vertices_and_faces():
    mesh = Mesh.icosphere(1)
    assert Mesh(mesh.vertices.clone(), mesh.faces.clone()).fingerprint() == mesh.fingerprint()
    moved = mesh.vertices.clone()
    moved[0] *= 1.1
    assert Mesh(moved, mesh.faces).fingerprint() != mesh.fingerprint()


def test_vertices_sharing_a_position_are_named_in_a_warning():
    """A 2 x 2-cell grid whose right column repeats the middle column's 3 vertices (a texture
    seam): the surface is cut there, and the only sign was a second zero eigenvalue."""
    from manibo.exceptions import ManiboWarning

    grid = [(x, y, 0.0) for y in range(3) for x in range(2)]  # vertices 0-5: columns 0 and 1
    seam = [(1.0, y, 0.0) for y in range(3)] + [(2.0, y, 0.0) for y in range(3)]  # 6-8, 9-11
    faces = []
    for y in range(2):
        a, b, c, d = 2 * y, 2 * y + 1, 2 * y + 2, 2 * y + 3
        faces += [(a, b, d), (a, d, c)]
        e, f, g, h = 6 + y, 9 + y, 7 + y, 10 + y
        faces += [(e, f, h), (e, h, g)]
    with pytest.warns(ManiboWarning, match=r"3 vertices of the mesh repeat the position"):
        mesh = Mesh(np.array(grid + seam), np.array(faces))
    eigenvalues, multiplicities = mesh.levels(1)
    assert float(eigenvalues[0]) == pytest.approx(0.0, abs=1e-9) and int(multiplicities[0]) == 2


def test_sparse_copies_that_cannot_be_verified_fall_back_to_the_dense_solver_or_warn(monkeypatch):
    dense = Mesh.icosphere(2)
    monkeypatch.setattr(eigenvector_space, "DENSE_MAX", 50)
    monkeypatch.setattr(eigenvector_space, "SPARSE_ATTEMPTS", 1)  # 31 pairs miss a copy once
    fallback = Mesh.icosphere(2, num_eigenpairs=31)
    values, counts = fallback.levels(fallback.num_levels_available)
    assert torch.equal(counts, dense.levels(len(values))[1])
    monkeypatch.setattr(eigenvector_space, "DENSE_FALLBACK_MAX", 100)  # 162 vertices: too many
    with pytest.warns(TruncationWarning, match="could not be shown to hold every copy"):
        Mesh.icosphere(2, num_eigenpairs=31)


@pytest.mark.parametrize("nu, ls", [(1.5, 0.2), (2.5, 0.5), (math.inf, 0.3)])
def test_automatic_truncation_bounds_every_entry_where_eigenvectors_localise(nu, ls):
    # The hull of random points on the sphere has sliver triangles, and its highest eigenvectors
    # peak at single vertices (G_l(x, x) up to 13,600 against a mean of 1). Truncating where the
    # neglected spectral mass fell below 1e-6 kept 396 of 400 eigenpairs at nu = 1.5, ls = 0.2 and
    # moved entries by 8.1e-4; each level now counts with its peak.
    from scipy.spatial import ConvexHull

    points = np.random.default_rng(0).standard_normal((400, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    space = Mesh(points, ConvexHull(points).simplices)
    assert float(space.level_peaks(space.num_levels_available).max()) > 1e4
    x = vertices_of(space)
    kernel = GeometricMaternKernel(space, nu=nu).double()
    kernel.lengthscale = torch.tensor(ls, dtype=torch.float64)
    with torch.no_grad():
        gap = (kernel(x).to_dense() - full_kernel(space, nu, ls)(x).to_dense()).abs().max()
    assert float(gap) < 2 * kernel.truncation_tol


def test_vertex_positions_are_told_to_become_vertex_indices():
    """`opt.tell(mesh.vertices[:1], ...)` (a vertex's xyz instead of its index) got only "must
    have shape (*batch, 1) ... Stack points along the leading dimensions"."""
    import manibo

    mesh = Mesh.icosphere(1)
    xyz = mesh.vertices[[3, 7]] * 1.0001  # positions near vertices 3 and 7
    advice = r"vertex indices, one float per point, shape \(n, 1\).*torch\.cdist\(X, mesh\.vertices"
    with pytest.raises(InputDataError, match=advice):
        mesh.check(xyz, "X")
    with pytest.raises(InputDataError, match="vertex indices"):
        manibo.BayesianOptimizer(mesh, seed=0).tell(mesh.vertices[:1], [0.0])
    # the advised conversion gives the indices of the nearest vertices
    index = torch.cdist(xyz, mesh.vertices.to(xyz)).argmin(-1).unsqueeze(-1).double()
    assert index.flatten().tolist() == [3.0, 7.0]
    mesh.check(index)
    with pytest.raises(InputDataError) as info:  # another trailing size: the generic advice
        mesh.check(torch.zeros(2, 2, dtype=torch.float64))
    assert "vertex indices" not in str(info.value)


@pytest.mark.parametrize("copy", ["identical", "reversed", "rotated"])
def test_repeated_faces_are_dropped_with_a_warning(copy):
    """icosphere(2) with face 0 appended again was accepted silently, and the sphere's l = 1
    triple (2 = l (l + 1) on the unit sphere) split into 1.9855, 2.0055, 2.0058."""
    from manibo.exceptions import ManiboWarning

    clean = Mesh.icosphere(2)
    vertices, faces = clean.vertices.numpy(), clean.faces.numpy()
    extra = {"identical": faces[:1], "reversed": faces[:1, ::-1], "rotated": faces[:1, [1, 2, 0]]}
    repeated = np.concatenate([faces, extra[copy], faces[5:6, [2, 0, 1]]])
    a, b, c = (int(i) for i in repeated[320])
    first = rf"face 320 = \({a}, {b}, {c}\) repeats face 0 = \({', '.join(map(str, faces[0]))}\)"
    with pytest.warns(ManiboWarning, match=rf"2 face\(s\) of the mesh repeat.*{first}.*dropped"):
        mesh = Mesh(vertices, repeated)
    assert mesh.faces.tolist() == clean.faces.tolist()
    assert mesh.fingerprint() == clean.fingerprint()
    values, multiplicities = mesh.levels(2)
    assert int(multiplicities[1]) == 3
    assert float(values[1]) == pytest.approx(2.0, abs=1e-3)  # l (l + 1) for l = 1
    assert torch.equal(values, clean.levels(2)[0])
