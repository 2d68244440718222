"""Posterior marginals in chunks equal the joint posterior's."""

import torch
from botorch.models import SingleTaskGP

from manibo.models.marginals import posterior_marginals


def test_marginals_in_chunks_are_the_joint_posteriors_diagonal():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(20, 2, generator=gen, dtype=torch.float64)
    model = SingleTaskGP(x, x.sin().sum(-1, keepdim=True)).eval()
    test = torch.randn(25, 2, generator=gen, dtype=torch.float64)
    for noise in (False, True):
        mean, variance = posterior_marginals(model, test, observation_noise=noise, chunk=7)
        with torch.no_grad():
            joint = model.posterior(test, observation_noise=noise)
        assert mean.shape == variance.shape == (25,)
        assert not mean.requires_grad and not variance.requires_grad
        assert torch.allclose(mean, joint.mean.squeeze(-1), atol=1e-10)
        assert torch.allclose(variance, joint.variance.squeeze(-1), atol=1e-10)
