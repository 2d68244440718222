"""GPNet's prior hyperparameters by exact marginal likelihood on a random subset (as officially)."""

from __future__ import annotations

import copy

import torch
from gpytorch.kernels import Kernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.models.exact_gp import exact_gp
from manibo.spaces.base import Space


def pretrain_hyperparameters(
    space: Space,
    kernel: Kernel,
    train_X: Tensor,
    train_Y: Tensor,
    max_points: int = 1000,
    seed: int = 0,
) -> tuple[ScaleKernel, GaussianLikelihood]:
    """Fit ``ScaleKernel(kernel)`` and a Gaussian noise by exact marginal likelihood on a subset.

    Uses manibo's exact GP (:func:`~manibo.models.exact_gp.exact_gp`: standardised outcomes,
    hyperpriors, L-BFGS with restarts) on a random subset, then expresses the outputscale and the
    noise in the units of ``train_Y``. The official GPNet code pretrains this way (on at most 1000
    points) and then keeps the hyperparameters fixed (``hyper_lr = 0``).

    Args:
        space: the space of the inputs.
        kernel: the base kernel (not wrapped in a ``ScaleKernel``); it is fitted in place.
        train_X: inputs ``(N, *point_shape)``.
        train_Y: observations ``(N, 1)``.
        max_points: size of the subset (cost grows as its cube).
        seed: seed of the subset.

    Returns:
        ``(prior, likelihood)``: the fitted ``ScaleKernel`` and ``GaussianLikelihood`` (copies).
    """
    if isinstance(max_points, bool) or int(max_points) < 2:
        raise ConfigurationError(f"`max_points` must be an integer >= 2, got {max_points!r}.")
    N = train_X.shape[0]
    rows = torch.randperm(N, generator=torch.Generator().manual_seed(int(seed)))[: int(max_points)]
    rows = rows.to(train_X.device)
    model = exact_gp(space, train_X[rows], train_Y[rows], kernel)
    scale = model.outcome_transform.stdvs.detach().reshape(()) ** 2
    prior = copy.deepcopy(model.covar_module)
    likelihood = copy.deepcopy(model.likelihood)
    with torch.no_grad():
        prior.outputscale = prior.outputscale * scale
        likelihood.noise = likelihood.noise * scale
    return prior, likelihood
