"""Sufficient statistics: the chunked pass, iterables of chunks and Dask partitions all equal the
dense sums; they add; standardisation; float32 chunk products within a stated tolerance; errors."""

import pytest
import torch
from gpytorch.kernels import ScaleKernel

from manibo.exceptions import InputDataError
from manibo.kernels import ChordalMaternKernel, HomogeneousLiftKernel
from manibo.models.vish import (
    VISHFeatures,
    VISHPrior,
    dask_statistics,
    gather_statistics,
    statistics_from_chunks,
)
from manibo.models.vish.statistics import (
    _SymmetricGram,
    add_upper_gram,
    differentiable_statistics,
    symmetrize_upper,
)
from manibo.spaces import Sphere


def _data(n=300, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = 2 * torch.rand(n, 3, generator=g, dtype=torch.float64) - 1
    y = torch.sin(3 * X[:, 0]) + 0.3 * torch.randn(n, generator=g, dtype=torch.float64)
    return X, y


def _features():
    kernel = HomogeneousLiftKernel(ChordalMaternKernel(Sphere(3), nu=1.5), 3, bias=0.7)
    return VISHPrior(ScaleKernel(kernel), 60, offset=torch.tensor([0.1, 0.0, -0.1])).features


def _dense(features, X, y):
    with torch.no_grad():
        Phi = features.harmonics(X)
        r, _ = features.radius_direction(X)
    return {
        "gram": Phi.T @ Phi,
        "cross": y @ Phi,
        "feature_sum": Phi.sum(0),
        "y_sum": y.sum(),
        "y_squared": y @ y,
        "radius_squared": r @ r,
        "count": torch.tensor(float(len(y)), dtype=torch.float64),
    }


def _assert_matches(stats, expected, rtol=1e-10):
    for name, value in expected.items():
        got = getattr(stats, name)
        scale = value.abs().max().clamp_min(1.0)
        assert ((got - value).abs().max() / scale) < rtol, name


@pytest.mark.parametrize("chunk_size", [7, 64, 1000])
def test_chunked_pass_equals_dense_sums(chunk_size):
    features = _features()
    X, y = _data()
    stats = gather_statistics(features, X, y, chunk_size=chunk_size)
    _assert_matches(stats, _dense(features, X, y))
    assert stats.gram.dtype == torch.float64 and torch.equal(stats.gram, stats.gram.T)


def test_iterables_and_addition():
    features = _features()
    X, y = _data()
    whole = gather_statistics(features, X, y)
    chunks = ((X[i : i + 50], y[i : i + 50, None]) for i in range(0, 300, 50))  # (n, 1) outcomes
    _assert_matches(statistics_from_chunks(features, chunks), _dense(features, X, y))
    halves = [
        gather_statistics(features, X[:120], y[:120]),
        gather_statistics(features, X[120:], y[120:]),
    ]
    _assert_matches(sum(halves), _dense(features, X, y))
    _assert_matches(halves[0] + halves[1], _dense(features, X, y))
    mean, std = whole.outcome_moments()
    assert torch.allclose(mean, y.mean()) and torch.allclose(std, y.std(unbiased=False))
    standardized = whole.standardized(mean, std)
    _assert_matches(standardized, _dense(features, X, (y - mean) / std))


def test_float32_chunk_products():
    features = _features()
    X, y = _data(2000)
    stats64 = gather_statistics(features, X, y)
    stats32 = gather_statistics(features, X, y, compute_dtype=torch.float32)
    assert stats32.gram.dtype == torch.float64  # accumulated in float64 either way
    _assert_matches(stats32, _dense(features, X, y), rtol=1e-5)  # stated float32 tolerance
    stats_f32_data = gather_statistics(features, X.float(), y.float())
    _assert_matches(stats_f32_data, _dense(features, X, y), rtol=1e-5)
    assert not torch.equal(stats32.gram, stats64.gram)


@pytest.mark.parametrize("blocks", [1, 2, 3, 5])
def test_upper_block_gram(blocks):
    Z = torch.randn(30, 11, dtype=torch.float64)
    upper = torch.zeros(11, 11, dtype=torch.float64)
    add_upper_gram(upper, Z[:13], blocks)
    add_upper_gram(upper, Z[13:], blocks)
    assert torch.allclose(symmetrize_upper(upper, blocks), Z.T @ Z, atol=1e-12)


def test_symmetric_gram_gradient():
    Z = torch.randn(9, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(_SymmetricGram.apply, (Z,))
    weights = torch.randn(5, 5, dtype=torch.float64)  # not symmetric: both halves count
    (grad,) = torch.autograd.grad((weights * _SymmetricGram.apply(Z)).sum(), Z)
    assert torch.allclose(grad, Z @ (weights + weights.T), atol=1e-12)


@pytest.mark.parametrize("compute_dtype, rtol", [(torch.float64, 1e-10), (torch.float32, 1e-5)])
def test_differentiable_statistics_and_their_gradients(compute_dtype, rtol):
    """Zonal-coordinate statistics equal the dense harmonic sums, and so do their gradients in the
    lift's parameters (against autograd through the harmonics and ``Phi.T @ Phi``)."""
    features = _features()
    X, y = _data()
    stats = differentiable_statistics(features, X, y, compute_dtype)
    _assert_matches(stats, _dense(features, X, y), rtol)
    assert stats.gram.dtype == torch.float64 and torch.equal(stats.gram, stats.gram.T)
    g = torch.Generator().manual_seed(3)
    m = stats.num_features
    weights = torch.randn(m, m, generator=g, dtype=torch.float64)
    u, v = torch.randn(2, m, generator=g, dtype=torch.float64)
    params = [features.lift.raw_lengthscale, features.lift.raw_bias]

    def functional(gram, cross, feature_sum, radius_squared):
        return (weights * gram).sum() + cross @ u + feature_sum @ v + radius_squared

    got = torch.autograd.grad(
        functional(stats.gram, stats.cross, stats.feature_sum, stats.radius_squared), params
    )
    Phi = features.harmonics(X)
    r, _ = features.radius_direction(X)
    expected = torch.autograd.grad(functional(Phi.T @ Phi, y @ Phi, Phi.sum(0), r @ r), params)
    for a, b in zip(got, expected, strict=True):
        assert torch.allclose(a, b, rtol=10 * rtol, atol=10 * rtol * b.abs().max())


def test_dask_map_reduce_on_a_local_cluster():
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    features = _features()
    X, y = _data(400)
    dX = da.from_array(X.numpy(), chunks=(90, -1))
    dy = da.from_array(y.numpy(), chunks=90)
    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1):
        stats = dask_statistics(features, dX, dy, chunk_size=32)
    _assert_matches(stats, _dense(features, X, y))
    with pytest.raises(InputDataError, match="dask arrays"):
        dask_statistics(features, X, y)
    with pytest.raises(InputDataError, match="rows only"):
        dask_statistics(features, da.from_array(X.numpy(), chunks=(90, 2)), dy)
    with pytest.raises(InputDataError, match="row chunks"):
        dask_statistics(features, dX, da.from_array(y.numpy(), chunks=100))


def test_errors():
    features = _features()
    X, y = _data(20)
    with pytest.raises(InputDataError, match="one outcome per input"):
        gather_statistics(features, X, y[:10])
    with pytest.raises(InputDataError, match="chunk_size"):
        gather_statistics(features, X, y, chunk_size=0)
    with pytest.raises(InputDataError, match="empty"):
        statistics_from_chunks(features, [])
    with pytest.raises(InputDataError, match="chunk 1"):
        statistics_from_chunks(features, [(X, y), (X[:, :2], y)])
    with pytest.raises(InputDataError, match="NaN"):
        gather_statistics(features, X, torch.full_like(y, float("nan")))
    other = gather_statistics(VISHFeatures(3, (0, 1)), Sphere(2).random(5), torch.zeros(5).double())
    with pytest.raises(InputDataError, match="same features"):
        gather_statistics(features, X, y) + other
