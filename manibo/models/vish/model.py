r"""VISH as a BoTorch model: the collapsed posterior from cached statistics, joint over ``q``
points, with hyperparameters trained on the cache and rank updates for fantasies.

The model keeps the sufficient statistics of the *transformed* outcomes (by default standardised,
:math:`(y - \mu_y)/s_y`, with BoTorch's ``Standardize`` fitted when the model is built) and the
prior (:class:`~manibo.models.vish.prior.VISHPrior`). Everything it computes is float64 on the
statistics' device; posteriors take the dtype of the test inputs.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as np
import scipy.optimize
import torch
from botorch.models.model import FantasizeMixin, Model
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform, Standardize
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from gpytorch.likelihoods import GaussianLikelihood
from linear_operator.operators import DenseLinearOperator
from torch import Tensor

from manibo._validation import as_tensor_arg
from manibo.exceptions import ConfigurationError, InputDataError, ManiboWarning, TruncationWarning
from manibo.kernels.spectral import GeometricMaternKernel
from manibo.models.failures import is_numerical_failure
from manibo.models.inputs import check_observations
from manibo.models.outputs import OneOutput, broadcast_moments, check_output_indices
from manibo.models.priors import gaussian_likelihood
from manibo.models.transforms import (
    TransformedTrainingInputs,
    checked_input_transform,
    standardize_from_moments,
)
from manibo.models.vish.collapsed import WeightPosterior, collapsed_bound, weight_posterior
from manibo.models.vish.prior import VISHPrior
from manibo.models.vish.statistics import (
    DEFAULT_CHUNK_SIZE,
    GRAM_BLOCKS,
    SufficientStatistics,
    block_edges,
)

_STATISTICS = ("gram", "cross", "feature_sum", "y_sum", "y_squared", "radius_squared", "count")

MAX_JOINT_COVARIANCE_BYTES = 2**32
"""Most memory a joint posterior may take while ``posterior`` builds it, 4 GiB, counted as
:data:`JOINT_COVARIANCE_COPIES` float64 ``q x q`` matrices per batch member: the posterior at a
grid of 64,800 points (1° on the globe) asked the allocator for 34 GB. ``predict`` streams
marginal variances instead (10⁶ points in 15 s at 0.5 GB)."""

JOINT_COVARIANCE_COPIES = 5
"""Covariance-sized matrices a ``posterior`` call holds at its peak (the low-rank product, the
residual, their sum, the outcome transform's rescaled copy and the variances' read): measured
as the rise of the peak resident size over one covariance, 5.0 at q = 3,000, 4,000, 6,000 and
10,000 (a guard that counted one copy let through q = 23,170, about 21 GB)."""

DEFAULT_TOLERANCE = 1e-7
"""Default stopping tolerance of the training on the cache (see :func:`optimize_bound`): an
iteration that gains less than 1e-7 nats per point (0.1 nats over a million points) ends it."""


def default_likelihood() -> GaussianLikelihood:
    """A Gaussian likelihood whose noise variance stays above 1e-6 (of the standardised
    outcomes), without a prior, in float64."""
    return gaussian_likelihood(with_prior=False).to(torch.float64)


def log_prior_density(*modules: torch.nn.Module) -> Tensor | float:
    """Sum of the log densities of the GPyTorch priors registered on ``modules``."""
    total = 0.0
    for module in modules:
        for _, owner, prior, closure, _ in module.named_priors():
            total = total + prior.log_prob(closure(owner)).sum()
    return total


class VISHModel(OneOutput, TransformedTrainingInputs, Model, FantasizeMixin):
    r"""A sparse GP with spherical-harmonic features, as a BoTorch model with one output.

    Build it with :func:`~manibo.models.vish.fit.fit_vish` (in-memory data),
    :func:`~manibo.models.vish.fit.fit_vish_streaming` (chunks) or from statistics gathered
    elsewhere (Dask: :func:`~manibo.models.vish.distributed.dask_statistics`) with
    :meth:`from_statistics`.

    Args:
        prior: the prior and its features.
        statistics: statistics of the transformed outcomes, float64.
        outcome_transform: the fitted BoTorch outcome transform the outcomes went through (in
            eval mode; usually ``Standardize(m=1)``), undone on every posterior; None if the
            statistics hold raw outcomes.
        likelihood: Gaussian likelihood (noise variance of the transformed outcomes); default
            :func:`default_likelihood`.
        input_transform: a BoTorch input transform applied to every input (the statistics hold
            features of transformed inputs), or None.
    """

    def __init__(
        self,
        prior: VISHPrior,
        statistics: SufficientStatistics,
        outcome_transform: OutcomeTransform | None = None,
        likelihood: GaussianLikelihood | None = None,
        input_transform: InputTransform | None = None,
    ) -> None:
        super().__init__()
        if statistics.num_features != prior.features.num_features:
            raise ConfigurationError(
                f"the statistics hold {statistics.num_features} features but the prior's level "
                f"set has {prior.features.num_features}; gather them with `prior.features`."
            )
        self.prior = prior
        self.likelihood = likelihood if likelihood is not None else default_likelihood()
        device = statistics.gram.device
        for name in _STATISTICS:
            self.register_buffer(f"_stat_{name}", getattr(statistics, name).to(torch.float64))
        if outcome_transform is not None:
            self.outcome_transform = outcome_transform.to(device=device).eval()
        input_transform = checked_input_transform(input_transform)
        if input_transform is not None:
            self.input_transform = input_transform.to(device=device)
        self.prior.to(device)
        self.likelihood.to(device=device, dtype=torch.float64)
        self._cache: WeightPosterior | None = None

    @classmethod
    def from_statistics(
        cls,
        prior: VISHPrior,
        statistics: SufficientStatistics,
        likelihood: GaussianLikelihood | None = None,
        input_transform: InputTransform | None = None,
    ) -> VISHModel:
        """A model on raw statistics: outcomes are standardised with their own mean and
        (population) standard deviation, held by a BoTorch ``Standardize``."""
        mean, std = statistics.outcome_moments()
        std = torch.where(std > 0, std, torch.ones_like(std))
        standardize = standardize_from_moments(mean.reshape(1), std.reshape(1))
        return cls(
            prior, statistics.standardized(mean, std), standardize, likelihood, input_transform
        )

    # ------------------------------------------------------------------ state
    @property
    def statistics(self) -> SufficientStatistics:
        """The cached statistics (of the standardised outcomes)."""
        return SufficientStatistics(*(getattr(self, f"_stat_{name}") for name in _STATISTICS))

    @property
    def num_outputs(self) -> int:
        """One outcome: VISH models a single scalar function."""
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        """Batch shape of the model (``[]``; fantasies add their leading dimensions)."""
        gram, cross = self._stat_gram, self._stat_cross
        return torch.broadcast_shapes(gram.shape[:-2], cross.shape[:-1])

    @property
    def noise(self) -> Tensor:
        """Noise variance of the standardised outcomes, shape ``()``."""
        return self.likelihood.noise.reshape(())

    def train(self, mode: bool = True) -> VISHModel:
        if mode or self.training:  # parameters may change in training: drop the posterior
            self._cache = None
        return super().train(mode)

    def _load_from_state_dict(self, *args, **kwargs) -> None:
        """Load as every module does, and drop the weight posterior computed from the previous
        parameters (it was kept: a model that had predicted went on predicting from them)."""
        self._cache = None
        super()._load_from_state_dict(*args, **kwargs)

    def _apply(self, fn, *args, **kwargs):
        """Apply ``fn``'s device to every tensor but keep their dtypes: the model computes in
        float64 whatever its inputs (its posteriors take the dtype of the test inputs), so
        ``.to(torch.float32)``, ``.float()`` or ``.half()``, on the model or on a model list
        holding it, move devices only (statistics rounded to float32 stayed rounded, and every
        posterior raised a dtype mismatch in the features)."""
        self._cache = None
        reference = self.prior.features.transform
        device = fn(torch.zeros((), dtype=reference.dtype, device=reference.device)).device
        return super()._apply(lambda t: t.to(device=device), *args, **kwargs)

    # ------------------------------------------------------------------ training on the cache
    def bound(self) -> Tensor:
        """The collapsed bound on the cached statistics (standardised units), shape ``()``."""
        if self.batch_shape:
            raise ConfigurationError("the bound of a batched (fantasy) model is not defined.")
        return collapsed_bound(
            self.statistics, self.prior.scale(), self.noise, self.prior.residual_variance()
        )

    def fit(self, maxiter: int = 100, tolerance: float = DEFAULT_TOLERANCE) -> VISHModel:
        """Maximise the bound (plus registered log priors) over the hyperparameters, on the cache.

        Trains the variance, the zonal kernel's parameters and the noise with L-BFGS; each step
        costs :math:`O(M^3)` whatever ``N``. The lift (features) stays fixed. On a numerical
        failure the previous hyperparameters are kept and a warning is issued.

        Args:
            maxiter: L-BFGS-B iterations at most.
            tolerance: stop when an iteration improves the bound per point by at most this
                (relative to the bound per point where that exceeds 1; see
                :func:`optimize_bound`).

        Returns:
            ``self``, in eval mode.
        """
        params = self.prior.hyperparameters() + list(self.likelihood.parameters())
        optimize_bound(
            lambda: self.bound() + log_prior_density(self.prior.covar_module, self.likelihood),
            params,
            float(self._stat_count),
            maxiter,
            self,
            tolerance,
        )
        return self.eval()

    # ------------------------------------------------------------------ posterior
    def weight_posterior(self) -> WeightPosterior:
        """The posterior over the weights.

        Cached until the model is trained or moved, unless the statistics carry gradients (a
        fantasy model conditioned on inputs that require them): then it is recomputed with them
        on every call, so that the posterior is differentiable in the conditioning inputs.
        """
        if self._cache is not None:
            return self._cache
        if self._stat_gram.requires_grad:
            return weight_posterior(self.statistics, self.prior.scale(), self.noise)
        with torch.no_grad():
            self._cache = weight_posterior(self.statistics, self.prior.scale(), self.noise)
        return self._cache

    def _check_test_inputs(self, X: Tensor) -> None:
        self.prior.features.check_inputs("X", X)
        if X.device != self._stat_gram.device:
            raise InputDataError(
                f"`X` is on {X.device} but the model on {self._stat_gram.device}; move one of them."
            )

    @staticmethod
    def _check_joint_size(X: Tensor) -> None:
        """Refuse a joint posterior whose covariance would pass
        :data:`MAX_JOINT_COVARIANCE_BYTES`, before it is built."""
        q, members = X.shape[-2], X.shape[:-2].numel()
        covariance = members * q * q * 8
        needed = JOINT_COVARIANCE_COPIES * covariance
        if needed > MAX_JOINT_COVARIANCE_BYTES:
            raise InputDataError(
                f"the joint posterior at `X` of shape {tuple(X.shape)} needs a covariance of "
                f"{members:,} x {q:,} x {q:,} float64 values ({covariance / 2**30:,.2f} GiB, "
                f"and about {JOINT_COVARIANCE_COPIES} times that, {needed / 2**30:,.2f} GiB, "
                "while it is built; the most `posterior` takes is "
                f"{MAX_JOINT_COVARIANCE_BYTES / 2**30:.2f} GiB, all batch members together). For "
                "marginal means and variances at many points use `model.predict(X)`, which "
                "streams them in chunks; for joint samples, pass fewer points per batch member; "
                "for the baseline of a noisy expected improvement (`X_baseline`), pass the "
                "evaluated points that can be the best, "
                "`manibo.acquisitions.screen_baseline(model, train_X)`."
            )

    def latent(self, X: Tensor) -> tuple[Tensor, Tensor]:
        r"""Mean and joint covariance of :math:`f` at ``X`` in standardised units, float64.

        Args:
            X: inputs, shape ``(*batch, q, input_dim)``.

        Returns:
            ``mean`` of shape ``(*batch', q)`` and ``covariance`` ``(*batch', q, q)``, with
            ``batch'`` the broadcast of ``batch`` and the model's batch shape.
        """
        post = self.weight_posterior()
        Phi = self.prior.features.harmonics(X)
        mean = (Phi @ post.mean.unsqueeze(-1)).squeeze(-1)
        A = Phi @ post.factor.transpose(-1, -2)
        covariance = A @ A.transpose(-1, -2) + self.prior.residual_covariance(X, X)
        return broadcast_moments(mean, covariance)

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform=None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        """The joint Gaussian posterior at ``X`` in the original units of the outcomes.

        Args:
            X: inputs, shape ``(*batch, q, input_dim)`` (points on the sphere for sphere data).
            output_indices: only ``None`` or ``[0]`` (one output).
            observation_noise: False (latent ``f``), True (add the fitted noise), or a tensor of
                noise variances in transformed (standardised) units, shape ``(*batch, q, 1)``.
            posterior_transform: applied to the posterior before it is returned.

        Returns:
            A :class:`~botorch.posteriors.gpytorch.GPyTorchPosterior` over ``(*batch', q, 1)``,
            in ``X``'s dtype (with an outcome transform whose untransformed posterior is one),
            differentiable in ``X``.

        Raises:
            InputDataError: ``output_indices`` names an output the model does not have.
        """
        check_output_indices(output_indices, self.num_outputs)
        self.eval()
        X = self.transform_inputs(X)
        self._check_test_inputs(X)
        self._check_joint_size(X)
        mean, covariance = self.latent(X)
        if isinstance(observation_noise, Tensor):
            noise = observation_noise.to(covariance)[..., 0]
            covariance = covariance + torch.diag_embed(noise.expand(covariance.shape[:-1]))
        elif observation_noise:
            eye = torch.eye(covariance.shape[-1], dtype=covariance.dtype, device=X.device)
            covariance = covariance + self.noise.detach() * eye
        # lazy: low rank plus a small residual, so sampling needs BoTorch's jittered Cholesky
        posterior = GPyTorchPosterior(MultivariateNormal(mean, DenseLinearOperator(covariance)))
        if hasattr(self, "outcome_transform"):
            posterior = self.outcome_transform.untransform_posterior(posterior, X=X)
        if isinstance(posterior, GPyTorchPosterior) and posterior.mean.dtype != X.dtype:
            # in X's dtype after the (float64) outcome transform, which would promote it back
            distribution = posterior.distribution
            posterior = GPyTorchPosterior(
                MultivariateNormal(
                    distribution.mean.to(X.dtype), distribution.lazy_covariance_matrix.to(X.dtype)
                )
            )
        return posterior_transform(posterior) if posterior_transform is not None else posterior

    def predict(
        self,
        X: Tensor,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        compute_dtype: torch.dtype | None = None,
        observation_noise: bool = False,
    ) -> tuple[Tensor, Tensor]:
        r"""Marginal predictive mean and variance at many inputs, streamed in chunks.

        Never holds more than one chunk of features. The variance is :math:`\|G z\|^2` with the
        lower-triangular :math:`G = L^{-1} D W^\top` in zonal coordinates, multiplied block by
        block (no cancellation, about half a full product).

        Args:
            X: inputs, shape ``(N, input_dim)``.
            chunk_size: rows per chunk.
            compute_dtype: dtype of the chunk products (default ``X.dtype``).
            observation_noise: add the noise variance (predict ``y``, not ``f``).

        Returns:
            ``(mean, variance)`` in the outcomes' units, each of shape ``(N,)``, in
            ``compute_dtype``.
        """
        if self.batch_shape:
            raise ConfigurationError("`predict` needs an unbatched model; use `posterior`.")
        as_tensor_arg("X", X)
        if X.dim() != 2:
            raise InputDataError(
                f"`X` must have shape (N, {self.prior.features.input_dim}), got {tuple(X.shape)}."
            )
        X = self.transform_inputs(X)
        self._check_test_inputs(X)
        dtype = compute_dtype or X.dtype
        post = self.weight_posterior()
        W = self.prior.features.transform
        mean_z = (W @ post.mean).to(dtype)
        factor = (post.factor @ W.T).to(dtype)  # lower triangular
        with torch.no_grad():
            residual = self.prior.residual_variance().to(dtype)
            noise = self.noise.to(dtype) if observation_noise else 0.0
        shift, scale = (t.to(dtype) for t in self._outcome_affine())
        means, variances = [], []
        with torch.no_grad():
            for chunk in X.split(int(chunk_size)):
                Z, radius = self.prior.features.zonal_and_radius(chunk, dtype)
                variance = _lower_triangular_square_norms(factor, Z)
                variance = variance + residual * radius.to(dtype) ** 2 + noise
                means.append(Z @ mean_z * scale + shift)
                variances.append(variance * scale**2)
        return torch.cat(means), torch.cat(variances)

    def _outcome_affine(self) -> tuple[Tensor, Tensor]:
        """``(shift, scale)`` of the outcome transform (``y = shift + scale * z``), float64."""
        transform = getattr(self, "outcome_transform", None)
        one = self._stat_count.new_ones(())
        if transform is None:
            return 0.0 * one, one
        if not isinstance(transform, Standardize):
            raise ConfigurationError(
                "`predict` streams affine outcome transforms only (Standardize); this model's is "
                f"{type(transform).__name__}: use `posterior`."
            )
        return transform.means.reshape(()).to(one), transform.stdvs.reshape(()).to(one)

    # ------------------------------------------------------------------ conditioning
    def condition_on_observations(
        self, X: Tensor, Y: Tensor, noise: Tensor | None = None, **kwargs: Any
    ) -> VISHModel:
        r"""A new model conditioned on more observations, by a rank update of the statistics.

        Hyperparameters and the outcome transform are kept. Batched ``Y`` (fantasies) gives a
        batched model; the Gram update depends on ``X`` only and is shared by all fantasies. The
        update is differentiable in ``X`` and ``Y`` (as BoTorch's fantasy models are), so that
        acquisitions built on fantasies (knowledge gradient, integrated variance) have gradients
        with respect to the fantasised points; ``X`` may hold no points.

        Args:
            X: inputs, shape ``(*batch, n, input_dim)``, ``n >= 0``.
            Y: outcomes in original units, shape ``(*fantasy_batch, *batch, n, 1)``.
            noise: optional noise variances of the new points in transformed (standardised)
                units, shape ``(*batch, n, 1)``; rows are weighted by ``s^2 / noise`` (exact for the
                posterior).

        Returns:
            A :class:`VISHModel` with batch shape ``broadcast(fantasy_batch + batch, batch_shape)``.
        """
        X = self.transform_inputs(X)
        self._check_test_inputs(X)
        check_observations(X, Y, 1)
        Phi = self.prior.features.harmonics(X)
        radius, _ = self.prior.features.radius_direction(X.to(torch.float64))
        if hasattr(self, "outcome_transform"):
            Y, _ = self.outcome_transform(Y)
        y = Y[..., 0].to(torch.float64)
        if noise is not None:
            weight = (self.noise.detach() / noise.to(torch.float64)[..., 0]).sqrt()
            Phi, y = Phi * weight.unsqueeze(-1), y * weight
        update = SufficientStatistics(
            gram=Phi.transpose(-1, -2) @ Phi,
            cross=(y.unsqueeze(-2) @ Phi).squeeze(-2),
            feature_sum=Phi.sum(-2),
            y_sum=y.sum(-1),
            y_squared=(y * y).sum(-1),
            radius_squared=(radius * radius).sum(-1),
            count=radius.new_full(radius.shape[:-1], float(X.shape[-2])),
        )
        statistics = self.statistics + update
        # the statistics are replaced below: share them instead of copying (they may carry a graph)
        memo = {id(getattr(self, f"_stat_{name}")): None for name in _STATISTICS}
        self._cache, cache = None, self._cache
        model = copy.deepcopy(self, memo)
        self._cache = cache
        for name in _STATISTICS:
            setattr(model, f"_stat_{name}", getattr(statistics, name))
        model._cache = None
        return model.eval()


def _lower_triangular_square_norms(lower: Tensor, Z: Tensor, blocks: int = GRAM_BLOCKS) -> Tensor:
    r""":math:`\|G z_i\|^2` for every row :math:`z_i` of ``Z`` and lower-triangular :math:`G`.

    :math:`G Z^\top` is formed by row blocks of :math:`G`, each multiplying only the leading
    columns it has, so the product takes about ``(blocks + 1) / (2 blocks)`` of a full one; with
    ``Z`` in the feature-major storage of :meth:`~manibo.models.vish.features.VISHFeatures.zonal`
    the products read :math:`Z^\top` contiguously.

    Args:
        lower: :math:`G`, lower triangular, shape ``(M, M)``.
        Z: rows :math:`z_i`, shape ``(n, M)``.

    Returns:
        Shape ``(n,)``.
    """
    Zt = Z.T
    total = Z.new_zeros(Z.shape[0])
    edges = block_edges(lower.shape[-1], blocks)
    for start, stop in zip(edges[:-1], edges[1:], strict=True):
        block = lower[start:stop, :stop] @ Zt[:stop]
        total += (block * block).sum(0)
    return total


def optimize_bound(
    objective,
    params: list[Tensor],
    count: float,
    maxiter: int,
    owner,
    tolerance: float = DEFAULT_TOLERANCE,
) -> None:
    """Maximise ``objective()`` over ``params`` with SciPy's L-BFGS-B (as BoTorch fits models).

    The loss is ``-objective() / count`` (nats per point). L-BFGS-B stops after ``maxiter``
    iterations, or when an iteration lowers the loss by at most ``tolerance * max(|loss|, 1)``
    (SciPy's ``ftol``). Trial points where the objective is not finite (a failed Cholesky, for
    example) count as infinitely bad; the best point seen is kept, and if none was finite the
    initial values are restored with a warning. Truncation warnings from trial lengthscales are
    silenced and the cap is reported once for the final values.
    """
    if isinstance(maxiter, bool) or int(maxiter) != maxiter or maxiter < 0:
        raise ConfigurationError(f"`maxiter` must be an integer >= 0, got {maxiter!r}.")
    if not tolerance >= 0:
        raise ConfigurationError(f"`tolerance` must be a number >= 0, got {tolerance!r}.")
    params = [p for p in params if p.requires_grad]
    if not params or maxiter == 0:
        return
    initial = torch.cat([p.detach().reshape(-1) for p in params]).cpu().double().numpy()
    best = {"loss": np.inf, "x": initial}

    def assign(x: np.ndarray) -> None:
        values = torch.from_numpy(x)
        offset = 0
        with torch.no_grad():
            for p in params:
                p.copy_(values[offset : offset + p.numel()].reshape(p.shape))
                offset += p.numel()

    def loss_and_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
        assign(x)
        for p in params:
            p.grad = None
        try:
            with torch.enable_grad():  # also when called under torch.no_grad()
                loss = -objective() / count
                if torch.isfinite(loss):
                    loss.backward()
        except (RuntimeError, ValueError) as error:
            if not is_numerical_failure(error):
                raise
            return np.inf, np.zeros_like(x)
        if not torch.isfinite(loss):
            return np.inf, np.zeros_like(x)
        grad = torch.cat(
            [(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params]
        )
        value = float(loss.detach())
        if value < best["loss"]:
            best.update(loss=value, x=x.copy())
        return value, grad.detach().cpu().double().numpy()

    owner.train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncationWarning)
        scipy.optimize.minimize(
            loss_and_grad,
            initial,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": int(maxiter), "ftol": float(tolerance)},
        )
    assign(best["x"])
    if not np.isfinite(best["loss"]):
        warnings.warn(
            "VISH hyperparameter fitting found no point where the bound is finite; keeping the "
            "initial values.",
            ManiboWarning,
            stacklevel=3,
        )
    for module in owner.modules():
        if isinstance(module, GeometricMaternKernel):
            module.report_truncation()
    owner.eval()
