r"""The contract every registered surrogate honours: BoTorch's model API and BoTorch's acquisitions.

A concrete test supplies a :class:`SurrogateCase` (a registered surrogate name, a space, small
options) and calls :func:`run_model_check` for each name in :data:`MODEL_CHECKS` and
:func:`run_acquisition_check` for each name in :data:`ACQUISITIONS` and each ``q`` in
:data:`BATCH_SIZES`, as BoTorch's and GPyTorch's own test utilities do. A check raises
``AssertionError`` with a reason on failure. Where a surrogate declares a model feature out of its
reach (``unsupported_features`` of :func:`~manibo.models.register_surrogate`), the check verifies
that the declaration is honoured instead: the loop refuses the combination when it is built, before
any evaluation.

The checks compare against independent computations wherever one exists: a batch against its
members computed alone, noise against its variance, a model fitted with known noise against
that noise, a posterior transform against the transformed
moments (or samples), conditioning on two sets of points against conditioning on their union,
fantasies with enormous noise against the model itself, an output subset against the full
posterior, transformed outcomes against the affine map, an input transform against a model fitted
to transformed inputs, float32 against float64, and gradients against finite differences along
geodesics of the space (``space.retract``).
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial

import torch
from botorch.acquisition import (
    AcquisitionFunction,
    LogExpectedImprovement,
    PosteriorMean,
    UpperConfidenceBound,
    qKnowledgeGradient,
    qLogExpectedImprovement,
    qLogNoisyExpectedImprovement,
    qNegIntegratedPosteriorVariance,
    qUpperConfidenceBound,
)
from botorch.acquisition.max_value_entropy_search import qMaxValueEntropy
from botorch.acquisition.multi_objective.parego import qLogNParEGO
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.exceptions.warnings import InputDataWarning, OptimizationWarning
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.model import Model, ModelList
from botorch.models.transforms.outcome import Standardize
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.sampling import SobolQMCNormalSampler
from botorch.sampling.get_sampler import get_sampler
from botorch.settings import propagate_grads
from gpytorch.distributions import MultitaskMultivariateNormal
from torch import Tensor

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.registry import build_surrogate, check_surrogate_supports
from manibo.models.registry import unsupported_feature as declared_unsupported
from manibo.models.transforms import SpaceIsometry
from manibo.optim import LBFGSOptions, optimize_acqf_on_space
from manibo.spaces.base import Space

BATCH_SIZES = (1, 3)
"""The ``q`` every acquisition is optimised at (analytic acquisitions: ``q = 1`` only)."""

TOLERANCES = {"conditioning": 1e-6, "transform": 1e-6, "float32": 1e-3, "moments": 1e-9}
"""Relative tolerances of the checks that compare two fits or two computations: ``conditioning``
(sequential against joint conditioning), ``transform`` (two fits of the same standardised data),
``float32`` (one fitted state evaluated in float32 and float64), all relative to the outcomes'
standard deviation; ``moments``: relative error of posterior moments (0 up to rounding for
Gaussian posteriors, the Monte Carlo error for sample-based ones)."""


@dataclass
class SurrogateCase:
    """One registered surrogate on one space, with the options that keep the checks fast.

    Args:
        name: the registered surrogate name.
        space: the space of the inputs.
        options: passed to the factory (small training budgets for the neural surrogates).
        tolerances: looser values for keys of :data:`TOLERANCES` (say why where you set them).
        num_train: training points.
        seed: seed of the data.
        device: where the data, and hence the models, live (``"cpu"``, ``"cuda"``).
    """

    name: str
    space: Space
    options: Mapping[str, object] = field(default_factory=dict)
    tolerances: Mapping[str, float] = field(default_factory=dict)
    num_train: int = 10
    seed: int = 0
    device: str | torch.device = "cpu"
    _models: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        unknown = set(self.tolerances) - set(TOLERANCES)
        if unknown:
            raise ConfigurationError(
                f"unknown tolerance(s) {sorted(unknown)}; the keys are {sorted(TOLERANCES)}."
            )

    def tolerance(self, what: str) -> float:
        """The tolerance ``what`` (a key of :data:`TOLERANCES`) for this case."""
        return self.tolerances.get(what, TOLERANCES[what])

    def points(self, *shape: int, dtype: torch.dtype = torch.float64, seed: int = 1) -> Tensor:
        """Uniform points of the space, flattened, shape ``(*shape, d)`` (drawn in float64, so
        that float32 points are the same points rounded)."""
        generator = torch.Generator().manual_seed(self.seed * 1000 + seed)
        x = self.space.random(math.prod(shape), generator=generator, dtype=torch.float64)
        return x.reshape(*shape, math.prod(self.space.point_shape)).to(self.device, dtype)

    def objective(self, X: Tensor, num_outputs: int = 1) -> Tensor:
        """A smooth test function of geodesic distances to fixed anchors, shape ``(n, m)``."""
        anchors = self.points(3, dtype=X.dtype, seed=99)
        d = [self.space.distance(X, a.expand_as(X)) for a in anchors]
        columns = [torch.cos(d[0]) + 0.5 * torch.cos(2 * d[1]), torch.cos(1.5 * d[2])]
        return torch.stack(columns[:num_outputs], dim=-1)

    def data(
        self, num_outputs: int = 1, dtype: torch.dtype = torch.float64
    ) -> tuple[Tensor, Tensor]:
        """Training data: ``num_train`` points ``(n, d)`` and outcomes ``(n, num_outputs)``."""
        X = self.points(self.num_train, dtype=dtype, seed=0)
        return X, self.objective(X, num_outputs)

    def build(self, train_X: Tensor, train_Y: Tensor, **extra) -> Model:
        """The surrogate fitted to ``(train_X, train_Y)`` through the registry."""
        options = {**self.options, **extra}
        return build_surrogate(self.name, self.space, train_X, train_Y, **options)

    def model(self, num_outputs: int = 1, dtype: torch.dtype = torch.float64) -> Model:
        """The surrogate fitted to :meth:`data` (built once per case, output count and dtype)."""
        key = (num_outputs, dtype)
        if key not in self._models:
            self._models[key] = self.build(*self.data(num_outputs, dtype))
        return self._models[key]


# ---------------------------------------------------------------------------------- helpers
def _tol(dtype: torch.dtype) -> float:
    return 1e-6 if dtype == torch.float64 else 1e-3


def _close(actual: Tensor, expected: Tensor, atol: float, what: str, rtol: float = 0.0) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    actual, expected = actual.detach(), expected.detach()
    error = (actual - expected).abs()
    bound = atol + rtol * expected.abs()
    worst = float((error - bound).max()) if error.numel() else -1.0
    assert worst <= 0, (
        f"{what}: max abs error {float(error.max()):.3g} (tolerance {atol:.3g} + {rtol:.3g}|x|)"
    )


def _moments(model: Model, X: Tensor, **kwargs) -> tuple[Tensor, Tensor]:
    posterior = model.posterior(X, **kwargs)
    return posterior.mean.detach(), posterior.variance.detach()


def _covariance(posterior) -> Tensor | None:
    distribution = getattr(posterior, "distribution", None)
    return None if distribution is None else distribution.covariance_matrix


def _output_covariances(posterior) -> Tensor | None:
    """Covariances between the outputs at each point, ``(*batch, q, m, m)``, of a Gaussian
    posterior; None for a sample-based one."""
    if not isinstance(posterior, GPyTorchPosterior):
        return None
    distribution = posterior.distribution
    if not isinstance(distribution, MultitaskMultivariateNormal):
        return posterior.variance.unsqueeze(-1)
    q, m = distribution.event_shape
    covariance = distribution.covariance_matrix
    if distribution._interleaved:
        grid = covariance.reshape(*covariance.shape[:-2], q, m, q, m)
        return grid.diagonal(dim1=-4, dim2=-2).permute(*range(grid.dim() - 4), -1, -3, -2)
    grid = covariance.reshape(*covariance.shape[:-2], m, q, m, q)
    return grid.diagonal(dim1=-3, dim2=-1).permute(*range(grid.dim() - 4), -1, -3, -2)


def _scale(case: SurrogateCase) -> float:
    return float(case.data()[1].std())


def _tangent(space: Space, x: Tensor, seed: int) -> Tensor:
    """Unit tangent vectors at the flattened points ``x``, same shape."""
    generator = torch.Generator().manual_seed(seed)
    shaped = x.reshape(*x.shape[:-1], *space.point_shape)
    v = torch.randn(shaped.shape, generator=generator, dtype=x.dtype).to(x.device)
    v = space.to_tangent(shaped, v).reshape(x.shape)
    return v / v.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _retract(space: Space, x: Tensor, v: Tensor) -> Tensor:
    shaped = x.reshape(*x.shape[:-1], *space.point_shape)
    return space.retract(shaped, v.reshape(shaped.shape)).reshape(x.shape)


def _gradient(value: Tensor, x: Tensor) -> Tensor:
    """d value / d x, zeros where ``value`` does not depend on ``x`` (a graph that was cut)."""
    if not value.requires_grad:
        return torch.zeros_like(x)
    (gradient,) = torch.autograd.grad(value, x, allow_unused=True)
    return torch.zeros_like(x) if gradient is None else gradient


def _geodesic_derivative(
    space: Space, f: Callable[[Tensor], Tensor], x: Tensor, v: Tensor, step: float
) -> tuple[float, float]:
    """``(autograd, central difference)`` of ``t -> f(retract(x, t v))`` at ``t = 0``."""
    xg = x.detach().clone().requires_grad_(True)
    gradient = _gradient(f(xg).sum(), xg)
    analytic = float((gradient * v).sum())
    with torch.no_grad():
        plus = f(_retract(space, x, step * v)).sum()
        minus = f(_retract(space, x, -step * v)).sum()
    return analytic, float((plus - minus) / (2 * step))


# ---------------------------------------------------------------------------------- model checks
def check_posterior_shapes(case: SurrogateCase) -> None:
    """Posteriors at ``n x d``, ``b x q x d`` and ``b1 x b2 x q x d`` inputs, one and two
    outputs: means, variances and samples of the shapes BoTorch expects, finite, variances > 0."""
    for m in (1, 2):
        model = case.model(m)
        assert model.num_outputs == m, f"num_outputs is {model.num_outputs}, expected {m}"
        assert model.batch_shape == torch.Size([]), f"batch_shape is {model.batch_shape}"
        for shape in ((5,), (3, 2), (2, 3, 2)):
            X = case.points(*shape)
            posterior = model.posterior(X)
            mean, variance = posterior.mean, posterior.variance
            expected = (*shape, m)
            keep = (
                f"at X of shape {tuple(X.shape)} with {m} output(s): a posterior keeps the batch "
                "dimensions of X and ends in (q, num_outputs)"
            )
            assert mean.shape == expected, f"mean shape {tuple(mean.shape)} != {expected} {keep}"
            assert variance.shape == expected, f"variance shape {tuple(variance.shape)} {keep}"
            assert torch.isfinite(mean).all() and torch.isfinite(variance).all(), "not finite"
            assert (variance > 0).all(), f"variance <= 0: min {float(variance.min()):.3g}"
            samples = posterior.rsample(torch.Size([4]))
            assert samples.shape == (4, *expected), f"samples shape {tuple(samples.shape)}"


def check_batch_independence(case: SurrogateCase) -> None:
    """A batch ``b x q x d`` equals its members computed alone (mean, variance, covariance)."""
    model = case.model()
    X = case.points(3, 2)
    posterior = model.posterior(X)
    covariance = _covariance(posterior)
    for i in range(3):
        alone = model.posterior(X[i])
        _close(posterior.mean[i], alone.mean, 1e-9, f"mean of batch member {i}")
        _close(posterior.variance[i], alone.variance, 1e-9, f"variance of batch member {i}")
        if covariance is not None:
            _close(covariance[i], _covariance(alone), 1e-9, f"covariance of member {i}")


def check_observation_noise(case: SurrogateCase) -> None:
    """``observation_noise=True`` adds one positive variance to every point."""
    model = case.model()
    X = case.points(2, 3)
    _, latent = _moments(model, X)
    _, noisy = _moments(model, X, observation_noise=True)
    added = noisy - latent
    assert (added > 0).all(), "observation_noise=True did not add a positive variance"
    spread = float(added.max() - added.min())
    allowed = 2 * case.tolerance("moments") * float(noisy.max()) + 1e-9 * float(added.mean())
    assert spread <= allowed, f"noise not homoscedastic: spread {spread:.3g}"


def check_noise_tensor(case: SurrogateCase) -> None:
    """A noise tensor ``observation_noise=noise`` (in standardised units) adds ``noise * std(Y)^2``
    (``Standardize``: the unbiased standard deviation of the training outcomes), column ``j`` of
    the tensor to output ``j`` of a model of two outputs, and with ``output_indices=[1]`` its one
    column to output 1."""
    X = case.points(2, 3)
    rtol = max(case.tolerance("moments"), 1e-9)
    for m in (1, 2):
        model = case.model(m)
        _, latent = _moments(model, X)
        scale2 = case.data(m)[1].std(dim=0) ** 2  # (m,)
        noise = 0.2 + 0.1 * torch.arange(6 * m, dtype=X.dtype, device=X.device).reshape(2, 3, m)
        _, given = _moments(model, X, observation_noise=noise)
        what = f"variance added by a noise tensor to a model of {m} output(s)"
        _close(given - latent, noise * scale2.to(noise), 0.0, what, rtol=rtol)
    _, latent = _moments(model, X, output_indices=[1])
    _, given = _moments(model, X, output_indices=[1], observation_noise=noise[..., :1])
    what = "variance added by a noise tensor to output 1 alone"
    _close(given - latent, noise[..., :1] * scale2[1].to(noise), 0.0, what, rtol=rtol)


def check_known_noise(case: SurrogateCase) -> None:
    """Fitted to two outputs with known noise variances ``train_Yvar`` (a level for each point,
    three times larger for the second output), ``observation_noise=True`` adds to each output's
    latent variance the mean of its column of ``train_Yvar`` (the noise BoTorch's fixed-noise
    models add at new points), so each output is fitted with its own column."""
    X_train, Y = case.data(2)
    n = len(Y)
    levels = 0.01 + 0.02 * torch.arange(n, dtype=Y.dtype, device=Y.device) / n
    Yvar = levels.unsqueeze(-1) * Y.var(dim=0) * torch.tensor([1.0, 3.0]).to(Y)
    model = case.build(X_train, Y, train_Yvar=Yvar)
    X = case.points(2, 3)
    _, latent = _moments(model, X)
    _, noisy = _moments(model, X, observation_noise=True)
    rtol = max(case.tolerance("moments"), 1e-9)
    expected = Yvar.mean(dim=0).expand_as(noisy)
    _close(noisy - latent, expected, 0.0, "variance added by known noise", rtol=rtol)


def check_posterior_transform(case: SurrogateCase) -> None:
    """``ScalarizedPosteriorTransform``: mean ``w . mu + c`` and variance ``w' Sigma w`` (Gaussian
    posteriors), or samples ``w . f + c`` from the same base samples (sample-based posteriors)."""
    X = case.points(2, 3)
    for m, weights in ((1, [2.0]), (2, [0.7, -1.3])):
        model = case.model(m)
        w = torch.tensor(weights, dtype=X.dtype, device=X.device)
        transform = ScalarizedPosteriorTransform(weights=w, offset=1.5)
        posterior, scalar = model.posterior(X), model.posterior(X, posterior_transform=transform)
        _close(scalar.mean, posterior.mean @ w.unsqueeze(-1) + 1.5, 1e-9, "transformed mean")
        blocks = _output_covariances(posterior)
        if blocks is not None:
            expected = (w @ blocks @ w).unsqueeze(-1)
            _close(scalar.variance, expected, 1e-9, "transformed variance", rtol=1e-7)
        else:
            sampler = SobolQMCNormalSampler(torch.Size([8]), seed=0)
            plain = SobolQMCNormalSampler(torch.Size([8]), seed=0)(posterior)
            _close(sampler(scalar), plain @ w.unsqueeze(-1) + 1.5, 1e-9, "transformed samples")


def check_seeded_sampler(case: SurrogateCase) -> None:
    """``get_sampler(posterior, shape, seed=s)``: the same seed gives identical samples, another
    seed other samples."""
    posterior = case.model().posterior(case.points(2, 3))
    first = get_sampler(posterior, torch.Size([8]), seed=3)(posterior)
    again = get_sampler(posterior, torch.Size([8]), seed=3)(posterior)
    other = get_sampler(posterior, torch.Size([8]), seed=4)(posterior)
    assert torch.equal(first, again), "a seeded sampler gave different samples"
    assert not torch.equal(first, other), "samplers with different seeds gave equal samples"


def check_condition_on_observations(case: SurrogateCase) -> None:
    """Conditioning on ``(X1, Y1)`` then ``(X2, Y2)`` equals conditioning on their union;
    one observation moves the mean at its point towards it and lowers the variance there; and under
    ``propagate_grads`` the conditioned posterior is differentiable in the new points, with the
    gradient of the variance equal to its finite difference along a geodesic. The model predicts
    first, as in BoTorch's acquisitions (GPyTorch's exact GPs condition only once they have
    predicted)."""
    model = case.model()
    X_test = case.points(4, seed=5)
    model.posterior(X_test)
    X1, X2 = case.points(2, seed=6), case.points(1, seed=7)
    scale = _scale(case)
    Y1, Y2 = case.objective(X1), case.objective(X2) + 2 * scale
    both = model.condition_on_observations(torch.cat([X1, X2]), torch.cat([Y1, Y2]))
    one = model.condition_on_observations(X1, Y1)
    sequential = one.condition_on_observations(X2, Y2)
    mean_b, var_b = _moments(both, X_test)
    mean_s, var_s = _moments(sequential, X_test)
    atol = case.tolerance("conditioning") * scale
    _close(mean_s, mean_b, atol, "mean: sequential conditioning vs the union")
    _close(var_s, var_b, atol * scale, "variance: sequential conditioning vs the union")
    mean0, var0 = _moments(model, X2)
    mean1, var1 = _moments(model.condition_on_observations(X2, Y2), X2)
    assert float((mean1 - Y2).abs()) < float((mean0 - Y2).abs()), "mean did not move towards Y"
    assert float(var1) < float(var0), "conditioning did not lower the variance at the new point"

    def conditioned_variance(x: Tensor) -> Tensor:
        with propagate_grads(True):
            return model.condition_on_observations(x, Y1).posterior(X_test).variance

    v = _tangent(case.space, X1, seed=8)
    analytic, numeric = _geodesic_derivative(case.space, conditioned_variance, X1, v, 1e-4)
    assert analytic != 0.0, "gradient of the conditioned variance in the new points is 0"
    assert math.isfinite(analytic), "gradient of the conditioned variance is not finite"
    assert abs(analytic - numeric) <= 1e-3 * max(abs(numeric), 1e-6 * scale**2), (
        f"gradient of the conditioned variance {analytic:.6g} != finite difference {numeric:.6g}: "
        "the variance of a conditioned model must be differentiable in its new points. GPyTorch's "
        "fast predictive variances (LOVE, on in BoTorch's posterior) carry no gradient to them; "
        "compute the variance exactly (gpytorch.settings.fast_pred_var(False)) where the inputs "
        "require gradients, as manibo.models.ExactGPModel does"
    )


def check_fantasize(case: SurrogateCase) -> None:
    """``fantasize`` at ``n x d``, ``b x n x d`` and empty inputs, and with a noise tensor: batch
    shapes ``sample x batch``, an empty X (or enormous noise) leaves every fantasy equal to the
    model, and fantasies are differentiable in X."""
    model = case.model()
    sampler = SobolQMCNormalSampler(torch.Size([3]), seed=0)
    X_test = case.points(4, seed=5)
    mean, variance = _moments(model, X_test)
    X = case.points(2, seed=6)
    fantasy = model.fantasize(X, sampler)
    assert fantasy.batch_shape == torch.Size([3]), f"batch_shape {fantasy.batch_shape}"
    f_mean, f_var = _moments(fantasy, X_test)
    assert f_mean.shape == (3, 4, 1) and torch.isfinite(f_mean).all(), "fantasy posterior"
    allowed = variance * (1 + case.tolerance("moments")) + 1e-9 * _scale(case) ** 2
    assert (f_var <= allowed).all(), "fantasies raised the variance"
    batched = model.fantasize(case.points(2, 2, seed=9), sampler)
    assert batched.batch_shape == torch.Size([3, 2]), f"b x n: batch {batched.batch_shape}"
    assert batched.posterior(X_test).mean.shape == (3, 2, 4, 1), "b x n: posterior shape"
    noise = torch.full((2, 1), 1e12, dtype=X.dtype, device=X.device)
    vague = model.fantasize(X, sampler, observation_noise=noise)
    v_mean, v_var = _moments(vague, X_test)
    ignored = (
        "fantasies with a noise variance of 1e12 moved the model: the model ignores the `noise` "
        "of condition_on_observations (BoTorch's SingleTaskGP with a GaussianLikelihood "
        "conditions with its fitted noise whatever it is given). Pass `noise` on to the "
        "likelihood, or build on manibo.models.ExactGPModel (manibo.models.exact_gp.exact_gp), "
        "which does"
    )
    _close(v_mean, mean.expand(3, 4, 1), 1e-5 * _scale(case), f"{ignored}; fantasy mean")
    _close(v_var, variance.expand(3, 4, 1), 1e-5 * _scale(case) ** 2, f"{ignored}; variance")
    empty = model.fantasize(X[:0], sampler)
    assert empty.batch_shape == torch.Size([3]), f"empty X: batch {empty.batch_shape}"
    e_mean, e_var = _moments(empty, X_test)
    _close(e_mean, mean.expand(3, 4, 1), 1e-8 * _scale(case), "empty X: fantasy mean")
    _close(e_var, variance.expand(3, 4, 1), 1e-8 * _scale(case) ** 2, "empty X: variance")
    Xg = X.clone().requires_grad_(True)
    gradient = _gradient(model.fantasize(Xg, sampler).posterior(X_test).mean.sum(), Xg)
    assert torch.isfinite(gradient).all() and gradient.abs().sum() > 0, "no gradient in X"


def check_outputs(case: SurrogateCase) -> None:
    """Two outputs: ``output_indices=[j]`` and ``subset_output([j])`` equal column ``j`` of the
    full posterior, and ``subset_output([1, 0])`` swaps them; one output: ``[0]`` equals None
    and ``subset_output([0])`` the model; a
    bad index raises ``InputDataError`` from ``posterior`` and from ``subset_output``."""
    X = case.points(2, 3)
    model = case.model(2)
    mean, variance = _moments(model, X)
    for j in (0, 1):
        sub_mean, sub_var = _moments(model, X, output_indices=[j])
        _close(sub_mean, mean[..., j : j + 1], 1e-9, f"output_indices=[{j}]: mean")
        _close(sub_var, variance[..., j : j + 1], 1e-9, f"output_indices=[{j}]: variance")
        subset = model.subset_output([j])
        assert subset.num_outputs == 1, f"subset_output([{j}]) has {subset.num_outputs} outputs"
        _close(_moments(subset, X)[0], mean[..., j : j + 1], 1e-9, f"subset_output([{j}])")
    swapped = model.subset_output([1, 0])
    _close(_moments(swapped, X)[0], mean.flip(-1), 1e-9, "subset_output([1, 0])")
    single = case.model(1)
    _close(_moments(single, X, output_indices=[0])[0], _moments(single, X)[0], 0.0, "[0]")
    for bad_model, bad in ((single, [1]), (model, [2]), (model, [0, 0]), (model, [-1])):
        for call, what in (
            (partial(bad_model.posterior, X, output_indices=bad), f"output_indices={bad}"),
            (partial(bad_model.subset_output, bad), f"subset_output({bad})"),
        ):
            try:
                call()
            except InputDataError:
                continue
            except Exception as error:  # noqa: BLE001  (the type is what is checked)
                raise AssertionError(
                    f"{what}: raised {type(error).__name__} ({error}); the model "
                    f"{_MUST_REFUSE}, naming the outputs it has"
                ) from error
            raise AssertionError(
                f"{what}: nothing was raised; the model {_MUST_REFUSE}, naming the outputs it has"
            )
    try:  # a model of one output subsets to itself
        kept = single.subset_output([0])
    except Exception as error:  # noqa: BLE001  (any error fails the check)
        raise AssertionError(
            f"subset_output([0]) of a model of one output raised {type(error).__name__} "
            f"({error}); it must return the model (manibo.models.ExactGPModel does)"
        ) from error
    _close(_moments(kept, X)[0], _moments(single, X)[0], 0.0, "subset_output([0]) of one output")


_MUST_REFUSE = (
    "must raise manibo.exceptions.InputDataError with a message saying what was expected "
    "(manibo.models.ExactGPModel, which manibo.models.exact_gp.exact_gp builds, does)"
)


def _not_refused(call: Callable[[], object], *advice: str) -> str | None:
    """None if ``call()`` raises an ``InputDataError`` whose message holds every string of
    ``advice``, else what happened instead."""
    try:
        call()
    except InputDataError as error:
        missing = [a for a in advice if a not in str(error)]
        return f"the error does not say {missing}: {error}" if missing else None
    except Exception as error:  # noqa: BLE001  (the type is what is checked)
        return f"raised {type(error).__name__} ({error}), expected InputDataError"
    return "nothing was raised"


def _float64_inputs_of_float32_model(case: SurrogateCase, X: Tensor) -> str | None:
    """None if a float32 model refuses float64 ``X`` with advice that works (or takes it)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=InputDataWarning)
        warnings.filterwarnings("ignore", category=OptimizationWarning)
        single = case.model(dtype=torch.float32)
    advice = ("`X.to(torch.float32)`", "`model.to(torch.float64)`")
    try:
        posterior = single.posterior(X)
    except InputDataError:
        problem = _not_refused(lambda: single.posterior(X), *advice)
        if problem is not None:
            return problem
        posterior = copy.deepcopy(single).to(torch.float64).posterior(X)
        if posterior.mean.dtype != torch.float64:
            return f"after `model.to(torch.float64)` the mean is {posterior.mean.dtype}"
    except Exception as error:  # noqa: BLE001  (the type is what is checked)
        return f"raised {type(error).__name__} ({error}), expected InputDataError"
    return None if bool(torch.isfinite(posterior.mean).all()) else "a mean that is not finite"


def _empty_posterior(model: Model, X: Tensor) -> str | None:
    """None if the posterior at ``X`` without points has a mean of shape ``(0, 1)``."""
    try:
        shape = tuple(model.posterior(X).mean.shape)
    except Exception as error:  # noqa: BLE001  (any error is the finding)
        return f"raised {type(error).__name__} ({error})"
    return None if shape == (0, 1) else f"mean shape {shape} != (0, 1)"


def check_input_errors(case: SurrogateCase) -> None:
    """Inputs a model cannot use get an ``InputDataError``, not a raw error or a silent NaN: points
    off the space, a point without its ``q`` dimension, points of the wrong size, float64 inputs
    of a float32 model (the error says ``X.to(torch.float32)`` or ``model.to(torch.float64)``, and
    the latter works; a model that computes in float64 whatever its inputs may take them), in
    ``condition_on_observations`` also outcomes with a NaN or without their output dimension, and
    training data without points. Inputs with no points give an empty posterior. A model whose
    ``defined_off_space`` is True (a kernel of ambient coordinates) takes points off the space
    instead, with a finite posterior."""
    model = case.model()
    X = case.points(3, seed=41)
    Y = case.objective(X)
    off_space = X + 1e6
    model.posterior(X)  # BoTorch's acquisitions predict before they condition
    refusals = {
        "one point of shape (d,)": lambda: model.posterior(X[0]),
        "points of size d + 1": lambda: model.posterior(torch.cat([X, X[:, :1]], -1)),
        "no training points": lambda: case.build(X[:0], Y[:0]),
    }
    if declared_unsupported(case.name, "fantasize") is None:
        condition = model.condition_on_observations
        refusals |= {
            "conditioning on a NaN outcome": lambda: condition(X, torch.full_like(Y, math.nan)),
            "conditioning on outcomes of shape (n,)": lambda: condition(X, Y[:, 0]),
        }
    problems = {what: _not_refused(call) for what, call in refusals.items()}
    if getattr(model, "defined_off_space", False):
        off = model.posterior(off_space).mean
        problems["points off the space"] = None if off.isfinite().all() else "a NaN posterior"
    else:
        problems["points off the space"] = _not_refused(lambda: model.posterior(off_space))
        if declared_unsupported(case.name, "fantasize") is None:
            problems["conditioning on points off the space"] = _not_refused(
                lambda: model.condition_on_observations(off_space, Y)
            )
    problems["float64 inputs of a float32 model"] = _float64_inputs_of_float32_model(case, X)
    problems["posterior of no points"] = _empty_posterior(model, X[:0])
    found = [f"{what}: {problem}" for what, problem in problems.items() if problem is not None]
    assert not found, "\n".join([*found, f"For each of these inputs the model {_MUST_REFUSE}."])


def check_outcome_transform(case: SurrogateCase) -> None:
    """``outcome_transform=Standardize(m=1)`` equals the default; ``outcome_transform=None`` leaves
    the model without one; a model of ``a Y + b`` predicts ``a mu + b`` with variance
    ``a^2 sigma^2`` (the standardised data are the same)."""
    X_train, Y = case.data()
    X = case.points(2, 3)
    mean, variance = _moments(case.model(), X)
    explicit = case.build(X_train, Y, outcome_transform=Standardize(m=1))
    tol = case.tolerance("transform")
    _close(_moments(explicit, X)[0], mean, tol * _scale(case), "explicit Standardize: mean")
    raw = getattr(case.build(X_train, Y, outcome_transform=None), "outcome_transform", None)
    assert raw is None, f"outcome_transform=None: the model has a {type(raw).__name__}"
    a, b = 7.0, -40.0
    affine = case.build(X_train, a * Y + b)
    a_mean, a_var = _moments(affine, X)
    _close(a_mean, a * mean + b, tol * a * _scale(case), "model of a Y + b: mean")
    _close(a_var, a**2 * variance, tol * (a * _scale(case)) ** 2, "model of a Y + b: variance")


def check_input_transform(case: SurrogateCase) -> None:
    """With ``input_transform=SpaceIsometry(space)`` the model predicts at ``X`` what a model
    fitted to the moved training points predicts at the moved ``X``. Not applicable, and passed
    without a fit, on a space whose isometries :class:`~manibo.models.transforms.SpaceIsometry`
    does not know (anything but spheres, circles, tori, SO(n) and their products: a box, a plug-in
    space)."""
    try:
        isometry = SpaceIsometry(case.space, seed=4)
    except ConfigurationError:  # no known isometry: nothing to compare with
        return
    X_train, Y = case.data()
    transformed = case.build(X_train, Y, input_transform=isometry)
    with torch.no_grad():
        moved = isometry.transform(X_train)
        X = case.points(2, 3)
        X_moved = isometry.transform(X)
    reference = case.build(moved, Y)
    mean, variance = _moments(transformed, X)
    r_mean, r_var = _moments(reference, X_moved)
    tol = case.tolerance("transform")
    _close(mean, r_mean, tol * _scale(case), "input transform: mean")
    _close(variance, r_var, tol * _scale(case) ** 2, "input transform: variance")


def check_float32(case: SurrogateCase) -> None:
    """Fitted to float32 data the surrogate predicts in float32, finite and differentiable, within
    one outcome standard deviation of its float64 twin (a float32 fit may settle on other
    hyperparameters); with the float64 twin's fitted state, its float32 predictions agree with the
    float64 ones to the ``float32`` tolerance. BoTorch's advice to use float64 and its warnings
    about line searches that end on float32 rounding are silenced here."""
    X = case.points(2, 3, dtype=torch.float32)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=InputDataWarning)
        warnings.filterwarnings("ignore", category=OptimizationWarning)
        model = case.model(dtype=torch.float32)
        Xg = X.clone().requires_grad_(True)
        posterior = model.posterior(Xg)
        assert posterior.mean.dtype == torch.float32, f"mean dtype {posterior.mean.dtype}"
        (gradient,) = torch.autograd.grad(posterior.mean.sum() + posterior.variance.sum(), Xg)
        assert torch.isfinite(gradient).all(), "float32 gradient not finite"
        reference, reference_var = _moments(case.model(), X.double())
        fitted = float((posterior.mean.detach().double() - reference).abs().max())
        assert fitted <= _scale(case), f"float32 fit: mean off by {fitted:.3g} standard deviations"
        twin = copy.deepcopy(model)
        twin.load_state_dict(case.model().state_dict())
        twin.train()
        mean, variance = _moments(twin.eval(), X)
    tol = case.tolerance("float32")
    _close(mean.double(), reference, tol * _scale(case), "float64 state in float32: mean")
    _close(variance.double(), reference_var, tol * _scale(case) ** 2, "float32: variance")


def check_geodesic_gradients(case: SurrogateCase) -> None:
    """The gradients of the posterior mean and variance equal central differences along geodesics
    (``space.retract``) at random points, within 1e-4 relative."""
    model = case.model()
    X = case.points(6, 1, seed=11)
    v = _tangent(case.space, X, seed=12)
    for what in ("mean", "variance"):

        def f(x: Tensor, what: str = what) -> Tensor:
            return getattr(model.posterior(x), what)

        analytic, numeric = _geodesic_derivative(case.space, f, X, v, 1e-5)
        size = max(abs(numeric), 1e-3 * _scale(case) ** (1 if what == "mean" else 2))
        assert abs(analytic - numeric) <= 1e-4 * size, (
            f"{what}: gradient along a geodesic {analytic:.8g} != finite difference {numeric:.8g}"
        )


def check_model_list(case: SurrogateCase) -> None:
    """Two single-output surrogates in a BoTorch ``ModelList`` (``ModelListGP`` for exact GPs):
    the joint posterior holds each model's, and the list fantasizes (unless the surrogate declares
    ``fantasize`` out of its reach)."""
    X_train, Y = case.data(2)
    X_one, Y_one = case.data()
    same = torch.equal(X_train, X_one) and torch.equal(Y[:, :1], Y_one)  # the objective's column
    first = case.model() if same else case.build(X_train, Y[:, :1])  # built once, not twice
    models = [first, case.build(X_train, Y[:, 1:2])]
    gps = all(isinstance(m, SingleTaskGP) for m in models)
    joint = ModelListGP(*models) if gps else ModelList(*models)
    X = case.points(2, 3)
    posterior = joint.posterior(X)
    for j, model in enumerate(models):
        _close(posterior.mean[..., j : j + 1], _moments(model, X)[0], 1e-9, f"list mean {j}")
        _close(posterior.variance[..., j : j + 1], _moments(model, X)[1], 1e-9, f"list var {j}")
    if declared_unsupported(case.name, "fantasize") is not None:
        return  # the fantasize check verifies the refusal
    with _fantasies_expected(case):
        fantasy = joint.fantasize(
            case.points(2, seed=6), SobolQMCNormalSampler(torch.Size([2]), seed=0)
        )
    shape = fantasy.posterior(case.points(4)).mean.shape
    assert shape == (2, 4, 2), f"fantasy of the list: posterior shape {tuple(shape)}"


def check_state_dict(case: SurrogateCase) -> None:
    """A model of the same data whose parameters were moved, and which has predicted since,
    predicts as this one does once it loads this one's ``state_dict`` (a posterior it keeps
    from before is dropped)."""
    model = case.model()
    other = case.build(*case.data())
    X = case.points(2, 3)
    generator = torch.Generator().manual_seed(case.seed)
    with torch.no_grad():
        for parameter in other.parameters():
            noise = torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype)
            parameter.add_(0.3 * noise.to(parameter.device))
    moved = _moments(other, X)[0]
    other.load_state_dict(model.state_dict())
    mean, variance = _moments(model, X)
    assert not torch.allclose(moved, mean, atol=1e-6 * _scale(case)), "moving did not change it"
    _close(_moments(other, X)[0], mean, 1e-9 * _scale(case), "mean after load_state_dict")
    _close(_moments(other, X)[1], variance, 1e-9 * _scale(case) ** 2, "variance after load")


MODEL_CHECKS: dict[str, tuple[Callable[[SurrogateCase], None], str | None]] = {
    "posterior shapes": (check_posterior_shapes, None),
    "batch independence": (check_batch_independence, None),
    "observation noise": (check_observation_noise, None),
    "noise tensor": (check_noise_tensor, "observation_noise_tensor"),
    "known noise": (check_known_noise, "train_Yvar"),
    "posterior transform": (check_posterior_transform, None),
    "seeded sampler": (check_seeded_sampler, None),
    "condition_on_observations": (check_condition_on_observations, "fantasize"),
    "fantasize": (check_fantasize, "fantasize"),
    "outputs": (check_outputs, None),
    "outcome transform": (check_outcome_transform, "outcome_transform"),
    "input transform": (check_input_transform, "input_transform"),
    "float32": (check_float32, None),
    "geodesic gradients": (check_geodesic_gradients, None),
    "ModelList": (check_model_list, None),
    "state_dict": (check_state_dict, None),
    "input errors": (check_input_errors, None),
}
"""Name to ``(check, feature)``: the feature (a key of :data:`manibo.models.FEATURES`) a surrogate
may declare out of reach, or None where every surrogate must pass."""


def run_model_check(case: SurrogateCase, check: str) -> None:
    """Run the model check ``check`` (a key of :data:`MODEL_CHECKS`) on ``case``.

    Where the surrogate declares the check's feature out of reach, verify instead that the
    declaration stops the loop at construction with a ``ConfigurationError``. The check runs with
    torch's global random number generator seeded with ``case.seed`` (and restored afterwards), so
    that its outcome does not depend on what ran before.

    Raises:
        ConfigurationError: ``check`` is not a key of :data:`MODEL_CHECKS` (the message lists them).
    """
    if check not in MODEL_CHECKS:
        raise ConfigurationError(
            f"unknown model check {check!r}; choose one of {', '.join(map(repr, MODEL_CHECKS))}."
        )
    function, feature = MODEL_CHECKS[check]
    if feature is not None and declared_unsupported(case.name, feature) is not None:
        _check_refused(case, (feature,))
        return
    with _seeded(case), _fantasies_expected(case) if feature == "fantasize" else nullcontext():
        function(case)


@contextmanager
def _seeded(case: SurrogateCase) -> Iterator[None]:
    """Torch's global generators (the CPU's and that of ``case.device``) seeded with
    ``case.seed`` inside, restored on exit."""
    device = torch.device(case.device)
    devices = []
    if device.type == "cuda":
        devices = [torch.cuda.current_device() if device.index is None else device.index]
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(case.seed)
        yield


_FANTASY_METHODS = ("fantasize", "condition_on_observations", "get_fantasy_model")


@contextmanager
def _fantasies_expected(case: SurrogateCase) -> Iterator[None]:
    """Turn a model's ``NotImplementedError`` (or ``AttributeError`` naming a fantasy method) into
    a failure that says how to declare fantasies out of reach."""
    try:
        yield
    except (NotImplementedError, AttributeError) as error:
        if isinstance(error, AttributeError) and not any(
            method in str(error) for method in _FANTASY_METHODS
        ):
            raise
        raise AssertionError(
            f"{case.name}: fantasy models failed with {type(error).__name__}: {error}. A "
            "surrogate without them declares so, and the suite then checks that the loop refuses "
            "the acquisitions that need them: register_surrogate("
            f"{case.name!r}, unsupported_features={{'fantasize': 'why, and what to use "
            "instead'})."
        ) from error


def _check_refused(case: SurrogateCase, features: tuple[str, ...]) -> None:
    try:
        check_surrogate_supports(case.name, case.space, features)
    except ConfigurationError as error:
        assert case.name in str(error) and len(str(error)) > 40, f"terse refusal: {error}"
        return
    raise AssertionError(f"{case.name} declares {features} unsupported but is not refused")


# ---------------------------------------------------------------------------------- acquisitions
_FLAT = 1e-9  # relative change below which the gradient check takes an acquisition as flat


def _sampler() -> SobolQMCNormalSampler:
    return SobolQMCNormalSampler(torch.Size([16]), seed=0)


@dataclass(frozen=True)
class AcquisitionSpec:
    """How the suite builds one BoTorch acquisition.

    Args:
        build: ``build(case, model, train_X, train_Y) -> AcquisitionFunction``.
        analytic: an analytic acquisition (``q = 1`` only).
        num_outputs: outputs of the model it needs.
        features: model features it needs, per ``q`` (``q > 1`` for sequential ones).
        sequential: optimised one point at a time for ``q > 1`` (``q = 1`` only in its forward).
    """

    build: Callable[..., AcquisitionFunction]
    analytic: bool = False
    num_outputs: int = 1
    features: tuple[str, ...] = ()
    sequential: bool = False


ACQUISITIONS: dict[str, AcquisitionSpec] = {
    "LogEI": AcquisitionSpec(lambda c, m, X, Y: LogExpectedImprovement(m, Y.max()), analytic=True),
    "UCB": AcquisitionSpec(lambda c, m, X, Y: UpperConfidenceBound(m, beta=2.0), analytic=True),
    "PosteriorMean": AcquisitionSpec(lambda c, m, X, Y: PosteriorMean(m), analytic=True),
    "qLogEI": AcquisitionSpec(
        lambda c, m, X, Y: qLogExpectedImprovement(m, Y.max(), sampler=_sampler())
    ),
    "qLogNEI": AcquisitionSpec(
        lambda c, m, X, Y: qLogNoisyExpectedImprovement(
            m, X, sampler=_sampler(), prune_baseline=False, cache_root=False
        )
    ),
    "qUCB": AcquisitionSpec(
        lambda c, m, X, Y: qUpperConfidenceBound(m, beta=2.0, sampler=_sampler())
    ),
    "qKnowledgeGradient": AcquisitionSpec(
        lambda c, m, X, Y: qKnowledgeGradient(m, num_fantasies=4), features=("fantasize",)
    ),
    "qMaxValueEntropy": AcquisitionSpec(
        lambda c, m, X, Y: qMaxValueEntropy(
            m, c.points(32, seed=21), num_fantasies=4, num_mv_samples=8
        ),
        features=("fantasize",),
        sequential=True,
    ),
    "qNegIntegratedPosteriorVariance": AcquisitionSpec(
        lambda c, m, X, Y: qNegIntegratedPosteriorVariance(m, c.points(16, seed=22)),
        features=("fantasize",),
    ),
    "qLogNParEGO": AcquisitionSpec(
        lambda c, m, X, Y: qLogNParEGO(
            m,
            X,
            scalarization_weights=torch.tensor([0.6, 0.4], dtype=X.dtype, device=X.device),
            sampler=_sampler(),
            prune_baseline=False,
            cache_root=False,
        ),
        num_outputs=2,
    ),
}
"""The BoTorch acquisitions every surrogate works with, by name."""

OPTIMIZER_OPTIONS = {"num_restarts": 2, "raw_samples": 6, "options": LBFGSOptions(maxiter=1)}
"""Budget of :func:`~manibo.optim.optimize_acqf_on_space` in the acquisition checks: six raw
q-batches, and two restarts (a batch of q-batches) that each take one step, with its retracted
line search and the value and gradient at the point reached. The checks are about the surrogate:
the acquisition evaluates and differentiates on batches of points, also on points the optimiser
moved along the space; how far the optimiser gets is for its own tests."""


def _acquisition_spec(name: str) -> AcquisitionSpec:
    if name not in ACQUISITIONS:
        raise ConfigurationError(
            f"unknown acquisition check {name!r}; choose one of {', '.join(ACQUISITIONS)}. The "
            "checks build these BoTorch acquisitions themselves (model_contract.ACQUISITIONS); "
            "they do not look names up in the loop's registry (manibo.acquisitions), so a "
            "registered acquisition is tested by running it in a BayesianOptimizer."
        )
    return ACQUISITIONS[name]


def acquisition_features(name: str, q: int) -> tuple[str, ...]:
    """The model features the acquisition ``name`` needs at batch size ``q``.

    Sequential acquisitions need their features (fantasies of the pending points) for
    ``q > 1`` only.
    """
    spec = _acquisition_spec(name)
    if spec.sequential and q == 1:
        return ()
    return spec.features


def run_acquisition_check(case: SurrogateCase, name: str, q: int) -> None:
    """Optimise the acquisition ``name`` on the surrogate with
    :func:`~manibo.optim.optimize_acqf_on_space` at batch size ``q``.

    Checks: the candidates lie on the space and their value is finite, and the gradient of the
    acquisition with respect to the actual candidate points (for one-shot knowledge gradient: not
    its fantasy points) is finite at three random q-batches and, where the acquisition changes
    along a geodesic, right: the directional derivative is within half of the central difference
    of it.
    Where the surrogate declares a needed feature out of reach, verify the refusal instead. The
    check runs with torch's global random number generator seeded with ``case.seed``, as
    :func:`run_model_check` does.

    Raises:
        ConfigurationError: ``name`` is not a key of :data:`ACQUISITIONS` (BoTorch acquisitions
            built by the suite, not names of the loop's registry), or an analytic one at
            ``q > 1``.
    """
    spec = _acquisition_spec(name)
    if spec.analytic and q != 1:
        raise ConfigurationError(f"{name} is analytic: q must be 1, got {q}.")
    features = acquisition_features(name, q)
    if any(declared_unsupported(case.name, f) is not None for f in features):
        _check_refused(case, features)
        return
    with _seeded(case), _fantasies_expected(case) if "fantasize" in features else nullcontext():
        X_train, Y = case.data(spec.num_outputs)
        model = case.model(spec.num_outputs)
        sequential = spec.sequential and q > 1
        acqf = spec.build(case, model, X_train, Y.max(-1, keepdim=True).values)
        candidates, value = optimize_acqf_on_space(
            acqf, case.space, q=q, seed=0, sequential=sequential, reference=X_train,
            **OPTIMIZER_OPTIONS,
        )  # fmt: skip
        assert candidates.shape == (q, *case.space.point_shape), f"candidates {candidates.shape}"
        case.space.check(candidates, "candidates")
        assert torch.isfinite(value).all(), f"{name}: acquisition value {value}"
        _check_candidate_gradient(case, acqf, 1 if sequential else q, name)


def _check_candidate_gradient(case: SurrogateCase, acqf, q: int, name: str) -> None:
    """The gradient with respect to the actual candidates, at three random q-batches, is finite,
    and right where the acquisition changes: along a random geodesic through the q-batch where its
    central difference is largest, the directional derivative is within half of it (a gradient cut
    to 0, scaled or of the wrong sign fails).

    An acquisition may be flat to rounding at some points (max-value entropy far from the maximum,
    gradients near 1e-18) and is then not held to anything there; one that does not see its
    candidates (conditioning that drops the graph) has a gradient of exactly 0 where its value
    changes."""
    X = case.points(3, q, seed=31)
    extra = acqf.get_augmented_q_batch_size(q) - q if isinstance(acqf, qKnowledgeGradient) else 0
    fantasy_points = case.points(3, extra, seed=32)

    def f(x: Tensor) -> Tensor:
        return acqf(torch.cat([x, fantasy_points], dim=-2))

    Xg = X.clone().requires_grad_(True)
    value = f(Xg)
    gradient = _gradient(value.sum(), Xg)
    assert torch.isfinite(gradient).all(), f"{name}: gradient not finite"
    v = _tangent(case.space, X, seed=33)
    analytic = (gradient * v).sum((-2, -1))  # per q-batch
    step = 1e-4
    with torch.no_grad():
        numeric = f(_retract(case.space, X, step * v)) - f(_retract(case.space, X, -step * v))
        numeric = numeric / (2 * step)
    i = int(numeric.abs().argmax())
    flat = float(numeric[i].abs()) <= _FLAT * float(value.detach().abs().max())
    error = float((analytic[i] - numeric[i]).abs())
    assert flat or error <= 0.5 * float(numeric[i].abs()), (
        f"{name}: the gradient with respect to the actual candidates disagrees with the "
        f"acquisition's change: directional derivative {float(analytic[i]):.3g} along a geodesic "
        f"whose central difference is {float(numeric[i]):.3g} (the gradient must reach the "
        "candidate points: conditioning on them under torch.no_grad or on detached copies cuts it)"
    )


def covered(registered: list[str], cases: Mapping[str, object], kind: str) -> None:
    """Fail unless every registered name has a case: a new surrogate, kernel or space must join
    the contract suite before it is used.

    Args:
        registered: the names that exist (registered surrogates, exported classes); a plug-in
            passes only its own, ``available_surrogates(module="my_plugin")``.
        cases: the names the contract tests cover.
        kind: what the names are, for the message.

    Raises:
        AssertionError: naming what is not covered.
    """
    missing = sorted(set(registered) - set(cases))
    assert not missing, (
        f"{kind} without contract coverage: {missing}; add a case for each to the contract tests' "
        "registry."
    )
