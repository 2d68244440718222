"""GPNet's prior by exact marginal likelihood on a random subset (as officially), and its mean."""

from __future__ import annotations

import copy
from typing import NamedTuple

import torch
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import Kernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.utils.transforms import inv_softplus
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


def rescale_noise(likelihood: GaussianLikelihood, factor: Tensor) -> None:
    """Multiply a likelihood's noise and its lower bound by ``factor`` (> 0), in place.

    The noise's lower bound is in the units of the targets, so it scales with the noise; else a
    noise at its bound (noise-free data) would leave the constraint when ``factor < 1``. The new
    bound is kept in the noise's dtype (GPyTorch's constructor would round it to the default
    dtype, float32: up by 2e-22 for a bound of 1e-6 at ``factor = 1 - 2^-52``, which put a noise
    at its bound below it), and the noise is set through its raw value from its excess over the
    bound, which the scaling keeps non-negative.

    Args:
        likelihood: a ``GaussianLikelihood`` whose noise has a ``GreaterThan`` constraint with
            the softplus transform.
        factor: positive scalar tensor.
    """
    noise_covar = likelihood.noise_covar
    bound = noise_covar.raw_noise_constraint.lower_bound
    excess = (likelihood.noise - bound).clamp_min(0) * factor
    new_bound = (bound * factor).to(excess)
    constraint = GreaterThan(float(new_bound))
    constraint.lower_bound = new_bound.clone()
    noise_covar.register_constraint("raw_noise", constraint)
    tiny = torch.finfo(excess.dtype).tiny  # a raw value of -inf would give NaN gradients
    noise_covar.raw_noise.copy_(inv_softplus(excess.clamp_min(tiny)))


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
        rescale_noise(likelihood, std**2)
        constant = model.mean_module.constant.detach().reshape(1)
        mean = (transform.means.detach().reshape(1) + std * constant).clone()
    return PretrainedPrior(prior, likelihood, mean, rows)
