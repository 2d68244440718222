"""Posterior means and variances of many points, without their joint covariance."""

from __future__ import annotations

import torch
from botorch.models.model import Model
from torch import Tensor

CHUNK = 1000
"""Points per posterior call: a joint posterior of ``n`` points builds an ``n x n`` covariance
(80 GB at 100,000 points in float64); chunks of 1000 keep it at 8 MB."""


def posterior_marginals(
    model: Model, X: Tensor, observation_noise: bool = False, chunk: int = CHUNK
) -> tuple[Tensor, Tensor]:
    """The posterior mean and variance of a one-output ``model`` at each point, without gradients.

    Args:
        model: a BoTorch model with one output.
        X: points, shape ``n x d`` (as the model takes them).
        observation_noise: add the model's observation noise to the variance.
        chunk: points per posterior call.

    Returns:
        ``(mean, variance)``, each of shape ``n``.
    """
    with torch.no_grad():
        parts = [model.posterior(x, observation_noise=observation_noise) for x in X.split(chunk)]
        mean = torch.cat([p.mean.reshape(-1) for p in parts])
        variance = torch.cat([p.variance.reshape(-1) for p in parts])
    return mean, variance
