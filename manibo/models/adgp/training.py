r"""Two-stage training of an activated deep GP: the equivalent network first, then the ELBO.

Stage 1 (:func:`fit_network`) trains the weights :math:`W_\ell, V_\ell` of the equivalent network
(the deep GP's mean) on its likelihood's loss (the mean squared error, or the cross-entropy for a
categorical likelihood), like any network, optionally with weight decay and early stopping on
validation data. :func:`~manibo.models.adgp.initialize_from_network` then
sets the noise, the kernel variances and the whitened covariances from it (see
:mod:`manibo.models.adgp.initialization`). The mean needs no copying: it is parametrised by
:math:`V` (:math:`m_u = K_{uu}V`, see :mod:`manibo.models.adgp.layer`). Stage 2
(:func:`fit_elbo`) maximises the doubly stochastic ELBO with Adam over the variational
parameters (:math:`R_j`, and :math:`V` unless ``train_readout=False``), the kernel variances and
parameters, the biases and the Gaussian noise; ``train_weights=True`` also moves :math:`W`.
``objective="predictive"`` makes stage 2 maximise the predictive log likelihood instead of the
ELBO (see :meth:`~manibo.models.adgp.ActivatedDeepGP.predictive_log_likelihood`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.adgp.network import ActivatedDeepGP

#: What stage 2 can maximise: the ELBO, or the predictive log likelihood.
STAGE_TWO_OBJECTIVES = ("elbo", "predictive")


def _check_positive(name: str, value: int) -> None:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ConfigurationError(f"`{name}` must be an integer >= 1, got {value!r}.")


def check_training_data(model: ActivatedDeepGP, x: Tensor, y: Tensor) -> None:
    """Raise ``InputDataError`` unless ``x`` is ``(n, D)`` on the parameters' dtype and device
    and ``y`` fits the likelihood: finite ``(n, output_dim)`` like ``x`` (Gaussian) or class
    indices ``(n,)`` (categorical)."""
    model.check_inputs(x, "x")
    if x.dim() != 2:
        raise InputDataError(f"`x` must have shape (n, {model.input_dim}), got {tuple(x.shape)}.")
    model.likelihood.check_targets(x, y, model.output_dim)


def _selected_layers(model: ActivatedDeepGP, indices: Sequence[int] | None) -> list:
    if indices is None:
        return list(model.layers)
    count = len(model.layers)
    chosen = []
    for index in indices:
        if isinstance(index, bool) or int(index) != index or not -count <= index < count:
            raise ConfigurationError(
                f"`train_layers` must hold layer indices in [{-count}, {count}), got {indices!r}."
            )
        chosen.append(model.layers[int(index)])
    return chosen


def _batches(n: int, batch_size: int | None, generator: torch.Generator, device) -> list[Tensor]:
    if batch_size is None or batch_size >= n:
        return [torch.arange(n, device=device)]
    order = torch.randperm(n, generator=generator).to(device)
    return list(order.split(batch_size))


@dataclass
class NetworkTrace:
    """What :func:`fit_network` did.

    Attributes:
        loss: the training loss after every epoch: the mean squared error (Gaussian likelihood)
            or the mean cross-entropy (categorical).
        validation: ``(epoch, loss)`` at every validation check, epoch 0 being the start;
            ``loss`` is the same loss on the validation points.
        best_epoch: the epoch whose weights the model holds at the end (the best validation
            check), or None without validation data (the last epoch).
    """

    loss: list[float] = field(default_factory=list)
    validation: list[tuple[int, float]] = field(default_factory=list)
    best_epoch: int | None = None


def fit_network(
    model: ActivatedDeepGP,
    x: Tensor,
    y: Tensor,
    epochs: int = 1000,
    lr: float = 3e-3,
    weight_decay: float = 0.0,
    batch_size: int | None = None,
    validation: tuple[Tensor, Tensor] | None = None,
    check_every: int = 10,
    patience: int | None = None,
    seed: int = 0,
) -> NetworkTrace:
    """Stage 1: train the equivalent network's weights ``W`` and ``V`` on the likelihood's loss.

    The loss is the mean squared error (Gaussian likelihood) or the mean cross-entropy of the
    logits (categorical). AdamW: Adam on the loss with decoupled weight decay (every step
    multiplies ``W`` and ``V`` by ``1 - lr * weight_decay`` before the Adam update;
    ``weight_decay=0`` is plain Adam).

    With ``validation`` data, the validation loss is computed at the start and every
    ``check_every`` epochs (and after the last); training stops after ``patience`` checks without
    improvement, and the model is left with the weights of the best check (early stopping; the
    start may be the best). The validation points must not be training points.

    Args:
        model: the deep GP; only its weights and read-outs change.
        x: inputs, shape ``(n, D)``.
        y: targets, shape ``(n, output_dim)`` (categorical: class indices ``(n,)``).
        epochs: passes over the data (at most; Adam steps when ``batch_size`` is None).
        lr: learning rate.
        weight_decay: decoupled weight decay (>= 0).
        batch_size: minibatch size (None: full batch).
        validation: ``(x_val, y_val)``, shaped like ``(x, y)``.
        check_every: epochs between validation checks.
        patience: checks without improvement before stopping (None: run every epoch and keep
            the best check).
        seed: seed of the minibatch order.

    Returns:
        A :class:`NetworkTrace`.
    """
    check_training_data(model, x, y)
    if validation is not None:
        check_training_data(model, *validation)
    _check_positive("epochs", epochs)
    _check_positive("check_every", check_every)
    if patience is not None:
        _check_positive("patience", patience)
    if not float(weight_decay) >= 0:
        raise ConfigurationError(f"`weight_decay` must be >= 0, got {weight_decay!r}.")
    parameters = [p for layer in model.layers for p in (layer.weights, layer.readout)]
    optimizer = torch.optim.AdamW(parameters, lr=lr, weight_decay=float(weight_decay))
    generator = torch.Generator().manual_seed(int(seed))
    network_loss = model.likelihood.network_loss
    trace = NetworkTrace()
    best = None

    def check(epoch: int) -> bool:
        """Record the validation loss; True when training should stop."""
        nonlocal best
        with torch.no_grad():
            loss = float(network_loss(model.network(validation[0]), validation[1]))
        trace.validation.append((epoch, loss))
        if best is None or loss < best[1]:
            best = (epoch, loss, [p.detach().clone() for p in parameters])
        checks_since_best = sum(e > best[0] for e, _ in trace.validation)
        return patience is not None and checks_since_best >= patience

    stop = validation is not None and check(0)
    for epoch in range(1, int(epochs) + 1):
        if stop:
            break
        for index in _batches(x.shape[0], batch_size, generator, x.device):
            optimizer.zero_grad()
            loss = network_loss(model.network(x[index]), y[index])
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            trace.loss.append(float(network_loss(model.network(x), y)))
        if validation is not None and (epoch % int(check_every) == 0 or epoch == epochs):
            stop = check(epoch)
    if best is not None:
        with torch.no_grad():
            for p, value in zip(parameters, best[2], strict=True):
                p.copy_(value)
        trace.best_epoch = best[0]
    return trace


@dataclass
class ElboTrace:
    """What :func:`fit_elbo` did.

    Attributes:
        elbo: the sampled objective per data point at every Adam step (the ELBO, or the
            predictive log likelihood with ``objective="predictive"``).
        validation: ``(step, nlpd)`` at every validation check, step 0 being the start; ``nlpd``
            is the mean negative log predictive density of the validation points.
        best_step: the step whose parameters the model holds at the end (the best validation
            check), or None without validation data (the last step).
    """

    elbo: list[float] = field(default_factory=list)
    validation: list[tuple[int, float]] = field(default_factory=list)
    best_step: int | None = None


def fit_elbo(
    model: ActivatedDeepGP,
    x: Tensor,
    y: Tensor,
    epochs: int = 1000,
    lr: float = 1e-2,
    hyperparameter_lr: float | None = None,
    mean_lr: float | None = None,
    num_samples: int = 4,
    batch_size: int | None = None,
    train_readout: bool = True,
    train_weights: bool = False,
    train_layers: Sequence[int] | None = None,
    validation: tuple[Tensor, Tensor] | None = None,
    check_every: int = 10,
    patience: int | None = None,
    validation_samples: int = 32,
    seed: int = 0,
    objective: str = "elbo",
) -> ElboTrace:
    """Stage 2: maximise the doubly stochastic ELBO with Adam, optionally stopped on validation.

    ``objective="predictive"`` maximises the predictive log likelihood instead
    (:meth:`~manibo.models.adgp.ActivatedDeepGP.predictive_log_likelihood`), with everything
    else the same.

    Three parameter groups with their own learning rates: the whitened covariance factors
    :math:`R_j` (``lr``); the kernel variances and parameters and the noise
    (``hyperparameter_lr``); the parameters that move the mean, the read-outs :math:`V` and the
    lift biases :math:`b` (``train_readout``) and the weights :math:`W` (``train_weights``)
    (``mean_lr``). With both flags off the deep GP's mean stays the network's exactly. Only the
    layers in ``train_layers`` train (the Gaussian noise always does); the others keep their
    parameters.

    With ``validation`` data, the validation NLPD (``validation_samples`` hidden-layer samples
    from a fixed seed, so that checks compare like with like) is computed at the start and every
    ``check_every`` epochs; training stops after ``patience`` checks without improvement, and the
    model is left at the best check (which may be the start). The validation points must not be
    training points.

    Args:
        model: the deep GP, initialised by :func:`~manibo.models.adgp.initialize_from_network`.
        x: inputs, shape ``(n, D)``.
        y: targets, shape ``(n, output_dim)`` (categorical: class indices ``(n,)``).
        epochs: passes over the data (at most).
        lr: Adam learning rate of the variational covariance factors.
        hyperparameter_lr: of the kernel variances and the noise (default ``lr``).
        mean_lr: of ``V``, ``b`` and ``W`` when they train (default ``lr``).
        num_samples: Monte Carlo samples of the hidden layers per step.
        batch_size: minibatch size (None: full batch).
        train_readout: also train the read-outs ``V`` and the biases ``b``.
        train_weights: also train the unit weights ``W``.
        train_layers: indices of the layers that train (default: all; ``[-1]``: the last).
        validation: ``(x_val, y_val)``, shaped like ``(x, y)``.
        check_every: epochs between validation checks.
        patience: checks without improvement before stopping (None: run every epoch).
        validation_samples: hidden-layer samples of the validation NLPD.
        seed: seed of the samples and the minibatch order.
        objective: ``"elbo"`` or ``"predictive"``.

    Returns:
        An :class:`ElboTrace`.
    """
    check_training_data(model, x, y)
    if objective not in STAGE_TWO_OBJECTIVES:
        raise ConfigurationError(
            f"`objective` must be one of {STAGE_TWO_OBJECTIVES}, got {objective!r}: 'elbo' for "
            "the evidence lower bound, 'predictive' for the predictive log likelihood."
        )
    maximised = model.elbo if objective == "elbo" else model.predictive_log_likelihood
    if validation is not None:
        check_training_data(model, *validation)
    for name, value in (
        ("epochs", epochs),
        ("num_samples", num_samples),
        ("check_every", check_every),
        ("validation_samples", validation_samples),
    ):
        _check_positive(name, value)
    if patience is not None:
        _check_positive("patience", patience)
    layers = _selected_layers(model, train_layers)
    mean_parameters = []
    for layer in layers:
        mean_parameters += [layer.readout, layer.raw_bias] if train_readout else []
        mean_parameters += [layer.weights] if train_weights else []
    scales = [p for layer in layers for p in (layer.scale_offdiag, layer.raw_scale_diag)]
    hyperparameters = [model.raw_noise] if model.likelihood.has_noise else []
    hyperparameters += [
        p for layer in layers for p in (layer.raw_variance, *layer.kernel.parameters())
    ]
    groups = [
        {"params": scales, "lr": lr},
        {"params": hyperparameters, "lr": lr if hyperparameter_lr is None else hyperparameter_lr},
    ]
    if mean_parameters:
        groups.append({"params": mean_parameters, "lr": lr if mean_lr is None else mean_lr})
    trained = {id(p) for group in groups for p in group["params"]}
    frozen = [p for p in model.parameters() if id(p) not in trained]
    optimizer = torch.optim.Adam(groups)
    order = torch.Generator().manual_seed(int(seed))
    noise_generator = torch.Generator(device=x.device).manual_seed(int(seed))
    trace = ElboTrace()
    best = None

    def check(step: int) -> bool:
        """Record the validation NLPD; True when training should stop."""
        nonlocal best
        generator = torch.Generator(device=x.device).manual_seed(int(seed) + 1)
        with torch.no_grad():
            lpd = model.log_predictive_density(*validation, validation_samples, generator)
        nlpd = float(-lpd.mean())
        trace.validation.append((step, nlpd))
        if best is None or nlpd < best[1]:
            best = (step, nlpd, copy.deepcopy(model.state_dict()))
        checks_since_best = sum(s > best[0] for s, _ in trace.validation)
        return patience is not None and checks_since_best >= patience

    flags = [p.requires_grad for p in frozen]
    for p in frozen:  # no graph through frozen weights: the layers then reuse their K_uu factor
        p.requires_grad_(False)
    try:
        stop = validation is not None and check(0)
        for epoch in range(1, int(epochs) + 1):
            if stop:
                break
            for index in _batches(x.shape[0], batch_size, order, x.device):
                optimizer.zero_grad()
                value = maximised(x[index], y[index], num_samples, noise_generator, x.shape[0])
                (-value).backward()
                optimizer.step()
                trace.elbo.append(float(value.detach()))
            if validation is not None and (epoch % int(check_every) == 0 or epoch == epochs):
                stop = check(len(trace.elbo))
    finally:
        for p, flag in zip(frozen, flags, strict=True):
            p.requires_grad_(flag)
    if best is not None:
        model.load_state_dict(best[2])
        trace.best_step = best[0]
    return trace
