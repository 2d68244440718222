r"""GPNet as a BoTorch model: a joint Gaussian posterior over q points, and exact fantasies.

A trained GPNet network is a Bayesian linear model on fixed features,
:math:`f(x) = \phi(x)^\top w` with :math:`w \sim \mathcal N(m, LL^\top)`. The model keeps the
features (the trained network's feature map) and the weight posterior :math:`(m, L)`; conditioning
on observations :math:`y = \Phi w + \varepsilon` is then a Gaussian update of the weight posterior,
exact for this model (:meth:`GPNetModel.condition_on_observations`).
"""

from __future__ import annotations

import copy

import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.models.model import FantasizeMixin, Model
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from gpytorch.likelihoods import GaussianLikelihood
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.models.gpnet.mirror_descent import add_jitter
from manibo.models.gpnet.trainer import GPNet
from manibo.models.inputs import check_model_dtype, check_observations, check_points
from manibo.models.outputs import OneOutput, broadcast_moments, check_output_indices
from manibo.models.transforms import TransformedTrainingInputs, checked_input_transform
from manibo.models.versions import KeepsVersions, check_unchanged, tensor_versions

_HEAD = ("weight_mean", "weight_root")


class GPNetModel(KeepsVersions, OneOutput, TransformedTrainingInputs, Model, FantasizeMixin):
    r"""A trained single-output GPNet (Gaussian likelihood) as a BoTorch model.

    The posterior at ``q`` points is the network's joint Gaussian :math:`\mathcal N(\Phi m, \Phi
    LL^\top\Phi^\top + \epsilon I)`, differentiable in the points, so the BoTorch acquisitions
    that read posteriors (analytic or Monte Carlo, ``qLogNEI`` included) work on it. Fantasy models
    (:meth:`condition_on_observations`, hence ``fantasize``, knowledge gradient and integrated
    variance) update the weight posterior exactly.

    Args:
        gpnet: a trained :class:`~manibo.models.gpnet.GPNet` with a Gaussian likelihood and one
            latent function; its parameters are frozen here.
        outcome_transform: the fitted transform its training targets went through (e.g.
            ``Standardize``, in eval mode), undone on every posterior; None if the targets were raw.
        input_transform: a BoTorch input transform applied to every input, or None.
        prior_mean: constant mean :math:`c` of the prior, in the units of the training targets
            after ``outcome_transform``. GPNet's prior has mean zero: a network trained on the
            targets minus :math:`c` (e.g. the constant fitted by
            :func:`~manibo.models.gpnet.pretrain_hyperparameters`) models
            :math:`f = c + \phi^\top w`, and the posterior and the conditioning add :math:`c`
            back. Default 0.
    """

    _versions_attr, _versions_of = "_conditioned_on", "gpnet"
    _conditioned_on: tuple | None = None  # a fantasy model: the shared network's state

    def __init__(
        self,
        gpnet: GPNet,
        outcome_transform: OutcomeTransform | None = None,
        input_transform: InputTransform | None = None,
        prior_mean: float | Tensor = 0.0,
    ) -> None:
        super().__init__()
        if not isinstance(gpnet.likelihood, GaussianLikelihood) or gpnet.network.num_latents != 1:
            raise ConfigurationError(
                "GPNetModel needs a GPNet with a Gaussian likelihood and one latent function, got "
                f"{type(gpnet.likelihood).__name__} with {gpnet.network.num_latents} latents."
            )
        gpnet.requires_grad_(False)
        self.gpnet = gpnet
        self.likelihood = gpnet.likelihood  # BoTorch's fantasize() inspects model.likelihood
        network = gpnet.network
        self.register_buffer("weight_mean", network.weight_mean.detach()[0].clone())
        self.register_buffer("weight_root", network.scale_tril().detach()[0].clone())
        prior_mean = torch.as_tensor(prior_mean).detach().to(self.weight_mean)
        if prior_mean.numel() != 1 or not bool(torch.isfinite(prior_mean).all()):
            raise ConfigurationError(
                f"`prior_mean` must be one finite number, got {prior_mean.tolist()!r}."
            )
        self.register_buffer("prior_mean", prior_mean.reshape(()))
        if outcome_transform is not None:
            self.outcome_transform = outcome_transform.eval()
        input_transform = checked_input_transform(input_transform)
        if input_transform is not None:
            self.input_transform = input_transform
        self.eval()

    @property
    def num_outputs(self) -> int:
        """One output."""
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        """``[]`` for a trained model; a fantasy model adds the fantasy and input batch."""
        return torch.broadcast_shapes(self.weight_mean.shape[:-1], self.weight_root.shape[:-2])

    def _features(self, X: Tensor) -> Tensor:
        if self._conditioned_on is not None:
            check_unchanged(self.gpnet, self._conditioned_on, "fantasy model")
        check_points(self.gpnet.space, X)
        check_model_dtype(X, self.weight_mean)
        return self.gpnet.network.features(X)

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs,
    ) -> GPyTorchPosterior:
        """Joint Gaussian posterior at ``X``.

        Args:
            X: points ``(*batch, q, *point_shape)`` on the space.
            output_indices: None or ``[0]``.
            observation_noise: add the likelihood's noise (True) or the given noise variances
                (a tensor ``(*batch, q, 1)``, in the units of the training targets after the outcome
                transform) to the covariance.
            posterior_transform: applied last.

        Returns:
            A ``GPyTorchPosterior`` with mean of shape ``(*batch', q, 1)``, ``batch'`` the
            broadcast of ``batch`` and the model's batch shape.

        Raises:
            InputDataError: ``output_indices`` names an output the model does not have.
        """
        check_output_indices(output_indices, self.num_outputs)
        self.eval()
        X = self.transform_inputs(X)
        phi = self._features(X)
        mean = (phi @ self.weight_mean.unsqueeze(-1)).squeeze(-1) + self.prior_mean
        root = phi @ self.weight_root
        cov = add_jitter(root @ root.transpose(-1, -2), self.gpnet.jitter(X.dtype))
        mean, cov = broadcast_moments(mean, cov)
        if isinstance(observation_noise, Tensor):
            cov = cov + torch.diag_embed(observation_noise[..., 0].expand_as(mean))
        elif observation_noise:
            noise = self.likelihood.noise.detach().reshape(()).expand_as(mean)
            cov = cov + torch.diag_embed(noise)
        posterior = GPyTorchPosterior(MultivariateNormal(mean, cov))
        if hasattr(self, "outcome_transform"):
            posterior = self.outcome_transform.untransform_posterior(posterior, X=X)
        if posterior_transform is not None:
            posterior = posterior_transform(posterior)
        return posterior

    def condition_on_observations(
        self, X: Tensor, Y: Tensor, noise: Tensor | None = None, **kwargs
    ) -> GPNetModel:
        r"""The model conditioned on observations: the exact Gaussian update of the weights.

        With :math:`B = \Phi_n L` at the ``n`` new points and noise variances :math:`D`,
        :math:`S = I + B^\top D^{-1} B = CC^\top`, the updated posterior is
        :math:`L' = L C^{-\top}` and :math:`m' = m + L S^{-1} B^\top D^{-1}(y - \Phi_n m)`, the
        weight-space form of GP conditioning. Differentiable in ``X`` and ``Y``; ``n = 0`` leaves
        the posterior unchanged.

        Args:
            X: points ``(*batch, n, *point_shape)`` on the space, ``n >= 0``.
            Y: outcomes in original units, shape ``(*fantasy_batch, *batch, n, 1)``.
            noise: noise variances of the new observations in transformed units, shape
                ``(*batch, n, 1)``; default the likelihood's noise. The model's jitter is added.

        Returns:
            A :class:`GPNetModel` with batch shape ``broadcast(fantasy_batch + batch,
            batch_shape)`` that shares this model's network; once that network changes (a fit,
            ``load_state_dict``, a dtype move), the fantasy model raises
            :class:`~manibo.exceptions.StaleModelError`.
        """
        X = self.transform_inputs(X)
        phi = self._features(X)
        check_observations(X, Y, 1)
        if hasattr(self, "outcome_transform"):
            Y, _ = self.outcome_transform(Y)
        variance = self.likelihood.noise.detach().reshape(()) if noise is None else noise[..., 0]
        variance = (variance + self.gpnet.jitter(phi.dtype)).expand(phi.shape[:-1])
        B = phi @ self.weight_root  # (*batch, n, F)
        scaled = B / variance.unsqueeze(-1)  # D^-1 B
        eye = torch.eye(B.shape[-1], dtype=B.dtype, device=B.device)
        chol = torch.linalg.cholesky(eye + B.transpose(-1, -2) @ scaled)
        prediction = (phi @ self.weight_mean.unsqueeze(-1)).squeeze(-1) + self.prior_mean
        residual = Y[..., 0] - prediction
        rhs = (scaled.transpose(-1, -2) @ residual.unsqueeze(-1)).squeeze(-1)
        solved = torch.cholesky_solve(rhs.unsqueeze(-1), chol).squeeze(-1)
        mean = self.weight_mean + (self.weight_root @ solved.unsqueeze(-1)).squeeze(-1)
        root = torch.linalg.solve_triangular(
            chol, self.weight_root.transpose(-1, -2), upper=False
        ).transpose(-1, -2)  # L C^-T
        shared = (self.gpnet, self.likelihood)
        memo = {**{id(m): m for m in shared}, **{id(getattr(self, k)): None for k in _HEAD}}
        model = copy.deepcopy(self, memo)
        model.weight_mean, model.weight_root = mean, root
        model._conditioned_on = tensor_versions(self.gpnet)  # the network it shares, as it is
        return model.eval()
