"""The mirror-descent step against independent dense computations (NumPy, explicit inverses)."""

import math

import numpy as np
import pytest
import torch
from gpytorch.kernels import ScaleKernel

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import GeometricMaternKernel
from manibo.models.gpnet import beta_schedule, conjugate_target, tempered_prior
from manibo.models.gpnet.mirror_descent import add_jitter, gaussian_kl
from manibo.spaces import Sphere

DTYPES = [torch.float64, torch.float32]


def _tol(dtype):
    return 1e-9 if dtype == torch.float64 else 2e-3


def _problem(dtype, device, n=7, M=5, seed=0):
    space = Sphere(2)
    gen = torch.Generator().manual_seed(seed)
    X = space.random(n + M, generator=gen).to(device=device, dtype=dtype)
    kernel = ScaleKernel(GeometricMaternKernel(space, nu=1.5, num_levels=12)).to(X)
    kernel.base_kernel.lengthscale = 0.6
    kernel.outputscale = 1.7
    with torch.no_grad():
        K = add_jitter(kernel(X).to_dense(), 1e-6 if dtype == torch.float64 else 1e-4)
    y = torch.randn(1, n, generator=gen, dtype=torch.float64).to(X)
    return K, y


def _random_network_moments(P, rank, device, dtype, seed=1):
    """A rank-deficient previous network: mean (1, P), covariance R R^T (1, P, P)."""
    gen = torch.Generator().manual_seed(seed)
    root = torch.randn(1, P, rank, generator=gen, dtype=torch.float64) / math.sqrt(rank)
    mean = torch.randn(1, P, generator=gen, dtype=torch.float64)
    return mean.to(device=device, dtype=dtype), (root @ root.transpose(-1, -2)).to(device, dtype)


def _dense_gp_posterior(K, y, noise, n):
    """Exact GP posterior at the last points given the first n (NumPy, float64, explicit solve)."""
    K = K.double().cpu().numpy()
    y = y.double().cpu().numpy()[0]
    Ky = K[:n, :n] + noise * np.eye(n)
    mean = K[n:, :n] @ np.linalg.solve(Ky, y)
    cov = K[n:, n:] - K[n:, :n] @ np.linalg.solve(Ky, K[:n, n:])
    return mean, cov


@pytest.mark.parametrize("dtype", DTYPES)
def test_target_at_first_iteration_is_the_exact_gp_posterior(dtype, device="cpu"):
    n, M, noise = 7, 5, 0.09
    K, y = _problem(dtype, device, n, M)
    # the previous network is irrelevant at beta = 1 (here: rank 3 < n + M, as for a small network)
    mean, cov = _random_network_moments(n + M, 3, device, dtype)
    for num_data in (n, 40):  # the whole data set, or a batch standing for N/n copies of itself
        target_mean, target_cov = conjugate_target(K, mean, cov, y, noise, 1.0, num_data)
        assert target_mean.shape == (1, M) and target_cov.shape == (1, M, M)
        assert target_mean.dtype == dtype and target_mean.device.type == device
        ref_mean, ref_cov = _dense_gp_posterior(K, y, noise * n / num_data, n)
        tol = _tol(dtype)
        assert np.abs(target_mean[0].double().cpu().numpy() - ref_mean).max() < tol
        assert np.abs(target_cov[0].double().cpu().numpy() - ref_cov).max() < tol


def _precision_form(K, mean, cov, beta):
    """p^beta q^(1-beta) from its natural parameters, with explicit inverses (NumPy float64)."""
    K, cov, mean = (a.double().cpu().numpy() for a in (K, cov[0], mean[0]))
    precision = beta * np.linalg.inv(K) + (1 - beta) * np.linalg.inv(cov)
    K_tilde = np.linalg.inv(precision)
    return K_tilde @ ((1 - beta) * np.linalg.solve(cov, mean)), K_tilde


@pytest.mark.parametrize("beta", [0.2, 0.9])
@pytest.mark.parametrize("rank", [12, 4])
def test_tempered_prior_matches_the_precision_form(beta, rank, device="cpu"):
    dtype = torch.float64
    K, _ = _problem(dtype, device)
    mean, cov = _random_network_moments(12, rank, device, dtype)
    cov = add_jitter(cov, 1e-2)  # rank 4: invertible only thanks to the jitter (as in training)
    m_tilde, K_tilde = tempered_prior(K, mean, cov, beta)
    ref_mean, ref_cov = _precision_form(K, mean, cov, beta)
    scale = np.abs(ref_cov).max()
    assert np.abs(K_tilde[0].cpu().numpy() - ref_cov).max() < 1e-8 * scale
    assert np.abs(m_tilde[0].cpu().numpy() - ref_mean).max() < 1e-8 * max(1, np.abs(ref_mean).max())
    assert torch.equal(K_tilde, K_tilde.transpose(-1, -2))


def test_tempered_prior_at_beta_one_is_the_prior_even_for_a_singular_network():
    K, _ = _problem(torch.float64, "cpu")
    mean, cov = _random_network_moments(12, 2, "cpu", torch.float64)  # exactly singular
    m_tilde, K_tilde = tempered_prior(K, mean, cov, 1.0)
    assert torch.equal(m_tilde, torch.zeros_like(mean)) and torch.allclose(K_tilde[0], K)


def test_tempered_prior_needs_no_inverse_of_a_singular_network_covariance():
    """Rank 2 of 12, no jitter: the Sigma^-1-free form is finite, the limit of the jittered one."""
    K, _ = _problem(torch.float64, "cpu")
    mean, cov = _random_network_moments(12, 2, "cpu", torch.float64)
    m_tilde, K_tilde = tempered_prior(K, mean, cov, 0.5)
    assert torch.isfinite(K_tilde).all() and torch.isfinite(m_tilde).all()
    m_eps, K_eps = tempered_prior(K, mean, add_jitter(cov, 1e-9), 0.5)
    assert torch.allclose(K_tilde, K_eps, atol=1e-7) and torch.allclose(m_tilde, m_eps, atol=1e-7)
    # the target inherits q_t's support: almost no variance off the network's two directions
    assert float(torch.linalg.eigvalsh(K_tilde[0])[-3]) < 1e-5


def test_beta_schedule_values_and_errors():
    assert beta_schedule(1, 0.5, 3.0) == 0.5
    assert beta_schedule(5, 1.0, 0.1) == pytest.approx(1 / 1.2)
    assert beta_schedule(10_001, 0.1, 1.0) == pytest.approx(0.1 / 101)
    assert beta_schedule(7, 0.3, 0.0) == 0.3
    for bad in (0.0, -0.5, 1.5, float("nan")):
        with pytest.raises(ConfigurationError, match=r"\(0, 1\]"):
            beta_schedule(1, bad, 0.1)
    with pytest.raises(ConfigurationError, match="`xi`"):
        beta_schedule(1, 1.0, -1.0)
    with pytest.raises(ConfigurationError, match="iteration"):
        beta_schedule(0, 1.0, 0.1)


def test_bad_shapes_and_step_sizes_are_refused():
    K, y = _problem(torch.float64, "cpu")
    mean, cov = _random_network_moments(12, 3, "cpu", torch.float64)
    with pytest.raises(ConfigurationError, match=r"\(0, 1\]"):
        tempered_prior(K, mean, cov, 1.2)
    with pytest.raises(InputDataError, match=r"`cov` must have shape \(\.\.\., 12, 12\)"):
        tempered_prior(K, mean, cov[..., :11, :11], 0.5)
    with pytest.raises(InputDataError, match="`mean`"):
        tempered_prior(K, mean[..., :5], cov, 0.5)
    with pytest.raises(ConfigurationError, match="num_data"):
        conjugate_target(K, mean, cov, y, 0.1, 1.0, num_data=3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gaussian_kl_matches_torch_distributions(dtype):
    gen = torch.Generator().manual_seed(3)
    a, b = (torch.randn(2, 6, 6, generator=gen, dtype=torch.float64) for _ in range(2))
    cov_q, cov_p = a @ a.mT + 0.1 * torch.eye(6), b @ b.mT + 0.1 * torch.eye(6)
    mq, mp = torch.randn(2, 6, generator=gen, dtype=torch.float64), torch.randn(2, 6, generator=gen)
    reference = torch.distributions.kl_divergence(
        torch.distributions.MultivariateNormal(mq, cov_q),
        torch.distributions.MultivariateNormal(mp.double(), cov_p),
    )
    chol_q, chol_p = torch.linalg.cholesky(cov_q), torch.linalg.cholesky(cov_p)
    ours = gaussian_kl(*(t.to(dtype) for t in (mq, chol_q, mp.double(), chol_p)))
    assert ours.dtype == dtype
    assert torch.allclose(ours.double(), reference, rtol=1e-10 if dtype == torch.float64 else 1e-3)
