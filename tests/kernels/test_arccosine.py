"""Arc-cosine kernels on spheres: closed form, Monte Carlo network covariance, closed-form
eigenvalues against quadrature, feature maps, finite gradients at t = ±1, dtypes and errors."""

import math

import numpy as np
import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.harmonics.gegenbauer import harmonic_dimension
from manibo.kernels import ArcCosineKernel, ZonalKernel
from manibo.kernels.arccosine import arc_cosine_shape
from manibo.spaces import Sphere


@pytest.fixture(autouse=True)
def _temporary_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("MANIBO_CACHE_DIR", str(tmp_path))


def _points(sphere, n, seed):
    return sphere.random(n, generator=torch.Generator().manual_seed(seed))


def _reference(x, y, order):
    """Cho & Saul in numpy: J_0 = pi - theta, J_1 = sin(theta) + (pi - theta) cos(theta), / pi."""
    theta = np.arccos(np.clip(x @ y.T, -1, 1))
    if order == 0:
        return (np.pi - theta) / np.pi
    return (np.sin(theta) + (np.pi - theta) * np.cos(theta)) / np.pi


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("dim", [2, 5])
def test_matches_closed_form(order, dim):
    sphere = Sphere(dim)
    kernel = ArcCosineKernel(sphere, order=order)
    x1 = _points(sphere, 12, 0).reshape(3, 4, dim + 1)
    x2 = _points(sphere, 5, 1)
    with torch.no_grad():
        k = kernel(x1, x2).to_dense()
        diag = kernel(x1, diag=True)
    assert k.shape == (3, 4, 5) and diag.shape == (3, 4)
    ref = _reference(x1.reshape(12, -1).numpy(), x2.numpy(), order).reshape(3, 4, 5)
    assert np.max(np.abs(k.numpy() - ref)) < 1e-14
    assert torch.allclose(diag, torch.ones(3, 4, dtype=torch.float64))


@pytest.mark.parametrize("order", [0, 1])
def test_equals_twice_the_covariance_of_one_wide_layer(order):
    """kappa(x.y) = 2 E_w[s(w.x) s(w.y)], w ~ N(0, I), s = step (order 0) or ReLU (order 1)."""
    sphere = Sphere(3)
    x = _points(sphere, 6, 2)
    w = torch.randn(200_000, 4, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    pre = w @ x.T
    act = (pre > 0).double() if order == 0 else pre.clamp(min=0)
    samples = 2 * act[:, :, None] * act[:, None, :]
    mean, err = samples.mean(0), samples.std(0) / math.sqrt(len(w))
    with torch.no_grad():
        k = ArcCosineKernel(sphere, order=order)(x).to_dense()
    assert ((k - mean).abs() <= 5 * err + 1e-12).all()  # five standard errors


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("dim", [2, 4, 8])
def test_closed_form_eigenvalues_equal_quadrature(order, dim):
    closed = ArcCosineKernel(Sphere(dim), order=order, num_levels=9).eigenvalues()
    quadrature = ZonalKernel(
        Sphere(dim), lambda t: arc_cosine_shape(t, order), num_levels=9, num_nodes=2000
    ).eigenvalues()
    # kappa_1 converges fast; kappa_0 has a (1 - t)^(1/2) endpoint singularity, so slower
    assert (closed - quadrature).abs().max() < (1e-12 if order == 1 else 1e-10)
    n = torch.arange(9)
    zero = (n >= 3) & (n % 2 == 1) if order == 1 else (n >= 2) & (n % 2 == 0)
    assert (closed[zero] == 0).all() and (closed[~zero] > 0).all()


@pytest.mark.parametrize("order,levels", [(1, 12), (0, 20)])
def test_feature_map_within_truncation_bound(order, levels):
    sphere = Sphere(2)
    kernel = ArcCosineKernel(sphere, order=order, num_levels=levels)
    x = _points(sphere, 40, 4)
    phi = kernel.feature_map(x)
    with torch.no_grad():
        k = kernel(x).to_dense()
    sizes = torch.tensor([float(harmonic_dimension(3, n)) for n in range(levels)])
    tail = 1 - float((kernel.eigenvalues() * sizes.double()).sum())
    gap = (phi @ phi.T - k).abs()
    assert 0 < tail and gap.max() <= tail + 1e-12
    assert gap.max() < (5e-4 if order == 1 else 5e-2)


def test_symmetric_psd_and_float32():
    sphere = Sphere(3)
    x = _points(sphere, 60, 5)
    for order in (0, 1):
        kernel = ArcCosineKernel(sphere, order=order)
        with torch.no_grad():
            k64 = kernel(x).to_dense()
            k32 = kernel(x.float()).to_dense()
        assert (k64 - k64.T).abs().max() < 1e-15
        assert torch.linalg.eigvalsh(k64).min() > -1e-10
        # kappa_0 ~ 1 - sqrt(2 (1 - t)) / pi near t = 1 turns float32 rounding of t into ~1e-4
        tol = 3e-4 if order == 0 else 1e-5
        assert k32.dtype == torch.float32 and (k32.double() - k64).abs().max() < tol
        f32 = kernel.feature_map(x.float())
        assert f32.dtype == torch.float32
        assert (f32.double() - kernel.feature_map(x)).abs().max() < 1e-6


@pytest.mark.parametrize("order", [0, 1])
def test_gradients_finite_at_plus_and_minus_one(order):
    sphere = Sphere(2)
    base = _points(sphere, 4, 6)
    x = torch.cat([base, base, -base]).requires_grad_(True)  # t = 1 and t = -1 exactly
    kernel = ArcCosineKernel(sphere, order=order)
    (grad,) = torch.autograd.grad(kernel(x).to_dense().sum(), x)
    assert torch.isfinite(grad).all()
    (grad32,) = torch.autograd.grad(kernel(x.float()).to_dense().sum(), x)
    assert torch.isfinite(grad32).all()


def test_shape_gradients_are_exact_inside_and_order1_derivative_is_one_at_one():
    t = torch.linspace(-0.95, 0.95, 9, dtype=torch.float64).requires_grad_(True)
    for order in (0, 1):
        assert torch.autograd.gradcheck(lambda s, o=order: arc_cosine_shape(s, o), (t,))
    one = torch.tensor([1.0, -1.0], dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(arc_cosine_shape(one, 1).sum(), one)
    assert torch.equal(grad, torch.tensor([1.0, 0.0], dtype=torch.float64))  # 1 - arccos(t)/pi


def test_bad_inputs_and_orders_raise():
    sphere = Sphere(2)
    for order in (2, -1, 0.5, True):
        with pytest.raises(ConfigurationError, match="order"):
            ArcCosineKernel(sphere, order=order)
    with pytest.raises(ConfigurationError, match="order"):
        arc_cosine_shape(torch.zeros(2), 3)
    kernel = ArcCosineKernel(sphere)
    x = _points(sphere, 3, 7)
    with pytest.raises(InputDataError, match="norms must be 1"):
        kernel(1.1 * x).to_dense()
    with pytest.raises(InputDataError, match=r"\(\*batch, 3\)"):
        kernel(x[:, :2]).to_dense()
    bad = x.clone()
    bad[2, 2] = float("inf")
    with pytest.raises(InputDataError, match="NaN or infinite"):
        kernel(x, bad).to_dense()


@pytest.mark.parametrize("order", [0, 1])
def test_batch_shape_gives_batch_dimensions(order):
    # batch_shape was accepted and ignored: kernel(x) raised GPyTorch's "expected shape
    # [2, 5, 5], got [5, 5]" and kernel(x, diag=True) was (5,)
    sphere = Sphere(2)
    x = _points(sphere, 5, 0)
    single = ArcCosineKernel(sphere, order=order)
    kernel = ArcCosineKernel(sphere, order=order, batch_shape=torch.Size([2]))
    with torch.no_grad():
        expected = single(x).to_dense()
        assert torch.equal(kernel(x).to_dense(), expected.expand(2, 5, 5))
        # the diagonal has a path of its own: equal to the unbatched one's, and to the matrix's
        # diagonal up to rounding: <x, x> = 1 - 1.1e-16 on some CPUs, where arccos's infinite
        # slope makes the order-0 arc-cosine kernel 1 - 4.7e-9
        diagonal = single(x, diag=True)
        assert torch.equal(kernel(x, diag=True), diagonal.expand(2, 5))
        assert torch.allclose(diagonal, expected.diagonal(), rtol=0, atol=1e-8)
        batched = kernel(x.expand(3, 1, 5, 3)).to_dense()  # batched products: rounding as above
        assert torch.allclose(batched, expected.expand(3, 2, 5, 5), rtol=0, atol=1e-8)
        assert kernel[1].batch_shape == torch.Size([])
        assert torch.equal(kernel[1](x).to_dense(), expected)
