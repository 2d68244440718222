"""Feature maps reproduce kernels: exactly (harmonic, truncated) or in expectation (random)."""

import math

import pytest
import torch
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import (
    ArcCosineKernel,
    GeometricMaternKernel,
    HomogeneousLiftKernel,
)
from manibo.models.gpnet import (
    BayesianLinearNetwork,
    HarmonicFeatures,
    MLPFeatures,
    RandomFourierFeatures,
    RandomPhaseFeatures,
)
from manibo.spaces import Box, SpecialOrthogonal, Sphere


def _gram(phi):
    return phi @ phi.transpose(-1, -2)


@pytest.mark.parametrize("nu", [math.inf, 1.5])
def test_random_fourier_features_approach_the_kernel(nu, device="cpu"):
    base = RBFKernel(ard_num_dims=2) if math.isinf(nu) else MaternKernel(nu=nu, ard_num_dims=2)
    kernel = ScaleKernel(base).double()
    kernel.base_kernel.lengthscale = torch.tensor([[0.7, 1.3]])
    kernel.outputscale = 2.0
    x = torch.rand(15, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    features = RandomFourierFeatures.from_kernel(kernel, 40_000, torch.Generator().manual_seed(1))
    features = features.to(device)
    phi = features(x.to(device))
    assert phi.shape == (15, 80_000) and features.num_features == 80_000
    with torch.no_grad():
        K = kernel(x).to_dense()
    assert (_gram(phi).cpu() - K).abs().max() < 0.05  # Monte Carlo error ~ 1/sqrt(40000)
    assert torch.allclose(features.lengthscale.detach().cpu(), torch.tensor([0.7, 1.3]).double())
    assert all(p.requires_grad for p in features.parameters())


def test_harmonic_features_reproduce_the_truncated_kernel(device="cpu"):
    space = Sphere(2)
    kernel = ScaleKernel(GeometricMaternKernel(space, nu=2.5, num_levels=9)).double()
    kernel.base_kernel.lengthscale = 0.4
    kernel.outputscale = 0.8
    x = space.random(20, generator=torch.Generator().manual_seed(0))
    features = HarmonicFeatures(kernel, max_features=1000).to(device)
    assert features.num_features == 81
    with torch.no_grad():  # the kernel evaluates the addition theorem; the features, harmonics
        K = kernel(x).to_dense()
        assert torch.allclose(_gram(features(x.to(device))).cpu(), K, atol=1e-10)
    assert list(features.parameters()) == [] or not any(
        p.requires_grad for p in features.parameters()
    )
    kernel.outputscale = 5.0  # the features hold their own copy of the hyperparameters
    with torch.no_grad():
        assert torch.allclose(_gram(features(x.to(device))).cpu(), K, atol=1e-10)


def test_harmonic_feature_cap_keeps_whole_levels():
    space = Sphere(2)
    kernel = GeometricMaternKernel(space, nu=2.5, num_levels=20).double()
    assert HarmonicFeatures(kernel, max_features=30).num_features == 25  # levels 0..4
    zonal = HarmonicFeatures(ArcCosineKernel(space, num_levels=12), max_features=10)
    assert zonal.num_features == 9


def test_harmonic_features_of_a_zonal_kernel_lifted_to_euclidean_inputs():
    kernel = HomogeneousLiftKernel(ArcCosineKernel(Sphere(2), num_levels=30), input_dim=2).double()
    x = torch.randn(10, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    features = HarmonicFeatures(kernel, max_features=2000)
    with torch.no_grad():
        K = kernel(x).to_dense()
        assert (_gram(features(x)) - K).abs().max() < 5e-3 * K.abs().max()  # truncation only


@pytest.mark.parametrize("space", [Sphere(2), SpecialOrthogonal(3)], ids=repr)
def test_random_phase_features_approach_the_kernel(space, device="cpu"):
    kernel = ScaleKernel(GeometricMaternKernel(space, nu=1.5, num_levels=6)).double()
    kernel.base_kernel.lengthscale = 0.8
    kernel.outputscale = 1.5
    gen = torch.Generator().manual_seed(0)
    x = space.random(8, generator=gen)
    features = RandomPhaseFeatures(kernel, num_phases=6000, generator=gen).to(device)
    with torch.no_grad():
        K = kernel(x).to_dense()
        approx = _gram(features(x.to(device))).cpu()
    assert features.num_features == 6 * 6000
    assert (approx - K).abs().max() < 0.08 * K.diagonal().max()


def test_random_phases_train_on_the_sphere_and_stay_on_it():
    space = Sphere(2)
    kernel = GeometricMaternKernel(space, nu=2.5, num_levels=5).double()
    features = RandomPhaseFeatures(kernel, num_phases=7, generator=torch.Generator().manual_seed(0))
    x = space.random(4, generator=torch.Generator().manual_seed(1)).requires_grad_(True)
    batched = features(x.detach().reshape(2, 2, 3))
    assert torch.allclose(batched.reshape(4, -1), features(x.detach()), atol=1e-12)
    features(x).square().sum().backward()
    grad = features.raw_phases.grad
    assert grad is not None and torch.isfinite(grad).all() and grad.abs().sum() > 0
    assert torch.isfinite(x.grad).all()
    with torch.no_grad():
        features.raw_phases.add_(0.3)
    space.check(features.phases)


def test_mlp_features_shapes_and_input_scaling():
    box = Box([0.0, -10.0], [6.0, 10.0])
    features = MLPFeatures(box, widths=(16, 8), variance=2.0, generator=torch.Generator())
    x = box.random(5, generator=torch.Generator().manual_seed(0))
    phi = features(x)
    assert phi.shape == (5, 8) and features.num_features == 8
    assert phi.abs().max() <= math.sqrt(2.0 / 8) + 1e-12
    with pytest.raises(InputDataError, match="outside the box"):
        features(x + 100)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_network_starts_at_the_feature_kernel_and_marginals_match_the_joint(dtype, device="cpu"):
    space = Sphere(2)
    kernel = GeometricMaternKernel(space, nu=2.5, num_levels=4).to(dtype)
    network = BayesianLinearNetwork(HarmonicFeatures(kernel), num_latents=3).to(device)
    x = space.random(6, generator=torch.Generator().manual_seed(0), dtype=dtype).to(device)
    mean, root = network(x)
    assert mean.shape == (3, 6) and root.shape == (3, 6, 16) and mean.dtype == dtype
    phi = network.features(x)
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    assert torch.allclose(root @ root.mT, _gram(phi).expand(3, 6, 6), atol=tol)
    assert mean.abs().max() == 0
    with torch.no_grad():
        network.raw_scale_tril.normal_()
        network.weight_mean.normal_()
    mean, root = network(x)
    m, v = network.marginals(x)
    assert torch.allclose(v, (root @ root.mT).diagonal(dim1=-2, dim2=-1), atol=tol)
    assert (network.scale_tril().diagonal(dim1=-2, dim2=-1) > 0).all()
    xb = x.reshape(2, 3, 3)
    mb, rb = network(xb)
    assert mb.shape == (2, 3, 3) and rb.shape == (2, 3, 3, 16)
    assert torch.allclose(mb[1], mean[:, 3:], atol=tol)


def test_feature_configuration_errors():
    space = Sphere(2)
    with pytest.raises(ConfigurationError, match="RBFKernel or MaternKernel"):
        RandomFourierFeatures.from_kernel(GeometricMaternKernel(space), 10)
    with pytest.raises(ConfigurationError, match="GeometricMaternKernel"):
        HarmonicFeatures(RBFKernel())
    with pytest.raises(ConfigurationError, match="GeometricMaternKernel or a ZonalKernel"):
        RandomPhaseFeatures(RBFKernel(), 4)
    with pytest.raises(ConfigurationError, match="num_phases"):
        RandomPhaseFeatures(GeometricMaternKernel(space), 0)
    with pytest.raises(ConfigurationError, match="num_latents"):
        BayesianLinearNetwork(HarmonicFeatures(GeometricMaternKernel(space, num_levels=2)), 0)
    with pytest.raises(ConfigurationError, match="widths"):
        MLPFeatures(space, widths=())
    features = RandomFourierFeatures(torch.randn(3, 4, dtype=torch.float64), torch.ones(3))
    with pytest.raises(InputDataError, match=r"R\^3"):
        features(torch.zeros(5, 2, dtype=torch.float64))
