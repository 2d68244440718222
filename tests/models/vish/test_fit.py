"""Fitting: sphere data and lifted data end to end, the lift chosen on a sample, streaming chunks
equal in-memory data, and input errors."""

import pytest
import torch
from gpytorch.kernels import RBFKernel, ScaleKernel

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import ChordalMaternKernel, GeometricMaternKernel, HomogeneousLiftKernel
from manibo.models.vish import (
    VISHPrior,
    default_likelihood,
    fit_lift,
    fit_vish,
    fit_vish_streaming,
    initialise_lift,
)
from manibo.models.vish.collapsed import collapsed_bound
from manibo.models.vish.statistics import differentiable_statistics
from manibo.spaces import Sphere


def test_sphere_data_end_to_end():
    g = torch.Generator().manual_seed(0)
    X = Sphere(2).random(1500, generator=g)
    f = torch.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2]
    Y = (f + 0.1 * torch.randn(1500, generator=g, dtype=torch.float64))[:, None]
    model = fit_vish(X, Y, GeometricMaternKernel(Sphere(2), nu=2.5), 100, chunk_size=256)
    noise_sd = float((model.noise.detach() * model.outcome_transform.stdvs**2).sqrt())
    assert 0.07 < noise_sd < 0.14  # the true noise sd is 0.1
    X_test = Sphere(2).random(300, generator=g)
    mean, _ = model.predict(X_test)
    rmse = float(
        ((mean - torch.sin(2 * X_test[:, 0]) - X_test[:, 1] * X_test[:, 2]) ** 2).mean().sqrt()
    )
    assert rmse < 0.05, rmse
    streamed = fit_vish_streaming(
        ((X[i : i + 500], Y[i : i + 500]) for i in range(0, 1500, 500)),
        GeometricMaternKernel(Sphere(2), nu=2.5),
        100,
        maxiter=0,
    )
    direct = fit_vish(X, Y, GeometricMaternKernel(Sphere(2), nu=2.5), 100, maxiter=0)
    assert torch.allclose(streamed.statistics.gram, direct.statistics.gram, atol=1e-9)
    assert torch.allclose(streamed.statistics.cross, direct.statistics.cross, atol=1e-9)


@pytest.mark.parametrize("dim", [2, 3])
def test_the_fit_converges_where_the_kernel_truncates_below_the_feature_levels(dim):
    """With a lengthscale near 1 the Matérn kernel's truncation gives the top feature levels of
    the surrogate no weight; their prior scale sqrt(0) had an infinite derivative, the bound a NaN
    gradient, and L-BFGS-B stopped after 2 iterations with the noise sd at 0.123-0.126 for a
    true 0.1 (10,000 points)."""
    from manibo.models import build_surrogate

    g = torch.Generator().manual_seed(0)
    space = Sphere(dim)
    X = space.random(10000, generator=g)
    f = torch.sin(3 * X[:, 0]) * torch.cos(2 * X[:, 1]) + X[:, 2] ** 2 + 0.5 * X[:, 0] * X[:, -1]
    Y = (f + 0.1 * torch.randn(10000, generator=g, dtype=torch.float64))[:, None]
    model = build_surrogate("vish", space, X, Y)
    noise_sd = float((model.noise.detach() * model.outcome_transform.stdvs**2).sqrt())
    assert abs(noise_sd - 0.1) < 0.004, noise_sd
    model.prior.covar_module.base_kernel.lengthscale = 0.91  # a trial point of the old fit
    if dim == 2:
        assert (model.prior.scale() == 0).any()  # the case of the defect: levels without weight
    model.train()
    model.bound().backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert grads and all(torch.isfinite(grad).all() for grad in grads)


def test_lifted_data_and_the_lift_sample():
    g = torch.Generator().manual_seed(1)
    X = 3 * torch.rand(1200, 2, generator=g, dtype=torch.float64) + 5  # far from the origin
    f = torch.sin(2 * X[:, 0]) * torch.cos(X[:, 1])
    y = f + 0.1 * torch.randn(1200, generator=g, dtype=torch.float64)
    kernel = HomogeneousLiftKernel(ChordalMaternKernel(Sphere(2), nu=2.5), 2)
    prior = VISHPrior(ScaleKernel(kernel), 64)
    likelihood = default_likelihood()
    initialise_lift(prior, X[:400])
    assert torch.allclose(prior.features.offset, X[:400].mean(0))
    y_std = (y[:400] - y[:400].mean()) / y[:400].std()

    def sample_bound():
        with torch.no_grad():
            stats = differentiable_statistics(prior.features, X[:400], y_std)
            return float(
                collapsed_bound(stats, prior.scale(), likelihood.noise, prior.residual_variance())
            )

    before = sample_bound()
    fit_lift(prior, likelihood, X[:400], y[:400], maxiter=30)
    assert sample_bound() > before
    model = fit_vish(X, y[:, None], kernel, 64, lift_sample_size=400, maxiter=30)
    X_test = 3 * torch.rand(200, 2, generator=g, dtype=torch.float64) + 5
    mean, variance = model.predict(X_test, observation_noise=True)
    truth = torch.sin(2 * X_test[:, 0]) * torch.cos(X_test[:, 1])
    assert float(((mean - truth) ** 2).mean().sqrt()) < 0.1
    assert (variance > 0).all()
    post = model.posterior(X_test[:50], observation_noise=True)  # lifted: r != 1
    assert torch.allclose(post.mean[:, 0], mean[:50], atol=1e-10)
    assert torch.allclose(post.variance[:, 0], variance[:50], atol=1e-10)


def test_errors():
    X = Sphere(2).random(10)
    with pytest.raises(InputDataError, match=r"shape \(N, 1\)"):
        fit_vish(X, torch.zeros(10, 2, dtype=torch.float64), GeometricMaternKernel(Sphere(2)), 9)
    with pytest.raises(InputDataError, match="at least 2"):
        fit_vish(X[:1], torch.zeros(1, 1, dtype=torch.float64), GeometricMaternKernel(Sphere(2)), 9)
    with pytest.raises(ConfigurationError, match="zonal kernel"):
        fit_vish(X, torch.zeros(10, 1, dtype=torch.float64), RBFKernel(), 9)
    with pytest.raises(ConfigurationError, match="lift_sample"):
        fit_vish_streaming(
            [(X, X[:, 0])], GeometricMaternKernel(Sphere(2)), 9, lift_sample=(X, X[:, 0])
        )
    with pytest.raises(InputDataError, match="empty"):
        fit_vish_streaming([], GeometricMaternKernel(Sphere(2)), 9)
    with pytest.raises(InputDataError, match="norms must be 1"):
        fit_vish(
            2 * X, torch.zeros(10, 1, dtype=torch.float64), GeometricMaternKernel(Sphere(2)), 9
        )
