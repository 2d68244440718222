"""Fantasy models of the activated deep GP against independent computations: with one layer, GP
conditioning of the model's predictive in function space; with hidden layers, the covariance form
of the moment-matched update from the same hidden draws; and conditioning in two steps against
conditioning at once."""

import torch

from manibo.models.adgp import ActivatedDGPModel
from manibo.models.adgp.conditioning import CONDITIONING_SAMPLES
from manibo.spaces import Sphere

SPACE = Sphere(2)


def _model(num_layers, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = SPACE.random(10, generator=g)
    Y = torch.cat([X[:, :1] - X[:, 2:] ** 2, X[:, 1:2]], dim=-1)
    model = ActivatedDGPModel(
        X, Y, num_layers=num_layers, num_units=6, network_epochs=20, elbo_epochs=5, seed=seed
    )
    with torch.enable_grad():
        return model.fit()


def _new_points(n=3, seed=5):
    g = torch.Generator().manual_seed(seed)
    X = SPACE.random(n, generator=g)
    return X, torch.randn(n, 2, generator=g, dtype=torch.float64)


def _posterior_of_v(model):
    """Whitened means mu (M, P) and covariances Sigma (P, M, M) of the last layer."""
    state = model._states()[-1]
    return state.chol.T @ state.readout, state.scale_tril @ state.scale_tril.transpose(-1, -2)


@torch.no_grad()
def test_one_layer_is_gp_conditioning_of_the_predictive():
    """f_j(x) = a(x)^T v_j + r(x): at test points, the conditioned model's latent mean and
    covariance a_t^T mu', a_t^T Sigma' a_t equal Gaussian conditioning of the joint (f_t, y) with
    Cov(y) = A Sigma A^T + diag(rho + noise), computed in function space."""
    model = _model(num_layers=1)
    X_new, Y_new = _new_points()
    conditioned = model.condition_on_observations(X_new, Y_new)
    layer, state = model.network.layers[0], model._states()[0]
    _, A_new, rho = layer.conditional_variance(X_new, state)
    X_test = SPACE.random(4, generator=torch.Generator().manual_seed(9))
    _, A_test, _ = layer.conditional_variance(X_test, state)
    mu, Sigma = _posterior_of_v(model)
    mu_c, Sigma_c = _posterior_of_v(conditioned)
    shift, scale = model._outcome_affine()
    y = (Y_new - shift) / scale
    noise = model.network.noise
    for j in range(2):
        cov_y = A_new @ Sigma[j] @ A_new.T + torch.diag(rho + noise)
        cov_ty = A_test @ Sigma[j] @ A_new.T
        expected_mean = A_test @ mu[:, j] + cov_ty @ torch.linalg.solve(
            cov_y, y[:, j] - A_new @ mu[:, j]
        )
        expected_cov = A_test @ Sigma[j] @ A_test.T - cov_ty @ torch.linalg.solve(cov_y, cov_ty.T)
        assert torch.allclose(A_test @ mu_c[:, j], expected_mean, atol=1e-10)
        assert torch.allclose(A_test @ Sigma_c[j] @ A_test.T, expected_cov, atol=1e-10)


@torch.no_grad()
def test_deep_update_is_the_moment_matched_linear_update():
    """Hidden layers: mu' = mu + Sigma Abar^T C^-1 (y - E[A mu]), Sigma' = Sigma - Sigma Abar^T
    C^-1 Abar Sigma with C = E[A Sigma A^T] + Cov(A mu) + diag(E rho + noise), from the draws the
    model uses (the covariance form; the model computes the information form)."""
    model = _model(num_layers=2)
    X_new, Y_new = _new_points()
    conditioned = model.condition_on_observations(X_new, Y_new)
    states = model._states()
    generator = torch.Generator().manual_seed(model.options["seed"])
    h = model.network._hidden_samples(X_new, CONDITIONING_SAMPLES, generator, states)
    _, A, rho = model.network.layers[-1].conditional_variance(h, states[-1])
    mu, Sigma = _posterior_of_v(model)
    mu_c, Sigma_c = _posterior_of_v(conditioned)
    shift, scale = model._outcome_affine()
    y = (Y_new - shift) / scale
    A_bar = A.mean(0)
    for j in range(2):
        fits = A @ mu[:, j]  # (S, n)
        centred = fits - fits.mean(0)
        C = (A @ Sigma[j] @ A.transpose(-1, -2)).mean(0) + centred.T @ centred / len(fits)
        C = C + torch.diag(rho.mean(0) + model.network.noise)
        gain = Sigma[j] @ A_bar.T @ torch.linalg.inv(C)
        assert torch.allclose(mu_c[:, j], mu[:, j] + gain @ (y[:, j] - fits.mean(0)), atol=1e-9)
        assert torch.allclose(Sigma_c[j], Sigma[j] - gain @ A_bar @ Sigma[j], atol=1e-9)


@torch.no_grad()
def test_one_layer_conditions_in_steps_as_at_once_and_keeps_unobserved_outputs():
    model = _model(num_layers=1)
    X_new, Y_new = _new_points(3)
    at_once = model.condition_on_observations(X_new, Y_new)
    steps = model.condition_on_observations(X_new[:2], Y_new[:2])
    steps = steps.condition_on_observations(X_new[2:], Y_new[2:])
    for a, b in zip(_posterior_of_v(at_once), _posterior_of_v(steps), strict=True):
        assert torch.allclose(a, b, atol=1e-10)
    # conditioning the subset model of output 1 leaves output 0's posterior as it was
    subset = model.subset_output([1]).condition_on_observations(X_new, Y_new[:, 1:])
    (mu, Sigma), (mu_s, Sigma_s) = _posterior_of_v(model), _posterior_of_v(subset)
    assert torch.equal(mu_s[:, 0], mu[:, 0]) and torch.equal(Sigma_s[0], Sigma[0])
    assert torch.allclose(mu_s[:, 1], _posterior_of_v(at_once)[0][:, 1], atol=1e-10)
