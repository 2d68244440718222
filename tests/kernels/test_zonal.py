"""Zonal kernels: values, Funk–Hecke eigenvalues, feature maps against the kernel, the chordal
Matérn against GPyTorch's Euclidean kernels, batches, dtypes, gradients and errors."""

import math

import gpytorch
import numpy as np
import pytest
import scipy.special as sp
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.harmonics.gegenbauer import harmonic_dimension
from manibo.kernels import ChordalMaternKernel, ZonalKernel
from manibo.spaces import Sphere


@pytest.fixture(autouse=True)
def _temporary_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("MANIBO_CACHE_DIR", str(tmp_path))


def _points(sphere, n, seed):
    return sphere.random(n, generator=torch.Generator().manual_seed(seed))


def _exp_kernel(sphere, **kwargs):
    return ZonalKernel(sphere, lambda t: torch.exp(t - 1), **kwargs)


def _tail(kernel, d):
    """kappa(1) - sum_{n<L} lambda_n N(d, n): the entrywise bound on |K - Phi Phi^T|."""
    lam = kernel.eigenvalues().detach()
    sizes = torch.tensor([float(harmonic_dimension(d, n)) for n in range(lam.shape[-1])])
    one = torch.ones(1, 1, dtype=lam.dtype)
    return kernel.shape_function(one).detach().reshape(-1) - (lam * sizes.to(lam)).sum(-1)


def test_values_batches_and_diag():
    sphere = Sphere(2)
    kernel = _exp_kernel(sphere)
    x1 = _points(sphere, 10, 0).reshape(2, 5, 3)
    x2 = _points(sphere, 8, 1).reshape(2, 4, 3)
    with torch.no_grad():
        k = kernel(x1, x2).to_dense()
        diag = kernel(x1, diag=True)
    assert k.shape == (2, 5, 4)
    assert torch.allclose(k, torch.exp(x1 @ x2.transpose(-1, -2) - 1), atol=1e-15)
    assert diag.shape == (2, 5) and torch.allclose(diag, torch.ones(2, 5, dtype=torch.float64))


@pytest.mark.parametrize("dim", [2, 4])
def test_eigenvalues_match_bessel_closed_form(dim):
    d, alpha = dim + 1, (dim - 1) / 2
    lam = _exp_kernel(Sphere(dim), num_levels=15).eigenvalues().numpy()
    ref = np.exp(-1) * math.gamma(alpha + 1) * 2**alpha * sp.iv(np.arange(15) + alpha, 1.0)
    assert d == dim + 1 and np.max(np.abs(lam - ref)) < 1e-13


@pytest.mark.parametrize("dim,levels", [(1, 20), (2, 12), (4, 8)])
def test_feature_map_reproduces_the_kernel(dim, levels):
    sphere = Sphere(dim)
    kernel = _exp_kernel(sphere, num_levels=levels)
    x = _points(sphere, 30, 2)
    phi = kernel.feature_map(x)
    with torch.no_grad():
        k = kernel(x).to_dense()
    assert phi.shape == (30, sum(harmonic_dimension(dim + 1, n) for n in range(levels)))
    # the bound, up to the eigenvalues' quadrature floor (~1e-14 per level, times N(d, n))
    tail = float(_tail(kernel, dim + 1))
    assert (phi @ phi.T - k).abs().max() < max(tail, 0.0) + 1e-10
    assert tail < 1e-6


def test_truncation_bound_holds_and_shrinks_for_a_rough_kernel():
    sphere = Sphere(3)
    x = _points(sphere, 25, 3)
    gaps = []
    for levels in (3, 6):
        kernel = ChordalMaternKernel(sphere, nu=0.5, num_levels=levels).double()
        kernel.lengthscale = 0.8
        with torch.no_grad():
            gap = (kernel.feature_map(x) @ kernel.feature_map(x).T - kernel(x).to_dense()).abs()
        assert gap.max() <= float(_tail(kernel, 4)) + 1e-9
        gaps.append(float(gap.max()))
    assert gaps[1] < gaps[0]


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5, math.inf])
def test_chordal_matern_equals_euclidean_kernel_on_ambient_points(nu):
    sphere = Sphere(2)
    ours = ChordalMaternKernel(sphere, nu=nu).double()
    ref = gpytorch.kernels.RBFKernel() if math.isinf(nu) else gpytorch.kernels.MaternKernel(nu=nu)
    ref = ref.double()
    ours.lengthscale = ref.lengthscale = 0.7
    x1, x2 = _points(sphere, 12, 4), _points(sphere, 9, 5)
    with torch.no_grad():
        assert torch.allclose(ours(x1, x2).to_dense(), ref(x1, x2).to_dense(), atol=1e-12)
        assert torch.allclose(ours(x1).to_dense(), ref(x1).to_dense(), atol=1e-7)  # diagonal


def test_chordal_matern_eigenvalues_positive_and_differentiable_in_lengthscale():
    kernel = ChordalMaternKernel(Sphere(3), nu=2.5, num_levels=8).double()
    kernel.lengthscale = 0.6
    lam = kernel.eigenvalues()
    assert (lam > 0).all()
    weights = torch.linspace(1, 2, 8, dtype=torch.float64)
    (grad,) = torch.autograd.grad((lam * weights).sum(), kernel.raw_lengthscale)
    h = 1e-6
    values = []
    with torch.no_grad():
        for step in (h, -h):
            kernel.raw_lengthscale.add_(step)
            values.append(float((kernel.eigenvalues() * weights).sum()))
            kernel.raw_lengthscale.sub_(step)
    assert float(grad) == pytest.approx((values[0] - values[1]) / (2 * h), rel=1e-6)


def test_batched_lengthscales():
    sphere = Sphere(2)
    kernel = ChordalMaternKernel(sphere, nu=1.5, num_levels=6, batch_shape=torch.Size([2])).double()
    kernel.lengthscale = torch.tensor([0.5, 1.0], dtype=torch.float64).reshape(2, 1, 1)
    x = _points(sphere, 7, 6)
    with torch.no_grad():
        lam = kernel.eigenvalues()
        k = kernel(x).to_dense()
        diag = kernel(x, diag=True)
        phi = kernel.feature_map(x)
    assert lam.shape == (2, 6) and k.shape == (2, 7, 7) and diag.shape == (2, 7)
    assert phi.shape == (2, 7, 36)
    single = ChordalMaternKernel(sphere, nu=1.5, num_levels=6).double()
    single.lengthscale = 1.0
    with torch.no_grad():
        assert torch.allclose(lam[1], single.eigenvalues(), atol=1e-15)
        assert torch.allclose(k[1], single(x).to_dense(), atol=1e-15)


def test_kernel_matrices_are_symmetric_psd():
    sphere = Sphere(2)
    x = _points(sphere, 80, 7)
    for kernel in (_exp_kernel(sphere), ChordalMaternKernel(sphere, nu=0.5).double()):
        with torch.no_grad():
            k = kernel(x).to_dense()
        assert (k - k.T).abs().max() < 1e-15
        assert torch.linalg.eigvalsh(k).min() > -1e-10


def test_float32_agrees_with_float64():
    sphere = Sphere(2)
    x = _points(sphere, 20, 8)
    k64 = ChordalMaternKernel(sphere, nu=2.5, num_levels=6).double()
    k32 = ChordalMaternKernel(sphere, nu=2.5, num_levels=6).float()
    with torch.no_grad():
        a, b = k64(x).to_dense(), k32(x.float()).to_dense()
        assert b.dtype == torch.float32 and (a - b.double()).abs().max() < 1e-6
        fa, fb = k64.feature_map(x), k32.feature_map(x.float())
        assert fb.dtype == torch.float32 and (fa - fb.double()).abs().max() < 1e-5


def test_gradients_wrt_points_are_finite_even_for_duplicates():
    sphere = Sphere(2)
    x = torch.cat([_points(sphere, 5, 9)] * 2).requires_grad_(True)
    for nu in (0.5, 2.5):
        kernel = ChordalMaternKernel(sphere, nu=nu).double()
        (grad,) = torch.autograd.grad(kernel(x).to_dense().sum(), x)
        assert torch.isfinite(grad).all()


def test_bad_inputs_and_options_raise_helpful_errors():
    sphere = Sphere(2)
    kernel = _exp_kernel(sphere)
    x = _points(sphere, 4, 10)
    with pytest.raises(InputDataError, match="norms must be 1"):
        kernel(2 * x).to_dense()
    bad = x.clone()
    bad[0, 1] = float("nan")
    with pytest.raises(InputDataError, match="NaN"):
        kernel(bad).to_dense()
    with pytest.raises(InputDataError, match=r"\(\*batch, 3\)"):
        kernel(torch.ones(4, 4, dtype=torch.float64) / 2).to_dense()
    with pytest.raises(InputDataError, match="dtype"):
        kernel(x, x.float()).to_dense()
    with pytest.raises(InputDataError, match=r"kernel.to\(x\)"):
        ChordalMaternKernel(sphere).float()(x).to_dense()
    with pytest.raises(ConfigurationError, match="Sphere"):
        ZonalKernel("sphere", torch.exp)
    with pytest.raises(ConfigurationError, match="shape_fn"):
        ZonalKernel(sphere)
    with pytest.raises(ConfigurationError, match="nu"):
        ChordalMaternKernel(sphere, nu=1.0)
    with pytest.raises(ConfigurationError, match="num_levels"):
        _exp_kernel(sphere, num_levels=0)
    with pytest.raises(ConfigurationError, match="positive-definite"):
        ZonalKernel(sphere, lambda t: -t).feature_map(x)


def test_batch_shape_gives_batch_dimensions():
    # batch_shape was accepted and ignored: kernel(x) raised GPyTorch's "expected shape
    # [2, 5, 5], got [5, 5]" and kernel(x, diag=True) was (5,)
    sphere = Sphere(2)
    x = _points(sphere, 5, 0)
    kernel = _exp_kernel(sphere, batch_shape=torch.Size([2]))
    with torch.no_grad():
        expected = _exp_kernel(sphere)(x).to_dense()
        assert torch.equal(kernel(x).to_dense(), expected.expand(2, 5, 5))
        # the diagonal has a path of its own: equal to the unbatched one's, and to the matrix's
        # diagonal up to rounding (<x, x> = 1 - 1.1e-16 on some CPUs)
        diagonal = _exp_kernel(sphere)(x, diag=True)
        assert torch.equal(kernel(x, diag=True), diagonal.expand(2, 5))
        assert torch.allclose(diagonal, expected.diagonal(), rtol=0, atol=1e-14)
        assert torch.equal(kernel[0](x).to_dense(), expected)


def test_ard_num_dims_is_refused_at_construction():
    # it was accepted; ChordalMaternKernel then raised "The size of tensor a (6) must match the
    # size of tensor b (3)" for 6 points
    for build in (
        lambda **o: ChordalMaternKernel(Sphere(2), **o),
        lambda **o: _exp_kernel(Sphere(2), **o),
    ):
        with pytest.raises(ConfigurationError, match="one lengthscale"):
            build(ard_num_dims=3)
