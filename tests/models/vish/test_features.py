"""VISH features: harmonics on the sphere and of lifted inputs against spherical_harmonics and the
lift kernel; as a feature map, their Gram matrix is the zonal kernel of the level set (Gegenbauer
polynomials from scipy); the Mercer sum approaches the kernel; float32 agreement; input errors."""

import pytest
import scipy.special as sp
import torch
from gpytorch.kernels import ScaleKernel

from manibo.exceptions import InputDataError
from manibo.harmonics import spherical_harmonics
from manibo.harmonics.gegenbauer import harmonic_dimension
from manibo.kernels import ChordalMaternKernel, FeatureMap, HomogeneousLiftKernel
from manibo.models.vish import VISHFeatures, VISHPrior
from manibo.spaces import Sphere


def _lifted_prior(num_features):
    kernel = HomogeneousLiftKernel(ChordalMaternKernel(Sphere(3), nu=2.5), 3, bias=0.8)
    kernel.lengthscale = torch.tensor([0.9, 1.3, 2.0])
    prior = VISHPrior(ScaleKernel(kernel), num_features, offset=torch.tensor([0.1, -0.2, 0.3]))
    prior.covar_module.outputscale = 1.7
    return prior


def test_sphere_features_are_the_harmonics():
    X = Sphere(3).random(50, generator=torch.Generator().manual_seed(0))
    features = VISHFeatures(4, (0, 1, 2, 3))
    assert features.num_features == 30 and features.input_dim == 4
    assert torch.allclose(features.harmonics(X), spherical_harmonics(X, 4), atol=1e-12)


def _level_set_kernel(d, levels, r1, z1, r2, z2):
    """r r' sum_n N(d, n) P_n(z . z'), P_n the Gegenbauer polynomial normalised to P_n(1) = 1."""
    t = (z1 @ z2.T).clamp(-1, 1).numpy()
    alpha = (d - 2) / 2
    total = sum(
        harmonic_dimension(d, n)
        * sp.eval_gegenbauer(n, alpha, t)
        / sp.eval_gegenbauer(n, alpha, 1.0)
        for n in levels
    )
    return r1[:, None] * r2[None, :] * torch.as_tensor(total)


@torch.no_grad()
@pytest.mark.parametrize("lifted", [False, True])
def test_feature_map_gram_is_the_zonal_kernel_of_the_level_set(lifted):
    levels = (0, 1, 3, 4)  # a level set with a gap
    if lifted:
        features = _lifted_prior(60).features
        features = VISHFeatures(4, levels, features.lift, features.offset)
        X = torch.randn(9, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
        Y = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    else:
        features = VISHFeatures(4, levels)
        X = Sphere(3).random(9, generator=torch.Generator().manual_seed(3))
        Y = Sphere(3).random(5, generator=torch.Generator().manual_seed(4))
    assert isinstance(features, FeatureMap) and features.exact
    (r1, z1), (r2, z2) = features.radius_direction(X), features.radius_direction(Y)
    expected = _level_set_kernel(4, levels, r1, z1, r2, z2)
    assert torch.allclose(features.gram(X, Y), expected, rtol=0, atol=1e-10 * expected.abs().max())
    assert features(X).shape == (9, features.num_features) == (9, 1 + 4 + 16 + 25)
    assert features(X.float()).dtype == torch.float32


@torch.no_grad()
def test_lifted_features_and_mercer_sum():
    prior = _lifted_prior(30)  # levels 0..3 of S^3
    X = torch.randn(40, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    lift = prior.covar_module.base_kernel
    r, z = lift.lift(X - prior.features.offset)
    expected = r[:, None] * spherical_harmonics(z, 4)
    assert torch.allclose(prior.features.harmonics(X), expected, atol=1e-12)
    # Phi Lambda Phi^T + residual -> K: exact on the diagonal, bounded off it
    Phi = prior.features.harmonics(X)
    K = prior.covar_module(X - prior.features.offset).to_dense()
    Q = Phi @ torch.diag(prior.scale() ** 2) @ Phi.T
    residual = prior.residual_variance() * r**2
    assert torch.allclose(torch.diagonal(K - Q), residual, rtol=1e-10)
    bound = residual.sqrt()[:, None] * residual.sqrt()[None, :]
    assert ((K - Q).abs() <= bound + 1e-12).all()
    assert torch.allclose(K - Q, prior.residual_covariance(X, X), atol=1e-12)


@torch.no_grad()
def test_float32_agrees_with_float64():
    prior = _lifted_prior(30)
    X = torch.randn(200, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    z64 = prior.features.zonal(X)
    z32 = prior.features.zonal(X.float())
    assert z32.dtype == torch.float32
    scale = z64.abs().max()
    assert ((z32.double() - z64).abs().max() / scale) < 1e-5  # stated float32 tolerance
    assert torch.allclose(z64 @ prior.features.transform, prior.features.harmonics(X), atol=1e-12)


def test_input_errors():
    sphere = VISHFeatures(3, (0, 1))
    with pytest.raises(InputDataError, match="norms must be 1"):
        sphere.check_inputs("X", torch.ones(4, 3, dtype=torch.float64))
    with pytest.raises(InputDataError, match="shape"):
        sphere.check_inputs("X", torch.ones(3, dtype=torch.float64))
    lifted = _lifted_prior(10).features
    with pytest.raises(InputDataError, match=r"\(\*batch, 3\)"):
        lifted.check_inputs("X", torch.ones(4, 5, dtype=torch.float64))
    with pytest.raises(InputDataError, match="NaN"):
        lifted.check_inputs("X", torch.full((4, 3), float("nan"), dtype=torch.float64))
    with pytest.raises(InputDataError, match="torch.Tensor"):
        lifted.check_inputs("X", [[0.0, 1.0, 2.0]])
