"""GPNet as a BoTorch model: the posterior contract, the registered surrogate, the BO loop."""

import copy

import pytest
import torch
from botorch.acquisition import qLogNoisyExpectedImprovement
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.models.transforms.outcome import Standardize
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.kernels import ScaleKernel
from gpytorch.likelihoods import BernoulliLikelihood, GaussianLikelihood

from manibo.exceptions import ConfigurationError, InputDataError, StaleModelError
from manibo.kernels import GeometricMaternKernel, feature_map
from manibo.loop import BayesianOptimizer
from manibo.models import available_surrogates, build_surrogate
from manibo.models.gpnet import (
    BayesianLinearNetwork,
    GPNet,
    GPNetModel,
    build_network,
)
from manibo.optim import LBFGSOptions, optimize_acqf_on_space
from manibo.spaces import Box, Sphere


def _model(dtype=torch.float64, device="cpu", prior_mean=0.0):
    space = Sphere(2)
    kernel = ScaleKernel(GeometricMaternKernel(space, nu=2.5, num_levels=4)).to(dtype)
    likelihood = GaussianLikelihood().to(dtype)
    likelihood.noise = 0.1
    network = BayesianLinearNetwork(feature_map(kernel, max_features=512, detach=True))
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        network.weight_mean.copy_(torch.randn(network.weight_mean.shape, generator=gen))
        network.raw_scale_tril.add_(0.3 * torch.randn(network.raw_scale_tril.shape, generator=gen))
    gpnet = GPNet(space, network, kernel, likelihood).to(device=device, dtype=dtype)
    standardize = Standardize(m=1)
    standardize(torch.tensor([[1.0], [4.0], [7.0]], dtype=dtype, device=device))
    standardize.eval()
    model = GPNetModel(gpnet, standardize, prior_mean=prior_mean)
    return space, model.to(device=device, dtype=dtype)


@pytest.mark.parametrize("dtype, prior_mean", [(torch.float64, 0.0), (torch.float32, 0.7)])
def test_posterior_is_the_networks_joint_gaussian_in_original_units(
    dtype, prior_mean, device="cpu"
):
    """Mean ``4 + 3 (phi m + c)``: the prior mean ``c`` is in standardised units."""
    space, model = _model(dtype, device, prior_mean)
    X = space.random(6, generator=torch.Generator().manual_seed(1), dtype=dtype).to(device)
    X = X.reshape(2, 3, 3)
    posterior = model.posterior(X)
    assert posterior.mean.shape == (2, 3, 1) and posterior.mean.dtype == dtype
    assert model.num_outputs == 1 and model.batch_shape == torch.Size([])
    with torch.no_grad():
        mean, root = model.gpnet.network(X)
        std = 3.0  # Standardize of (1, 4, 7): mean 4, unbiased standard deviation 3
        jitter = model.gpnet.jitter(dtype)
        eye = torch.eye(3, dtype=dtype, device=device)
        cov = std**2 * (root[..., 0, :, :] @ root[..., 0, :, :].mT + jitter * eye)
        tol = 1e-9 if dtype == torch.float64 else 1e-3
        expected = 4.0 + std * (mean[..., 0, :] + prior_mean)
        assert torch.allclose(posterior.mean[..., 0], expected, atol=tol)
        assert torch.allclose(posterior.distribution.covariance_matrix, cov, atol=tol)
        noisy = model.posterior(X, observation_noise=True).distribution.covariance_matrix
        assert torch.allclose(noisy - cov, std**2 * 0.1 * eye, atol=tol * 10)
        given = torch.full((2, 3, 1), 0.5, dtype=dtype, device=device)
        noisy = model.posterior(X, observation_noise=given).distribution.covariance_matrix
        assert torch.allclose(noisy - cov, std**2 * 0.5 * eye, atol=tol * 10)
        weights = torch.tensor([2.0], dtype=dtype, device=device)
        scaled = model.posterior(X, posterior_transform=ScalarizedPosteriorTransform(weights))
        assert torch.allclose(scaled.mean, 2 * posterior.mean, atol=tol)
    Xg = X.clone().requires_grad_(True)
    model.posterior(Xg).mean.sum().backward()
    assert torch.isfinite(Xg.grad).all()


@torch.no_grad()
@pytest.mark.parametrize("prior_mean", [0.0, -1.3])
def test_conditioning_is_gp_conditioning_of_the_networks_joint_posterior(prior_mean):
    """The weight-space update equals Gaussian conditioning in function space: with the joint
    posterior K over test and new points (jitter included) and noise s^2 sigma^2 in data units,
    mean mu_t + K_tn (K_nn + s^2 sigma^2 I)^-1 (y - mu_n) and covariance K_tt - K_tn (...)^-1 K_nt;
    a batch of fantasies conditions each member alike (mu includes the prior mean)."""
    space, model = _model(prior_mean=prior_mean)
    gen = torch.Generator().manual_seed(3)
    X_test, X_new = space.random(4, generator=gen), space.random(3, generator=gen)
    Y_new = torch.randn(2, 3, 1, generator=gen, dtype=torch.float64) + 4.0
    conditioned = model.condition_on_observations(X_new, Y_new)
    assert conditioned.batch_shape == torch.Size([2]) and model.batch_shape == torch.Size([])
    joint = model.posterior(torch.cat([X_test, X_new]))
    mu, K = joint.mean[:, 0], joint.distribution.covariance_matrix
    s2 = 9.0  # Standardize of (1, 4, 7): unbiased variance 9
    noise = s2 * float(model.likelihood.noise) * torch.eye(3, dtype=torch.float64)
    K_tn, K_nn = K[:4, 4:], K[4:, 4:] + noise
    posterior = conditioned.posterior(X_test)
    for i in range(2):
        expected = mu[:4] + K_tn @ torch.linalg.solve(K_nn, Y_new[i, :, 0] - mu[4:])
        assert torch.allclose(posterior.mean[i, :, 0], expected, atol=1e-9)
    covariance = K[:4, :4] - K_tn @ torch.linalg.solve(K_nn, K_tn.T)
    assert torch.allclose(posterior.distribution.covariance_matrix[0], covariance, atol=1e-9)


def test_surrogate_reverts_to_the_fitted_constant_mean_away_from_its_data():
    """Points on a cap where a bowl-shaped function is low (as a BO run gathers them): far from
    the cap the surrogate predicts like the exact Matérn GP with its fitted constant mean, 3.2
    standard deviations of the observations above their average, to which a zero prior mean on
    standardised targets would revert. The outcome transform is left as fitted."""
    space = Sphere(2)
    points = space.random(3000, generator=torch.Generator().manual_seed(4))
    X, far = points[points[:, 2] > 0.6][:30], points[points[:, 2] < -0.5][:200]

    def f(x):
        return 1 - torch.exp(-4 * (1 - x[:, 2:])) + 0.1 * torch.sin(3 * x[:, :1])

    Y = f(X)
    model = build_surrogate("gpnet", space, X, Y, num_iterations=50)
    exact = build_surrogate("matern", space, X, Y)
    assert torch.allclose(model.outcome_transform.means, Y.mean(0, keepdim=True))
    with torch.no_grad():
        mean, reference = model.posterior(far).mean, exact.posterior(far).mean
    std = float(Y.std())
    assert float((mean - Y.mean()).mean()) > 2.5 * std
    assert float((mean - reference).abs().mean()) < 0.3 * std  # 0.14 (128 of its features)


def test_posterior_errors():
    space, model = _model()
    with pytest.raises(InputDataError, match="output_indices"):
        model.posterior(space.random(2), output_indices=[1])
    with pytest.raises(InputDataError, match="holds points off Sphere"):
        model.posterior(2 * space.random(2))
    gpnet = model.gpnet
    classifier = GPNet(space, gpnet.network, gpnet.kernel, BernoulliLikelihood())
    with pytest.raises(ConfigurationError, match="Gaussian likelihood and one latent"):
        GPNetModel(classifier)
    with pytest.raises(ConfigurationError, match="prior_mean"):
        GPNetModel(gpnet, prior_mean=float("nan"))
    with pytest.raises(ConfigurationError, match="unknown network"):
        build_network("resnet", space, gpnet.kernel)


def test_registered_surrogate_predicts_like_the_exact_gp_and_drives_an_acquisition():
    space = Sphere(2)
    gen = torch.Generator().manual_seed(0)
    X = space.random(30, generator=gen)
    pole = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    Y = torch.cos(2 * space.distance(X, pole)).unsqueeze(-1) + 3.0
    assert "gpnet" in available_surrogates()
    model = build_surrogate("gpnet", space, X, Y, num_iterations=150)
    exact = build_surrogate("matern", space, X, Y)
    Xt = space.random(200, generator=gen)
    with torch.no_grad():
        gap = (model.posterior(Xt).mean - exact.posterior(Xt).mean).abs().mean()
    assert gap < 0.1  # Y has standard deviation ~0.6
    acqf = qLogNoisyExpectedImprovement(
        model, X_baseline=X, sampler=SobolQMCNormalSampler(torch.Size([32]), seed=0)
    )
    candidate, value = optimize_acqf_on_space(
        acqf, space, num_restarts=2, raw_samples=32, options=LBFGSOptions(maxiter=10), seed=0
    )
    space.check(candidate)
    assert torch.isfinite(value)


def test_minibatch_training_by_default_stays_at_the_exact_posterior():
    """More points than a minibatch: the default steps keep the network at its prior's posterior.

    With Adam at 0.1 (the full-batch default) on 120 points in minibatches of 64 the posterior
    mean moved up to 0.63 from the exact GP's (targets of standard deviation ~0.7) and its sd by
    a factor of 0.49-1.51.
    """
    space = Sphere(2)
    gen = torch.Generator().manual_seed(0)
    X = space.random(120, generator=gen)
    pole = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    noise = 0.1 * torch.randn(120, generator=gen, dtype=torch.float64)
    Y = (torch.cos(2 * space.distance(X, pole)) + noise).unsqueeze(-1)
    model = build_surrogate("gpnet", space, X, Y, batch_size=64)
    exact = build_surrogate("matern", space, X, Y)
    Xt = space.random(300, generator=gen)
    with torch.no_grad():
        ours, theirs = model.posterior(Xt), exact.posterior(Xt)
        assert (ours.mean - theirs.mean).abs().max() < 0.1
        sd_ratio = ours.variance.sqrt() / theirs.variance.sqrt()
    assert 0.75 < sd_ratio.min() and sd_ratio.max() < 1.3


def test_surrogate_on_a_box_uses_random_fourier_features():
    box = Box([0.0, -1.0], [2.0, 1.0])
    X = box.random(25, generator=torch.Generator().manual_seed(0))
    Y = (X[:, :1] * 2).sin() + X[:, 1:]
    model = build_surrogate("gpnet", box, X, Y, num_iterations=60, max_features=64)
    assert model.gpnet.network.num_features == 64
    with torch.no_grad():
        assert model.posterior(X[:5]).mean.shape == (5, 1)


def test_bo_loop_runs_with_the_gpnet_surrogate():
    opt = BayesianOptimizer(
        Sphere(2),
        surrogate="gpnet",
        acquisition="logei",
        initial_design=4,
        seed=0,
        surrogate_options={"num_iterations": 30},
        num_restarts=2,
        raw_samples=16,
        optimizer_options={"maxiter": 5},
    )
    opt.run(lambda x: float(x[2]), budget=6, progress=False)
    assert len(opt.history) == 6
    Sphere(2).check(torch.tensor([e.x for e in opt.history], dtype=torch.float64))


@pytest.mark.parametrize("name", ["so3", "graph", "mesh", "product_sphere_circle"])
def test_surrogate_builds_and_predicts_on_other_spaces(name):
    from registry import SPACES

    space = SPACES[name]()
    X = space.random(12, generator=torch.Generator().manual_seed(0))
    Y = X.reshape(12, -1)[:, :1].sin()
    model = build_surrogate("gpnet", space, X, Y, num_iterations=20)
    with torch.no_grad():
        posterior = model.posterior(X[:3])
    assert posterior.mean.shape == (3, 1) and torch.isfinite(posterior.variance).all()


def test_a_fantasy_model_refuses_to_be_read_after_the_network_it_shares_changed():
    # The fantasy model keeps its conditioned weights but reads the features and noise of the
    # network it shares: after the parent took another state its mean moved by 0.56, silently.
    space, model = _model()
    X = space.random(4, generator=torch.Generator().manual_seed(2)).double()
    fantasy = model.condition_on_observations(X[:2], torch.tensor([[1.0], [2.0]]).double())
    fantasy.posterior(X)
    copied = copy.deepcopy(fantasy)  # a copy of a current fantasy model is current
    assert torch.equal(copied.posterior(X).mean, fantasy.posterior(X).mean)
    _, other = _model()
    with torch.no_grad():
        other.gpnet.likelihood.raw_noise.add_(0.5)
    model.load_state_dict(other.state_dict())
    for stale in (fantasy, copy.deepcopy(fantasy)):
        with pytest.raises(StaleModelError, match="fantasy model"):
            stale.posterior(X)
    assert model.posterior(X).mean.shape == (4, 1)  # the model itself reads its state anew
