"""The exact geometric GP.

BoTorch's SingleTaskGP with a manibo kernel, priors that travel, and robust fitting.
"""

from __future__ import annotations

import math
import warnings

import torch
from botorch.exceptions.errors import ModelFittingError
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.outcome import Standardize
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import Kernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.priors import GammaPrior, LogNormalPrior
from linear_operator.utils.errors import NotPSDError
from torch import Tensor

from manibo._validation import check_finite, check_same_dtype_device
from manibo.exceptions import InputDataError, ManiboWarning, TruncationWarning
from manibo.kernels.defaults import matern_kernel
from manibo.kernels.spectral import GeometricMaternKernel
from manibo.models.registry import register_surrogate
from manibo.spaces.base import Space


def validate_training_data(space: Space, train_X: Tensor, train_Y: Tensor) -> None:
    """Raise ``InputDataError`` unless the training data is valid.

    ``train_X`` must hold points of ``space`` matching ``train_Y (n, 1)``.
    """
    space.check(train_X, "train_X")
    check_finite("train_Y", train_Y)
    check_same_dtype_device(train_X=train_X, train_Y=train_Y)
    n = train_X.shape[0]
    if train_Y.shape != (n, 1):
        raise InputDataError(
            f"`train_Y` must have shape ({n}, 1) to match `train_X` with {n} points, got "
            f"{tuple(train_Y.shape)}. Use `Y.reshape(-1, 1)` for one objective."
        )


def lengthscale_prior() -> LogNormalPrior:
    """A broad prior on the geodesic lengthscale.

    Median 1 (a radian on spheres), 95% in [0.14, 7].
    """
    return LogNormalPrior(loc=0.0, scale=1.0)


def fit_with_retries(model: SingleTaskGP, attempts: int = 3, seed: int = 0) -> SingleTaskGP:
    """Fit by marginal likelihood; on numerical failure restart from perturbed lengthscales.

    Numerical failures: a Cholesky that fails, BoTorch's fitting error, and a hyperparameter that
    leaves its prior's support during the optimisation.

    Returns the model; if every attempt fails it keeps the initial hyperparameters and warns. A
    :class:`~manibo.exceptions.TruncationWarning` is issued only for the fitted lengthscales, not
    for the trial values the optimiser visits on its way.
    """
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    generator = torch.Generator().manual_seed(seed)
    for attempt in range(attempts):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", category=RuntimeWarning)
                warnings.simplefilter("ignore", category=TruncationWarning)
                fit_gpytorch_mll(mll, optimizer_kwargs={"options": {"maxiter": 200}})
            _report_truncation(model)
            return model
        except (ModelFittingError, NotPSDError, RuntimeError, ValueError):
            # ValueError: GPyTorch's priors reject a value the optimiser reached (a lengthscale
            # that underflowed to 0 is outside a log-normal prior's support)
            model.load_state_dict(initial)
            if attempt + 1 < attempts:
                _perturb_lengthscales(model, generator)
    warnings.warn(
        f"marginal-likelihood fitting failed {attempts} times; "
        "keeping the initial hyperparameters.",
        ManiboWarning,
        stacklevel=2,
    )
    model.load_state_dict(initial)
    _report_truncation(model)
    return model


def _report_truncation(model: SingleTaskGP) -> None:
    for module in model.modules():
        if isinstance(module, GeometricMaternKernel):
            module.report_truncation()


def _perturb_lengthscales(model: SingleTaskGP, generator: torch.Generator) -> None:
    for module in model.modules():
        if isinstance(module, Kernel) and module.has_lengthscale:
            factor = math.exp(float(torch.randn(1, generator=generator)))
            module.lengthscale = module.lengthscale.detach() * factor


def exact_gp(
    space: Space,
    train_X: Tensor,
    train_Y: Tensor,
    kernel: Kernel,
    train_Yvar: Tensor | None = None,
    fit: bool = True,
) -> SingleTaskGP:
    """SingleTaskGP with ``ScaleKernel(kernel)``, standardised outcomes and transferable priors."""
    validate_training_data(space, train_X, train_Y)
    likelihood = None
    if train_Yvar is None:
        likelihood = GaussianLikelihood(
            noise_prior=LogNormalPrior(loc=-4.0, scale=1.0),
            noise_constraint=GreaterThan(1e-6),
        )
    covar = ScaleKernel(kernel, outputscale_prior=GammaPrior(2.0, 0.15))
    model = SingleTaskGP(
        train_X,
        train_Y,
        train_Yvar=train_Yvar,
        likelihood=likelihood,
        covar_module=covar,
        outcome_transform=Standardize(m=1),
    )
    model = model.to(train_X)
    return fit_with_retries(model) if fit else model


# Surrogates neglect at most 1e-4 of the spectral mass (the kernel's own default is 1e-6): kernel
# errors of that relative size are far below observation noise, and BO iterations need ~2.5x fewer
# levels.
SURROGATE_TRUNCATION_TOL = 1e-4


@register_surrogate("matern")
def geometric_matern_gp(
    space,
    train_X,
    train_Y,
    nu: float = 2.5,
    truncation_tol: float = SURROGATE_TRUNCATION_TOL,
    **options,
) -> SingleTaskGP:
    """Exact GP with the Matérn kernel of ``space`` (default ν = 5/2).

    The geometric Matérn kernel on compact spaces (the product manifold's on compact products);
    on a box, Matérn with one lengthscale per coordinate; on a product with a non-compact factor
    (a box, ...), the product of the factors' kernels (:func:`manibo.kernels.matern_kernel`).
    """
    kernel = matern_kernel(space, nu, truncation_tol, lengthscale_prior())
    return exact_gp(space, train_X, train_Y, kernel, **options)


@register_surrogate("heat")
def geometric_heat_gp(
    space, train_X, train_Y, truncation_tol: float = SURROGATE_TRUNCATION_TOL, **options
) -> SingleTaskGP:
    """Exact GP with the heat (diffusion) kernel of ``space``."""
    return geometric_matern_gp(
        space, train_X, train_Y, nu=math.inf, truncation_tol=truncation_tol, **options
    )
