"""The sample-based posterior: shapes BoTorch expects, the registered sampler, base samples shared
across t-batches, deterministic moments, observation noise, and errors."""

import pytest
import torch
from botorch.sampling import IIDNormalSampler, SobolQMCNormalSampler
from botorch.sampling.get_sampler import get_sampler

from manibo.exceptions import InputDataError
from manibo.models.adgp import ActivatedDeepGP, ActivatedDGPPosterior
from manibo.models.adgp.posterior import get_activated_dgp_sampler


def _posterior(X, observation_noise=False, units=6):
    network = ActivatedDeepGP(X.shape[-1], num_units=units, seed=0, dtype=X.dtype, device=X.device)
    network.requires_grad_(False)
    bias = torch.tensor([1.5], dtype=X.dtype, device=X.device)
    weights = torch.tensor([[2.0]], dtype=X.dtype, device=X.device)
    return ActivatedDGPPosterior(network, X, weights, bias, observation_noise)


def _X(*shape, dtype=torch.float64, device="cpu"):
    gen = torch.Generator().manual_seed(0)
    return torch.randn(*shape, generator=gen, dtype=torch.float64).to(device, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sample_shapes_and_sampler(dtype, device="cpu"):
    X = _X(4, 3, 2, dtype=dtype, device=device)  # batch 4, q = 3, D = 2
    posterior = _posterior(X)
    K, G = posterior.network.num_point_normals(), posterior.network.num_shared_normals()
    assert posterior.base_sample_shape == torch.Size([4, 3 * K + G])
    assert posterior._extended_shape(torch.Size([5])) == torch.Size([5, 4, 3, 1])
    assert posterior.rsample().shape == (1, 4, 3, 1)
    assert posterior.rsample(torch.Size([2, 5])).shape == (2, 5, 4, 3, 1)
    sampler = get_sampler(posterior, torch.Size([8]), seed=0)
    assert isinstance(sampler, SobolQMCNormalSampler)
    samples = sampler(posterior)
    assert samples.shape == (8, 4, 3, 1) and samples.dtype == dtype
    assert samples.device.type == torch.device(device).type
    assert torch.equal(samples, sampler(posterior))  # fixed base samples: deterministic
    assert posterior.mean.shape == posterior.variance.shape == (4, 3, 1)
    assert float(posterior.variance.min()) > 0


def test_a_candidate_gets_the_same_samples_in_every_t_batch():
    X = _X(3, 1, 2)
    X[2] = X[0]
    samples = get_sampler(_posterior(X), torch.Size([16]), seed=1)(_posterior(X))
    assert torch.equal(samples[:, 0], samples[:, 2])
    assert not torch.equal(samples[:, 0], samples[:, 1])


def test_samples_are_affine_in_the_outcome_transform_and_noise_adds_the_likelihood():
    """All-zero normals give the network's forward pass (in data units); with observation noise,
    a unit noise normal moves each sample by scale * sqrt(noise)."""
    X = _X(1, 5, 2)
    latent, noisy = _posterior(X), _posterior(X, observation_noise=True)
    K = noisy.network.num_point_normals(observation_noise=True)
    base = torch.zeros(torch.Size([1]) + noisy.base_sample_shape, dtype=torch.float64)
    base[..., K - 1 : 5 * K : K] = 1.0  # the noise normal of each of the 5 points
    with torch.no_grad():
        forward = 1.5 + 2.0 * latent.network.network(X)
        zero = torch.zeros(torch.Size([1]) + latent.base_sample_shape, dtype=torch.float64)
        assert torch.allclose(latent.rsample_from_base_samples(torch.Size([1]), zero)[0], forward)
        shifted = noisy.rsample_from_base_samples(torch.Size([1]), base)[0]
        assert torch.allclose(shifted - forward, 2.0 * noisy.network.noise.sqrt().expand(1, 5, 1))


def test_moments_do_not_depend_on_what_was_asked_before():
    """The moments are those of 256 Sobol samples with seed 0 drawn afresh for this posterior,
    whatever shapes and dtypes the (kept) moment sampler served before."""
    X = _X(4, 3, 2)
    expected = SobolQMCNormalSampler(torch.Size([256]), seed=0)(_posterior(X))
    for earlier in (_X(1, 3, 2), _X(2, 2, 3, 2), _X(4, 3, 2, dtype=torch.float32)):
        _ = _posterior(earlier).mean
        posterior = _posterior(X)
        assert torch.equal(posterior.mean, expected.mean(0))
        assert torch.equal(posterior.variance, expected.var(0))


def test_iid_sampler_beyond_the_sobol_dimension_limit():
    posterior = _posterior(_X(1, 400, 60), units=50)  # 400 * 61 + 61 * 50 * ... > 21201
    assert posterior.base_sample_shape[-1] > 21201
    assert isinstance(get_activated_dgp_sampler(posterior, torch.Size([2])), IIDNormalSampler)


def test_errors():
    X = _X(2, 3, 2)
    posterior = _posterior(X)
    with pytest.raises(InputDataError, match="sample_shape \\+ base_sample_shape"):
        posterior.rsample_from_base_samples(torch.Size([2]), torch.zeros(2, 5, dtype=torch.float64))
    base = torch.randn(torch.Size([2]) + posterior.base_sample_shape, dtype=torch.float64)
    with pytest.raises(InputDataError, match="differs across t-batches"):
        posterior.rsample_from_base_samples(torch.Size([2]), base)
