"""Classification with a categorical likelihood, both stages: the network trains on the
cross-entropy, the stage-2 start keeps the mean and weighs the sensitivities by the softmax
curvature (checked against per-point Jacobians), the ELBO rises in stage 2, and the predictive
class probabilities are proper. (That the start's bound agrees with the sampled ELBO is tested
with the Gaussian case in test_initialization.py.)"""

import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.models.adgp import ActivatedDeepGP, fit_elbo, fit_network, initialize_from_network
from manibo.models.adgp.initialization import layer_statistics


def test_stage_one_minimises_the_cross_entropy(trained_classifier):
    model, x, y, losses = trained_classifier
    assert losses[0] > 1.0 and losses[-1] < 0.5 * losses[0]
    with torch.no_grad():
        logits = model.network(x)
        cross_entropy = float(-logits.log_softmax(-1)[torch.arange(len(y)), y].mean())
    assert cross_entropy == pytest.approx(losses[-1], rel=1e-12)
    assert float((logits.argmax(-1) == y).double().mean()) > 0.8


def test_start_keeps_the_mean_and_weighs_sensitivities_by_the_softmax_curvature(trained_classifier):
    model, x, y, _ = trained_classifier
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


def test_stage_two_raises_the_elbo_and_predicts_proper_probabilities(
    trained_classifier, three_blobs
):
    model, x, y, _ = trained_classifier
    initialize_from_network(model, x, y, hidden_scale=0.01)
    trace = fit_elbo(model, x, y, epochs=60, lr=1e-2, num_samples=4)
    assert sum(trace.elbo[-10:]) / 10 > sum(trace.elbo[:10]) / 10
    x_test, y_test = three_blobs(90, seed=7)
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


def test_hidden_variances_carry_a_logit_variance_of_hidden_scale(trained_classifier):
    """s_l * mean_i sum_j (sum_o J_ioj^2) k(x_i, x_i) / s_l = hidden_scale: the plain
    sensitivities (per-point Jacobians of torch.func), not the curvature-weighted ones."""
    model, x, y, _ = trained_classifier
    initialize_from_network(model, x, y, hidden_scale=0.05)
    with torch.no_grad():
        hidden = model.layers[0].network(x)
    jacobians = torch.func.vmap(torch.func.jacrev(model.layers[1].network))(hidden)  # (n, O, P)
    prior = model.layers[0].prior_variance(x).detach()  # s * k~(x, x), (n,)
    carried = (jacobians.pow(2).sum(1) * prior.unsqueeze(-1)).sum(-1).mean()
    assert float(carried.detach()) == pytest.approx(0.05, rel=1e-9)


def test_a_confident_network_keeps_its_predictions(three_blobs):
    """On classes the network separates with saturated softmax outputs (curvature ~ 0), the start
    keeps the predictions: a rule weighted by the curvature sent the hidden variances so high that
    the sampled hidden layers made the predictive almost uniform."""
    x, y = three_blobs(60, seed=0)
    x = 3 * x  # well separated
    model = ActivatedDeepGP(2, 3, num_layers=2, num_units=12, likelihood="categorical", seed=1)
    fit_network(model, x, y, epochs=400, lr=5e-2)
    with torch.no_grad():
        confident = model.network(x).softmax(-1).max(-1).values
    assert float(confident.min()) > 0.99
    initialize_from_network(model, x, y, hidden_scale=0.1)
    with torch.no_grad():
        probabilities = model.class_probabilities(x, 32, torch.Generator().manual_seed(0))
    assert bool((probabilities.argmax(-1) == y).all())
    assert float(probabilities.max(-1).values.mean()) > 0.7  # uniform: 1/3
