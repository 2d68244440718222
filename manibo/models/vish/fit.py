r"""Fitting VISH: choose the lift on a subsample, gather the statistics in one pass, then train the
hyperparameters on the cache.

For data on the sphere the features are the harmonics themselves and every hyperparameter (variance,
lengthscale of the Matérn/heat or chordal kernel, noise) changes the eigenvalues only: one pass,
then training on the cache. For data in :math:`\mathbb R^D` the lift :math:`[(x - c)/\ell, b]`
changes the features, so it is chosen first and then frozen:

1. :math:`c` is the mean of the inputs and :math:`\ell_j = \sqrt D\, \mathrm{sd}(x_j)` (so that a
   typical input sits about 45° from the pole), :math:`b = 1`;
2. :math:`\ell`, :math:`b` and the hyperparameters maximise the collapsed bound of a random
   subsample (``lift_sample_size`` points, statistics recomputed with autograd at every step),
   with the features of at most ``lift_num_features`` harmonics (the lowest levels), until an
   iteration gains less than the sample resolves (``lift_tolerance``);
3. the lift is frozen, the statistics of all data are gathered, and the hyperparameters are trained
   again on them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
from botorch.models.transforms.input import InputTransform
from botorch.utils.types import DEFAULT
from gpytorch.kernels import Kernel
from torch import Tensor

from manibo._validation import as_tensor_arg, check_finite
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.transforms import (
    OutcomeTransformArg,
    checked_input_transform,
    transformed_training_inputs,
)
from manibo.models.vish.collapsed import collapsed_bound
from manibo.models.vish.model import (
    DEFAULT_TOLERANCE,
    VISHModel,
    default_likelihood,
    log_prior_density,
    optimize_bound,
)
from manibo.models.vish.prior import VISHPrior
from manibo.models.vish.statistics import (
    DEFAULT_CHUNK_SIZE,
    differentiable_statistics,
    gather_statistics,
    statistics_from_chunks,
)

DEFAULT_LIFT_SAMPLE_SIZE = 3000
DEFAULT_LIFT_NUM_FEATURES = 210
"""Feature budget of the lift search (levels 0..3 for ``D = 8``): its cost per step is
``n M^2`` with autograd, so a smaller level set than the final one keeps it to seconds."""
DEFAULT_MAXITER = 100
DEFAULT_LIFT_TOLERANCE = 1e-3
"""Stopping tolerance of the lift search on the bound per point of the sample (see
:func:`fit_lift`)."""


def _check_data(X: Tensor, Y: Tensor) -> Tensor:
    as_tensor_arg("train_X", X)
    as_tensor_arg("train_Y", Y)
    check_finite("train_Y", Y)
    if X.dim() != 2 or Y.shape not in ((X.shape[0],), (X.shape[0], 1)):
        raise InputDataError(
            f"`train_X` must have shape (N, D) and `train_Y` shape (N, 1) or (N,) with the same N, "
            f"got {tuple(X.shape)} and {tuple(Y.shape)}."
        )
    if X.shape[0] < 2:
        raise InputDataError(
            f"VISH needs at least 2 observations, got {X.shape[0]}; evaluate another point first "
            "(the loop's initial design gives it at least 2)."
        )
    return Y.reshape(-1)


def initialise_lift(prior: VISHPrior, X: Tensor) -> None:
    r"""Centre the lift at the mean; :math:`\ell_j = \sqrt D\,\mathrm{sd}(x_j)`, :math:`b = 1`.

    Args:
        prior: a prior with a lift.
        X: inputs (or a sample of them), shape ``(n, D)``.
    """
    X = X.to(torch.float64)
    std = X.std(0).clamp_min(1e-12) if X.shape[0] > 1 else torch.ones_like(X[0])
    with torch.no_grad():
        prior.features.offset.copy_(X.mean(0).to(prior.features.offset))
        prior.lift.lengthscale = (math.sqrt(X.shape[-1]) * std).to(prior.features.offset)
        prior.lift.bias = 1.0


def fit_lift(
    prior: VISHPrior,
    likelihood,
    X: Tensor,
    y: Tensor,
    maxiter: int = DEFAULT_MAXITER,
    num_features: int | None = None,
    compute_dtype: torch.dtype | None = None,
    tolerance: float = DEFAULT_LIFT_TOLERANCE,
) -> None:
    """Train the lift and the hyperparameters on the collapsed bound of a (small) sample.

    The statistics are recomputed with autograd at every step, holding the ``(n, M)`` features, so
    keep ``n`` to a few thousand. The search stops when an L-BFGS-B iteration improves the bound
    per point by less than ``tolerance`` (relative where the bound per point exceeds 1 in size;
    see :func:`~manibo.models.vish.model.optimize_bound`). The default, 1e-3, is below what a
    sample resolves: fitting :math:`k` parameters to :math:`n` points raises the sample's bound by
    about :math:`k/2n` per point by chance alone (3e-3 for the :math:`D + 4 = 12` parameters of
    8 inputs on 2,000 points).

    Args:
        prior: a prior with a lift.
        likelihood: the Gaussian likelihood (its noise is trained too).
        X: sample inputs, shape ``(n, D)``.
        y: sample outcomes, shape ``(n,)``; standardised here with their own moments.
        maxiter: L-BFGS iterations at most.
        num_features: feature budget of the search (default: the prior's); a smaller budget uses
            the lowest levels only, with the same kernel and lift (shared parameters).
        compute_dtype: dtype of the sample's features and ``(n, M)`` products (default float64;
            the statistics and the bound are float64 either way).
        tolerance: stopping tolerance on the bound per point.
    """
    y = y.to(torch.float64)
    y = (y - y.mean()) / y.std().clamp_min(1e-12)
    if num_features is not None and num_features < prior.features.num_features:
        prior = VISHPrior(prior.covar_module, num_features, prior.features.offset)
        prior.to(X.device)

    def objective() -> Tensor:
        stats = differentiable_statistics(prior.features, X, y, compute_dtype)
        bound = collapsed_bound(stats, prior.scale(), likelihood.noise, prior.residual_variance())
        return bound + log_prior_density(prior.covar_module, likelihood)

    params = prior.lift_parameters() + prior.hyperparameters() + list(likelihood.parameters())
    optimize_bound(objective, params, float(len(y)), maxiter, prior, tolerance)


def fit_vish(
    train_X: Tensor,
    train_Y: Tensor,
    kernel: Kernel,
    num_features: int,
    *,
    likelihood=None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    compute_dtype: torch.dtype | None = None,
    fit_lift_on_sample: bool = True,
    lift_sample_size: int = DEFAULT_LIFT_SAMPLE_SIZE,
    lift_num_features: int = DEFAULT_LIFT_NUM_FEATURES,
    maxiter: int = DEFAULT_MAXITER,
    tolerance: float = DEFAULT_TOLERANCE,
    lift_tolerance: float = DEFAULT_LIFT_TOLERANCE,
    seed: int = 0,
    outcome_transform: OutcomeTransformArg = DEFAULT,
    input_transform: InputTransform | None = None,
) -> VISHModel:
    r"""Fit VISH to in-memory data: (lift on a sample,) one pass, hyperparameters on the cache.

    Args:
        train_X: inputs, shape ``(N, d)`` unit vectors for a sphere kernel, or ``(N, D)`` for a
            :class:`~manibo.kernels.HomogeneousLiftKernel`; on any device (the pass runs there).
        train_Y: outcomes, shape ``(N, 1)`` or ``(N,)``.
        kernel: a sphere kernel (:class:`~manibo.kernels.GeometricMaternKernel` on a sphere,
            :class:`~manibo.kernels.ZonalKernel`) or a ``HomogeneousLiftKernel``, optionally in a
            ``ScaleKernel`` (one is added otherwise). Its parameters are the starting values.
        num_features: feature budget ``M`` (e.g. 210 or 660 for ``D = 8``).
        likelihood: Gaussian likelihood; default
            :func:`~manibo.models.vish.model.default_likelihood`.
        chunk_size: rows per chunk of the pass.
        compute_dtype: dtype of the chunk features and products, and of the lift sample's
            (default ``train_X.dtype``).
        fit_lift_on_sample: lifted data only: initialise the lift from the data and train it on a
            sample (see the module docstring); False keeps the kernel's lengthscale and bias and
            centres nothing.
        lift_sample_size: size of that sample.
        lift_num_features: feature budget of the lift search (see :func:`fit_lift`).
        maxiter: L-BFGS iterations of each training stage.
        tolerance: stopping tolerance of the training on the cache (see
            :meth:`~manibo.models.vish.model.VISHModel.fit`).
        lift_tolerance: stopping tolerance of the lift search (see :func:`fit_lift`).
        seed: seed of the sample.
        outcome_transform: the fitted outcome transform that ``train_Y`` already went through
            (kept by the model and undone on its posteriors); ``DEFAULT``: the outcomes are
            standardised here with their own mean and (population) standard deviation; None: the
            model keeps the outcomes as they are.
        input_transform: a BoTorch input transform; the model sees ``train_X`` and every later
            input through it.

    Returns:
        The fitted :class:`~manibo.models.vish.model.VISHModel` (eval mode).
    """
    input_transform = checked_input_transform(input_transform)
    train_X = transformed_training_inputs(train_X, input_transform)
    y = _check_data(train_X, train_Y)
    prior = VISHPrior(kernel, num_features).to(train_X.device)
    likelihood = (likelihood or default_likelihood()).to(device=train_X.device)
    prior.features.check_inputs("train_X", train_X)
    if prior.lift is not None and fit_lift_on_sample:
        generator = torch.Generator().manual_seed(seed)
        n = train_X.shape[0]
        index = torch.randperm(n, generator=generator)[: min(lift_sample_size, n)]
        index = index.to(train_X.device)
        sample_X = train_X[index].to(torch.float64)
        initialise_lift(prior, sample_X)
        fit_lift(
            prior,
            likelihood,
            sample_X,
            y[index],
            maxiter,
            lift_num_features,
            compute_dtype or train_X.dtype,
            lift_tolerance,
        )
    stats = gather_statistics(prior.features, train_X, y, chunk_size, compute_dtype)
    if outcome_transform is DEFAULT:
        model = VISHModel.from_statistics(prior, stats, likelihood, input_transform)
    else:
        model = VISHModel(prior, stats, outcome_transform, likelihood, input_transform)
    return model.fit(maxiter, tolerance)


def fit_vish_streaming(
    chunks: Iterable[tuple[Tensor, Tensor]],
    kernel: Kernel,
    num_features: int,
    *,
    lift_sample: tuple[Tensor, Tensor] | None = None,
    lift_num_features: int = DEFAULT_LIFT_NUM_FEATURES,
    likelihood=None,
    compute_dtype: torch.dtype | None = None,
    maxiter: int = DEFAULT_MAXITER,
    tolerance: float = DEFAULT_TOLERANCE,
    lift_tolerance: float = DEFAULT_LIFT_TOLERANCE,
) -> VISHModel:
    """Fit VISH to data that arrives in chunks (read from disk, generated, ...), in one pass.

    Args:
        chunks: ``(X, y)`` pairs (see
            :func:`~manibo.models.vish.statistics.statistics_from_chunks`).
        kernel: as in :func:`fit_vish`.
        num_features: feature budget ``M``.
        lift_sample: lifted data only: ``(X, y)`` sample on which the lift is initialised and
            trained before the pass (None keeps the kernel's lift, centred at 0).
        lift_num_features: feature budget of the lift search (see :func:`fit_lift`).
        likelihood: Gaussian likelihood.
        compute_dtype: dtype of the chunk products and of the lift sample's (default: each
            chunk's dtype, the sample's dtype).
        maxiter: L-BFGS iterations of each training stage.
        tolerance: stopping tolerance of the training on the cache.
        lift_tolerance: stopping tolerance of the lift search.
    """
    prior = VISHPrior(kernel, num_features)
    likelihood = likelihood or default_likelihood()
    if lift_sample is not None:
        if prior.lift is None:
            raise ConfigurationError("`lift_sample` is for lifted data; this kernel has no lift.")
        sample_X, sample_y = lift_sample
        sample_y = _check_data(sample_X, sample_y)
        device = sample_X.device
        prior.to(device)
        likelihood.to(device)
        initialise_lift(prior, sample_X)
        fit_lift(
            prior,
            likelihood,
            sample_X.to(torch.float64),
            sample_y,
            maxiter,
            lift_num_features,
            compute_dtype or sample_X.dtype,
            lift_tolerance,
        )
    chunks = iter(chunks)
    first = next(chunks, None)
    if first is None:
        raise InputDataError("`chunks` is empty: the statistics need at least one data point.")
    prior.to(first[0].device)
    likelihood.to(first[0].device)

    def all_chunks():
        yield first
        yield from chunks

    stats = statistics_from_chunks(prior.features, all_chunks(), compute_dtype)
    return VISHModel.from_statistics(prior, stats, likelihood).fit(maxiter, tolerance)
