"""GPNet iterations: the KL step, the hyperparameter step, convergence to exact answers, errors."""

import math
import sys

import numpy as np
import pytest
import torch
from gpytorch.kernels import RBFKernel, ScaleKernel
from gpytorch.likelihoods import BernoulliLikelihood, GaussianLikelihood, SoftmaxLikelihood

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import GeometricMaternKernel, feature_map
from manibo.models.gpnet import (
    BayesianLinearNetwork,
    GPNet,
    MeasurementDistribution,
    conjugate_target,
)
from manibo.models.gpnet.mirror_descent import add_jitter, cholesky_with_jitter
from manibo.spaces import Box, Circle, Sphere


def _circle_problem(num_levels=6, n=16, dtype=torch.float64, device="cpu", seed=0):
    """A GP on the circle whose (truncated) kernel the harmonic network represents exactly."""
    space = Circle()
    kernel = ScaleKernel(GeometricMaternKernel(space, nu=2.5, num_levels=num_levels)).to(dtype)
    kernel.base_kernel.lengthscale = 0.5
    kernel.outputscale = 1.3
    gen = torch.Generator().manual_seed(seed)
    X = space.random(n, generator=gen, dtype=dtype)
    y = torch.sin(3 * X) + 0.1 * torch.randn(n, 1, generator=gen, dtype=dtype)
    return space, kernel.to(device), X.to(device), y.to(device)


def _exact_posterior(kernel, X, y, noise, Xt):
    """Dense exact GP posterior marginals (NumPy float64)."""
    with torch.no_grad():
        K = kernel(X).to_dense().double().cpu().numpy()
        Kt = kernel(Xt, X).to_dense().double().cpu().numpy()
        kt = kernel(Xt, diag=True).double().cpu().numpy()
    Ky = K + noise * np.eye(len(K))
    mean = Kt @ np.linalg.solve(Ky, y.double().cpu().numpy()[:, 0])
    var = kt - np.einsum("ij,ji->i", Kt, np.linalg.solve(Ky, Kt.T))
    return mean, var


def _gpnet(space, kernel, likelihood=None, num_latents=1, **options):
    network = BayesianLinearNetwork(feature_map(kernel, max_features=512, detach=True), num_latents)
    return GPNet(space, network, kernel, likelihood, **options)


def _gaussian(noise, dtype=torch.float64):
    likelihood = GaussianLikelihood().to(dtype)
    likelihood.noise = noise
    return likelihood


def test_kl_step_decreases_the_kl_to_a_fixed_target_and_leaves_the_prior_alone(device="cpu"):
    space, kernel, X, y = _circle_problem(device=device)
    likelihood = _gaussian(0.05).to(device)
    gpnet = _gpnet(space, kernel, likelihood, beta0=1.0, xi=0.0, lr=0.01).to(device)
    X_M = space.random(12, generator=torch.Generator().manual_seed(5)).to(device)
    # with beta = 1 and a fixed batch and X_M the target does not move: compute it independently
    with torch.no_grad():
        XX = torch.cat([X, X_M])
        K = add_jitter(kernel(XX).to_dense(), 1e-6)
        dummy = torch.zeros(1, len(XX), dtype=X.dtype, device=device)
        target = conjugate_target(K, dummy, add_jitter(K, 0)[None], y.T, 0.05, 1.0, len(X))
        target_dist = torch.distributions.MultivariateNormal(
            target[0][0], scale_tril=cholesky_with_jitter(target[1][0], 1e-6)
        )

    def kl_now():
        with torch.no_grad():
            mean, root = gpnet.network(X_M)
            cov = add_jitter(root[0] @ root[0].T, 1e-6)
            q = torch.distributions.MultivariateNormal(mean[0], cov)
            return float(torch.distributions.kl_divergence(q, target_dist))

    kls, losses = [kl_now()], []
    for _ in range(40):
        losses.append(float(gpnet.step(X, y, X_M, len(X)).loss))
        kls.append(kl_now())
    assert all(b < a for a, b in zip(kls[:15], kls[1:16], strict=True)), kls[:16]
    assert kls[-1] < 0.5 * kls[0]
    assert losses[0] == pytest.approx(kls[0], rel=1e-6)  # the step's loss is that KL
    for p in list(kernel.parameters()) + list(likelihood.parameters()):
        assert p.grad is None  # no gradient flowed through the target
    assert float(kernel.outputscale.detach()) == pytest.approx(1.3)


def _dense_tempered_target(K, mean, cov, y, noise, beta, num_data, n):
    """Target of one step at the last points: natural parameters and explicit inverses (NumPy)."""
    K, mean, cov, y = (a.detach().double().cpu().numpy() for a in (K, mean, cov, y))
    weight = np.zeros(len(K))
    weight[:n] = beta * num_data / (n * noise)  # the likelihood tempered by beta N / n
    cov_inv = np.linalg.inv(cov)
    precision = beta * np.linalg.inv(K) + (1 - beta) * cov_inv + np.diag(weight)
    target_cov = np.linalg.inv(precision)
    target_mean = target_cov @ ((1 - beta) * cov_inv @ mean + weight * np.pad(y, (0, len(K) - n)))
    return target_mean[n:], target_cov[n:, n:]


@pytest.mark.parametrize("trainable_points", [False, True])
def test_kl_step_at_beta_below_one_holds_the_q_t_dependent_target_constant(
    trainable_points, device="cpu"
):
    """At beta = 0.5 the target depends on q_t; the step's gradient is the KL's to it, frozen.

    9 points and 11 features (12 random-phase features) keep Sigma_t invertible, so the target has
    an independent natural-parameter form. A gradient through the target would change the
    network's gradient; with trainable phase points the features' gradient is checked too (it
    comes from the measurement points only: the step evaluates the minibatch without a graph).
    """
    space, kernel, X, y = _circle_problem(device=device)
    if trainable_points:
        features = feature_map(kernel, 2, 0, random=True, trainable=True, detach=True)
        network = BayesianLinearNetwork(features)
        gpnet = GPNet(space, network, kernel, _gaussian(0.05), beta0=0.5, xi=0.0, lr=0.01)
    else:
        gpnet = _gpnet(space, kernel, _gaussian(0.05).to(device), beta0=0.5, xi=0.0, lr=0.01)
    gpnet.to(device)
    gen = torch.Generator().manual_seed(3)
    params = [p for p in gpnet.network.parameters() if p.requires_grad]
    with torch.no_grad():
        for p in params:
            p.add_(0.3 * torch.randn(p.shape, generator=gen, dtype=p.dtype).to(device))
    n, X_M = 4, space.random(5, generator=gen, dtype=X.dtype).to(device)
    XX = torch.cat([X[:n], X_M])
    mean, root = gpnet.network(XX)
    with torch.no_grad():
        K = add_jitter(kernel(XX).to_dense(), 1e-6)
        cov = add_jitter(root[0] @ root[0].T, 1e-6)
    target_mean, target_cov = _dense_tempered_target(
        K, mean[0], cov, y[:n, 0], 0.05, 0.5, len(X), n
    )
    target = torch.distributions.MultivariateNormal(  # with the step's jitter on both sides
        torch.as_tensor(target_mean).to(X), add_jitter(torch.as_tensor(target_cov).to(X), 1e-6)
    )
    q = torch.distributions.MultivariateNormal(
        mean[0, n:], add_jitter(root[0, n:] @ root[0, n:].T, 1e-6)
    )
    kl = torch.distributions.kl_divergence(q, target)
    expected = torch.autograd.grad(kl, params)
    result = gpnet.step(X[:n], y[:n], X_M, len(X))
    assert float(result.loss) == pytest.approx(float(kl.detach()), rel=1e-6)
    for p, grad in zip(params, expected, strict=True):
        assert torch.allclose(p.grad, grad, rtol=1e-5, atol=1e-8)


def test_hyper_step_uses_the_previous_network_and_matches_a_dense_bound(device="cpu"):
    space, kernel, X, y = _circle_problem(device=device)
    likelihood = _gaussian(0.05).to(device)
    gpnet = _gpnet(space, kernel, likelihood, lr=0.01, hyper_lr=0.01).to(device)
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():
        weights = gpnet.network.weight_mean
        weights.copy_(torch.randn(weights.shape, generator=gen, dtype=weights.dtype))
        mean, root = gpnet.network(X)
        cov = add_jitter(root @ root.mT, 1e-6)
    # dense bound: sum_i E_q log N(y_i | f_i, s^2) - KL(q(f_n) || p(f_n)), not rescaled by N/n
    m, S = mean[0].double().cpu().numpy(), cov[0].double().cpu().numpy()
    with torch.no_grad():
        K = kernel(X).to_dense().double().cpu().numpy() + 1e-6 * np.eye(len(X))
    yy, s2, n = y[:, 0].double().cpu().numpy(), 0.05, len(X)
    fit = np.sum(-0.5 * np.log(2 * np.pi * s2) - ((yy - m) ** 2 + np.diag(S)) / (2 * s2))
    kl = 0.5 * (
        np.trace(np.linalg.solve(K, S))
        + m @ np.linalg.solve(K, m)
        - n
        + np.linalg.slogdet(K)[1]
        - np.linalg.slogdet(S)[1]
    )
    assert float(gpnet.hyper_objective(X, y, mean, cov).detach()) == pytest.approx(
        fit - kl, rel=1e-7
    )
    before_net = [p.detach().clone() for p in gpnet.network.parameters()]
    before_kernel = float(kernel.outputscale.detach())
    result = gpnet.step(X, y, space.random(8, generator=gen).to(device), len(X))
    assert float(result.hyper_objective) == pytest.approx(fit - kl, rel=1e-7)  # q_prev = q_t
    assert float(kernel.outputscale.detach()) != before_kernel  # the hyperparameters moved ...
    moved = [
        not torch.equal(a, b) for a, b in zip(before_net, gpnet.network.parameters(), strict=True)
    ]
    assert any(moved)  # ... and so did the network, each by its own optimiser


def _errors_after_training(device, batch_size, xi, iterations, dtype=torch.float64):
    """Max abs errors of GPNet's means and variances against the exact posterior (circle)."""
    space, kernel, X, y = _circle_problem(dtype=dtype, device=device)
    gpnet = _gpnet(space, kernel, _gaussian(0.05, dtype), beta0=1.0, xi=xi, lr=0.1)
    uniform = MeasurementDistribution(space, uniform_fraction=1.0)
    gpnet.fit(X, y, iterations, batch_size=batch_size, num_measurement=40, measurement=uniform)
    Xt = space.random(50, generator=torch.Generator().manual_seed(9), dtype=dtype).to(device)
    mean, var = gpnet.predict(Xt)
    ref_mean, ref_var = _exact_posterior(kernel, X, y, 0.05, Xt)
    return (
        np.abs(mean[0].cpu().numpy() - ref_mean).max(),
        np.abs(var[0].cpu().numpy() - ref_var).max(),
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_conjugate_gpnet_converges_to_the_exact_posterior(dtype, device="cpu"):
    """Full batch, beta = 1: means and variances within 1e-4 of the exact posterior.

    In float32 (jitter 1e-4) the tolerance is 1e-3. The prior variance is 1.3.
    """
    mean_error, var_error = _errors_after_training(device, 16, 0.0, 400, dtype)
    tol = 1e-4 if dtype == torch.float64 else 1e-3
    assert mean_error < tol and var_error < tol


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_start_at_posterior_is_the_exact_posterior_without_any_iteration(dtype, device="cpu"):
    """The closed-form start of a harmonic network equals the dense exact GP posterior (its
    kernel is the truncated prior, so the start is the fixed point of the iterations)."""
    space, kernel, X, y = _circle_problem(dtype=dtype, device=device)
    gpnet = _gpnet(space, kernel, _gaussian(0.05, dtype)).to(device=device, dtype=dtype)
    gpnet.start_at_posterior(X, y)
    Xt = space.random(50, generator=torch.Generator().manual_seed(9), dtype=dtype).to(device)
    mean, var = gpnet.predict(Xt)
    ref_mean, ref_var = _exact_posterior(kernel, X, y, 0.05, Xt)
    tol = 1e-6 if dtype == torch.float64 else 1e-4  # the prior variance is 1.3
    assert np.abs(mean[0].cpu().numpy() - ref_mean).max() < tol
    assert np.abs(var[0].cpu().numpy() - ref_var).max() < tol
    assert gpnet.iteration == 0


def test_start_at_posterior_needs_a_gaussian_likelihood_and_matching_data():
    space, kernel, X, y = _circle_problem()
    with pytest.raises(ConfigurationError, match="GaussianLikelihood"):
        _gpnet(space, kernel, BernoulliLikelihood()).start_at_posterior(X, (y > 0).double())
    gpnet = _gpnet(space, kernel, _gaussian(0.05))
    with pytest.raises(InputDataError, match="`Y`"):
        gpnet.start_at_posterior(X, y[:-1])
    with pytest.raises(ConfigurationError, match="scale_tril"):
        gpnet.network.set_posterior(gpnet.network.weight_mean, torch.eye(3, dtype=X.dtype))


def test_minibatch_gpnet_approaches_the_exact_posterior(device="cpu"):
    """n = 8 of N = 16 with a decaying step size: means within 0.02, variances within 0.03.

    Treating the batch as the whole data set (N = 8) or tempering for twice the data (N = 32)
    leaves errors above 0.04 in both, so the tolerance checks the N/n scaling of the likelihood.
    """
    mean_error, var_error = _errors_after_training(device, batch_size=8, xi=0.3, iterations=600)
    assert mean_error < 0.02 and var_error < 0.03


def test_general_objective_with_a_gaussian_likelihood_reaches_the_same_posterior(device="cpu"):
    space, kernel, X, y = _circle_problem(device=device)
    gpnet = _gpnet(space, kernel, _gaussian(0.05), beta0=1.0, xi=0.0, lr=0.1, closed_form=False)
    assert not gpnet.conjugate
    gpnet.fit(X, y, 300, batch_size=16, num_measurement=24)
    Xt = space.random(30, generator=torch.Generator().manual_seed(9)).to(device)
    mean, var = gpnet.predict(Xt)
    ref_mean, ref_var = _exact_posterior(kernel, X, y, 0.05, Xt)
    assert np.abs(mean[0].cpu().numpy() - ref_mean).max() < 1e-3
    assert np.abs(var[0].cpu().numpy() - ref_var).max() < 1e-3


def _weight_space_probit_vi(phi, labels, steps=200):
    """Full-covariance Gaussian VI for probit classification in weight space, w ~ N(0, I).

    An independent reference: its own Gauss–Hermite rule and L-BFGS on (m, L).
    """
    nodes, weights = np.polynomial.hermite.hermgauss(40)
    nodes = torch.tensor(nodes * math.sqrt(2), dtype=torch.float64)
    weights = torch.tensor(weights / math.sqrt(math.pi), dtype=torch.float64)
    F = phi.shape[1]
    m = torch.zeros(F, dtype=torch.float64, requires_grad=True)
    raw = torch.eye(F, dtype=torch.float64).requires_grad_(True)
    sign = 2 * labels - 1

    def loss():
        L = torch.tril(raw)
        mean, sd = phi @ m, (phi @ L).norm(dim=-1)
        f = mean.unsqueeze(-1) + sd.unsqueeze(-1) * nodes
        fit = (torch.special.log_ndtr(sign.unsqueeze(-1) * f) * weights).sum()
        kl = 0.5 * ((L**2).sum() + m @ m - F - 2 * L.diagonal().abs().log().sum())
        return kl - fit

    optimiser = torch.optim.LBFGS([m, raw], max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        optimiser.zero_grad()
        value = loss()
        value.backward()
        return value

    optimiser.step(closure)
    L = torch.tril(raw).detach()
    return m.detach(), L


def test_bernoulli_gpnet_reaches_the_weight_space_variational_optimum():
    """A fixed point of the non-conjugate step is the Gaussian VI optimum; tolerance 1e-3."""
    space, kernel, X, _ = _circle_problem(num_levels=4, n=14)
    labels = (torch.sin(2 * X[:, 0]) > 0.2).double()
    gpnet = _gpnet(space, kernel, BernoulliLikelihood(), beta0=1.0, xi=0.0, lr=0.1)
    gpnet.fit(X, labels, 300, batch_size=14, num_measurement=10)
    Xt = space.random(30, generator=torch.Generator().manual_seed(4))
    mean, var = gpnet.predict(Xt)
    features = gpnet.network.features
    with torch.no_grad():
        m, L = _weight_space_probit_vi(features(X), labels)
        phi = features(Xt)
    assert torch.allclose(mean[0], phi @ m, atol=1e-3)
    assert torch.allclose(var[0], (phi @ L).square().sum(-1), atol=1e-3)


def test_softmax_gpnet_learns_three_classes():
    space, kernel, X, _ = _circle_problem(num_levels=5, n=60)
    labels = (X[:, 0] / (2 * math.pi / 3)).floor().clamp(max=2).long()
    likelihood = SoftmaxLikelihood(num_features=3, num_classes=3, mixing_weights=False)
    gpnet = _gpnet(space, kernel, likelihood, num_latents=3, beta0=1.0, xi=0.1, lr=0.05)
    results = gpnet.fit(X, labels, 150, batch_size=30, num_measurement=16, seed=1)
    assert all(torch.isfinite(r.loss) for r in results)
    Xt = space.random(200, generator=torch.Generator().manual_seed(3))
    truth = (Xt[:, 0] / (2 * math.pi / 3)).floor().clamp(max=2).long()
    mean, _ = gpnet.predict(Xt)
    assert mean.shape == (3, 200)
    assert (mean.argmax(0) == truth).double().mean() > 0.9


def test_training_is_seeded_and_leaves_the_global_generator_alone():
    space, kernel, X, y = _circle_problem()
    runs = []
    for _ in range(2):
        torch.manual_seed(123)
        gpnet = _gpnet(space, kernel, _gaussian(0.05), lr=0.05)
        gpnet.fit(X, y, 5, batch_size=4, num_measurement=6, seed=7)
        runs.append((gpnet.network.weight_mean.detach().clone(), torch.rand(1)))
    assert torch.equal(runs[0][0], runs[1][0]) and torch.equal(runs[0][1], runs[1][1])


def test_a_cpu_fit_gives_the_allocators_freed_memory_back_every_trim_every_iterations(
    monkeypatch,
):
    # a fit of 10,000 iterations on UCI Concrete (927 points, M = 100) grew to 7.3 GB resident:
    # glibc kept the freed matrices of every iteration in fragmented heaps, though no tensor
    # outlived its iteration; trimmed every 100 iterations it stayed near 0.44 GB
    from manibo import _memory
    from manibo.models.gpnet import trainer

    assert _memory.TRIM_EVERY == 100
    assert _memory.release_freed_memory() is sys.platform.startswith("linux")  # glibc here
    space, kernel, X, y = _circle_problem()
    gpnet = _gpnet(space, kernel, _gaussian(0.05), lr=0.05)
    calls = []
    monkeypatch.setattr(trainer, "release_freed_memory", lambda: calls.append(gpnet.iteration))
    gpnet.fit(X, y, 250, batch_size=4, num_measurement=6)
    assert calls == [100, 200]


def test_minibatch_training_never_builds_anything_of_size_n_squared():
    """2e5 points in R^2: an N x N matrix would need 320 GB; each iteration touches n + M points."""
    box = Box([-1.0, -1.0], [1.0, 1.0])
    X = box.random(200_000, generator=torch.Generator().manual_seed(0))
    y = X[:, :1].sin()
    kernel = ScaleKernel(RBFKernel(ard_num_dims=2)).double()
    network = BayesianLinearNetwork(feature_map(kernel, 16, trainable=True, detach=True))
    gpnet = GPNet(box, network, kernel, _gaussian(0.1), lr=0.01)
    results = gpnet.fit(X, y, 3, batch_size=64, num_measurement=32)
    assert len(results) == 3 and gpnet.iteration == 3
    mean, var = gpnet.predict(X[:10_000], chunk_size=2048)
    assert mean.shape == var.shape == (1, 10_000)


def test_bad_configurations_get_clear_errors():
    space, kernel, X, y = _circle_problem()
    for beta0 in (0.0, 1.5, -1.0):
        with pytest.raises(ConfigurationError, match=r"`beta0` must lie in \(0, 1\]"):
            _gpnet(space, kernel, beta0=beta0)
    with pytest.raises(ConfigurationError, match="`lr`"):
        _gpnet(space, kernel, lr=0.0)
    with pytest.raises(ConfigurationError, match="num_classes=2"):
        _gpnet(space, kernel, SoftmaxLikelihood(num_features=3, num_classes=3), num_latents=2)
    with pytest.raises(ConfigurationError, match="one latent"):
        _gpnet(space, kernel, BernoulliLikelihood(), num_latents=2)
    with pytest.raises(ConfigurationError, match="network"):
        GPNet(space, torch.nn.Linear(2, 2), kernel)
    gpnet = _gpnet(space, kernel, _gaussian(0.05))
    gpnet.to(X)
    off = torch.full((4, 1), 7.5, dtype=torch.float64)  # angles beyond 2 pi: off the circle
    with pytest.raises(InputDataError, match="`X_M` holds points off Circle"):
        gpnet.step(X, y, off, len(X))
    with pytest.raises(InputDataError, match="`X_M` must have shape"):
        gpnet.step(X, y, X[:4].reshape(2, 2, 1), len(X))
    with pytest.raises(InputDataError, match=r"`y_n` must have shape \(16, 1\)"):
        gpnet.step(X, y[:, 0], X[:4], len(X))
    with pytest.raises(ConfigurationError, match="num_data"):
        gpnet.step(X, y, X[:4], 3)
    with pytest.raises(InputDataError, match="move it with"):
        gpnet.step(X.float(), y.float(), X[:4].float(), len(X))
    sphere_net = _gpnet(Sphere(2), ScaleKernel(GeometricMaternKernel(Sphere(2), num_levels=3)))
    with pytest.raises(InputDataError, match="`train_X` holds points off Sphere"):
        sphere_net.fit(2 * Sphere(2).random(5), torch.zeros(5, 1), 1)
    bernoulli = _gpnet(space, kernel, BernoulliLikelihood())
    with pytest.raises(InputDataError, match=r"labels in \{0, 1\}"):
        bernoulli.fit(X, y[:, 0], 1)
