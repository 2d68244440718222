"""GPNet's prior by exact marginal likelihood on a random subset (as officially), and its mean."""

from __future__ import annotations

import copy
from typing import NamedTuple

import torch
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import Kernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.models.exact_gp import exact_gp
from manibo.spaces.base import Space


class PretrainedPrior(NamedTuple):
    """The prior and likelihood fitted by :func:`pretrain_hyperparameters`.

    Attributes:
        kernel: the fitted ``ScaleKernel`` (a copy), in the units of the targets.
        likelihood: the fitted ``GaussianLikelihood`` (a copy), in the units of the targets.
        mean: the prior's constant mean fitted with them, shape ``(1,)``, in the units of the
            targets. GPNet's prior has mean zero, so subtract it from the targets before training
            and add it back to the predictions.
        rows: the indices of the subset they were fitted on, shape ``(min(N, max_points),)``.
    """

    kernel: ScaleKernel
    likelihood: GaussianLikelihood
    mean: Tensor
    rows: Tensor


def pretrain_hyperparameters(
    space: Space,
    kernel: Kernel,
    train_X: Tensor,
    train_Y: Tensor,
    max_points: int = 1000,
    seed: int = 0,
) -> PretrainedPrior:
    """Fit ``ScaleKernel(kernel)``, a constant mean and a Gaussian noise by exact marginal
    likelihood on a subset.

    Uses manibo's exact GP (:func:`~manibo.models.exact_gp.exact_gp`: standardised outcomes,
    hyperpriors, L-BFGS with restarts) on a random subset, then expresses the outputscale, the
    noise and the mean in the units of ``train_Y``. The official GPNet code pretrains the kernel
    and the noise this way (on at most 1000 points) and then keeps them fixed
    (``hyper_lr = 0``).

    The constant mean matters where the data do not cover the space: Bayesian optimisation
    gathers its points where the objective is low, so the objective's average over the space lies
    well above the average of the observations, and a zero-mean prior on centred targets would
    revert to the latter away from the data.

    Args:
        space: the space of the inputs.
        kernel: the base kernel (not wrapped in a ``ScaleKernel``); it is fitted in place.
        train_X: inputs ``(N, *point_shape)``.
        train_Y: observations ``(N, 1)``.
        max_points: size of the subset (cost grows as its cube).
        seed: seed of the subset.

    Returns:
        A :class:`PretrainedPrior` ``(kernel, likelihood, mean, rows)``.
    """
    if isinstance(max_points, bool) or int(max_points) < 2:
        raise ConfigurationError(f"`max_points` must be an integer >= 2, got {max_points!r}.")
    N = train_X.shape[0]
    rows = torch.randperm(N, generator=torch.Generator().manual_seed(int(seed)))[: int(max_points)]
    rows = rows.to(train_X.device)
    model = exact_gp(space, train_X[rows], train_Y[rows], kernel)
    transform = model.outcome_transform
    std = transform.stdvs.detach().reshape(())
    prior = copy.deepcopy(model.covar_module)
    likelihood = copy.deepcopy(model.likelihood)
    with torch.no_grad():
        prior.outputscale = prior.outputscale * std**2
        # the noise's lower bound is in standardised units: rescale it with the noise, or a noise
        # at its bound (noise-free data) would leave the constraint when std < 1
        bound = likelihood.noise_covar.raw_noise_constraint.lower_bound * std**2
        noise = likelihood.noise * std**2
        likelihood.noise_covar.register_constraint("raw_noise", GreaterThan(float(bound)))
        likelihood.noise = noise
        constant = model.mean_module.constant.detach().reshape(1)
        mean = (transform.means.detach().reshape(1) + std * constant).clone()
    return PretrainedPrior(prior, likelihood, mean, rows)
