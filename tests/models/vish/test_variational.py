"""The whitened uncollapsed bound: equals the collapsed bound at the optimal q(v), minibatches are
unbiased, the KL is Gaussian; on banana data (Bernoulli) the bound grows with M."""

import pytest
import torch
from gpytorch.kernels import ScaleKernel
from gpytorch.likelihoods import BernoulliLikelihood, GaussianLikelihood

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import ChordalMaternKernel, GeometricMaternKernel, HomogeneousLiftKernel
from manibo.models.vish import (
    VariationalVISH,
    VISHPrior,
    collapsed_bound,
    fit_variational,
    gather_statistics,
    weight_posterior,
)
from manibo.problems.datasets import banana
from manibo.spaces import Sphere


def _sphere_case(n=400):
    g = torch.Generator().manual_seed(0)
    X = Sphere(2).random(n, generator=g)
    y = torch.sin(3 * X[:, 0]) + 0.3 * torch.randn(n, generator=g, dtype=torch.float64)
    prior = VISHPrior(ScaleKernel(GeometricMaternKernel(Sphere(2), nu=1.5, num_levels=20)), 49)
    prior.covar_module.outputscale = 1.2
    return prior, X, y


@torch.no_grad()
def test_uncollapsed_bound_at_the_optimal_q_equals_the_collapsed_bound():
    prior, X, y = _sphere_case()
    likelihood = GaussianLikelihood().double()
    likelihood.noise = 0.09
    noise = likelihood.noise.reshape(())
    stats = gather_statistics(prior.features, X, y)
    collapsed = collapsed_bound(stats, prior.scale(), noise, prior.residual_variance())
    optimal = weight_posterior(stats, prior.scale(), noise)
    model = VariationalVISH(prior, likelihood)
    eye = torch.eye(len(optimal.whitened_mean), dtype=torch.float64)
    B_inv = torch.cholesky_solve(eye, optimal.cholesky)  # optimal S S^T = B^{-1}
    model.q_mean.copy_(optimal.whitened_mean)
    model.q_scale_tril.copy_(torch.linalg.cholesky(B_inv))
    assert abs(float(model.elbo(X, y, len(y)) - collapsed)) < 1e-8
    # any other q is worse
    model.q_mean.add_(0.01)
    assert float(model.elbo(X, y, len(y))) < float(collapsed)


@torch.no_grad()
def test_minibatches_are_unbiased_and_kl_is_gaussian():
    prior, X, y = _sphere_case(240)
    model = VariationalVISH(prior, GaussianLikelihood().double())
    g = torch.Generator().manual_seed(1)
    model.q_mean.copy_(torch.randn(49, generator=g, dtype=torch.float64))
    model.q_scale_tril.copy_(
        torch.eye(49, dtype=torch.float64) + 0.1 * torch.randn(49, 49, generator=g).double()
    )
    full = model.elbo(X, y, 240)
    batches = [model.elbo(X[i : i + 60], y[i : i + 60], 240) for i in range(0, 240, 60)]
    assert torch.allclose(torch.stack(batches).mean(), full, rtol=1e-12)
    S = model.scale_tril()
    q = torch.distributions.MultivariateNormal(model.q_mean, scale_tril=S)
    p = torch.distributions.MultivariateNormal(torch.zeros(49).double(), torch.eye(49).double())
    assert torch.allclose(model.kl_divergence(), torch.distributions.kl_divergence(q, p))


def _banana_model(num_features, X):
    lift = HomogeneousLiftKernel(ChordalMaternKernel(Sphere(2), nu=1.5), 2, bias=1.0)
    lift.lengthscale = 1.5
    lift.base_kernel.lengthscale = 0.5
    prior = VISHPrior(ScaleKernel(lift), num_features)
    prior.covar_module.outputscale = 4.0
    return VariationalVISH(prior, BernoulliLikelihood())


def test_banana_bound_grows_with_the_number_of_harmonics():
    X, y = banana(200, generator=torch.Generator().manual_seed(0))
    bounds = []
    for num_features in (9, 25, 49):  # all levels below 3, 5 and 7 on S²
        model = _banana_model(num_features, X)
        params = [model.q_mean, model.q_scale_tril]
        optimizer = torch.optim.LBFGS(params, max_iter=40, line_search_fn="strong_wolfe")

        def closure(model=model, optimizer=optimizer):
            optimizer.zero_grad()
            loss = -model.elbo(X, y, len(y))
            loss.backward()
            return loss

        optimizer.step(closure)
        with torch.no_grad():
            bounds.append(float(model.elbo(X, y, len(y))))
    assert bounds[0] < bounds[1] < bounds[2], bounds


def test_minibatch_adam_classifies_banana():
    X, y = banana(300, generator=torch.Generator().manual_seed(1))
    model = _banana_model(25, X)
    history = fit_variational(
        model,
        X,
        y,
        batch_size=64,
        num_steps=80,
        lr=0.1,
        generator=torch.Generator().manual_seed(0),
        train_hyperparameters=True,
    )
    assert sum(history[-20:]) / 20 > sum(history[:20]) / 20 + 0.1
    with torch.no_grad():
        mean, _ = model.marginals(X)
    accuracy = float(((mean > 0).double() == y).double().mean())
    assert accuracy > 0.85, accuracy


def test_errors():
    prior, X, y = _sphere_case(20)
    with pytest.raises(ConfigurationError, match="Likelihood"):
        VariationalVISH(prior, "bernoulli")
    model = VariationalVISH(prior, BernoulliLikelihood())
    with pytest.raises(InputDataError, match="one outcome per row"):
        fit_variational(model, X, y[:5], num_steps=1)
    with pytest.raises(InputDataError, match="norms must be 1"):
        fit_variational(model, 2 * X, y, num_steps=1)
