"""GPNet's pretrained prior: kernel, noise and constant mean by exact marginal likelihood."""

import numpy as np
import pytest
import torch
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import RBFKernel
from gpytorch.likelihoods import GaussianLikelihood

from manibo.exceptions import ConfigurationError
from manibo.kernels import GeometricMaternKernel
from manibo.models.gpnet import pretrain_hyperparameters
from manibo.models.gpnet.pretrain import rescale_noise
from manibo.spaces import Box, Sphere


def _cap_data(n=25, seed=0):
    """Points on a cap of S² around the north pole and a smooth function of them."""
    space = Sphere(2)
    gen = torch.Generator().manual_seed(seed)
    X = space.random(n, generator=gen)
    X = torch.nn.functional.normalize(X + torch.tensor([0.0, 0.0, 1.5], dtype=X.dtype), dim=-1)
    Y = torch.sin(3 * X[:, :1]) + X[:, 1:2] ** 2 + 0.01 * torch.randn(n, 1, generator=gen)
    return space, X, Y.to(X.dtype)


def test_the_mean_is_the_generalised_least_squares_constant_of_the_fitted_prior():
    """At the marginal likelihood's optimum the constant mean is 1'K⁻¹y / 1'K⁻¹1 for the fitted
    kernel and noise (stationarity in the mean): checked with NumPy."""
    space, X, Y = _cap_data()
    Y = Y + 4.0
    fitted = pretrain_hyperparameters(space, GeometricMaternKernel(space, nu=2.5), X, Y)
    with torch.no_grad():
        noise = float(fitted.likelihood.noise)
        K = fitted.kernel(X).to_dense().numpy() + noise * np.eye(len(X))
    ones, y = np.ones(len(X)), Y.numpy()[:, 0]
    gls = ones @ np.linalg.solve(K, y) / (ones @ np.linalg.solve(K, ones))
    assert fitted.mean.shape == (1,)
    assert abs(float(fitted.mean) - gls) < 5e-3 * float(Y.std())  # L-BFGS's tolerance
    assert sorted(fitted.rows.tolist()) == list(range(len(X)))  # 25 <= 1000: every point


@pytest.mark.parametrize("shift, scale", [(3.0, 1.0), (-2.0, 10.0)])
def test_an_affine_change_of_units_moves_the_prior_with_it(shift, scale):
    """Targets a + bY: outputscale and noise times b², mean a + b·mean (units are standardised
    away inside, so the fits agree up to the optimiser's tolerance)."""
    space, X, Y = _cap_data()
    base = pretrain_hyperparameters(space, GeometricMaternKernel(space, nu=2.5), X, Y)
    moved = pretrain_hyperparameters(
        space, GeometricMaternKernel(space, nu=2.5), X, shift + scale * Y
    )
    with torch.no_grad():
        ratio = float(moved.kernel.outputscale / base.kernel.outputscale)
        noise = float(moved.likelihood.noise / base.likelihood.noise)
    assert ratio == pytest.approx(scale**2, rel=1e-3)
    assert noise == pytest.approx(scale**2, rel=1e-2)
    assert float(moved.mean) == pytest.approx(shift + scale * float(base.mean), abs=1e-3 * scale)


def test_a_subset_is_drawn_for_large_data_and_bad_sizes_are_refused():
    box = Box([-1.0, -1.0], [1.0, 1.0])
    X = box.random(60, generator=torch.Generator().manual_seed(1))
    Y = X[:, :1].sin()
    fitted = pretrain_hyperparameters(box, RBFKernel(ard_num_dims=2), X, Y, max_points=20, seed=3)
    assert fitted.rows.shape == (20,) and len(set(fitted.rows.tolist())) == 20
    with pytest.raises(ConfigurationError, match="max_points"):
        pretrain_hyperparameters(box, RBFKernel(ard_num_dims=2), X, Y, max_points=1)


@pytest.mark.parametrize("factor", [1 - 2**-52, 1 - 1e-15, 0.37, 1.0, 3.3])
@pytest.mark.parametrize("raw", [-60.0, -5.0, 2.0])
def test_rescaled_noise_stays_inside_its_rescaled_bound(factor, raw):
    # A noise at its bound (raw -60: noise-free data) scaled by a factor just below 1: the bound
    # 1e-6 * factor rounded to float32 by GPyTorch's GreaterThan lies above the scaled noise (a BO
    # run of GPNet on Styblinski-Tang stopped there at 61 points).
    likelihood = GaussianLikelihood(noise_constraint=GreaterThan(1e-6)).double()
    likelihood.noise_covar.raw_noise.data.fill_(raw)
    bound = likelihood.noise_covar.raw_noise_constraint.lower_bound.clone()
    excess = (likelihood.noise - bound).detach()
    with torch.no_grad():
        rescale_noise(likelihood, torch.tensor(factor, dtype=torch.float64))
    new_bound = likelihood.noise_covar.raw_noise_constraint.lower_bound
    assert new_bound.dtype == torch.float64 and float(new_bound) == float(bound * factor)
    noise = likelihood.noise.detach()
    assert bool((noise >= new_bound).all())
    assert torch.allclose(noise - new_bound, excess * factor, rtol=1e-12, atol=1e-300)
    assert torch.isfinite(likelihood.noise_covar.raw_noise).all()  # -inf would give NaN gradients
    likelihood.noise = noise  # GPyTorch's checked setter accepts the value
