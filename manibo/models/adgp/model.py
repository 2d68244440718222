r"""The activated deep GP as a BoTorch ``Model``, and the ``"adgp"`` surrogate (loop, CLI)."""

from __future__ import annotations

import inspect
import time

import torch
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.exceptions.errors import UnsupportedError
from botorch.models.model import Model
from botorch.posteriors import Posterior
from torch import Tensor

from manibo._validation import as_tensor_arg, check_finite, check_same_dtype_device
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.adgp.activations import Activation
from manibo.models.adgp.initialization import initialize_from_network
from manibo.models.adgp.layer import KernelFactory
from manibo.models.adgp.network import ActivatedDeepGP
from manibo.models.adgp.posterior import ActivatedDGPPosterior
from manibo.models.adgp.training import STAGE_TWO_OBJECTIVES, fit_elbo, fit_network
from manibo.models.exact_gp import validate_training_data
from manibo.models.registry import register_surrogate


class ActivatedDGPModel(Model):
    r"""A BoTorch model whose posterior is an activated deep GP trained in two stages.

    Outcomes are standardised (per column) before training and the posterior is returned in data
    units. Inputs are points of :math:`\mathbb R^D` (scale them to about unit size) or of a sphere
    in ambient coordinates; every layer lifts its input to :math:`[h, b]`. Construction trains the
    model unless ``fit=False`` (:mod:`manibo.models.adgp.training`):

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
        fit: train now (otherwise call :meth:`fit`).

    Fantasies (``condition_on_observations``) are not available, so knowledge-gradient acquisitions
    are not either; every MC acquisition (qLogEI, qLogNEI, qUCB, ...) and the analytic ones (through
    the Monte Carlo ``mean`` and ``variance`` of the posterior) work.
    """

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
        fit: bool = True,
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
        if train_X.shape[0] != train_Y.shape[0] or train_X.shape[0] < 2:
            raise InputDataError(
                f"`train_X` ({tuple(train_X.shape)}) and `train_Y` ({tuple(train_Y.shape)}) must "
                "have the same number of rows, at least 2."
            )
        self.train_X, self.train_Y = train_X, train_Y
        self.register_buffer("outcome_mean", train_Y.mean(0))
        std = train_Y.std(0)
        self.register_buffer("outcome_std", torch.where(std > 0, std, torch.ones_like(std)))
        self.network = ActivatedDeepGP(
            train_X.shape[-1],
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
        if fit:
            self.fit()

    @property
    def num_outputs(self) -> int:
        """Number of outcomes ``m``."""
        return self.network.output_dim

    @property
    def batch_shape(self) -> torch.Size:
        """Empty: one model, no model batch."""
        return torch.Size([])

    def standardized_targets(self) -> Tensor:
        """The training outcomes standardised per column, shape ``(n, m)``."""
        return (self.train_Y - self.outcome_mean) / self.outcome_std

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
        """Run both training stages on the training data; returns ``self``."""
        start = time.perf_counter()
        o, x, y = self.options, self.train_X, self.standardized_targets()
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
            output_indices: must be None or every output (no subsetting).
            observation_noise: True adds the learned likelihood noise to the samples.
            posterior_transform: None or a ``ScalarizedPosteriorTransform`` (folded into the
                posterior's affine output map).

        Returns:
            An :class:`~manibo.models.adgp.ActivatedDGPPosterior` with samples of shape
            ``(*sample, *batch, q, m)`` (``m = 1`` after a scalarisation).
        """
        self.network.check_inputs(X, "X")
        if output_indices is not None and list(output_indices) != list(range(self.num_outputs)):
            raise UnsupportedError(
                f"`output_indices` {output_indices!r}: the activated deep GP predicts all of its "
                f"{self.num_outputs} outputs jointly; pass None and select the outputs afterwards."
            )
        if isinstance(observation_noise, Tensor):
            raise UnsupportedError(
                "`observation_noise` must be True or False for the activated deep GP (it learns "
                "one noise variance); a tensor of known noise levels is not supported."
            )
        weights, bias = torch.diag(self.outcome_std), self.outcome_mean
        if isinstance(posterior_transform, ScalarizedPosteriorTransform):
            scalarise = posterior_transform.weights.to(weights).unsqueeze(-1)  # (m, 1)
            weights, bias = weights @ scalarise, bias @ scalarise + posterior_transform.offset
        elif posterior_transform is not None:
            raise UnsupportedError(
                f"{type(posterior_transform).__name__} is not supported by the activated deep GP; "
                "use a ScalarizedPosteriorTransform or an MC objective on the samples."
            )
        return ActivatedDGPPosterior(self.network, X, weights, bias, bool(observation_noise))

    def condition_on_observations(self, X: Tensor, Y: Tensor, **kwargs) -> Model:
        """Not available: retrain on the new data (knowledge-gradient acquisitions need it)."""
        raise UnsupportedError(
            "the activated deep GP has no fantasy models (condition_on_observations), so "
            "knowledge-gradient acquisitions such as 'qkg' are unavailable; use 'qlognei', "
            "'qlogei' or 'qucb'."
        )


#: Defaults of the ``"adgp"`` surrogate: a small network and short training, so that one Bayesian
#: optimisation iteration costs seconds on a CPU (measured in ``docs/adgp.md``).
SURROGATE_DEFAULTS = {
    "num_layers": 1,
    "num_units": 128,
    "network_epochs": 100,
    "network_lr": 1e-2,
    "elbo_epochs": 100,
    "num_samples": 2,
    "stage_two_objective": "predictive",
    "warm_network_epochs": 30,
    "warm_elbo_epochs": 30,
}


@register_surrogate("adgp")
def activated_dgp_surrogate(
    space, train_X, train_Y, previous_model=None, warm_start=False, **options
) -> ActivatedDGPModel:
    """Activated deep GP on ambient coordinates (options: see :class:`ActivatedDGPModel`).

    The loop offers its previous surrogate as ``previous_model``. It is used only with
    ``warm_start=True``: the network then starts from the previous one and trains for
    ``warm_network_epochs`` and ``warm_elbo_epochs`` steps. Off by default, because a proposal then
    depends on the surrogates before it, not only on the seed and the data, so a run resumed from
    its journal (which starts cold) no longer proposes exactly the points of an uninterrupted run.
    """
    validate_training_data(space, train_X, train_Y)
    accepted = set(inspect.signature(ActivatedDGPModel).parameters)
    unknown = set(options) - (accepted - {"train_X", "train_Y", "previous_model"})
    if unknown:
        raise ConfigurationError(
            f"unknown option(s) {sorted(unknown)} for the 'adgp' surrogate; see "
            "manibo.models.adgp.ActivatedDGPModel for the accepted ones."
        )
    if not isinstance(warm_start, bool):
        raise ConfigurationError(f"`warm_start` must be True or False, got {warm_start!r}.")
    return ActivatedDGPModel(
        train_X.reshape(train_X.shape[0], -1),
        train_Y,
        previous_model=previous_model if warm_start else None,
        **{**SURROGATE_DEFAULTS, **options},
    )
