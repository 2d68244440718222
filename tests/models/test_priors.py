"""The default priors follow their model to another dtype and device, samples included."""

import pytest
import torch

from manibo.models import build_surrogate
from manibo.models.priors import lengthscale_prior, noise_prior, outputscale_prior
from manibo.spaces import Sphere


@pytest.mark.parametrize("make", [lengthscale_prior, outputscale_prior, noise_prior])
def test_prior_samples_follow_to(make, device="cpu"):
    prior = make().to(device=device, dtype=torch.float64)
    sample = prior.sample(torch.Size([3]))
    assert sample.dtype == torch.float64
    assert sample.device.type == torch.device(device).type
    assert torch.isfinite(prior.log_prob(sample)).all()


def test_priors_of_a_surrogate_sample_where_its_data_are(device="cpu"):
    """BoTorch's fitting restarts a failed attempt from prior samples (``sample_all_priors``); a
    sample made elsewhere than the hyperparameter it replaces stops the fit on CUDA."""
    space = Sphere(2)
    X = space.random(12, generator=torch.Generator().manual_seed(0)).to(device)
    Y = X[:, :1] ** 2
    model = build_surrogate("matern", space, X, Y)
    priors = list(model.named_priors())
    assert len(priors) == 3
    for name, _, prior, _, _ in priors:
        sample = prior.sample()
        assert (sample.dtype, sample.device) == (X.dtype, X.device), name
