r"""A sample-based BoTorch posterior of an activated deep GP, driven by fixed base samples.

Samples are a deterministic, differentiable function of standard normal *base samples*
(:meth:`ActivatedDGPPosterior.rsample_from_base_samples`), so an MC acquisition with a fixed sampler
(qLogEI, qLogNEI, qUCB, ...) is a deterministic function of ``X`` that L-BFGS can optimise (sample
average approximation). The base samples of a posterior over ``(*batch, n, D)`` inputs have shape
``(*batch, n K + G)``: ``K`` normals per input (the conditional residual of every layer output,
plus the observation noise when asked for) followed by ``G`` normals shared by all inputs (one
whitened draw of every layer's inducing variables). BoTorch's samplers collapse the t-batch
dimensions (``batch_range``) to size 1, so every t-batch sees the same function draws. A sampler
for this posterior is registered with :func:`botorch.sampling.get_sampler` (scrambled Sobol normals;
i.i.d. normals past the Sobol engine's dimension limit).
"""

from __future__ import annotations

import functools

import torch
from botorch.posteriors import Posterior
from botorch.sampling import IIDNormalSampler, SobolQMCNormalSampler
from botorch.sampling.base import MCSampler
from botorch.sampling.get_sampler import GetSampler
from gpytorch.distributions import MultitaskMultivariateNormal, MultivariateNormal
from torch import Tensor
from torch.quasirandom import SobolEngine

from manibo.exceptions import InputDataError
from manibo.models.adgp.layer import LayerState
from manibo.models.adgp.network import ActivatedDeepGP
from manibo.models.versions import KeepsVersions, check_unchanged, tensor_versions

MOMENT_SAMPLES = 256
"""Samples behind :attr:`ActivatedDGPPosterior.mean`, ``variance`` and ``distribution`` (fixed
Sobol normals)."""


class ActivatedDGPPosterior(KeepsVersions, Posterior):
    r"""The posterior of an :class:`~manibo.models.adgp.ActivatedDeepGP` at ``X``, in data units.

    Args:
        network: the trained deep GP.
        X: inputs, shape ``(*batch, n, D)``.
        weights: the affine map from the network's ``m`` outputs to the posterior's ``k``, shape
            ``(m, k)`` (``diag(std)`` to undo outcome standardisation, restricted to the selected
            outputs, composed with the weights of a scalarisation).
        bias: its offset, shape ``(k,)``.
        observation_noise: sample noisy observations :math:`y` instead of :math:`f`: True for the
            likelihood's noise, or noise variances in the network's units, a tensor
            broadcastable to ``(*batch, n, m)``.
        states: the layers' states (default ``network.states()``); a fantasy model passes its
            conditioned last layer here.
    """

    _versions_attr, _versions_of = "_versions", "network"

    def __init__(
        self,
        network: ActivatedDeepGP,
        X: Tensor,
        weights: Tensor,
        bias: Tensor,
        observation_noise: bool | Tensor = False,
        states: list[LayerState] | None = None,
    ) -> None:
        self.network = network
        self.X = X
        self.weights, self.bias = weights, bias
        noisy = isinstance(observation_noise, Tensor) or bool(observation_noise)
        self.observation_noise = observation_noise if noisy else False
        self._states = network.states() if states is None else states
        self._num_point = network.num_point_normals(noisy)
        self._moments: tuple[Tensor, Tensor, Tensor] | None = None
        self._versions = tensor_versions(network)  # samples are drawn lazily, from this state

    @property
    def device(self) -> torch.device:
        """The inputs' device."""
        return self.X.device

    @property
    def dtype(self) -> torch.dtype:
        """The inputs' dtype."""
        return self.X.dtype

    @property
    def batch_shape(self) -> torch.Size:
        """The t-batch shape of the inputs."""
        return self.X.shape[:-2]

    @property
    def base_sample_shape(self) -> torch.Size:
        """``(*batch, n K + G)``: per-input normals followed by the shared ones."""
        n = self.X.shape[-2]
        return self.batch_shape + torch.Size(
            [n * self._num_point + self.network.num_shared_normals()]
        )

    @property
    def batch_range(self) -> tuple[int, int]:
        """Every dimension but the last is a t-batch dimension (collapsed by samplers)."""
        return (0, -1)

    def _extended_shape(self, sample_shape: torch.Size = torch.Size()) -> torch.Size:  # noqa: B008
        return sample_shape + self.X.shape[:-1] + self.weights.shape[-1:]

    def rsample_from_base_samples(self, sample_shape: torch.Size, base_samples: Tensor) -> Tensor:
        r"""Samples as a deterministic function of ``base_samples``.

        Args:
            sample_shape: leading sample shape ``S``.
            base_samples: standard normals of shape ``(*S, *batch, n K + G)`` (t-batch dimensions
                may be expanded from size 1). The shared part must agree across t-batches; it is
                read from the first one.

        Returns:
            Samples of shape ``(*S, *batch, n, k)``, differentiable in ``X``.

        Raises:
            StaleModelError: the network changed since this posterior was taken (samples, and the
                moments built from them, are computed when asked for, from the network).
        """
        expected = sample_shape + self.base_sample_shape
        if base_samples.shape != expected:
            raise InputDataError(
                f"`base_samples` must have shape {tuple(expected)} (sample_shape + "
                f"base_sample_shape), got {tuple(base_samples.shape)}."
            )
        check_unchanged(self.network, self._versions, "posterior")
        n = self.X.shape[-2]
        point = base_samples[..., : n * self._num_point].unflatten(-1, (n, self._num_point))
        shared = base_samples[..., n * self._num_point :]
        first = shared
        for dim in range(len(sample_shape), len(sample_shape) + len(self.batch_shape)):
            first = first.narrow(dim, 0, 1)
        expanded = all(
            shared.stride(dim) == 0 or shared.shape[dim] == 1
            for dim in range(len(sample_shape), len(sample_shape) + len(self.batch_shape))
        )
        if not expanded and not torch.equal(shared, first.expand_as(shared)):
            raise InputDataError(
                "the shared part of `base_samples` (its last "
                f"{self.network.num_shared_normals()} entries) differs across t-batches; draw it "
                "with the t-batch dimensions collapsed to size 1 (as BoTorch's samplers do)."
            )
        samples = self.network.sample(
            self.X, point, first, self._states, observation_noise=self.observation_noise
        )
        return self.bias + samples @ self.weights

    def rsample(self, sample_shape: torch.Size | None = None) -> Tensor:
        """Samples from fresh i.i.d. normals (function draws shared across t-batches).

        Args:
            sample_shape: leading sample shape (default ``(1,)``).

        Returns:
            Shape ``(*sample_shape, *batch, n, k)``.
        """
        sample_shape = torch.Size([1]) if sample_shape is None else torch.Size(sample_shape)
        collapsed = torch.Size([1] * len(self.batch_shape)) + self.base_sample_shape[-1:]
        base = torch.randn(sample_shape + collapsed, dtype=self.dtype, device=self.device)
        return self.rsample_from_base_samples(
            sample_shape, base.expand(sample_shape + self.base_sample_shape)
        )

    def _moment_estimates(self) -> tuple[Tensor, Tensor, Tensor]:
        """Mean, variance and joint covariance: of :data:`MOMENT_SAMPLES` fixed Sobol samples of
        the latent function, plus the observation noise exactly (it is independent of it)."""
        if self._moments is None:
            latent = self
            if self.observation_noise is not False:
                latent = ActivatedDGPPosterior(
                    self.network, self.X, self.weights, self.bias, False, self._states
                )
                latent._versions = self._versions
            sampler = _moment_sampler(latent.base_sample_shape[-1], self.dtype, self.device)
            samples = sampler(latent)
            mean = samples.mean(0)
            variance = samples.var(0) if samples.numel() else mean  # var warns for no points
            centred = (samples - mean).flatten(-2)  # (S, *batch, n k): outputs vary fastest
            covariance = centred.unsqueeze(-1) * centred.unsqueeze(-2)
            covariance = covariance.sum(0) / (samples.shape[0] - 1)
            if self.observation_noise is not False:
                noise = self._noise_covariance()  # (*batch, n, k, k)
                variance = variance + noise.diagonal(dim1=-2, dim2=-1)
                eye = torch.eye(noise.shape[-3], dtype=noise.dtype, device=noise.device)
                blocks = torch.einsum("...ikl,ij->...ikjl", noise, eye)
                covariance = covariance + blocks.reshape(covariance.shape)
            self._moments = (mean, variance, covariance)
        return self._moments

    def _noise_covariance(self) -> Tensor:
        """Covariance that the observation noise adds per point, ``W^T diag(noise) W``, shape
        ``(*batch, n, k, k)``."""
        noise = self.network.noise if self.observation_noise is True else self.observation_noise
        n, m = self.X.shape[-2], self.weights.shape[-2]
        noise = noise.to(self.X).expand(*self.batch_shape, n, m)
        return torch.einsum("...i,ik,il->...kl", noise, self.weights, self.weights)

    @property
    def mean(self) -> Tensor:
        """Posterior mean from :data:`MOMENT_SAMPLES` fixed Sobol samples, ``(*batch, n, k)``."""
        return self._moment_estimates()[0]

    @property
    def variance(self) -> Tensor:
        """Posterior variance from the same fixed samples, shape ``(*batch, n, k)``."""
        return self._moment_estimates()[1]

    @property
    def distribution(self) -> MultivariateNormal:
        r"""The moment-matched Gaussian: mean and joint covariance of the same fixed samples.

        What acquisitions that need a Gaussian predictive (max-value entropy search: its
        entropy, log density and covariance) see; the samples themselves stay those of the deep GP.
        A small jitter (:math:`10^{-8}` of the mean variance in float64, :math:`10^{-5}` in
        float32) keeps the covariance positive definite.

        Returns:
            A ``MultivariateNormal`` over the ``n`` points (one output), or a
            ``MultitaskMultivariateNormal`` over ``n`` points and ``k`` outputs (interleaved).
        """
        mean, variance, covariance = self._moment_estimates()
        relative = 1e-8 if self.dtype == torch.float64 else 1e-5
        jitter = relative * variance.mean(dim=(-2, -1)).clamp_min(1e-30)
        eye = torch.eye(covariance.shape[-1], dtype=covariance.dtype, device=covariance.device)
        covariance = covariance + jitter[..., None, None] * eye
        if mean.shape[-1] == 1:
            return MultivariateNormal(mean[..., 0], covariance)
        return MultitaskMultivariateNormal(mean, covariance, interleaved=True)


def _normal_sampler(num_normals: int, sample_shape: torch.Size, seed: int | None) -> MCSampler:
    """Scrambled Sobol normals, or i.i.d. normals past the Sobol engine's dimension limit."""
    if num_normals > SobolEngine.MAXDIM:
        return IIDNormalSampler(sample_shape=sample_shape, seed=seed)
    return SobolQMCNormalSampler(sample_shape=sample_shape, seed=seed)


@functools.lru_cache(maxsize=8)
def _moment_sampler(num_normals: int, dtype: torch.dtype, device: torch.device) -> MCSampler:
    """The fixed sampler behind :attr:`ActivatedDGPPosterior.mean` for posteriors with
    ``num_normals`` normals per sample, in ``dtype`` on ``device``. Kept, so that an optimiser's
    repeated calls at one shape reuse its base samples instead of drawing the same Sobol points
    again (the samples are those of a fresh sampler: the seed is fixed)."""
    return _normal_sampler(num_normals, torch.Size([MOMENT_SAMPLES]), seed=0)


@GetSampler.register(ActivatedDGPPosterior)
def get_activated_dgp_sampler(
    posterior: ActivatedDGPPosterior, sample_shape: torch.Size, *, seed: int | None = None
) -> MCSampler:
    """The sampler BoTorch's ``get_sampler`` returns for :class:`ActivatedDGPPosterior`.

    Scrambled Sobol normals (:class:`~botorch.sampling.SobolQMCNormalSampler`), or i.i.d. normals
    when one sample needs more normals than the Sobol engine's 21201 dimensions.
    """
    return _normal_sampler(posterior.base_sample_shape[-1], sample_shape, seed)
