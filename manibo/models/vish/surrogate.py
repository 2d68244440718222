"""The ``"vish"`` surrogate of the registry: VISH with the geometric Matérn kernel on a sphere."""

from __future__ import annotations

import torch
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.priors import GammaPrior, LogNormalPrior
from torch import Tensor

from manibo.kernels.spectral import GeometricMaternKernel
from manibo.models.exact_gp import (
    SURROGATE_TRUNCATION_TOL,
    lengthscale_prior,
    validate_training_data,
)
from manibo.models.registry import register_surrogate
from manibo.models.vish.fit import fit_vish
from manibo.models.vish.model import VISHModel
from manibo.spaces.sphere import Sphere

DEFAULT_NUM_FEATURES = 400
"""Default feature budget: 20 levels on S², levels 0..5 (378 harmonics) on S⁵."""


def _not_a_sphere(space) -> str | None:
    if isinstance(space, Sphere) and space.dim >= 2:
        return None
    return (
        f"the 'vish' surrogate needs a Sphere of dimension >= 2, got {space!r}; use 'matern' "
        "for other spaces."
    )


@register_surrogate("vish", unsupported=_not_a_sphere)
def vish_surrogate(
    space,
    train_X: Tensor,
    train_Y: Tensor,
    num_features: int = DEFAULT_NUM_FEATURES,
    nu: float = 2.5,
    maxiter: int = 100,
    chunk_size: int = 8192,
) -> VISHModel:
    """VISH on a sphere with the geometric Matérn kernel (``nu = inf``: heat), fitted on the cache.

    The priors are those of the exact ``"matern"`` surrogate (lengthscale, variance, noise), and
    the kernel neglects at most 1e-4 of its spectral mass; the features carry the lowest levels that
    ``num_features`` buys, and the rest of the prior variance is the residual. Outcomes are
    standardised.

    Args:
        space: a :class:`~manibo.spaces.Sphere` of dimension ``>= 2``.
        train_X: points on the sphere, shape ``(n, dim + 1)``.
        train_Y: outcomes, shape ``(n, 1)``.
        num_features: feature budget ``M``.
        nu: Matérn smoothness (``math.inf`` for the heat kernel).
        maxiter: L-BFGS iterations on the cache.
        chunk_size: rows per chunk of the pass.
    """
    validate_training_data(space, train_X, train_Y)
    kernel = GeometricMaternKernel(
        space,
        nu=nu,
        truncation_tol=SURROGATE_TRUNCATION_TOL,
        lengthscale_prior=lengthscale_prior(),
    )
    covar = ScaleKernel(kernel, outputscale_prior=GammaPrior(2.0, 0.15))
    likelihood = GaussianLikelihood(
        noise_prior=LogNormalPrior(loc=-4.0, scale=1.0), noise_constraint=GreaterThan(1e-6)
    ).to(torch.float64)
    return fit_vish(
        train_X,
        train_Y,
        covar,
        num_features,
        likelihood=likelihood,
        chunk_size=chunk_size,
        maxiter=maxiter,
    )
