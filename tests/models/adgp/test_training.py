"""Two-stage training: the network's MSE falls, early stopping keeps the best validation weights
(those of a plain run of that many epochs), weight decay is decoupled, the ELBO rises in stage 2,
frozen parameters stay put (and the mean with them), the validation stopping rule keeps the best
check, bad input is refused. (The stage-2 start is tested in test_initialization.py.)"""

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
        losses = fit_network(model, x, y, epochs=100, lr=2e-2).loss
        _TRAINED[activation] = (model, x, y, losses)
    model, x, y, losses = _TRAINED[activation]
    return copy.deepcopy(model), x, y, losses


def test_network_early_stopping_keeps_the_best_validation_weights():
    """Checks at the start and every `check_every` epochs; training stops `patience` checks after
    the best one, and the weights are those of the best check: identical to a run without
    validation data stopped at that epoch (the checks do not touch the training path)."""
    x, y = _data(12, seed=3)
    y = y + 0.3 * torch.randn(y.shape, generator=torch.Generator().manual_seed(4), dtype=y.dtype)
    xv, yv = _data(20, seed=5)
    model = ActivatedDeepGP(2, num_units=16, seed=2)
    plain = copy.deepcopy(model)
    trace = fit_network(
        model, x, y, epochs=2000, lr=3e-2, validation=(xv, yv), check_every=5, patience=4
    )
    epochs = [epoch for epoch, _ in trace.validation]
    assert epochs == list(range(0, epochs[-1] + 1, 5))
    best_epoch, best = min(trace.validation, key=lambda check: check[1])
    assert trace.best_epoch == best_epoch > 0
    assert epochs[-1] == best_epoch + 4 * 5 == len(trace.loss) < 2000  # stopped early
    assert trace.validation[-1][1] > best  # the last weights were worse: restoring mattered
    with torch.no_grad():
        assert abs(float((model.network(xv) - yv).pow(2).mean()) - best) < 1e-12
    again = fit_network(plain, x, y, epochs=best_epoch, lr=3e-2)
    assert again.best_epoch is None and again.validation == []
    assert again.loss == trace.loss[:best_epoch]
    for mine, theirs in zip(model.parameters(), plain.parameters(), strict=True):
        assert torch.equal(mine, theirs)


def test_network_weight_decay_is_decoupled():
    """One full-batch step with decay `wd` lands `lr * wd * theta_0` below the step without it
    (AdamW: the decay does not pass through Adam's normalisation); the read-outs and weights of
    every layer decay, nothing else moves."""
    x, y = _data()
    lr, wd = 1e-2, 0.5
    model = ActivatedDeepGP(2, num_units=8, seed=4)
    start = copy.deepcopy(model)
    decayed = copy.deepcopy(model)
    fit_network(model, x, y, epochs=1, lr=lr)
    fit_network(decayed, x, y, epochs=1, lr=lr, weight_decay=wd)
    for layer, old, new in zip(model.layers, start.layers, decayed.layers, strict=True):
        for name in ("weights", "readout"):
            gap = getattr(layer, name) - getattr(new, name)
            assert torch.allclose(gap, lr * wd * getattr(old, name), rtol=1e-9, atol=1e-15)
        assert torch.equal(new.raw_bias, old.raw_bias)


def test_elbo_increases_in_stage_two():
    model, x, y, losses = _trained_network()
    assert losses[-1] < 0.5 * losses[0]
    initialize_from_network(model, x, y)
    weights = [layer.weights.detach().clone() for layer in model.layers]

    def elbo():
        with torch.no_grad():
            return float(model.elbo(x, y, 256, torch.Generator().manual_seed(7)))

    before = elbo()
    trace = fit_elbo(model, x, y, epochs=60, lr=2e-2, num_samples=2)
    after = elbo()
    assert after > before + 0.1
    assert sum(trace.elbo[-10:]) / 10 > sum(trace.elbo[:10]) / 10
    assert trace.best_step is None and trace.validation == []
    for layer, w in zip(model.layers, weights, strict=True):
        assert torch.equal(layer.weights, w) and layer.weights.requires_grad  # frozen, restored


def test_predictive_objective_does_not_inflate_the_noise_as_the_elbo_does():
    """With the mean fixed, the ELBO sets the noise to about the mean of (residual^2 + v), so
    the prediction counts v twice; the predictive log likelihood fits v + noise to the residuals:
    its noise ends lower and its predictive density on the training points higher."""
    trained = {}
    for objective in ("elbo", "predictive"):
        model, x, y, _ = _trained_network()
        initialize_from_network(model, x, y)
        trace = fit_elbo(
            model,
            x,
            y,
            epochs=150,
            lr=2e-2,
            num_samples=2,
            train_readout=False,
            objective=objective,
        )
        with torch.no_grad():
            lpd = model.log_predictive_density(x, y, 64, torch.Generator().manual_seed(5))
        trained[objective] = (float(model.noise.detach()), float(lpd.mean()), trace)
    (elbo_noise, elbo_lpd, _), (pll_noise, pll_lpd, trace) = trained["elbo"], trained["predictive"]
    assert pll_noise < 0.8 * elbo_noise
    assert pll_lpd > elbo_lpd
    assert sum(trace.elbo[-10:]) > sum(trace.elbo[:10])  # the trace holds the objective maximised


def test_frozen_mean_and_layers_stay_put():
    """train_readout=False keeps the mean the network's exactly; train_layers=[-1] leaves the
    other layers' parameters untouched while the last layer's covariance and the noise move."""
    model, x, y, _ = _trained_network()
    initialize_from_network(model, x, y)
    with torch.no_grad():
        forward = model.network(x)
    hidden = [copy.deepcopy(layer.state_dict()) for layer in model.layers[:-1]]
    last = model.layers[-1].scale_tril().detach().clone()
    noise = float(model.noise.detach())
    fit_elbo(model, x, y, epochs=5, train_readout=False, train_layers=[-1], num_samples=2)
    with torch.no_grad():
        assert torch.equal(model.network(x), forward)
        assert not torch.equal(model.layers[-1].scale_tril(), last)
        assert float(model.noise) != noise
    for layer, state in zip(model.layers[:-1], hidden, strict=True):
        for key, value in layer.state_dict().items():
            assert torch.equal(value, state[key])


def test_separate_learning_rates():
    """A zero learning rate for the hyperparameters keeps the kernel variances and the noise while
    the covariance factors and the read-outs train with theirs."""
    model, x, y, _ = _trained_network()
    initialize_from_network(model, x, y)
    variances = [float(layer.variance.detach()) for layer in model.layers]
    noise = float(model.noise.detach())
    readout = model.layers[0].readout.detach().clone()
    fit_elbo(model, x, y, epochs=3, lr=1e-2, hyperparameter_lr=0.0, mean_lr=1e-3, num_samples=2)
    assert [float(layer.variance.detach()) for layer in model.layers] == variances
    assert float(model.noise.detach()) == noise
    assert not torch.equal(model.layers[0].readout, readout)


def test_validation_stopping_keeps_the_best_check():
    """Checks at the start and every `check_every` epochs; training stops `patience` checks after
    the best one and the model is left with the best check's parameters (its NLPD reproduces)."""
    model, x, y, _ = _trained_network()
    xv, yv = _data(15, seed=5)
    initialize_from_network(model, x, y)
    trace = fit_elbo(
        model,
        x,
        y,
        epochs=400,
        lr=5e-2,
        mean_lr=5e-2,
        num_samples=2,
        validation=(xv, yv),
        check_every=4,
        patience=3,
        validation_samples=16,
        seed=2,
    )
    steps = [step for step, _ in trace.validation]
    assert steps[0] == 0 and all(b - a == 4 for a, b in zip(steps, steps[1:], strict=False))
    best_step, best = min(trace.validation, key=lambda check: check[1])
    assert trace.best_step == best_step
    assert steps[-1] == best_step + 3 * 4 and len(trace.elbo) == steps[-1] < 400  # stopped early
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        nlpd = float(-model.log_predictive_density(xv, yv, 16, generator).mean())
    assert abs(nlpd - best) < 1e-10


def test_validation_chooses_the_hidden_scale():
    model, x, y, _ = _trained_network()
    xv, yv = _data(15, seed=5)
    start = initialize_from_network(model, x, y, hidden_scale=[0.01, 1.0], validation=(xv, yv))
    assert [scale for scale, _ in start.candidates] == [0.01, 1.0]
    scale, nlpd = min(start.candidates, key=lambda c: c[1])
    assert start.hidden_scale == scale
    with torch.no_grad():
        again = model.log_predictive_density(xv, yv, 32, torch.Generator().manual_seed(0))
    assert abs(float(-again.mean()) - nlpd) < 1e-10
    with pytest.raises(ConfigurationError, match="need `validation`"):
        initialize_from_network(model, x, y, hidden_scale=[0.1, 1.0])


def test_stage_two_can_train_the_weights_with_minibatches():
    model, x, y, _ = _trained_network()
    initialize_from_network(model, x, y)
    weights = model.layers[0].weights.detach().clone()
    fit_elbo(model, x, y, epochs=3, batch_size=8, train_weights=True)
    assert not torch.equal(model.layers[0].weights, weights)


def test_bad_data_is_refused():
    model = ActivatedDeepGP(2, num_units=4)
    x, y = _data(5)
    with pytest.raises(InputDataError, match=r"`y` must have shape \(n, 1\)"):
        fit_network(model, x, y[:3])
    with pytest.raises(InputDataError, match="dtype"):
        fit_network(model, x, y.float())
    with pytest.raises(InputDataError, match="NaN"):
        fit_elbo(model, x, torch.full_like(y, float("nan")))
    with pytest.raises(ConfigurationError, match="`epochs`"):
        fit_network(model, x, y, epochs=0)
    with pytest.raises(ConfigurationError, match="`weight_decay`"):
        fit_network(model, x, y, weight_decay=-1e-3)
    with pytest.raises(ConfigurationError, match="`patience`"):
        fit_network(model, x, y, validation=(x, y), patience=0)
    with pytest.raises(InputDataError, match="shape"):
        fit_network(model, x, y, validation=(x, y[:, 0]))
    with pytest.raises(ConfigurationError, match="`train_layers`"):
        fit_elbo(model, x, y, epochs=1, train_layers=[3])
    with pytest.raises(ConfigurationError, match="`patience`"):
        fit_elbo(model, x, y, epochs=1, patience=0)
    with pytest.raises(InputDataError, match="shape"):
        fit_elbo(model, x, y, epochs=1, validation=(x, y[:, 0]))
    with pytest.raises(ConfigurationError, match="`objective` must be one of"):
        fit_elbo(model, x, y, epochs=1, objective="marginal")
