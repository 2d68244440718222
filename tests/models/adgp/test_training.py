"""Two-stage training: the network's MSE falls, initialisation keeps the mean equal to the network
forward pass (1e-8, float64) and sets the noise to the training MSE, the ELBO rises in stage 2,
frozen weights stay put, bad data is refused."""

import copy

import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.adgp import ActivatedDeepGP, fit_elbo, fit_network, initialize_from_network


def _data(n=30, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 2, generator=gen, dtype=torch.float64)
    y = torch.sin(2 * x[:, :1]) * torch.cos(x[:, 1:])
    return x, y + 0.05 * torch.randn(n, 1, generator=gen, dtype=torch.float64)


_TRAINED = {}


def _trained_network(activation="softplus"):
    """A network after stage 1 (trained once per activation; each caller gets a copy)."""
    if activation not in _TRAINED:
        x, y = _data()
        model = ActivatedDeepGP(2, num_units=12, activation=activation, seed=1)
        losses = fit_network(model, x, y, epochs=100, lr=2e-2)
        _TRAINED[activation] = (model, x, y, losses)
    model, x, y, losses = _TRAINED[activation]
    return copy.deepcopy(model), x, y, losses


@pytest.mark.parametrize("activation", ["softplus", "relu"])
def test_mean_equals_the_network_after_initialisation(activation):
    """Every layer's GP-conditional mean, K_fu K_uu^-1 m_u with m_u = L_uu L_uu^T V (the whitened
    init), equals the trained network's layer, and so the composed means equal its forward pass."""
    model, x, y, losses = _trained_network(activation)
    assert losses[-1] < 0.5 * losses[0]
    with torch.no_grad():
        forward = model.network(x)
    initialize_from_network(model, x, y)
    with torch.no_grad():
        h = x
        for layer in model.layers:
            state = layer.state()
            m_u = state.chol @ (state.chol.T @ layer.readout)
            kuu = state.chol @ state.chol.T
            h = layer.features(h) @ torch.linalg.solve(kuu, m_u)
        assert torch.allclose(h, forward, atol=1e-8, rtol=0)
        assert abs(float(model.noise) - losses[-1]) < 1e-12
        assert all(float(layer.variance) > 0 for layer in model.layers)


def test_elbo_increases_in_stage_two():
    model, x, y, _ = _trained_network()
    initialize_from_network(model, x, y)
    weights = [layer.weights.detach().clone() for layer in model.layers]

    def elbo():
        with torch.no_grad():
            return float(model.elbo(x, y, 256, torch.Generator().manual_seed(7)))

    before = elbo()
    history = fit_elbo(model, x, y, epochs=60, lr=2e-2, num_samples=2)
    after = elbo()
    assert after > before + 0.1
    assert sum(history[-10:]) / 10 > sum(history[:10]) / 10
    for layer, w in zip(model.layers, weights, strict=True):
        assert torch.equal(layer.weights, w) and layer.weights.requires_grad  # frozen, restored


def test_stage_two_can_train_the_weights_with_minibatches():
    model, x, y, _ = _trained_network()
    initialize_from_network(model, x, y)
    weights = model.layers[0].weights.detach().clone()
    fit_elbo(model, x, y, epochs=3, batch_size=8, train_weights=True)
    assert not torch.equal(model.layers[0].weights, weights)


def test_bad_data_is_refused():
    model = ActivatedDeepGP(2, num_units=4)
    x, y = _data(5)
    with pytest.raises(InputDataError, match=r"`y` shape \(n, 1\)"):
        fit_network(model, x, y[:3])
    with pytest.raises(InputDataError, match="dtype"):
        fit_network(model, x, y.float())
    with pytest.raises(InputDataError, match="NaN"):
        fit_elbo(model, x, torch.full_like(y, float("nan")))
    with pytest.raises(ConfigurationError, match="`epochs`"):
        fit_network(model, x, y, epochs=0)
    with pytest.raises(ConfigurationError, match="`variance_ratio`"):
        initialize_from_network(model, x, y, variance_ratio=-1)
