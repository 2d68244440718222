"""BoTorch works with every registered space.

SingleTaskGP fits, and qLogNEI evaluates on b x q x d with gradients.
"""

import pytest
import torch
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.kernels import ScaleKernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from registry import SPACES, surrogate_kernel


@pytest.mark.parametrize("name", sorted(SPACES))
def test_single_task_gp_and_qlognei(name):
    space = SPACES[name]()
    gen = torch.Generator().manual_seed(0)
    X = space.random(15, generator=gen)
    anchor = X[0]
    Y = -space.distance(X, anchor).unsqueeze(-1) + 0.01 * torch.randn(
        15, 1, generator=gen, dtype=X.dtype
    )
    model = SingleTaskGP(X, Y, covar_module=ScaleKernel(surrogate_kernel(space)))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    acqf = qLogNoisyExpectedImprovement(
        model, X_baseline=X, sampler=SobolQMCNormalSampler(torch.Size([32]), seed=0)
    )
    candidates = space.random(4 * 3, generator=gen).reshape(4, 3, *space.point_shape)
    candidates.requires_grad_(not space.is_discrete)
    values = acqf(candidates)
    assert values.shape == (4,) and torch.isfinite(values).all()
    if not space.is_discrete:
        values.sum().backward()
        assert candidates.grad is not None and torch.isfinite(candidates.grad).all()
        assert candidates.grad.abs().sum() > 0
    posterior = model.posterior(candidates.detach())
    assert posterior.mean.shape == (4, 3, 1)
    assert (posterior.variance > 0).all()
