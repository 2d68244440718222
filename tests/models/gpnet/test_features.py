"""GPNet's tanh features and the Gaussian-output network on any feature map."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import GeometricMaternKernel, feature_map
from manibo.models.gpnet import BayesianLinearNetwork, MLPFeatures
from manibo.spaces import Box, Sphere


def _gram(phi):
    return phi @ phi.transpose(-1, -2)


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
    network = BayesianLinearNetwork(feature_map(kernel, detach=True), num_latents=3).to(device)
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
    features = feature_map(GeometricMaternKernel(space, num_levels=2), detach=True)
    with pytest.raises(ConfigurationError, match="num_latents"):
        BayesianLinearNetwork(features, 0)
    with pytest.raises(ConfigurationError, match="widths"):
        MLPFeatures(space, widths=())
