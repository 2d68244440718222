"""Classification with a categorical likelihood, both stages: the network trains on the
cross-entropy, the stage-2 start keeps the mean and weighs the sensitivities by the softmax
curvature (checked against per-point Jacobians), its linearised bound agrees with the sampled
ELBO, the ELBO rises in stage 2, and the predictive class probabilities are proper."""

import copy

import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.models.adgp import ActivatedDeepGP, fit_elbo, fit_network, initialize_from_network
from manibo.models.adgp.initialization import layer_statistics


def _blobs(n=60, seed=0):
    """Three Gaussian classes in the plane, centres on a circle of radius 1.5; labels ``(n,)``."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.arange(n) % 3
    angle = 2 * torch.pi * labels.double() / 3
    centres = 1.5 * torch.stack([angle.cos(), angle.sin()], dim=-1)
    return centres + 0.6 * torch.randn(n, 2, generator=gen, dtype=torch.float64), labels


_TRAINED = {}


def _trained():
    if not _TRAINED:
        x, y = _blobs()
        model = ActivatedDeepGP(2, 3, num_layers=2, num_units=12, likelihood="categorical", seed=1)
        trace = fit_network(model, x, y, epochs=150, lr=2e-2)
        _TRAINED["model"] = (model, x, y, trace.loss)
    model, x, y, losses = _TRAINED["model"]
    return copy.deepcopy(model), x, y, losses


def test_stage_one_minimises_the_cross_entropy():
    model, x, y, losses = _trained()
    assert losses[0] > 1.0 and losses[-1] < 0.5 * losses[0]
    with torch.no_grad():
        logits = model.network(x)
        cross_entropy = float(-logits.log_softmax(-1)[torch.arange(len(y)), y].mean())
    assert cross_entropy == pytest.approx(losses[-1], rel=1e-12)
    assert float((logits.argmax(-1) == y).double().mean()) > 0.8


def test_start_keeps_the_mean_and_weighs_sensitivities_by_the_softmax_curvature():
    model, x, y, _ = _trained()
    with torch.no_grad():
        forward = model.network(x)
    noise = float(model.noise.detach())
    initialize_from_network(model, x, y, hidden_scale=0.01)
    with torch.no_grad():
        assert torch.allclose(model.network(x), forward, atol=1e-10, rtol=0)
    assert float(model.noise.detach()) == noise  # a categorical likelihood has no noise to set
    statistics = layer_statistics(model, x)
    with torch.no_grad():
        hidden = model.layers[0].network(x)
        p = model.network(x).softmax(-1)
    jacobians = torch.func.vmap(torch.func.jacrev(model.layers[1].network))(hidden)  # (n, O, P)
    curvature = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)
    expected = torch.einsum("iop,ioq,iqp->ip", jacobians, curvature, jacobians)
    assert torch.allclose(statistics[0].sensitivity, expected, rtol=1e-10)
    last = torch.diagonal(curvature, dim1=-2, dim2=-1)  # the last layer: J = I
    assert torch.allclose(statistics[-1].sensitivity, last, rtol=1e-12)


def test_linearised_bound_agrees_with_the_sampled_elbo():
    """With small hidden variances the second-order expansion of the softmax likelihood holds: the
    bound that the start maximises and the sampled ELBO (4096 samples) agree to 0.5%."""
    model, x, y, _ = _trained()
    bound = initialize_from_network(model, x, y, hidden_scale=0.01).bound
    with torch.no_grad():
        elbo = float(model.elbo(x, y, 4096, torch.Generator().manual_seed(3)))
    assert abs(elbo - bound) < 5e-3 * abs(bound)


def test_stage_two_raises_the_elbo_and_predicts_proper_probabilities():
    model, x, y, _ = _trained()
    initialize_from_network(model, x, y, hidden_scale=0.01)
    trace = fit_elbo(model, x, y, epochs=60, lr=1e-2, num_samples=4)
    assert sum(trace.elbo[-10:]) / 10 > sum(trace.elbo[:10]) / 10
    x_test, y_test = _blobs(90, seed=7)
    with torch.no_grad():
        probabilities = model.class_probabilities(x_test, 32, torch.Generator().manual_seed(0))
        lpd = model.log_predictive_density(x_test, y_test, 32, torch.Generator().manual_seed(0))
    assert probabilities.shape == (90, 3) and bool((probabilities > 0).all())
    assert torch.allclose(probabilities.sum(-1), torch.ones(90, dtype=torch.float64))
    assert float((probabilities.argmax(-1) == y_test).double().mean()) > 0.8
    assert lpd.shape == (90,) and bool((lpd < 0).all())


def test_classification_options_are_checked():
    with pytest.raises(ConfigurationError, match="2 classes"):
        ActivatedDeepGP(2, 1, likelihood="categorical")
    with pytest.raises(ConfigurationError, match="categorical likelihood"):
        ActivatedDeepGP(2, num_units=4).class_probabilities(torch.zeros(3, 2, dtype=torch.float64))
