"""The stage-2 start: the mean stays the network (1e-8), the closed-form q(v), kernel variance and
noise of a one-layer model are a stationary point of the (exact) ELBO and match the dense Titsias
optimum, the linearised bound of a deep model agrees with the sampled ELBO, the sensitivities
match per-point Jacobians, and the hidden variances follow their rule."""

import copy

import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.models.adgp import ActivatedDeepGP, fit_network, initialize_from_network
from manibo.models.adgp.initialization import layer_statistics


def _data(n=30, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 2, generator=gen, dtype=dtype)
    y = torch.sin(2 * x[:, :1]) * torch.cos(x[:, 1:])
    return x, y + 0.05 * torch.randn(n, 1, generator=gen, dtype=dtype)


_TRAINED = {}


def _trained(num_layers=3, activation="softplus", output_dim=1, device="cpu"):
    """A network after stage 1 (trained once per configuration on the CPU; each caller gets a copy
    on ``device``)."""
    key = (num_layers, activation, output_dim)
    if key not in _TRAINED:
        x, y = _data()
        y = y.repeat(1, output_dim) * torch.arange(1, output_dim + 1, dtype=y.dtype)
        model = ActivatedDeepGP(
            2, output_dim, num_layers=num_layers, num_units=12, activation=activation, seed=1
        )
        losses = fit_network(model, x, y, epochs=100, lr=2e-2).loss
        _TRAINED[key] = (model, x, y, losses)
    model, x, y, losses = _TRAINED[key]
    return copy.deepcopy(model).to(device), x.to(device), y.to(device), losses


@pytest.mark.parametrize("activation", ["softplus", "relu"])
def test_mean_equals_the_network_after_initialisation(activation, device="cpu"):
    """Every layer's GP-conditional mean, K_fu K_uu^-1 m_u with m_u = L_uu L_uu^T V (the whitened
    parametrisation), equals the trained network's layer, so the composed means equal its
    forward pass; the variances the start sets are positive."""
    model, x, y, losses = _trained(activation=activation, device=device)
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
        assert float(model.noise) >= losses[-1] * (1 - 1e-9)
        assert all(float(layer.variance) > 0 for layer in model.layers)


def _elbo_gradients(model, x, y):
    model.zero_grad()
    elbo = model.elbo(x, y, num_samples=1)
    elbo.backward()
    layer = model.layers[0]
    return elbo.detach(), [
        layer.scale_offdiag.grad,
        layer.raw_scale_diag.grad,
        layer.raw_variance.grad,
    ]


@pytest.mark.parametrize("output_dim", [1, 2])
def test_one_layer_start_is_a_stationary_point_of_the_exact_elbo(output_dim, device="cpu"):
    """With one layer the ELBO has no sampled hidden layers, so the linearised bound is exact: the
    returned bound equals the ELBO, and the ELBO's gradients in R_j, the kernel variance and the
    noise vanish at the start (an independent check of the closed form, through autograd)."""
    model, x, y, _ = _trained(num_layers=1, output_dim=output_dim, device=device)
    bound = initialize_from_network(model, x, y).bound
    elbo, grads = _elbo_gradients(model, x, y)
    assert abs(float(elbo) - bound) < 1e-9 * abs(bound)
    for grad in [*grads, model.raw_noise.grad]:
        assert float(grad.abs().max()) < 1e-7
    # the start is a maximum: moving any of these parameters lowers the ELBO
    for parameter in (model.raw_noise, model.layers[0].raw_variance):
        for step in (-1e-3, 1e-3):
            moved = copy.deepcopy(model)
            dict(moved.named_parameters())[_name(model, parameter)].data.add_(step)
            with torch.no_grad():
                assert float(moved.elbo(x, y, num_samples=1)) < float(elbo)


def _name(model, parameter):
    return next(name for name, p in model.named_parameters() if p is parameter)


def test_one_layer_covariance_is_the_titsias_optimum():
    """Unwhitened, the start's q(u) covariance is Titsias's Kuu (Kuu + Kuf Kfu / s2)^-1 Kuu."""
    model, x, y, _ = _trained(num_layers=1)
    initialize_from_network(model, x, y)
    layer = model.layers[0]
    with torch.no_grad():
        state = layer.state()
        kuu = state.chol @ state.chol.T
        kuf = layer.features(x).T
        titsias = kuu @ torch.linalg.solve(kuu + kuf @ kuf.T / model.noise, kuu)
        start = state.chol @ state.scale_tril[0] @ state.scale_tril[0].T @ state.chol.T
    assert torch.allclose(start, titsias, rtol=1e-6, atol=1e-9 * float(kuu.diagonal().max()))


@pytest.mark.parametrize("likelihood", ["gaussian", "categorical"])
def test_deep_bound_agrees_with_the_sampled_elbo(likelihood, request):
    """With small hidden variances the linearisation holds: the bound that the start maximises
    and the sampled ELBO (4096 samples) agree to 0.5%. For the softmax likelihood this needs the
    last layer's exact treatment: its quadratic expansion was off by 3%."""
    if likelihood == "gaussian":
        model, x, y, _ = _trained()
    else:
        model, x, y, _ = request.getfixturevalue("trained_classifier")
    bound = initialize_from_network(model, x, y, hidden_scale=0.01).bound
    with torch.no_grad():
        elbo = float(model.elbo(x, y, 4096, torch.Generator().manual_seed(3)))
    assert abs(elbo - bound) < 5e-3 * abs(bound)


def test_sensitivities_match_per_point_jacobians():
    """w_ij = sum_o (d f_o(x_i) / d h_j(x_i))^2 from one backward pass per output equals the
    squared per-point Jacobians of torch.func."""
    model, x, y, _ = _trained(output_dim=2)
    statistics = layer_statistics(model, x)
    with torch.no_grad():
        hidden = model.layers[0].network(x)

    def rest(h):
        for layer in model.layers[1:]:
            h = layer.network(h)
        return h

    jacobians = torch.func.vmap(torch.func.jacrev(rest))(hidden)  # (n, O, P)
    assert torch.allclose(statistics[0].sensitivity, jacobians.pow(2).sum(1), rtol=1e-10)
    assert torch.equal(statistics[-1].sensitivity, torch.ones_like(statistics[-1].sensitivity))


@pytest.mark.parametrize("hidden_scale", [0.01, 1.0])
def test_hidden_variances_carry_the_training_error(hidden_scale):
    """s_l * mean_i sum_j w_ij k(x_i, x_i) / s_l = hidden_scale * training MSE (the rule)."""
    model, x, y, _ = _trained()
    initialize_from_network(model, x, y, hidden_scale=hidden_scale)
    with torch.no_grad():
        mse = float((model.network(x) - y).pow(2).mean())
        h = x
        for layer, stats in zip(model.layers[:-1], layer_statistics(model, x), strict=False):
            carried = (stats.sensitivity * layer.prior_variance(h).unsqueeze(-1)).sum(-1).mean()
            assert abs(float(carried) / (hidden_scale * mse) - 1) < 1e-9
            h = layer.network(h)


def test_float32_start_keeps_the_mean():
    model, x, y, _ = _trained()
    model = model.float()
    x, y = x.float(), y.float()
    with torch.no_grad():
        forward = model.network(x)
    initialize_from_network(model, x, y)
    with torch.no_grad():
        assert torch.allclose(model.network(x), forward, atol=1e-5)
        _, variance = model.predict(x, 4, torch.Generator().manual_seed(0))
    assert float(variance.min()) >= 0 and torch.isfinite(variance).all()


def test_bad_arguments_are_refused():
    model, x, y, _ = _trained()
    for bad in (0, -1.0, float("nan"), "0.1", [], [0.1, True], None):
        with pytest.raises(ConfigurationError, match="`hidden_scale`"):
            initialize_from_network(model, x, y, hidden_scale=bad)
    with pytest.raises(ConfigurationError, match="positive diagonal"):
        model.layers[0].set_scale_tril(-torch.eye(12).expand(2, 12, 12))
