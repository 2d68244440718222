"""Activations: Funk–Hecke coefficients reconstruct the activation, parity zeros are exact, the
inducing function is the zonal form (and plain ReLU(w.x) for the homogeneous ReLU), bad options."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.harmonics import addition_kernel
from manibo.models.adgp import ReLU, Softplus
from manibo.models.adgp.activations import make_activation


@pytest.mark.parametrize("beta", [1.0, 3.0])
@pytest.mark.parametrize("d", [3, 5, 9])
def test_softplus_series_reconstructs_the_activation(d, beta):
    """sum_n sigma_n G_n(t) = log(1 + e^(beta t))/beta on [-1, 1] (analytic: fast convergence).

    The floor (~1e-11) is the quadrature's 1e-17 absolute error times G_n(1) = N(d, n) ~ 1e6.
    """
    activation = Softplus(beta)
    sigma = activation.coefficients(d, 30, torch.float64, None)
    t = torch.linspace(-1, 1, 101, dtype=torch.float64)
    series = (addition_kernel(29, d, t) * sigma).sum(-1)
    exact = torch.log1p(torch.exp(beta * t)) / beta
    assert torch.allclose(series, exact, atol=1e-9, rtol=0)


def test_parity_zeros_are_exact():
    for activation in (ReLU(), Softplus(2.0)):
        sigma = activation.coefficients(6, 12, torch.float64, None)
        assert all(float(sigma[n]) == 0.0 for n in (3, 5, 7, 9, 11))
        assert all(float(sigma[n]) != 0.0 for n in (0, 1, 2, 4, 6, 8, 10))


def test_softplus_first_coefficients_match_reference_values():
    """Reference notes B.3 (d = 5, beta = 1): 0.718, 0.100, 7.0e-3, -3.3e-5, 3.3e-7, -4.1e-9."""
    sigma = Softplus(1.0).coefficients(5, 9, torch.float64, None)
    reference = {0: 0.718, 1: 0.100, 2: 7.0e-3, 4: -3.3e-5, 6: 3.3e-7, 8: -4.1e-9}
    for n, value in reference.items():
        assert math.isclose(float(sigma[n]), value, rel_tol=0.03), n


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_inducing_functions(dtype, device="cpu"):
    gen = torch.Generator().manual_seed(0)
    lifted = torch.randn(7, 4, generator=gen, dtype=torch.float64).to(device, dtype)
    weights = torch.randn(5, 4, generator=gen, dtype=torch.float64).to(device, dtype)
    radius = lifted.norm(dim=-1, keepdim=True)
    norms = weights.norm(dim=-1)
    cosine = (lifted / radius) @ (weights / norms[:, None]).T
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    # ReLU is positively homogeneous: the zonal form equals the plain network unit
    relu = ReLU().inducing_function(lifted, weights)
    assert torch.allclose(relu, torch.relu(lifted @ weights.T), atol=tol)
    assert torch.allclose(relu, radius * norms * torch.relu(cosine), atol=tol)
    # softplus is not: the zonal form differs from softplus(w.x)
    softplus = Softplus(3.0).inducing_function(lifted, weights)
    expected = radius * norms * torch.log1p(torch.exp(3 * cosine)) / 3
    assert torch.allclose(softplus, expected, atol=tol)
    assert softplus.dtype == dtype and softplus.device.type == torch.device(device).type


def test_errors():
    with pytest.raises(ConfigurationError, match="`beta` of Softplus"):
        Softplus(0.0)
    with pytest.raises(ConfigurationError, match="'softplus', 'relu'"):
        make_activation("tanh")
    assert isinstance(make_activation("relu"), ReLU)
