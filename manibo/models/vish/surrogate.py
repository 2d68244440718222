"""The ``"vish"`` surrogate of the registry: VISH with the geometric Matérn kernel on a sphere."""

from __future__ import annotations

import torch
from botorch.models.transforms.input import InputTransform
from botorch.utils.types import DEFAULT
from torch import Tensor

from manibo.kernels.spectral import GeometricMaternKernel
from manibo.models.exact_gp import SURROGATE_TRUNCATION_TOL, validate_training_data
from manibo.models.priors import gaussian_likelihood, lengthscale_prior, scaled_kernel
from manibo.models.registry import register_surrogate
from manibo.models.transforms import OutcomeTransformArg, fitted_outcome_transform
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


@register_surrogate(
    "vish",
    unsupported=_not_a_sphere,
    unsupported_features={
        "train_Yvar": "VISH fits one noise variance shared by all observations; the exact "
        "'matern', 'heat', 'euclidean' and 'chart' surrogates take known noise variances."
    },
    check_options={"maxiter": 1},
)
def vish_surrogate(
    space,
    train_X: Tensor,
    train_Y: Tensor,
    num_features: int = DEFAULT_NUM_FEATURES,
    nu: float = 2.5,
    maxiter: int = 100,
    chunk_size: int = 8192,
    outcome_transform: OutcomeTransformArg = DEFAULT,
    input_transform: InputTransform | None = None,
) -> VISHModel:
    """VISH on a sphere with the geometric Matérn kernel (``nu = inf``: heat), fitted on the cache.

    The priors are those of the exact ``"matern"`` surrogate (:mod:`manibo.models.priors`), and
    the kernel neglects at most 1e-4 of its spectral mass; the features carry the lowest levels that
    ``num_features`` buys, and the rest of the prior variance is the residual.

    Args:
        space: a :class:`~manibo.spaces.Sphere` of dimension ``>= 2``.
        train_X: points on the sphere, shape ``(n, dim + 1)``.
        train_Y: outcomes, shape ``(n, 1)`` (several columns: through
            :func:`~manibo.models.build_surrogate`, one model per column).
        num_features: feature budget ``M``.
        nu: Matérn smoothness (``math.inf`` for the heat kernel).
        maxiter: L-BFGS iterations on the cache.
        chunk_size: rows per chunk of the pass.
        outcome_transform: BoTorch outcome transform (default ``Standardize(m=1)``; None: none).
        input_transform: BoTorch input transform whose outputs lie on the sphere (for example
            :class:`~manibo.models.transforms.SpaceIsometry`), or None.
    """
    validate_training_data(space, train_X, train_Y, max_outputs=1)
    outcome_transform, Y = fitted_outcome_transform(train_Y, outcome_transform)
    kernel = GeometricMaternKernel(
        space,
        nu=nu,
        truncation_tol=SURROGATE_TRUNCATION_TOL,
        lengthscale_prior=lengthscale_prior(space.length_unit),
    )
    return fit_vish(
        train_X,
        Y,
        scaled_kernel(kernel),
        num_features,
        likelihood=gaussian_likelihood().to(torch.float64),
        chunk_size=chunk_size,
        maxiter=maxiter,
        outcome_transform=outcome_transform,
        input_transform=input_transform,
    )
