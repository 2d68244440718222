"""The homogeneous lift to R^D: the formula, degree-1 homogeneity without bias, the ReLU-network
covariance with and without bias, feature maps, training gradients, BoTorch use and errors."""

import math

import numpy as np
import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import ScaleKernel

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.harmonics.gegenbauer import harmonic_dimension
from manibo.kernels import (
    ArcCosineKernel,
    ChordalMaternKernel,
    GeometricMaternKernel,
    HomogeneousLiftKernel,
)
from manibo.spaces import Sphere


@pytest.fixture(autouse=True)
def _temporary_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("MANIBO_CACHE_DIR", str(tmp_path))


def _inputs(n, dim, seed, scale=2.0):
    gen = torch.Generator().manual_seed(seed)
    return scale * torch.randn(n, dim, generator=gen, dtype=torch.float64)


def _lift_kernel(base, dim, bias=1.0, lengthscale=None):
    kernel = HomogeneousLiftKernel(base, dim).double()
    kernel.bias = bias
    if lengthscale is not None:
        kernel.lengthscale = torch.tensor(lengthscale, dtype=torch.float64)
    return kernel


def _reference(x, y, lengthscale, bias):
    """r r' kappa_1(z . z') in numpy, straight from the definition."""

    def lift(a):
        lifted = np.concatenate([a / lengthscale, np.full((len(a), 1), bias)], 1)
        r = np.linalg.norm(lifted, axis=1)
        return r, lifted / r[:, None]

    (r1, z1), (r2, z2) = lift(x), lift(y)
    theta = np.arccos(np.clip(z1 @ z2.T, -1, 1))
    kappa = (np.sin(theta) + (np.pi - theta) * np.cos(theta)) / np.pi
    return r1[:, None] * r2[None, :] * kappa


def test_matches_definition_with_ard_lengthscales_and_bias():
    kernel = _lift_kernel(ArcCosineKernel(Sphere(3)), 3, bias=1.3, lengthscale=[0.7, 1.5, 2.0])
    x1, x2 = _inputs(8, 3, 0).reshape(2, 4, 3), _inputs(5, 3, 1)
    with torch.no_grad():
        k = kernel(x1, x2).to_dense()
        diag = kernel(x1, diag=True)
    ref = _reference(x1.reshape(8, 3).numpy(), x2.numpy(), np.array([0.7, 1.5, 2.0]), 1.3)
    assert k.shape == (2, 4, 5) and np.max(np.abs(k.reshape(8, 5).numpy() - ref)) < 1e-12
    r = (x1 / torch.tensor([0.7, 1.5, 2.0], dtype=torch.float64)).square().sum(-1) + 1.3**2
    assert torch.allclose(diag, r, atol=1e-12)  # k(x, x) = r^2 kappa(1) = r^2


@pytest.mark.parametrize(
    "base", [ArcCosineKernel(Sphere(3), order=0), ChordalMaternKernel(Sphere(3), nu=1.5)]
)
def test_positively_homogeneous_of_degree_one_without_bias(base):
    kernel = _lift_kernel(base, 3, bias=0.0, lengthscale=[0.5, 1.0, 3.0])
    assert float(kernel.bias.detach()) == 0.0
    x, y = _inputs(6, 3, 2), _inputs(7, 3, 3)
    with torch.no_grad():
        k = kernel(x, y).to_dense()
        for c in (0.3, 2.5):
            assert torch.allclose(kernel(c * x, y).to_dense(), c * k, rtol=1e-12, atol=1e-12)
            assert torch.allclose(kernel(x, c * y).to_dense(), c * k, rtol=1e-12, atol=1e-12)


def test_bias_breaks_homogeneity():
    kernel = _lift_kernel(ArcCosineKernel(Sphere(2)), 2, bias=1.0)
    x, y = _inputs(4, 2, 4), _inputs(4, 2, 5)
    with torch.no_grad():
        gap = (kernel(3 * x, y).to_dense() - 3 * kernel(x, y).to_dense()).abs().max()
    assert gap > 1e-2


@pytest.mark.parametrize("bias", [0.0, 0.5])
def test_equals_relu_layer_covariance(bias):
    """With lengthscale 1: k(x, y) = 2 E_w[ReLU(w . [x, b]) ReLU(w . [y, b])], w ~ N(0, I_(D+1))."""
    kernel = _lift_kernel(ArcCosineKernel(Sphere(2)), 2, bias=bias, lengthscale=[1.0, 1.0])
    x = _inputs(5, 2, 6, scale=1.0)
    lifted = torch.cat([x, torch.full((5, 1), bias, dtype=torch.float64)], 1)
    w = torch.randn(200_000, 3, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    act = (w @ lifted.T).clamp(min=0)
    samples = 2 * act[:, :, None] * act[:, None, :]
    mean, err = samples.mean(0), samples.std(0) / math.sqrt(len(w))
    with torch.no_grad():
        k = kernel(x).to_dense()
    assert ((k - mean).abs() <= 5 * err + 1e-12).all()  # five standard errors


def test_feature_map_within_radial_truncation_bound():
    kernel = _lift_kernel(ChordalMaternKernel(Sphere(2), nu=2.5, num_levels=8), 2, bias=0.8)
    x = _inputs(20, 2, 8)
    sizes = torch.tensor([float(harmonic_dimension(3, n)) for n in range(8)], dtype=torch.float64)
    with torch.no_grad():
        phi = kernel.feature_map(x)
        r, z = kernel.lift(x)
        tail = 1 - float((kernel.base_kernel.eigenvalues() * sizes).sum())
        gap = (phi @ phi.T - kernel(x).to_dense()).abs()
    assert phi.shape == (20, 64) and z.shape == (20, 3)
    assert torch.allclose(z.norm(dim=-1), torch.ones(20, dtype=torch.float64))
    assert (gap <= tail * r[:, None] * r[None, :] + 1e-10).all()


def test_zero_input_without_bias_is_safe():
    kernel = _lift_kernel(ArcCosineKernel(Sphere(2)), 2, bias=0.0)
    x = torch.tensor([[0.0, 0.0], [1.0, -2.0]], dtype=torch.float64, requires_grad=True)
    r, z = kernel.lift(x)
    assert float(r[0].detach()) == 0 and torch.equal(
        z[0].detach(), torch.tensor([0.0, 0.0, 1.0]).double()
    )
    k = kernel(x).to_dense()
    assert torch.equal(k[0], torch.zeros(2, dtype=torch.float64))
    (grad,) = torch.autograd.grad(k.sum(), x)
    assert torch.isfinite(grad).all()


def test_all_hyperparameters_receive_gradients():
    kernel = _lift_kernel(ChordalMaternKernel(Sphere(3), nu=2.5), 3, bias=0.7)
    names = {name for name, _ in kernel.named_parameters()}
    assert names == {"raw_lengthscale", "raw_bias", "base_kernel.raw_lengthscale"}
    x = _inputs(6, 3, 9)
    kernel(x).to_dense().sum().backward()
    for parameter in kernel.parameters():
        assert torch.isfinite(parameter.grad).all() and parameter.grad.abs().sum() > 0


def test_float32_agrees_with_float64():
    base = ArcCosineKernel(Sphere(3))
    k64 = _lift_kernel(base, 3, bias=0.9, lengthscale=[1.0, 2.0, 0.5])
    k32 = HomogeneousLiftKernel(base, 3, bias=0.9).float()
    k32.lengthscale = torch.tensor([1.0, 2.0, 0.5])
    x = _inputs(10, 3, 10)
    with torch.no_grad():
        a, b = k64(x).to_dense(), k32(x.float()).to_dense()
    assert b.dtype == torch.float32
    assert ((a - b.double()).abs() / a.abs().max()).max() < 1e-5


def test_botorch_posterior_is_differentiable():
    train_x = torch.rand(12, 2, generator=torch.Generator().manual_seed(11), dtype=torch.float64)
    train_y = (train_x.sum(-1, keepdim=True) - 1).abs()
    covar = ScaleKernel(HomogeneousLiftKernel(ArcCosineKernel(Sphere(2)), 2))
    model = SingleTaskGP(train_x, train_y, covar_module=covar).double()
    x = torch.rand(3, 1, 2, dtype=torch.float64, requires_grad=True)
    posterior = model.posterior(x)
    assert posterior.mean.shape == (3, 1, 1) and (posterior.variance > 0).all()
    (grad,) = torch.autograd.grad(posterior.mean.sum() + posterior.variance.sum(), x)
    assert torch.isfinite(grad).all()


def test_bad_inputs_and_options_raise_helpful_errors():
    kernel = _lift_kernel(ArcCosineKernel(Sphere(3)), 3)
    with pytest.raises(InputDataError, match=r"\(\*batch, 3\) for points of R\^3"):
        kernel(_inputs(4, 2, 0)).to_dense()
    bad = _inputs(4, 3, 0)
    bad[1, 1] = float("nan")
    with pytest.raises(InputDataError, match="NaN"):
        kernel(bad).to_dense()
    with pytest.raises(InputDataError, match=r"kernel.to\(x\)"):
        HomogeneousLiftKernel(ArcCosineKernel(Sphere(3)), 3).float()(_inputs(4, 3, 0)).to_dense()
    with pytest.raises(ConfigurationError, match="ZonalKernel"):
        HomogeneousLiftKernel(GeometricMaternKernel(Sphere(3)), 3)
    with pytest.raises(ConfigurationError, match=r"Sphere\(3\)"):
        HomogeneousLiftKernel(ArcCosineKernel(Sphere(2)), 3)
    with pytest.raises(ConfigurationError, match="bias"):
        HomogeneousLiftKernel(ArcCosineKernel(Sphere(3)), 3, bias=-1.0)
    with pytest.raises(ConfigurationError, match="input_dim"):
        HomogeneousLiftKernel(ArcCosineKernel(Sphere(3)), 0)


def test_ard_num_dims_other_than_input_dim_is_refused():
    # any ard_num_dims raised "Kernel.__init__() got multiple values for keyword argument
    # 'ard_num_dims'" (a TypeError)
    with pytest.raises(ConfigurationError, match="one lengthscale per coordinate"):
        HomogeneousLiftKernel(ArcCosineKernel(Sphere(2)), 2, ard_num_dims=3)
    kernel = HomogeneousLiftKernel(ArcCosineKernel(Sphere(2)), 2, ard_num_dims=2)
    assert kernel.lengthscale.shape == (1, 2)
