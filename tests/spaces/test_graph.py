"""Graph: kernels against dense closed forms computed here with SciPy; levels, batches, geometry."""

import math

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse
import torch
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.kernels import ScaleKernel
from gpytorch.mlls import ExactMarginalLogLikelihood

import manibo.spaces.eigenvector_space as eigenvector_space
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import GeometricMaternKernel
from manibo.spaces import Graph

DTYPES = [torch.float32, torch.float64]
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


def _tol(dtype):
    return 1e-12 if dtype == torch.float64 else 5e-6


def cycle(n):
    a = np.zeros((n, n))
    for i in range(n):
        a[i, (i + 1) % n] = a[(i + 1) % n, i] = 1.0
    return a


def random_weighted(n, seed, isolated=()):
    rng = np.random.default_rng(seed)
    a = np.triu(rng.uniform(0.2, 2.0, (n, n)) * (rng.uniform(size=(n, n)) < 0.35), 1)
    a = a + a.T + cycle(n)  # connected, weighted, irregular
    for i in isolated:
        a[i, :] = a[:, i] = 0.0
    return a


def laplacian(a, normalized=False):
    d = a.sum(1)
    if not normalized:
        return np.diag(d) - a
    s = np.where(d > 0, 1 / np.sqrt(np.where(d > 0, d, 1)), 0.0)
    return np.diag((d > 0).astype(float)) - s[:, None] * a * s[None, :]


def spectrum(lam, nu, ls):
    return np.exp(-0.5 * ls**2 * lam) if math.isinf(nu) else (2 * nu / ls**2 + lam) ** (-nu)


def dense_kernel(lap, nu, ls):
    """All-eigenpair kernel n V diag(S / sum S) V^T (basis independent)."""
    lam, v = scipy.linalg.eigh(lap)
    s = spectrum(np.maximum(lam, 0), nu, ls)
    return len(lap) * (v * (s / s.sum())) @ v.T


def nodes(n, dtype=torch.float64, device="cpu"):
    return torch.arange(n, dtype=dtype, device=device).unsqueeze(-1)


def full_kernel(space, nu, ls, dtype=torch.float64, device="cpu"):
    k = GeometricMaternKernel(space, nu=nu, num_levels=space.num_levels_available)
    k = k.to(dtype=dtype, device=device)
    k.lengthscale = torch.tensor(ls, dtype=torch.float64)  # a float would be rounded to float32
    return k


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("nu", [0.5, 2.5, math.inf])
def test_kernel_equals_dense_closed_form(nu, normalized, dtype, device):
    a = random_weighted(15, seed=1, isolated=[4] if normalized else [])
    space = Graph(a, normalized=normalized)
    x = nodes(15, dtype, device)
    with torch.no_grad():
        K = full_kernel(space, nu, 0.8, dtype, device)(x).to_dense()
    ref = dense_kernel(laplacian(a, normalized), nu, 0.8)
    assert K.dtype == dtype and K.device.type == device
    assert np.abs(K.cpu().double().numpy() - ref).max() < _tol(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_heat_kernel_is_the_matrix_exponential(dtype):
    a = random_weighted(12, seed=2)
    space, ls = Graph(a), 1.3
    heat = scipy.linalg.expm(-0.5 * ls**2 * laplacian(a))  # S(λ) = exp(-ℓ²λ/2)
    ref = 12 * heat / np.trace(heat)
    with torch.no_grad():
        K = full_kernel(space, math.inf, ls, dtype)(nodes(12, dtype)).to_dense()
    assert np.abs(K.double().numpy() - ref).max() < 10 * _tol(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_symmetric_psd_with_unit_mean_variance(dtype):
    space = Graph(random_weighted(20, seed=3))
    with torch.no_grad():
        K = full_kernel(space, 1.5, 0.5, dtype)(nodes(20, dtype)).to_dense().double()
    assert (K - K.T).abs().max() < _tol(dtype)
    assert torch.linalg.eigvalsh(K).min() > -1e-6
    assert abs(float(K.diagonal().mean()) - 1) < _tol(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_batched_inputs_equal_a_loop(dtype):
    space = Graph(random_weighted(10, seed=4))
    kernel = full_kernel(space, 2.5, 0.7, dtype)
    gen = torch.Generator().manual_seed(0)
    x1 = space.random(21, generator=gen, dtype=dtype).reshape(7, 3, 1)
    x2 = space.random(35, generator=gen, dtype=dtype).reshape(7, 5, 1)
    with torch.no_grad():
        K = kernel(x1, x2).to_dense()
        assert K.shape == (7, 3, 5)
        for i in range(7):
            assert (K[i] - kernel(x1[i], x2[i]).to_dense()).abs().max() < _tol(dtype)
        diag = kernel(x1, x1, diag=True)
        assert diag.shape == (7, 3)
        assert (diag - kernel(x1, x1).to_dense().diagonal(dim1=-2, dim2=-1)).abs().max() < _tol(
            dtype
        )
        # (4, 1, 2, 1) against (3, 5, 1) broadcasts to (4, 3, 2, 5)
        y1 = space.random(8, generator=gen, dtype=dtype).reshape(4, 1, 2, 1)
        y2 = x2[:3]
        K = kernel(y1, y2).to_dense()
        assert K.shape == (4, 3, 2, 5)
        for i in range(4):
            for j in range(3):
                assert (K[i, j] - kernel(y1[i, 0], y2[j]).to_dense()).abs().max() < _tol(dtype)


def test_spectral_sum_broadcasts_weight_batches_and_is_differentiable():
    space = Graph(random_weighted(9, seed=5))
    L = space.num_levels_available
    gen = torch.Generator().manual_seed(1)
    weights = torch.rand(2, 1, L, generator=gen, dtype=torch.float64, requires_grad=True)
    x1 = space.random(12, generator=gen).reshape(3, 4, 1)
    x2 = space.random(5, generator=gen)
    out = space.spectral_sum(weights, x1, x2)
    assert out.shape == (2, 3, 4, 5)
    for b in range(2):
        for c in range(3):
            ref = space.spectral_sum(weights[b, 0], x1[c], x2)
            assert torch.allclose(out[b, c], ref, atol=1e-12)
    # linear in the weights: d(sum of K) / dw_l is the sum of level l's kernel G_l
    out.sum().backward()
    one_hot = torch.eye(L, dtype=torch.float64)
    level_sums = space.spectral_sum(one_hot.unsqueeze(-2), x1, x2).sum((-3, -2, -1))  # (L,)
    assert torch.allclose(weights.grad, level_sums.expand(2, 1, L), atol=1e-12)
    # a lengthscale gradient reaches the kernel's parameter through the weights
    kernel = full_kernel(space, 2.5, 0.7)
    kernel(x1, x2).to_dense().sum().backward()
    assert (
        torch.isfinite(kernel.raw_lengthscale.grad).all() and kernel.raw_lengthscale.grad.abs() > 0
    )


def test_degenerate_eigenvalues_are_whole_levels():
    n = 8
    eigenvalues, multiplicities = Graph(cycle(n)).levels(5)
    expected = 2 - 2 * np.cos(2 * np.pi * np.arange(5) / n)
    assert np.allclose(eigenvalues.numpy(), expected, atol=1e-12)
    assert multiplicities.tolist() == [1, 2, 2, 2, 1]
    complete = Graph(np.ones((6, 6)) - np.eye(6))
    assert complete.num_levels_available == 2
    eigenvalues, multiplicities = complete.levels(2)
    assert eigenvalues.tolist() == pytest.approx([0.0, 6.0], abs=1e-12)
    assert multiplicities.tolist() == [1, 5]
    assert eigenvalues.dtype == multiplicities.dtype == torch.float64


@pytest.mark.parametrize("num_levels", [2, 3, 4])
def test_truncated_kernel_is_basis_independent(num_levels):
    # a cycle has 2-dimensional eigenspaces; truncating by whole levels must give the same kernel
    # for any orthonormal basis of each eigenspace, here one rotated at random
    n, nu, ls = 10, 1.5, 0.9
    space = Graph(cycle(n))
    lam, v = scipy.linalg.eigh(laplacian(cycle(n)))
    rng = np.random.default_rng(0)
    values, counts = space.levels(num_levels)
    ref, start = np.zeros((n, n)), 0
    norm = float((counts.numpy() * spectrum(values.numpy(), nu, ls)).sum())
    for m in counts.numpy().astype(int):
        q, _ = np.linalg.qr(rng.standard_normal((m, m)))
        block = v[:, start : start + m] @ q
        assert np.allclose(lam[start : start + m], lam[start], atol=1e-10)
        ref += n * spectrum(max(lam[start], 0), nu, ls) / norm * block @ block.T
        start += m
    kernel = GeometricMaternKernel(space, nu=nu, num_levels=num_levels).double()
    kernel.lengthscale = torch.tensor(ls, dtype=torch.float64)
    with torch.no_grad():
        K = kernel(nodes(n)).to_dense().numpy()
    assert np.abs(K - ref).max() < 1e-12


def test_sparse_solver_keeps_whole_levels(monkeypatch):
    n = 120
    dense = Graph(cycle(n))
    monkeypatch.setattr(eigenvector_space, "DENSE_MAX", 50)
    sparse = Graph(
        cycle(n), num_eigenpairs=20
    )  # 1 + 9 pairs + half a pair: the cut level is dropped
    assert sparse.num_levels_available == 10
    values, counts = sparse.levels(10)
    assert counts.tolist() == [1] + [2] * 9
    assert np.allclose(values.numpy(), 2 - 2 * np.cos(2 * np.pi * np.arange(10) / n), atol=1e-10)
    x = nodes(n)
    for space in (dense, sparse):
        space.kernel = GeometricMaternKernel(space, nu=2.5, num_levels=10).double()
    with torch.no_grad():
        diff = dense.kernel(x).to_dense() - sparse.kernel(x).to_dense()
    assert diff.abs().max() < 1e-9


def path(n, weight=1.0):
    a = np.zeros((n, n))
    for i in range(n - 1):
        a[i, i + 1] = a[i + 1, i] = weight
    return a


@pytest.mark.parametrize(("n", "heavy"), [(30, 1e7), (30, 1e9), (300, 1e9)])
def test_one_heavy_edge_keeps_every_level(n, heavy):
    # eigenvalues within 1e-8 * lambda_max were one level: one edge of weight 1e9 on a path of 30
    # merged all 30 into 2 levels and the kernel became white noise (error 1.55); within 1e-12 *
    # lambda_max, a path of 300 still had a lowest level of 10 eigenvalues (error 0.68)
    a = path(n)
    a[n // 2, n // 2 + 1] = a[n // 2 + 1, n // 2] = heavy
    space = Graph(a)
    assert space.num_levels_available == n
    k = full_kernel(space, math.inf, 3.0)
    with torch.no_grad():
        K = k(nodes(n)).to_dense().numpy()
    # both sides hold eigenvalues to about 1e-16 of lambda_max (0.4 at weight 1e9)
    assert np.abs(K - dense_kernel(laplacian(a), math.inf, 3.0)).max() < 1e-5


def test_levels_do_not_depend_on_the_scale_of_the_weights():
    # an absolute floor of 1e-8 on the tolerance merged a path's lowest eigenvalues once its
    # weights were small (weights 1e-7: a first level of 16 eigenvalues, kernel error 1.74)
    reference = Graph(path(50))
    values, counts = reference.levels(reference.num_levels_available)
    for scale in (1e-7, 1e7):
        space = Graph(path(50, weight=scale))
        scaled_values, scaled_counts = space.levels(space.num_levels_available)
        assert torch.equal(scaled_counts, counts)
        assert torch.allclose(scaled_values / scale, values, rtol=1e-8, atol=1e-12)


def test_sparse_solver_keeps_every_copy_of_an_eigenvalue_shared_by_components(monkeypatch):
    # a path and 40 isolated nodes: 0 has multiplicity 41. Solved on the whole graph, the sparse
    # solver found some of its copies and then went on to higher levels, so the kernel was wrong
    a = np.zeros((100, 100))
    a[:60, :60] = path(60)
    dense = Graph(a)
    monkeypatch.setattr(eigenvector_space, "DENSE_MAX", 50)
    sparse = Graph(a, num_eigenpairs=45)
    values, counts = sparse.levels(sparse.num_levels_available)
    assert counts[0] == 41 and int(counts.sum()) <= 45
    reference_values, reference_counts = dense.levels(len(values))
    assert torch.equal(counts, reference_counts)
    assert torch.allclose(values, reference_values, atol=1e-10)
    x = nodes(100)
    kernels = [
        GeometricMaternKernel(s, nu=1.5, num_levels=len(values)).double() for s in (dense, sparse)
    ]
    with torch.no_grad():
        diff = kernels[0](x).to_dense() - kernels[1](x).to_dense()
    assert diff.abs().max() < 1e-9


def hypercube(d):
    a = np.zeros((2**d, 2**d))
    for i in range(2**d):
        for b in range(d):
            a[i, i ^ (1 << b)] = 1.0
    return a


def test_sylvesters_count_is_not_fooled_by_a_cut_on_the_degree():
    # Q7's Laplacian has the eigenvalues 0, 2, ..., 14 (binomial multiplicities) and degree 7:
    # a cut at 7 zeroes every diagonal entry, SuperLU pivoted off the diagonal and the signs of
    # its pivots counted 82 eigenvalues below 7 instead of 1 + 7 + 21 + 35 = 64
    operator = eigenvector_space.symmetrised(
        scipy.sparse.csr_matrix(laplacian(hypercube(7))), np.ones(128)
    )
    count, cut = eigenvector_space.count_below(operator, 6.0, 8.0)
    assert count == 64 and 6.0 < cut < 8.0


def test_whole_levels_drops_a_level_that_reaches_the_bound_or_the_count():
    # copies of 2 computed a rounding apart on both sides of another component's cut at 2: the
    # cut split the level (two copies kept, two dropped)
    eps = 4e-16
    values = np.array([0.0, 1.0, 2 - eps, 2 - eps / 2, 2.0, 2 + eps, 3.0])
    tol = 1e-12 * 10
    assert eigenvector_space.whole_levels(values, tol, bound=2.0, most=10) == (2, 2 - eps)
    assert eigenvector_space.whole_levels(values, tol, bound=np.inf, most=5) == (2, 2 - eps)
    assert eigenvector_space.whole_levels(values, tol, bound=np.inf, most=6) == (6, 3.0)
    assert eigenvector_space.whole_levels(values, tol, bound=np.inf, most=7) == (7, np.inf)


def test_normalized_laplacian_handles_isolated_nodes():
    a = random_weighted(10, seed=6, isolated=[3, 7])
    space = Graph(a, normalized=True)
    values, counts = space.levels(space.num_levels_available)
    assert values[0] == 0 and counts[0] == 3  # the main component and two isolated nodes
    assert float(values.max()) <= 2 + 1e-10
    assert counts.sum() == 10


def test_from_edges_equals_adjacency():
    edges = [[0, 1], [1, 2], [2, 3], [3, 0], [1, 3]]
    weights = [1.0, 2.0, 0.5, 1.0, 3.0]
    a = np.zeros((5, 5))
    for (i, j), w in zip(edges, weights, strict=True):
        a[i, j] = a[j, i] = w
    g1 = Graph.from_edges(edges, num_nodes=5, weights=weights)
    g2 = Graph(torch.tensor(a))
    assert g1.num_levels_available == g2.num_levels_available
    assert torch.allclose(g1.levels(3)[0], g2.levels(3)[0], atol=1e-12)
    assert repr(g1) == "Graph(5 nodes, 5 edges)"


@pytest.mark.parametrize("dtype", DTYPES)
def test_distance_counts_hops_and_broadcasts(dtype, monkeypatch):
    # path 0-1-2-3-4 with a heavy chord 0-4 (weights do not change hop counts); node 5 isolated
    a = np.zeros((6, 6))
    for i in range(4):
        a[i, i + 1] = a[i + 1, i] = 1.0
    a[0, 4] = a[4, 0] = 10.0
    space = Graph(a)
    x = nodes(6, dtype)
    table = space.distance(x.unsqueeze(-2), x.unsqueeze(-3))  # (6, 1, 1) vs (1, 6, 1) -> (6, 6)
    expected = torch.tensor([[0, 1, 2, 2, 1], [1, 0, 1, 2, 2], [2, 1, 0, 1, 2], [2, 2, 1, 0, 1],
                             [1, 2, 2, 1, 0]], dtype=dtype)  # fmt: skip
    assert table.dtype == dtype and torch.equal(table[:5, :5], expected)
    assert torch.isinf(table[5, :5]).all() and table[5, 5] == 0
    monkeypatch.setattr(eigenvector_space, "FULL_DISTANCE_MAX", 0)  # per-call Dijkstra from sources
    assert torch.equal(space.distance(x.unsqueeze(-2), x.unsqueeze(-3)), table)


def test_random_is_uniform_and_reproducible():
    space = Graph(random_weighted(10, seed=7))
    draws = space.random(20000, generator=torch.Generator().manual_seed(0))
    assert draws.shape == (20000, 1) and draws.dtype == torch.float64
    space.check(draws)
    freq = torch.bincount(draws[:, 0].long(), minlength=10) / 20000
    assert (freq - 0.1).abs().max() < 0.01
    again = space.random(20000, generator=torch.Generator().manual_seed(0))
    assert torch.equal(draws, again)
    assert space.random(0).shape == (0, 1)


def test_geometry_of_a_finite_space():
    space = Graph(cycle(6))
    x = torch.tensor([[0.0], [2.0], [5.0]])
    assert torch.equal(space.project(torch.tensor([[-0.7], [2.4], [9.0]])), x)
    assert torch.equal(space.to_tangent(x, torch.ones_like(x)), torch.zeros_like(x))
    assert torch.equal(space.retract(x, torch.ones_like(x)), x)
    assert torch.equal(space.all_points(dtype=torch.float32), nodes(6, torch.float32))
    assert space.is_discrete and space.point_shape == (1,) and space.spectral_dim == 0


def test_bad_inputs_have_helpful_errors():
    space = Graph(cycle(12))
    kernel = GeometricMaternKernel(space)
    with pytest.raises(InputDataError, match=r"integer node indices.*2\.5.*space\.project"):
        space.check(torch.tensor([[1.0], [2.5]]))
    with pytest.raises(InputDataError, match=r"in \[0, 12\).*\[0, 12\]"):
        kernel(torch.tensor([[0.0], [12.0]])).to_dense()
    with pytest.raises(InputDataError, match=r"in \[0, 12\).*-1"):
        space.check(torch.tensor([[-1.0]]))
    with pytest.raises(InputDataError, match="NaN"):
        space.check(torch.tensor([[1.0], [float("nan")]]))
    with pytest.raises(InputDataError, match=r"\(\*batch, 1\).*\(4, 2\)"):
        kernel(torch.zeros(4, 2)).to_dense()
    with pytest.raises(InputDataError, match="floating"):
        space.check(torch.tensor([[1], [2]]))
    asym = cycle(5)
    asym[0, 1] = 3.0
    with pytest.raises(
        InputDataError, match=r"symmetric.*A\[0, 1\] = 3.*A\[1, 0\] = 1.*\(A \+ A\.T\) / 2"
    ):
        Graph(asym)
    with pytest.raises(InputDataError, match="non-negative"):
        Graph(-cycle(4))
    nan = cycle(4)
    nan[0, 2] = nan[2, 0] = np.nan
    with pytest.raises(InputDataError, match="NaN"):
        Graph(nan)
    with pytest.raises(InputDataError, match=r"square.*\(3, 4\)"):
        Graph(np.zeros((3, 4)))
    with pytest.raises(InputDataError, match=r"\[0, 4\).*num_nodes"):
        Graph.from_edges([[0, 1], [1, 4]], num_nodes=4)
    with pytest.raises(InputDataError, match="self-loop"):
        Graph.from_edges([[0, 1], [2, 2]], num_nodes=4)
    for count in (2.5, None, "5"):  # TypeErrors from SciPy and NumPy before
        with pytest.raises(ConfigurationError, match=r"`num_nodes` must be an integer, got"):
            Graph.from_edges([[0, 1]], num_nodes=count)
    near = cycle(4)
    near[1, 0] = 1 + 1e-9  # shown as "1 and 1" before
    with pytest.raises(InputDataError, match=r"A\[0, 1\] = 1\.0 and A\[1, 0\] = 1\.000000001"):
        Graph(near)
    with pytest.raises(ConfigurationError, match="num_eigenpairs"):
        Graph(cycle(4), num_eigenpairs=5)
    with pytest.raises(ConfigurationError, match=r"multiplicity 5.*Raise `num_eigenpairs`"):
        Graph(np.zeros((5, 5)), num_eigenpairs=3)  # five isolated nodes: one 5-fold level
    with pytest.raises(ConfigurationError, match="num_levels"):
        space.levels(space.num_levels_available + 1)


def test_single_task_gp_and_qlognei_on_node_indices():
    space = Graph(random_weighted(30, seed=8))
    gen = torch.Generator().manual_seed(0)
    X = space.random(12, generator=gen)
    Y = torch.cos(X / 3) + 0.01 * torch.randn(12, 1, generator=gen, dtype=X.dtype)
    model = SingleTaskGP(X, Y, covar_module=ScaleKernel(GeometricMaternKernel(space, nu=2.5)))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    acqf = qLogNoisyExpectedImprovement(
        model, X_baseline=X, sampler=SobolQMCNormalSampler(torch.Size([32]), seed=0)
    )
    candidates = space.random(21, generator=gen).reshape(7, 3, 1)
    values = acqf(candidates)
    assert values.shape == (7,) and torch.isfinite(values).all()
    posterior = model.posterior(space.all_points().unsqueeze(-2))  # every node as a t-batch
    assert posterior.mean.shape == (30, 1, 1) and (posterior.variance > 0).all()


def test_fingerprint_is_the_adjacency_not_the_counts():
    import scipy.sparse as sps

    a = random_weighted(9, seed=3)
    reference = Graph(a).fingerprint()
    assert Graph(sps.coo_matrix(a)).fingerprint() == reference  # any input format, same graph
    assert Graph(torch.from_numpy(a.copy())).fingerprint() == reference
    b = a.copy()
    b[0, 1] = b[1, 0] = a[0, 1] + 0.5  # one weight changed: same counts, other graph
    assert repr(Graph(b)) == repr(Graph(a)) and Graph(b).fingerprint() != reference
    assert Graph(a, normalized=True).fingerprint() != reference


def test_chart_surrogate_is_refused_on_a_graph_and_the_advice_works():
    """The docs' table said the 'chart' surrogate works on a graph, and the 'euclidean' refusal
    advised it, but a graph has no chart: the build failed. Now the registry refuses it, the advice
    names what works, and the advised default runs."""
    import manibo
    from manibo.models import unsupported_reason
    from manibo.spaces import Mesh

    space = Graph(cycle(6))
    assert "'matern'" in unsupported_reason("chart", space)
    with pytest.raises(ConfigurationError, match=r"'chart' surrogate.*global chart.*'matern'"):
        manibo.BayesianOptimizer(space, surrogate="chart")
    advice = unsupported_reason("euclidean", space)
    assert "'matern'" in advice and "'chart'" not in advice
    assert unsupported_reason("chart", Mesh.icosphere(0)) is None  # a mesh's vertex positions
    assert "'chart'" in unsupported_reason("euclidean", Mesh.icosphere(0))

    class Roads(Graph):  # a user's space whose chart raises NotImplementedError
        def chart(self, x):
            raise NotImplementedError("roads have no chart")

    assert "roads have no chart" in unsupported_reason("chart", Roads(cycle(6)))
    result = manibo.minimize(
        lambda x: float((x.item() - 2) ** 2), space, 4, initial_design=2, seed=0, progress=False
    )
    assert math.isfinite(result.best_y)


def test_eigenfunctions_and_spectral_sum_check_their_indices():
    """Index -1 read node n-1's row, 2.6 rounded to node 3 and n raised a bare IndexError."""
    space = Graph(cycle(6))
    levels = space.num_levels_available
    ones = torch.ones(levels, dtype=torch.float64)
    cases = [(-1.0, r"in \[0, 6\).*-1"), (2.6, r"integer node.*2\.6"), (6.0, r"\[0, 6\)")]
    for bad, match in cases:
        x = torch.tensor([[bad]], dtype=torch.float64)
        with pytest.raises(InputDataError, match=r"`x` holds points off Graph.*" + match):
            space.eigenfunctions(x, levels)
        with pytest.raises(InputDataError, match=r"`x1` holds points off Graph.*" + match):
            space.spectral_sum(ones, x, nodes(6))
        with pytest.raises(InputDataError, match=r"`x2` holds points off Graph.*" + match):
            space.spectral_sum(ones, nodes(6), x, diag=False)
    phi = space.eigenfunctions(nodes(6), levels)
    assert torch.allclose(space.spectral_sum(ones, nodes(6), nodes(6)), phi @ phi.T)


def test_from_edges_takes_an_empty_edge_list_and_checks_num_nodes_first():
    """`Graph.from_edges([], 3)` failed with "got shape (0,)" though nodes without edges are
    isolated, and `num_nodes=0` was reported as a fault of the edges."""
    space = Graph.from_edges([], 3)
    assert repr(space) == "Graph(3 nodes, 0 edges)"
    values, counts = space.levels(1)
    assert values.tolist() == [0.0] and counts.tolist() == [3.0]  # three isolated nodes
    assert space.fingerprint() == Graph(np.zeros((3, 3))).fingerprint()
    assert Graph.from_edges(torch.zeros(0, 2), 2, weights=[]).num_edges == 0
    with pytest.raises(ConfigurationError, match=r"`num_nodes` must be an integer >= 1, got 0"):
        Graph.from_edges([], 0)


def test_from_edges_names_the_entry_that_is_wrong():
    """A fractional node was reported as a wrong shape, "(E, 2), got shape (2, 2)", and weight 0
    as "shape (2,), got shape (2,)"."""
    with pytest.raises(InputDataError, match=r"integer node indices, got edge 1 = \(1, 2\.5\)"):
        Graph.from_edges([[0, 1], [1, 2.5]], 3)
    with pytest.raises(InputDataError, match=r"got edge 0 = \(0, nan\)"):
        Graph.from_edges([[0, float("nan")]], 3)
    for weight in (0.0, -1.0, float("inf")):
        with pytest.raises(
            InputDataError,
            match=rf"finite and positive, got weight 1 = {weight:g} for edge \(1, 2\)",
        ):
            Graph.from_edges([[0, 1], [1, 2]], 3, weights=[1.0, weight])
    with pytest.raises(
        InputDataError, match=r"one weight per edge, shape \(2,\), got shape \(1,\)"
    ):
        Graph.from_edges([[0, 1], [1, 2]], 3, weights=[1.0])


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta:UserWarning")
def test_adjacency_may_be_a_torch_sparse_tensor_but_not_complex_or_networkx():
    """torch sparse tensors were refused though the docstring said "tensor", a complex matrix
    lost its imaginary part with only NumPy's ComplexWarning, and a networkx graph was refused
    as "got shape (1, 4)"."""
    a = random_weighted(7, seed=3, isolated=[5])
    dense = Graph(a)
    t = torch.tensor(a)
    for sparse in (t.to_sparse(), t.to_sparse_csr(), t.to_sparse_csc(), t.float().to_sparse()):
        assert Graph(sparse).num_edges == dense.num_edges
        levels = dense.num_levels_available
        assert torch.allclose(Graph(sparse).levels(levels)[0], dense.levels(levels)[0], atol=1e-5)
    assert Graph(t.to_sparse_csr()).fingerprint() == dense.fingerprint()
    with pytest.raises(InputDataError, match=r"square \(n, n\).*\(3, 3, 3\)"):
        Graph(torch.zeros(3, 3, 3).to_sparse())
    for complex_matrix in (a.astype(complex), torch.tensor(a, dtype=torch.complex128)):
        with pytest.raises(InputDataError, match=r"must be real, got dtype complex128.*A\.real"):
            Graph(complex_matrix)
    with pytest.raises(InputDataError, match=r"must be real"):
        Graph(scipy.sparse.csr_matrix(a.astype(complex)))

    class FakeNetworkxGraph:  # networkx is not a dependency: a class from its module will do
        __module__ = "networkx.classes.graph"

    with pytest.raises(InputDataError, match=r"networkx.*to_scipy_sparse_array\(G, nodelist"):
        Graph(FakeNetworkxGraph())


def test_docstring_says_a_networkx_graph_is_converted_by_the_user():
    """The docstring said "A networkx graph is converted with ...", which read as automatic
    conversion, while Graph refuses one."""
    doc = " ".join(Graph.__doc__.split())
    assert "A networkx graph is converted" not in doc
    assert (
        "convert it yourself with ``networkx.to_scipy_sparse_array(G, nodelist=sorted(G))``" in doc
    )


@pytest.mark.parametrize("nu", [2.5, math.inf])
def test_weights_are_similarities_and_the_docs_say_so(nu):
    """docs/concepts.md said a graph's lengthscale is in the units of "the edges' lengths": a user
    would put road lengths in as weights. Weights are similarities: multiplying them by c is the
    lengthscale times sqrt(c), and `distance` ignores them."""
    from pathlib import Path

    a, c = random_weighted(8, seed=4), 9.0
    x = nodes(8)
    heavy = full_kernel(Graph(c * a), nu, 0.5)(x, x).to_dense()
    light = full_kernel(Graph(a), nu, 0.5 * math.sqrt(c))(x, x).to_dense()
    assert torch.allclose(heavy, light, atol=1e-10)
    pairs = (x.unsqueeze(-2), x.unsqueeze(-3))  # (8, 8) hop counts
    assert torch.equal(Graph(c * a).distance(*pairs), Graph(a).distance(*pairs))
    concepts = (Path(__file__).parents[2] / "docs" / "concepts.md").read_text()
    flat = " ".join(concepts.split())
    assert "edges' lengths" not in flat
    assert "edge weights are similarities, not lengths" in flat and "1/√w" in flat
    assert "similarities, not lengths" in " ".join(Graph.__doc__.split())


def test_malformed_adjacencies_and_weights_get_clear_errors():
    # a ragged list gave a bare ValueError once the complex check came before the conversion;
    # complex or text weights were cut to their real part or failed inside NumPy; a float16
    # sparse tensor failed inside SciPy
    with pytest.raises(InputDataError, match="square numeric matrix"):
        Graph([[0, 1], [1]])
    for weights, dtype in ((np.array([1 + 2j]), "complex128"), (["a"], "<U1")):
        with pytest.raises(InputDataError, match=f"`weights` must be real numbers.*{dtype}"):
            Graph.from_edges([[0, 1]], 2, weights=weights)
    half = torch.tensor([[0, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=torch.float16).to_sparse()
    assert Graph(half).num_edges == 1
    assert Graph(half.to_dense().to(torch.bfloat16)).num_edges == 1  # NumPy has no bfloat16
    # Python numbers in an object array are weights (2**70 is beyond int64)
    from fractions import Fraction

    for weights in ([1, 2**70], [Fraction(1, 2), Fraction(1)], np.array([1, 2], dtype=object)):
        assert Graph.from_edges([[0, 1], [1, 2]], 3, weights=weights).num_edges == 2
