"""The likelihoods against independent computations: the categorical expectations against
Gauss–Hermite quadrature and the exact softmax in the zero-variance limit, the curvature against
autograd's Hessian, the Gaussian closed forms against Monte Carlo; bad targets are refused."""

import math

import numpy as np
import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.adgp.likelihoods import (
    CategoricalLikelihood,
    GaussianLikelihood,
    make_likelihood,
)


def _hermite_expectation(function, mean, sd, nodes=40):
    """E g(f) for independent f_c ~ N(mean_c, sd_c^2), two classes, by tensor Gauss–Hermite."""
    t, w = np.polynomial.hermite_e.hermegauss(nodes)  # weight exp(-t^2 / 2)
    t = torch.tensor(t, dtype=torch.float64)
    w = torch.tensor(w / math.sqrt(2 * math.pi), dtype=torch.float64)
    f0 = mean[0] + sd[0] * t[:, None]
    f1 = mean[1] + sd[1] * t[None, :]
    values = function(torch.stack(torch.broadcast_tensors(f0, f1), dim=-1))
    return float((w[:, None] * w[None, :] * values).sum())


def test_categorical_expected_log_likelihood_matches_quadrature():
    """Monte Carlo over 4000 x 8 draws agrees with 40 x 40 Gauss–Hermite nodes within 4 standard
    errors."""
    likelihood = CategoricalLikelihood()
    mean = torch.tensor([0.7, -0.4], dtype=torch.float64)
    sd = torch.tensor([1.1, 0.5], dtype=torch.float64)
    copies = 4000
    means = mean.expand(copies, 1, 2)
    variances = sd.pow(2).expand(copies, 1, 2)
    y = torch.tensor([1])
    gen = torch.Generator().manual_seed(0)
    draws = likelihood.expected_log_likelihood(means, variances, y, generator=gen)  # (S, 1)
    exact = _hermite_expectation(lambda f: f.log_softmax(-1)[..., 1], mean, sd)
    standard_error = float(draws.std()) / math.sqrt(copies)
    assert abs(float(draws.mean()) - exact) < 4 * standard_error
    probabilities = likelihood.probabilities(means, variances, gen).mean(0)[0]
    exact_p = _hermite_expectation(lambda f: f.softmax(-1)[..., 0], mean, sd)
    assert abs(float(probabilities[0]) - exact_p) < 5e-3
    assert torch.allclose(probabilities.sum(), torch.tensor(1.0, dtype=torch.float64))


def test_categorical_zero_variance_is_the_softmax():
    likelihood = CategoricalLikelihood()
    logits = torch.randn(3, 5, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    zero = torch.zeros_like(logits)
    y = torch.tensor([0, 3, 2, 1, 3])
    expected = logits.log_softmax(-1).gather(-1, y.expand(3, 5).unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(likelihood.expected_log_likelihood(logits, zero, y), expected)
    assert torch.allclose(likelihood.log_predictive(logits, zero, y), expected)
    assert torch.allclose(likelihood.probabilities(logits, zero), logits.softmax(-1))
    assert torch.allclose(
        likelihood.network_loss(logits[0], y), -expected[0].mean(), rtol=1e-12, atol=0
    )


def test_categorical_curvature_is_the_negative_hessian_of_the_log_likelihood():
    likelihood = CategoricalLikelihood()
    logits = torch.randn(4, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    curvature = likelihood.curvature(logits)
    for i in range(4):
        for label in range(3):  # the same for every observed class
            hessian = torch.autograd.functional.hessian(
                lambda f, c=label: f.log_softmax(-1)[c], logits[i]
            )
            assert torch.allclose(curvature[i], -hessian, atol=1e-12)


def test_gaussian_closed_forms_match_monte_carlo():
    likelihood = GaussianLikelihood()
    gen = torch.Generator().manual_seed(3)
    means = torch.tensor([[[0.3], [-1.0]]], dtype=torch.float64)
    variances = torch.tensor([[[0.2], [0.05]]], dtype=torch.float64)
    y = torch.tensor([[0.1], [-0.6]], dtype=torch.float64)
    noise = torch.tensor(0.3, dtype=torch.float64)
    f = means + variances.sqrt() * torch.randn(200_000, 2, 1, generator=gen, dtype=torch.float64)
    log_normal = -0.5 * (math.log(2 * math.pi) + noise.log() + (y - f).pow(2) / noise)
    expected = likelihood.expected_log_likelihood(means, variances, y, noise)[0]
    assert torch.allclose(expected, log_normal.mean(0)[:, 0], atol=5e-3)
    predictive = likelihood.log_predictive(means, variances, y, noise)[0]
    assert torch.allclose(predictive, log_normal.exp().mean(0)[:, 0].log(), atol=5e-3)


def test_bad_targets_are_refused():
    x = torch.zeros(4, 2, dtype=torch.float64)
    categorical = CategoricalLikelihood()
    with pytest.raises(InputDataError, match="integers"):
        categorical.check_targets(x, torch.zeros(4, dtype=torch.float64), 3)
    with pytest.raises(InputDataError, match=r"shape \(n,\)"):
        categorical.check_targets(x, torch.zeros(4, 1, dtype=torch.long), 3)
    with pytest.raises(InputDataError, match=r"in \[0, 3\)"):
        categorical.check_targets(x, torch.tensor([0, 1, 2, 3]), 3)
    with pytest.raises(InputDataError, match=r"shape \(n, 2\)"):
        GaussianLikelihood().check_targets(x, torch.zeros(4, 1, dtype=torch.float64), 2)
    with pytest.raises(ConfigurationError, match="categorical, gaussian"):
        make_likelihood("poisson")
