r"""The activated deep GP as a BoTorch ``Model``: posterior, output selection, fantasy models."""

from __future__ import annotations

import copy
import time

import torch
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.models.model import FantasizeMixin, Model
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import Standardize
from botorch.posteriors import Posterior
from botorch.utils.types import DEFAULT
from torch import Tensor

from manibo._validation import as_tensor_arg, check_finite, check_same_dtype_device
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.adgp.activations import Activation
from manibo.models.adgp.conditioning import conditioned_last_layer
from manibo.models.adgp.initialization import initialize_from_network
from manibo.models.adgp.layer import KernelFactory, LayerState
from manibo.models.adgp.network import ActivatedDeepGP
from manibo.models.adgp.posterior import ActivatedDGPPosterior
from manibo.models.adgp.training import STAGE_TWO_OBJECTIVES, fit_elbo, fit_network
from manibo.models.inputs import check_observations
from manibo.models.outputs import check_output_indices
from manibo.models.transforms import (
    OutcomeTransformArg,
    TransformedTrainingInputs,
    checked_input_transform,
    fitted_outcome_transform,
    transformed_training_inputs,
)
from manibo.models.versions import KeepsVersions, check_unchanged, tensor_versions

_CONDITIONED = ("last_readout", "last_scale_tril")


class ActivatedDGPModel(KeepsVersions, TransformedTrainingInputs, Model, FantasizeMixin):
    r"""A BoTorch model whose posterior is an activated deep GP trained in two stages.

    Outcomes go through ``outcome_transform`` (BoTorch's ``Standardize`` per column by default)
    before training, and the posterior is returned in data units. Inputs are points of
    :math:`\mathbb R^D` (scale them to about unit size) or of a sphere in ambient coordinates;
    every layer lifts its input to :math:`[h, b]`. Construction builds the network; :meth:`fit`
    trains it (:mod:`manibo.models.adgp.training`):

    1. stage 1 fits the equivalent network for ``network_epochs`` full-batch Adam steps;
    2. :func:`~manibo.models.adgp.initialize_from_network` sets the noise, kernel variances and
       :math:`q(v)` near the ELBO's optimum for that mean (hidden variances: ``hidden_scale``);
    3. stage 2 runs ``elbo_epochs`` full-batch Adam steps on the ELBO over the last layer's
       covariance, variance, read-out and bias (and its weights with ``train_weights``) and the
       noise; the hidden layers keep their start unless ``train_hidden``
       (``stage_two_objective="predictive"``: on the predictive log likelihood instead).

    With ``previous_model`` (the surrogate of the previous BO iteration, which the loop passes
    when the ``"adgp"`` surrogate has ``warm_start=True``) of the same architecture, dtype and
    device, stage 1 starts from its network and runs ``warm_network_epochs`` steps, and
    stage 2 runs ``warm_elbo_epochs``: one more observation moves the optimum little. The start of
    stage 2 is recomputed in closed form either way. ``fit_seconds`` records the time.

    Args:
        train_X: inputs, shape ``(n, D)``.
        train_Y: outcomes, shape ``(n, m)``.
        num_layers: GP layers.
        num_units: inducing variables (hidden units) per layer.
        hidden_dim: outputs of each hidden layer (default ``D``).
        activation: ``"softplus"``, ``"relu"`` or an :class:`~manibo.models.adgp.Activation`.
        kernel: factory ``Sphere(D) -> ZonalKernel`` (default: order-1 arc-cosine).
        num_levels: truncation level of :math:`K_{uu}`.
        network_epochs: Adam steps of stage 1.
        elbo_epochs: Adam steps of stage 2.
        network_lr: learning rate of stage 1.
        elbo_lr: learning rate of stage 2 (covariance factors, kernel variances, noise).
        mean_lr: stage-2 learning rate of the read-outs, biases and weights.
        num_samples: Monte Carlo samples per ELBO step.
        hidden_scale: hidden-layer variance scale of the stage-2 start.
        train_weights: stage 2 also trains the unit weights ``W`` (of the layers it trains).
        train_hidden: stage 2 also trains the hidden layers.
        stage_two_objective: ``"elbo"`` or ``"predictive"`` (see
            :func:`~manibo.models.adgp.fit_elbo`).
        previous_model: an :class:`ActivatedDGPModel` to warm-start from (ignored when its
            architecture differs).
        warm_network_epochs: stage-1 steps after a warm start.
        warm_elbo_epochs: stage-2 steps after a warm start.
        seed: seed of the initial weights and of the training samples.
        outcome_transform: ``Standardize`` (the default, ``Standardize(m)``) or None; the
            posterior folds its affine map into the samples. With None the network models the
            outcomes as they are, and outcomes far from 0 are fitted poorly (a column of
            100 - 0.01 z on S²: its mean off by up to 14.5 at 5 test points, against 0.0005 with
            the default).
        input_transform: a BoTorch input transform applied to every input, or None.

    Every BoTorch acquisition works: Monte Carlo ones on the samples (the registered sampler drives
    them from fixed base samples), analytic ones on the Monte Carlo ``mean`` and ``variance``, and
    max-value entropy search on the moment-matched Gaussian ``distribution``. Fantasy models
    (:meth:`condition_on_observations`, hence knowledge gradient and integrated variance) update the
    last layer's inducing posterior (:mod:`manibo.models.adgp.conditioning`).
    """

    _versions_attr, _versions_of = "_conditioned_on", "network"
    _conditioned_on: tuple | None = None  # a fantasy model: the shared network's state

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        num_layers: int = 3,
        num_units: int = 128,
        hidden_dim: int | None = None,
        activation: str | Activation = "softplus",
        kernel: KernelFactory | None = None,
        num_levels: int = 20,
        network_epochs: int = 1000,
        elbo_epochs: int = 200,
        network_lr: float = 3e-3,
        elbo_lr: float = 1e-2,
        mean_lr: float = 1e-3,
        num_samples: int = 4,
        hidden_scale: float = 0.1,
        train_weights: bool = True,
        train_hidden: bool = False,
        stage_two_objective: str = "elbo",
        previous_model: ActivatedDGPModel | None = None,
        warm_network_epochs: int = 100,
        warm_elbo_epochs: int = 50,
        seed: int = 0,
        outcome_transform: OutcomeTransformArg = DEFAULT,
        input_transform: InputTransform | None = None,
    ) -> None:
        super().__init__()
        for name, value in (("train_X", train_X), ("train_Y", train_Y)):
            as_tensor_arg(name, value)
            check_finite(name, value)
            if value.dim() != 2:
                raise InputDataError(
                    f"`{name}` must be a matrix (n, columns), got shape {tuple(value.shape)}."
                )
        check_same_dtype_device(train_X=train_X, train_Y=train_Y)
        if stage_two_objective not in STAGE_TWO_OBJECTIVES:
            raise ConfigurationError(
                f"`stage_two_objective` must be one of {STAGE_TWO_OBJECTIVES}, got "
                f"{stage_two_objective!r}."
            )
        if train_X.shape[0] != train_Y.shape[0]:
            raise InputDataError(
                f"`train_X` ({tuple(train_X.shape)}) and `train_Y` ({tuple(train_Y.shape)}) must "
                "have the same number of rows, one per observation."
            )
        if train_X.shape[0] < 2:
            raise InputDataError(
                f"the activated deep GP needs at least 2 observations, got {train_X.shape[0]}; "
                "evaluate another point first (the loop's initial design gives it at least 2)."
            )
        self.train_X, self.train_Y = train_X, train_Y
        outcome_transform, _ = fitted_outcome_transform(train_Y, outcome_transform)
        if outcome_transform is not None:
            if not isinstance(outcome_transform, Standardize):
                raise ConfigurationError(
                    "`outcome_transform` of the activated deep GP must be Standardize or None (its "
                    f"posterior folds an affine map into the samples), got "
                    f"{type(outcome_transform).__name__}."
                )
            self.outcome_transform = outcome_transform
        input_transform = checked_input_transform(input_transform)
        if input_transform is not None:
            self.input_transform = input_transform
        self._outputs = list(range(train_Y.shape[-1]))
        self.register_buffer("last_readout", None)
        self.register_buffer("last_scale_tril", None)
        self.network = ActivatedDeepGP(
            self.transformed_inputs().shape[-1],
            train_Y.shape[-1],
            num_layers=num_layers,
            num_units=num_units,
            hidden_dim=hidden_dim,
            activation=activation,
            kernel=kernel,
            num_levels=num_levels,
            seed=seed,
            dtype=train_X.dtype,
            device=train_X.device,
        )
        self.options = {
            "network_epochs": network_epochs,
            "elbo_epochs": elbo_epochs,
            "network_lr": network_lr,
            "elbo_lr": elbo_lr,
            "mean_lr": mean_lr,
            "num_samples": num_samples,
            "hidden_scale": hidden_scale,
            "train_weights": train_weights,
            "train_hidden": train_hidden,
            "stage_two_objective": stage_two_objective,
            "warm_network_epochs": warm_network_epochs,
            "warm_elbo_epochs": warm_elbo_epochs,
            "seed": seed,
        }
        self.warm_started = self._warm_start(previous_model)
        self.fit_seconds: float | None = None

    def _apply(self, fn, *args, **kwargs):
        # the training data are attributes, not buffers (views of a model share them): move them
        self.train_X, self.train_Y = fn(self.train_X), fn(self.train_Y)
        return super()._apply(fn, *args, **kwargs)

    @property
    def num_outputs(self) -> int:
        """Number of outcomes ``m`` (of the selected ones after :meth:`subset_output`)."""
        return len(self._outputs)

    @property
    def batch_shape(self) -> torch.Size:
        """``[]`` for a trained model; a fantasy model adds the fantasy and input batch."""
        if self.last_readout is None:
            return torch.Size([])
        return torch.broadcast_shapes(self.last_readout.shape[:-2], self.last_scale_tril.shape[:-3])

    @property
    def likelihood(self):
        """The network's likelihood (Gaussian for a BoTorch model)."""
        return self.network.likelihood

    def transformed_inputs(self) -> Tensor:
        """The training inputs after the input transform, shape ``(n, D)``."""
        return transformed_training_inputs(self.train_X, getattr(self, "input_transform", None))

    def transformed_targets(self) -> Tensor:
        """The training outcomes after the outcome transform, shape ``(n, m)``."""
        if not hasattr(self, "outcome_transform"):
            return self.train_Y
        shift, scale = self._outcome_affine()
        return (self.train_Y - shift) / scale

    def _outcome_affine(self) -> tuple[Tensor, Tensor]:
        """``(shift, scale)`` of the outcome transform per network output, shapes ``(m,)``."""
        transform = getattr(self, "outcome_transform", None)
        ones = self.train_Y.new_ones(self.network.output_dim)
        if transform is None:
            return 0 * ones, ones
        return transform.means.reshape(-1).to(ones), transform.stdvs.reshape(-1).to(ones)

    def _states(self) -> list[LayerState]:
        """The layers' states, with the conditioned last layer of a fantasy model."""
        states = self.network.states()
        if self.last_readout is not None:
            if self._conditioned_on is not None:
                check_unchanged(self.network, self._conditioned_on, "fantasy model")
            last = states[-1]
            states[-1] = LayerState(
                last.chol, last.inverse, self.last_scale_tril, self.last_readout
            )
        return states

    def _warm_start(self, previous: ActivatedDGPModel | None) -> bool:
        """Copy the network weights of ``previous`` when its architecture is this one's."""
        if not isinstance(previous, ActivatedDGPModel):
            return False
        mine, theirs = self.network.state_dict(), previous.network.state_dict()
        same = mine.keys() == theirs.keys() and all(
            mine[k].shape == theirs[k].shape
            and mine[k].dtype == theirs[k].dtype
            and mine[k].device == theirs[k].device
            for k in mine
        )
        same = same and repr(self.network.layers) == repr(previous.network.layers)
        if not same:
            return False
        with torch.no_grad():
            for layer, old in zip(self.network.layers, previous.network.layers, strict=True):
                for name in ("weights", "readout", "raw_bias"):
                    getattr(layer, name).copy_(getattr(old, name))
        return True

    def fit(self) -> ActivatedDGPModel:
        """Run both training stages on the training data; returns ``self``. The network stage
        starts from the network's current weights (a second call continues the first), and the
        variational stage is then initialised anew from the network."""
        if self.last_readout is not None or self.num_outputs != self.network.output_dim:
            raise ConfigurationError(
                "a fantasy model or an output subset shares the network of the model it came "
                "from; fit that model instead."
            )
        start = time.perf_counter()
        o, x, y = self.options, self.transformed_inputs(), self.transformed_targets()
        warm = self.warm_started
        self.network.requires_grad_(True)
        fit_network(
            self.network,
            x,
            y,
            epochs=o["warm_network_epochs"] if warm else o["network_epochs"],
            lr=o["network_lr"],
            seed=o["seed"],
        )
        initialize_from_network(self.network, x, y, hidden_scale=o["hidden_scale"])
        fit_elbo(
            self.network,
            x,
            y,
            epochs=o["warm_elbo_epochs"] if warm else o["elbo_epochs"],
            lr=o["elbo_lr"],
            mean_lr=o["mean_lr"],
            num_samples=o["num_samples"],
            train_weights=o["train_weights"],
            train_layers=None if o["train_hidden"] else [-1],
            seed=o["seed"],
            objective=o["stage_two_objective"],
        )
        self.network.requires_grad_(False)
        self.fit_seconds = time.perf_counter() - start
        return self

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform=None,
        **kwargs,
    ) -> Posterior:
        """The sample-based posterior at ``X``.

        Args:
            X: inputs, shape ``(*batch, q, D)``.
            output_indices: None (every output) or the indices of the outputs to return.
            observation_noise: True adds the learned likelihood noise to the samples; a tensor
                ``(*batch, q, k)`` (``k`` the number of returned outputs, or 1) adds noise of
                those variances, in transformed (standardised) units.
            posterior_transform: None or a ``ScalarizedPosteriorTransform`` (folded into the
                posterior's affine output map).

        Returns:
            An :class:`~manibo.models.adgp.ActivatedDGPPosterior` with samples of shape
            ``(*sample, *batch', q, k)`` (``k = 1`` after a scalarisation), ``batch'`` the
            broadcast of ``batch`` and the model's batch shape.

        Raises:
            InputDataError: ``output_indices`` names an output the model does not have.
            ConfigurationError: a posterior transform other than a scalarisation.
        """
        outputs = [self._outputs[i] for i in check_output_indices(output_indices, self.num_outputs)]
        self.eval()
        X = self.network.check_inputs(self.transform_inputs(X), "X")
        X = X.expand(*torch.broadcast_shapes(X.shape[:-2], self.batch_shape), *X.shape[-2:])
        shift, scale = self._outcome_affine()
        weights, bias = torch.diag(scale)[:, outputs], shift[outputs]
        if isinstance(observation_noise, Tensor):
            observation_noise = self._network_noise(observation_noise, outputs)
        if isinstance(posterior_transform, ScalarizedPosteriorTransform):
            scalarise = posterior_transform.weights.to(weights).unsqueeze(-1)  # (k, 1)
            weights, bias = weights @ scalarise, bias @ scalarise + posterior_transform.offset
        elif posterior_transform is not None:
            raise ConfigurationError(
                f"{type(posterior_transform).__name__} is not supported by the activated deep GP; "
                "use a ScalarizedPosteriorTransform or an MC objective on the samples."
            )
        return ActivatedDGPPosterior(
            self.network, X, weights, bias, observation_noise, states=self._states()
        )

    def _network_noise(self, noise: Tensor, outputs: list[int]) -> Tensor:
        """Noise variances of the selected outputs, shape ``(..., k)``, as ``(..., m)`` over the
        network's outputs (0 for the others)."""
        if noise.shape[-1] not in (1, len(outputs)):
            raise InputDataError(
                f"`observation_noise` must have 1 or {len(outputs)} columns (one per returned "
                f"output), got shape {tuple(noise.shape)}."
            )
        full = noise.new_zeros(*noise.shape[:-1], self.network.output_dim)
        full[..., outputs] = noise.expand(*noise.shape[:-1], len(outputs))
        return full

    def subset_output(self, idcs: list[int]) -> ActivatedDGPModel:
        """The model restricted to the outputs ``idcs``; it shares this model's network.

        Raises:
            InputDataError: ``idcs`` names an output the model does not have.
        """
        outputs = [self._outputs[i] for i in check_output_indices(idcs, self.num_outputs)]
        model = self._sharing_copy()
        model._outputs = outputs
        return model

    def _sharing_copy(self) -> ActivatedDGPModel:
        """A copy that shares the network and the training data (a new view of one model)."""
        shared = (self.network, self.train_X, self.train_Y)
        return copy.deepcopy(self, {id(obj): obj for obj in shared})

    def condition_on_observations(
        self, X: Tensor, Y: Tensor, noise: Tensor | None = None, **kwargs
    ) -> ActivatedDGPModel:
        """A fantasy model: the last layer's inducing posterior updated on ``(X, Y)``.

        See :mod:`manibo.models.adgp.conditioning` for the update (Bayesian conditioning of the
        predictive for a one-layer model; the best linear update of the last layer, hidden layers
        kept, for a deep one). Differentiable in ``X`` and ``Y``; ``X`` may hold no points.

        Args:
            X: inputs, shape ``(*batch, n, D)``, ``n >= 0``.
            Y: outcomes in original units, shape ``(*fantasy, *batch, n, k)``, ``k`` the number of
                outputs.
            noise: noise variances of the new observations in transformed units, shape
                ``(*batch, n, k)``; default the learned noise.

        Returns:
            An :class:`ActivatedDGPModel` with batch shape ``broadcast(fantasy + batch,
            batch_shape)`` that shares this model's network; once that network changes (a fit,
            ``load_state_dict``, a dtype move), the fantasy model's posteriors raise
            :class:`~manibo.exceptions.StaleModelError`.
        """
        X = self.network.check_inputs(self.transform_inputs(X), "X")
        check_observations(X, Y, self.num_outputs)
        shift, scale = self._outcome_affine()
        P, outputs = self.network.output_dim, self._outputs
        targets = Y.new_zeros(*Y.shape[:-1], P)
        targets[..., outputs] = (Y - shift[outputs]) / scale[outputs]
        variances = self.network.noise.detach().expand(*X.shape[:-1], P).clone()
        if noise is not None:
            variances[..., outputs] = noise.expand(*X.shape[:-1], len(outputs))
        states = self._states()
        readout, scale_tril = conditioned_last_layer(
            self.network, states, X, targets, variances, seed=self.options["seed"]
        )
        if len(outputs) < P:  # outputs outside a subset are not observed: keep them
            kept = [j for j in range(P) if j not in outputs]
            readout = readout.clone()
            readout[..., kept] = states[-1].readout[..., kept]
            scale_tril = scale_tril.clone()
            scale_tril[..., kept, :, :] = states[-1].scale_tril[..., kept, :, :]
        model = self._sharing_copy()
        model.last_readout, model.last_scale_tril = readout, scale_tril
        model._conditioned_on = tensor_versions(self.network)  # the network it shares, as it is
        return model.eval()
