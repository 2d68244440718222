"""The exact geometric GP.

BoTorch's SingleTaskGP with a manibo kernel, priors that travel, and robust fitting.
:func:`exact_gp` builds one around any GPyTorch kernel: the way to write a surrogate of your own
that keeps BoTorch's whole model contract (see the guide to extending manibo).
"""

from __future__ import annotations

import copy
import math
import warnings

import torch
from botorch.exceptions.errors import ModelFittingError
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import InputTransform
from botorch.models.utils.assorted import fantasize as fantasize_flag
from botorch.utils.types import DEFAULT
from gpytorch.kernels import Kernel
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.models import ExactGP
from gpytorch.settings import debug, fast_pred_var
from torch import Tensor

from manibo._validation import (
    as_tensor_arg,
    check_bool,
    check_finite,
    check_int,
    check_same_dtype_device,
)
from manibo.exceptions import (
    ConfigurationError,
    InputDataError,
    ManiboWarning,
    TruncationWarning,
)
from manibo.kernels.defaults import matern_kernel
from manibo.kernels.spectral import GeometricMaternKernel
from manibo.models.failures import is_numerical_failure
from manibo.models.inputs import check_model_dtype, check_observations, check_points
from manibo.models.outputs import check_output_indices
from manibo.models.precision import Float64AdviceOnce
from manibo.models.priors import (
    gaussian_likelihood,
    in_length_unit,
    lengthscale_prior,
    scaled_kernel,
)
from manibo.models.registry import register_surrogate
from manibo.models.transforms import (
    OutcomeTransformArg,
    check_outcome_transform,
    checked_input_transform,
)
from manibo.spaces.base import Space
from manibo.spaces.product import ProductSpace

__all__ = ["exact_gp"]  # the rest is exported by manibo.models


def validate_training_data(
    space: Space, train_X: Tensor, train_Y: Tensor, max_outputs: int | None = None
) -> None:
    """Raise ``InputDataError`` unless the training data is valid.

    ``train_X`` must hold ``n >= 1`` points of ``space`` and ``train_Y`` be a finite ``(n, m)``
    matrix on the same dtype and device.

    Args:
        space: the space of the inputs.
        train_X: inputs, shape ``(n, *point_shape)``.
        train_Y: outcomes, shape ``(n, m)``.
        max_outputs: the most columns ``m`` the surrogate models (None: any number).
    """
    space.check(train_X, "train_X")
    check_finite("train_Y", train_Y)
    check_same_dtype_device(train_X=train_X, train_Y=train_Y)
    n = train_X.shape[0]
    if train_X.dim() != 1 + len(space.point_shape) or n == 0:
        expected = 1 + len(space.point_shape)
        if train_X.dim() == expected:
            why = "a surrogate needs at least one observation"
        elif train_X.dim() < expected:
            why = "one point is a batch of one: `x.unsqueeze(0)`"
        else:
            why = "a surrogate models one set of observations: for several, build one per set"
        raise InputDataError(
            f"`train_X` must hold n >= 1 points of {space}, shape (n, "
            f"{', '.join(map(str, space.point_shape))}), got {tuple(train_X.shape)}; {why}."
        )
    if train_Y.dim() != 2 or train_Y.shape[0] != n or train_Y.shape[1] < 1:
        raise InputDataError(
            f"`train_Y` must have shape ({n}, m) to match `train_X` with {n} points, got "
            f"{tuple(train_Y.shape)}. Use `Y.reshape(-1, 1)` for one objective."
        )
    if max_outputs is not None and train_Y.shape[1] > max_outputs:
        raise InputDataError(
            f"`train_Y` has {train_Y.shape[1]} columns but this surrogate models at most "
            f"{max_outputs}; build it through `build_surrogate`, which fits one model per column, "
            "or pass one column."
        )


class ExactGPModel(SingleTaskGP):
    """BoTorch's ``SingleTaskGP`` with checked inputs and exact fantasy gradients.

    ``SingleTaskGP`` ignores ``output_indices`` on one output and answers an index out of range
    with a bare ``IndexError`` on several; here both get the same
    :class:`~manibo.exceptions.InputDataError` as the other surrogates. So do inputs of
    :meth:`posterior` and :meth:`condition_on_observations` that are not points of ``space``
    (shape ``(*batch, q, *point_shape)``) or not in the model's dtype and device, and outcomes that
    are not finite or not shaped ``(*batch, n, m)``, which ``SingleTaskGP`` answers with raw
    ``RuntimeError``, NaN posteriors or a changed batch shape.

    A fantasy model conditioned on inputs that require gradients (integrated-variance
    acquisitions differentiate through them) computes its predictive variance exactly instead of
    with GPyTorch's fast predictive variances (LOVE): the updated LOVE cache of a fantasy model
    carries no gradient to the fantasy inputs, and ``SingleTaskGP`` then returns gradients of
    qNegIntegratedPosteriorVariance that are off by an order of magnitude (0.090 where the finite
    difference is 0.0033 on S² with 12 points).

    Attributes:
        space: the space the inputs are checked against (set by :func:`exact_gp`; None: their
            dtype and device only).
        defined_off_space: True where the kernel is defined at any ambient coordinates (the
            ``"euclidean"`` surrogate), so that points off the space are taken, as the
            ``"projection"`` acquisition optimiser needs; their shape and finiteness are still
            checked.
    """

    space: Space | None = None
    defined_off_space: bool = False

    def _check_inputs(self, X: Tensor) -> None:
        as_tensor_arg("X", X)
        if self.space is not None:
            check_points(self.space, X, membership=not self.defined_off_space)
        check_model_dtype(X, self.train_targets)

    def _apply(self, fn, *args, **kwargs):
        self.prediction_strategy = None  # its caches keep the old dtype and device
        return super()._apply(fn, *args, **kwargs)

    def posterior(self, X: Tensor, output_indices: list[int] | None = None, **kwargs):
        """``SingleTaskGP.posterior`` after checking ``X`` and ``output_indices`` (see above)."""
        check_output_indices(output_indices, self.num_outputs)
        self._check_inputs(X)
        if any(t.requires_grad for t in self.train_inputs):
            with fast_pred_var(False):
                return super().posterior(X, output_indices=output_indices, **kwargs)
        return super().posterior(X, output_indices=output_indices, **kwargs)

    def condition_on_observations(
        self, X: Tensor, Y: Tensor, noise: Tensor | None = None, **kwargs
    ) -> ExactGPModel:
        """``SingleTaskGP.condition_on_observations`` that honours ``noise`` and empty ``X``.

        With a fitted (homoskedastic) noise, ``SingleTaskGP`` ignores the noise variances given
        for the new observations and conditions them with the fitted one; here the conditioned
        model carries the fitted noise for the training points and ``noise`` for the new ones.
        Conditioning on no points (BoTorch's ``fantasize`` of an empty ``X``) is treated as a
        fantasy, as BoTorch treats every other fantasy, instead of warning that ``X`` and ``Y``
        differ in rank, and a model that has not predicted yet computes its prediction caches
        first instead of refusing.

        Args:
            X: inputs, shape ``(*batch, n, d)``.
            Y: outcomes in original units, shape ``(*batch', n, m)``.
            noise: noise variances of the new observations in transformed units, shape of
                ``Y``, or None for the fitted noise.
            **kwargs: passed to ``SingleTaskGP.condition_on_observations``.
        """
        self._check_inputs(X)
        check_observations(X, Y, self.num_outputs)
        model = self
        if noise is not None and not isinstance(self.likelihood, FixedNoiseGaussianLikelihood):
            model = copy.deepcopy(self)
            fitted = self.likelihood.noise.detach()
            size = self.train_targets.shape[-1]
            model.likelihood = FixedNoiseGaussianLikelihood(
                noise=fitted.expand(*fitted.shape[:-1], size).clone()
            )
            model.prediction_strategy = None  # its caches hold the other likelihood
        if noise is not None:
            kwargs["noise"] = noise
        if model.prediction_strategy is None:  # the caches that conditioning updates
            model.eval()
            with debug(False):
                model(*(x[..., :1, :] for x in model.train_inputs))
        condition = super(ExactGPModel, model).condition_on_observations
        if X.shape[-2] == 0:
            with fantasize_flag():
                return condition(X, Y, **kwargs)
        return condition(X, Y, **kwargs)

    def subset_output(self, idcs: list[int]) -> ExactGPModel:
        """``SingleTaskGP.subset_output`` after checking ``idcs``; the model itself for ``[0]``
        of one output (where ``SingleTaskGP``'s raises ``NotImplementedError``)."""
        check_output_indices(idcs, self.num_outputs)
        if self.num_outputs == 1:
            return self
        return super().subset_output(idcs)


def fit_with_retries(
    model: SingleTaskGP, attempts: int = 3, seed: int = 0, max_iterations: int = 200
) -> SingleTaskGP:
    """Fit by marginal likelihood (L-BFGS, at most ``max_iterations`` iterations per attempt); on
    numerical failure restart from perturbed lengthscales.

    Numerical failures (:func:`is_numerical_failure`): a Cholesky or eigendecomposition that
    fails, NaN in a linear solve, BoTorch's fitting error, and a hyperparameter that leaves its
    prior's support during the optimisation. Any other error (a shape mismatch in a custom kernel,
    say) propagates at once with its traceback.

    Returns the model; if every attempt fails it keeps the initial hyperparameters and warns. A
    :class:`~manibo.exceptions.TruncationWarning` is issued only for the fitted lengthscales, not
    for the trial values the optimiser visits on its way.

    Raises:
        ConfigurationError: ``model`` is not an exact GP (the
            ``"vish"``, ``"gpnet"`` and ``"adgp"`` surrogates are fitted when they are built).
    """
    if not isinstance(model, ExactGP):
        raise ConfigurationError(
            "fit_with_retries fits exact GPs by marginal likelihood (BoTorch's SingleTaskGP, "
            f"the 'matern', 'heat', 'euclidean' and 'chart' surrogates), got "
            f"{type(model).__name__}; the 'vish', 'gpnet' and 'adgp' surrogates are fitted when "
            "build_surrogate builds them."
        )
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    generator = torch.Generator().manual_seed(seed)
    for attempt in range(attempts):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", category=RuntimeWarning)
                warnings.simplefilter("ignore", category=TruncationWarning)
                options = {"maxiter": max_iterations}
                fit_gpytorch_mll(mll, optimizer_kwargs={"options": options})
            _report_truncation(model)
            return model
        except (ModelFittingError, RuntimeError, ValueError) as error:
            if not is_numerical_failure(error):
                raise
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


MAX_EXACT_POINTS = 50_000
"""Most observations an exact GP takes: its kernel matrices are ``n x n`` (20 GB each in float64
at this size), so 10⁵ points filled 12 GB in 33 s before the allocator failed."""


def check_exact_size(n: int, element_size: int, space: Space) -> None:
    """Refuse more than :data:`MAX_EXACT_POINTS` observations for an exact GP, before any kernel
    matrix is built.

    Raises:
        ConfigurationError: naming the memory of one kernel matrix and the sparse surrogates that
            take ``space``.
    """
    if n > MAX_EXACT_POINTS:
        from manibo.models.registry import unsupported_reason

        gigabytes = n * n * element_size / 1e9
        sparse = {"vish": "millions of points on a sphere", "gpnet": "minibatch training"}
        named = [
            f"'{name}' ({what})"
            for name, what in sparse.items()
            if not unsupported_reason(name, space)
        ]
        advice = f"use surrogate {' or '.join(named)}, or fit" if named else "fit"
        raise ConfigurationError(
            f"an exact GP on {n:,} observations needs {gigabytes:,.0f} GB for each {n:,} x {n:,} "
            f"kernel matrix, and takes at most {MAX_EXACT_POINTS:,}: {advice} on a subsample."
        )


def exact_gp(
    space: Space,
    train_X: Tensor,
    train_Y: Tensor,
    kernel: Kernel,
    train_Yvar: Tensor | None = None,
    fit: bool = True,
    outcome_transform: OutcomeTransformArg = DEFAULT,
    input_transform: InputTransform | None = None,
    fit_iterations: int = 200,
) -> ExactGPModel:
    """SingleTaskGP with ``ScaleKernel(kernel)``, standardised outcomes and transferable priors.

    Args:
        space: the space of the inputs.
        train_X: inputs, shape ``(n, *point_shape)``.
        train_Y: outcomes, shape ``(n, 1)`` (several columns: through
            :func:`~manibo.models.build_surrogate`, one GP per column).
        kernel: the base kernel (wrapped in a ``ScaleKernel`` with the default variance prior),
            or a ``ScaleKernel`` of one, used as it is.
        train_Yvar: known noise variances, shape ``(n, 1)``; None: a noise variance is fitted.
        fit: fit the hyperparameters by marginal likelihood (:func:`fit_with_retries`).
        outcome_transform: BoTorch outcome transform (default ``Standardize(m=1)``; None: none).
        input_transform: BoTorch input transform (for example
            :class:`~manibo.models.transforms.SpaceIsometry`), or None.
        fit_iterations: L-BFGS iterations of the fit at most, ``>= 1``.
    """
    validate_training_data(space, train_X, train_Y, max_outputs=1)
    check_exact_size(len(train_X), train_X.element_size(), space)
    fit_iterations = check_int("fit_iterations", fit_iterations, minimum=1)
    fit = check_bool("fit", fit)
    check_outcome_transform(outcome_transform)
    likelihood = gaussian_likelihood() if train_Yvar is None else None
    with Float64AdviceOnce(train_X.dtype):
        model = ExactGPModel(
            train_X,
            train_Y,
            train_Yvar=train_Yvar,
            likelihood=likelihood,
            covar_module=scaled_kernel(kernel),
            outcome_transform=outcome_transform,
            input_transform=checked_input_transform(input_transform),
        )
        model.space = space
        model = model.to(train_X)
        return fit_with_retries(model, max_iterations=fit_iterations) if fit else model


# Surrogates neglect at most 1e-4 of the spectral mass (the kernel's own default is 1e-6): kernel
# errors of that relative size are far below observation noise, and BO iterations need ~2.5x fewer
# levels.
SURROGATE_TRUNCATION_TOL = 1e-4


#: The loop's construction-time build of an exact GP (thrown away) fits for one iteration: the
#: fit's code runs, its optimum is not sought.
CHECK_OPTIONS = {"fit_iterations": 1}


@register_surrogate("matern", check_options=CHECK_OPTIONS)
def geometric_matern_gp(
    space,
    train_X,
    train_Y,
    nu: float = 2.5,
    truncation_tol: float = SURROGATE_TRUNCATION_TOL,
    max_levels: int | None = None,
    per_factor: bool | None = None,
    **options,
) -> SingleTaskGP:
    """Exact GP with the Matérn kernel of ``space`` (default ν = 5/2).

    The geometric Matérn kernel on compact spaces (the product manifold's on compact products,
    or with ``per_factor=True`` the product of the factors' kernels, one lengthscale each; on a
    product with an integer or a choice, by default, the product of the factors' own kernels,
    see :func:`~manibo.kernels.matern_kernel`); on a
    box, Matérn with one lengthscale per coordinate; on a product with a non-compact factor (a
    box, ...), the product of the factors' kernels (:func:`manibo.kernels.matern_kernel`).
    ``max_levels`` caps the levels of compact spaces' series (default: each space's
    ``default_max_levels``). The lengthscale prior's median, and the initial lengthscale, are in
    the space's ``length_unit`` (on a mesh, the radius of the sphere of its area), so that a mesh
    in millimetres gets the GP it gets in metres. Other ``options`` go to :func:`exact_gp`
    (``fit``, ``fit_iterations``, ``outcome_transform``, ``input_transform``).
    """
    cap = {} if max_levels is None else {"max_levels": max_levels}
    if per_factor is not None and (
        check_bool("per_factor", per_factor) or isinstance(space, ProductSpace)
    ):
        cap["per_factor"] = per_factor  # kernels of other spaces get it only when True
    unit = space.length_unit
    kernel = matern_kernel(space, nu, truncation_tol, lengthscale_prior(unit), **cap)
    return exact_gp(space, train_X, train_Y, in_length_unit(kernel, unit), **options)


@register_surrogate("heat", check_options=CHECK_OPTIONS)
def geometric_heat_gp(
    space, train_X, train_Y, truncation_tol: float = SURROGATE_TRUNCATION_TOL, **options
) -> SingleTaskGP:
    """Exact GP with the heat (diffusion) kernel of ``space`` (the Matérn kernel with ν = ∞);
    ``max_levels``, ``per_factor`` and the other ``options`` are those of
    :func:`geometric_matern_gp`."""
    if "nu" in options:
        raise ConfigurationError(
            f"the 'heat' surrogate is the Matérn GP with nu = math.inf and takes no `nu` (got "
            f"{options['nu']!r}); use surrogate 'matern' with surrogate_options nu=... instead."
        )
    return geometric_matern_gp(
        space, train_X, train_Y, nu=math.inf, truncation_tol=truncation_tol, **options
    )
