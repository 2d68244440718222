"""Random Fourier features: unbiased for RBF and Matérn kernels with ARD and for BoxMaternKernel,
seeded, following a shared lengthscale or training their own, with clear errors."""

import math

import pytest
import torch
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import BoxMaternKernel, RandomFourierFeatureMap, feature_map
from manibo.spaces import Box


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _dense(kernel, x):
    with torch.no_grad():
        return kernel(x).to_dense()


def _kernel(nu):
    base = RBFKernel(ard_num_dims=2) if math.isinf(nu) else MaternKernel(nu=nu, ard_num_dims=2)
    kernel = ScaleKernel(base).double()
    kernel.base_kernel.lengthscale = torch.tensor([[0.7, 1.3]], dtype=torch.float64)
    kernel.outputscale = 2.0
    return kernel


@pytest.mark.parametrize("nu", [math.inf, 0.5, 1.5, 2.5])
def test_features_are_unbiased_for_the_kernel(nu, device="cpu"):
    kernel = _kernel(nu).to(device)
    x = torch.rand(8, 2, generator=_gen(), dtype=torch.float64).to(device) * 2
    exact = _dense(kernel, x)
    with torch.no_grad():
        grams = torch.stack([feature_map(kernel, 500, seed).gram(x) for seed in range(64)])
    assert grams.device == exact.device
    one, mean = (grams[0] - exact).abs().max(), (grams.mean(0) - exact).abs().max()
    assert float(mean) < 0.02  # 64 x 500 frequencies: Monte Carlo error ~ 2 / sqrt(32000)
    assert float(mean) < float(one) / 3  # ~ 1 / sqrt(seeds)


def test_seeded_draws_are_the_spectral_density_of_the_documented_recipe():
    kernel = _kernel(math.inf)
    fmap = feature_map(kernel, 16, seed=3)
    omega = torch.randn(2, 16, generator=_gen(3), dtype=torch.float64)  # RBF: standard normal
    x = torch.rand(5, 2, generator=_gen(1), dtype=torch.float64)
    projection = x / torch.tensor([0.7, 1.3], dtype=torch.float64) @ omega
    expected = math.sqrt(2.0 / 16) * torch.cat([projection.cos(), projection.sin()], -1)
    with torch.no_grad():
        assert torch.allclose(fmap(x), expected, rtol=0, atol=1e-12)
        assert torch.equal(feature_map(kernel, 16, seed=3)(x), fmap(x))
        assert not torch.allclose(feature_map(kernel, 16, seed=4)(x), fmap(x))
    assert fmap.num_features == 32 and not fmap.exact


def test_shared_maps_follow_the_lengthscale_trainable_maps_own_it():
    kernel = _kernel(2.5).base_kernel
    shared = feature_map(kernel, 32, seed=0)
    own = feature_map(kernel, 32, seed=0, trainable=True)
    x = torch.rand(6, 2, generator=_gen(), dtype=torch.float64)
    with torch.no_grad():
        before = shared(x)
        assert torch.allclose(own(x), before, atol=1e-12)
        kernel.lengthscale = 2 * kernel.lengthscale
        assert torch.allclose(shared(2 * x), before, atol=1e-12)  # k(x / (2 l)) at 2x
        assert torch.allclose(own(x), before, atol=1e-12)  # its own lengthscale stayed
    assert {n for n, p in own.named_parameters() if p.requires_grad} >= {
        "frequencies",
        "log_lengthscale",
    }
    own(x).square().sum().backward()
    assert (
        torch.isfinite(own.frequencies.grad).all()
        and torch.isfinite(own.log_lengthscale.grad).all()
    )
    assert "frequencies" in dict(shared.named_buffers())


def test_box_matern_features_scale_the_box_to_the_unit_cube():
    box = Box([0.0, -10.0], [2.0, 10.0])
    kernel = BoxMaternKernel(box, nu=1.5).double()
    kernel.lengthscale = torch.tensor([[0.3, 0.5]])
    x = box.random(7, generator=_gen())
    exact = _dense(kernel, x)
    with torch.no_grad():
        grams = torch.stack([feature_map(kernel, 500, seed).gram(x) for seed in range(64)])
    assert float((grams.mean(0) - exact).abs().max()) < 0.02
    with pytest.raises(InputDataError, match="outside the box"):
        feature_map(kernel, 8)(x + 100)


def test_dtype_follows_the_kernel_and_errors_are_clear():
    kernel = RBFKernel(ard_num_dims=3)
    phi = feature_map(kernel, 8)(torch.rand(4, 3))
    assert phi.dtype == torch.float32 and phi.shape == (4, 16)
    with pytest.raises(ConfigurationError, match="input_dim"):
        feature_map(RBFKernel(), 8)
    assert feature_map(RBFKernel(), 8, input_dim=1)(torch.rand(4, 1)).shape == (4, 16)
    with pytest.raises(ConfigurationError, match="ard_num_dims = 3"):
        feature_map(kernel, 8, input_dim=2)
    with pytest.raises(ConfigurationError, match="num_frequencies"):
        RandomFourierFeatureMap(kernel, 0)
    with pytest.raises(ConfigurationError, match="RBFKernel, a MaternKernel"):
        RandomFourierFeatureMap(ScaleKernel(kernel), 4)
    with pytest.raises(InputDataError, match=r"R\^3"):
        feature_map(kernel, 8)(torch.rand(4, 2))
