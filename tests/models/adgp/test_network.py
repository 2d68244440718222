"""The stacked deep GP: the network forward pass is the composition of the layer means, samples
follow the layers, a one-layer model's predictive density is the closed-form Gaussian, errors."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.adgp import ActivatedDeepGP


def _model(dtype=torch.float64, device="cpu", **kwargs):
    options = {"num_units": 8, "seed": 0, "dtype": dtype, "device": device}
    return ActivatedDeepGP(3, **{**options, **kwargs})


def _data(n, dtype=torch.float64, device="cpu", seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=gen, dtype=torch.float64)
    return x.to(device, dtype), torch.sin(x.sum(-1, keepdim=True)).to(device, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_network_is_the_composition_of_layer_means(dtype, device="cpu"):
    model = _model(dtype, device, num_layers=3, hidden_dim=2, output_dim=2)
    x, _ = _data(6, dtype, device)
    with torch.no_grad():
        h = x
        for layer in model.layers:
            h, _ = layer.marginal(h, layer.state())
        out = model.network(x.reshape(2, 3, 3))
    assert [layer.output_dim for layer in model.layers] == [2, 2, 2]
    assert out.shape == (2, 3, 2) and out.dtype == dtype
    assert torch.allclose(out.reshape(6, 2), h, atol=1e-12 if dtype == torch.float64 else 1e-5)


def test_samples_with_zero_normals_follow_the_layers():
    """With the residual normals at 0 and the shared ones at 0, a sample is the network."""
    model = _model(num_layers=2)
    x, _ = _data(5)
    point = torch.zeros(1, 5, model.num_point_normals())
    shared = torch.zeros(1, model.num_shared_normals())
    with torch.no_grad():
        sample = model.sample(x, point.double(), shared.double())
        assert torch.allclose(sample[0], model.network(x), atol=1e-12)
    assert model.num_point_normals(observation_noise=True) == 3 + 1 + 1
    assert model.num_shared_normals() == (3 + 1) * 8


def test_one_layer_predictive_density_is_gaussian():
    model = _model(num_layers=1)
    model.set_noise(0.05)
    x, y = _data(7)
    with torch.no_grad():
        lpd = model.log_predictive_density(x, y, num_samples=5)
        mean, variance = model.layers[0].marginal(x, model.layers[0].state())
        total = variance + 0.05
        expected = -0.5 * (math.log(2 * math.pi) + total.log() + (y - mean) ** 2 / total)
    assert torch.allclose(lpd, expected.squeeze(-1), atol=1e-12)


def test_elbo_is_a_lower_bound_on_the_log_marginal_for_one_layer():
    """One layer = an SVGP: its ELBO is below the exact GP log marginal likelihood of its prior."""
    model = _model(num_layers=1, num_units=12)
    model.set_noise(0.1)
    x, y = _data(10)
    layer = model.layers[0]
    with torch.no_grad():
        elbo = float(model.elbo(x, y)) * 10
        lifted = layer.lift(x)
        r = lifted.norm(dim=-1)
        z = lifted / r[:, None]
        kappa = layer.kernel(z, z).to_dense()
        K = layer.variance * r[:, None] * r[None, :] * kappa + 0.1 * torch.eye(10).double()
        exact = torch.distributions.MultivariateNormal(torch.zeros(10).double(), K).log_prob(
            y[:, 0]
        )
    assert elbo < float(exact)


def test_predictive_objective_of_one_layer_is_the_closed_form_predictive_minus_kl():
    """One layer: the predictive objective minus the ELBO is the mean over points of
    log N(y; mu, v + s2) - E_f log N(y; f, s2), computed here from the marginals (KL cancels)."""
    model = _model(num_layers=1, num_units=12)
    model.set_noise(0.1)
    x, y = _data(10)
    with torch.no_grad():
        gap = model.predictive_log_likelihood(x, y) - model.elbo(x, y)
        mean, variance = model.layers[0].marginal(x, model.layers[0].state())
        total = variance + 0.1
        predictive = -0.5 * (math.log(2 * math.pi) + total.log() + (y - mean) ** 2 / total)
        expected = -0.5 * (
            math.log(2 * math.pi) + math.log(0.1) + ((y - mean) ** 2 + variance) / 0.1
        )
    assert float(gap) == pytest.approx(float((predictive - expected).mean()), abs=1e-12)
    assert float(gap) > 0  # Jensen: log E p >= E log p


def test_predictive_objective_is_above_the_elbo_for_a_deep_gp():
    """With the same hidden samples, log (1/S) sum_s p_s >= (1/S) sum_s E log p_s per point."""
    model = _model(num_layers=3, hidden_dim=2)
    model.set_noise(0.05)
    x, y = _data(9)
    with torch.no_grad():
        for layer in model.layers:  # room for the hidden samples to spread
            layer.raw_scale_diag.add_(2.0)
        pll = model.predictive_log_likelihood(x, y, 8, torch.Generator().manual_seed(3))
        elbo = model.elbo(x, y, 8, torch.Generator().manual_seed(3))
    assert float(pll) > float(elbo)


def test_errors():
    model = _model()
    with pytest.raises(InputDataError, match=r"shape \(\*batch, n, 3\)"):
        model.check_inputs(torch.zeros(4, 2, dtype=torch.float64))
    with pytest.raises(InputDataError, match="NaN"):
        model.check_inputs(torch.full((2, 3), float("nan"), dtype=torch.float64))
    with pytest.raises(InputDataError, match=r"model is torch.float64 .* `x.to\(torch.float64\)`"):
        model.check_inputs(torch.zeros(2, 3, dtype=torch.float32))
    with pytest.raises(ConfigurationError, match="`num_layers`"):
        ActivatedDeepGP(3, num_layers=0)
    with pytest.raises(ConfigurationError, match="`noise` must be > 0"):
        ActivatedDeepGP(3, noise=0.0)
