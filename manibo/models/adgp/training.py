r"""Two-stage training of an activated deep GP: the equivalent network first, then the ELBO.

Stage 1 trains the weights :math:`W_\ell, V_\ell` of the equivalent network (the deep GP's mean) on
the mean squared error, like any network. :func:`initialize_from_network` then sets the remaining
quantities from it: the likelihood noise to the network's training MSE and each layer's kernel
variance so that the prior variance at the training inputs equals ``variance_ratio`` times the
mean square of the layer's output (the whitened posterior covariances start at a small
:math:`R_j = sI`). The mean needs no copying: it is parametrised by :math:`V`
(:math:`m_u = K_{uu}V`, see :mod:`manibo.models.adgp.layer`). Stage 2 maximises the doubly
stochastic ELBO with Adam over the variational parameters (:math:`R_j`, and :math:`V` unless
``train_readout=False``), the kernel variances and parameters, the biases and the noise;
``train_weights=True`` also moves :math:`W`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from manibo._validation import as_tensor_arg, check_finite, check_same_dtype_device
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.adgp.network import ActivatedDeepGP


def _check_positive(name: str, value: int) -> None:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ConfigurationError(f"`{name}` must be an integer >= 1, got {value!r}.")


def _checked_data(model: ActivatedDeepGP, x: Tensor, y: Tensor) -> None:
    model.check_inputs(x, "x")
    as_tensor_arg("y", y)
    check_finite("y", y)
    check_same_dtype_device(x=x, y=y)
    if x.dim() != 2 or y.shape != (x.shape[0], model.output_dim):
        raise InputDataError(
            f"`x` must have shape (n, {model.input_dim}) and `y` shape (n, {model.output_dim}), "
            f"got {tuple(x.shape)} and {tuple(y.shape)}. Use `y.reshape(-1, 1)` for one output."
        )


def _batches(n: int, batch_size: int | None, generator: torch.Generator, device) -> list[Tensor]:
    if batch_size is None or batch_size >= n:
        return [torch.arange(n, device=device)]
    order = torch.randperm(n, generator=generator).to(device)
    return list(order.split(batch_size))


def fit_network(
    model: ActivatedDeepGP,
    x: Tensor,
    y: Tensor,
    epochs: int = 1000,
    lr: float = 3e-3,
    batch_size: int | None = None,
    seed: int = 0,
) -> list[float]:
    """Stage 1: train the equivalent network's weights ``W`` and ``V`` on the mean squared error.

    Args:
        model: the deep GP; only its weights and read-outs change.
        x: inputs, shape ``(n, D)``.
        y: targets, shape ``(n, output_dim)``.
        epochs: passes over the data (Adam steps when ``batch_size`` is None: full batch).
        lr: Adam learning rate.
        batch_size: minibatch size (None: full batch).
        seed: seed of the minibatch order.

    Returns:
        The training MSE after every epoch.
    """
    _checked_data(model, x, y)
    _check_positive("epochs", epochs)
    parameters = [p for layer in model.layers for p in (layer.weights, layer.readout)]
    optimizer = torch.optim.Adam(parameters, lr=lr)
    generator = torch.Generator().manual_seed(int(seed))
    history = []
    for _ in range(int(epochs)):
        for index in _batches(x.shape[0], batch_size, generator, x.device):
            optimizer.zero_grad()
            loss = (model.network(x[index]) - y[index]).pow(2).mean()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            history.append(float((model.network(x) - y).pow(2).mean()))
    return history


@torch.no_grad()
def initialize_from_network(
    model: ActivatedDeepGP, x: Tensor, y: Tensor, variance_ratio: float = 1.0
) -> None:
    r"""Set the noise and kernel variances from the trained network (the mean is already in place).

    Args:
        model: the deep GP after :func:`fit_network`.
        x: training inputs, shape ``(n, D)``.
        y: training targets, shape ``(n, output_dim)``.
        variance_ratio: prior variance at the training inputs over the mean square of each layer's
            network output.
    """
    _checked_data(model, x, y)
    if not float(variance_ratio) > 0:
        raise ConfigurationError(f"`variance_ratio` must be > 0, got {variance_ratio!r}.")
    floor = 1e-6 * float(y.var()) if y.shape[0] > 1 else 1e-6
    model.set_noise(max(float((model.network(x) - y).pow(2).mean()), floor))
    h = x
    for layer in model.layers:
        out = layer.network(h)
        layer.set_variance(1.0)
        prior = layer.prior_variance(h).mean()
        target = variance_ratio * out.pow(2).mean().clamp_min(1e-12)
        layer.set_variance(float(target / prior))
        h = out


def fit_elbo(
    model: ActivatedDeepGP,
    x: Tensor,
    y: Tensor,
    epochs: int = 1000,
    lr: float = 1e-2,
    num_samples: int = 4,
    batch_size: int | None = None,
    train_readout: bool = True,
    train_weights: bool = False,
    seed: int = 0,
) -> list[float]:
    """Stage 2: maximise the doubly stochastic ELBO with Adam.

    Args:
        model: the deep GP, initialised by :func:`initialize_from_network`.
        x: inputs, shape ``(n, D)``.
        y: targets, shape ``(n, output_dim)``.
        epochs: passes over the data.
        lr: Adam learning rate.
        num_samples: Monte Carlo samples of the hidden layers per step.
        batch_size: minibatch size (None: full batch).
        train_readout: also train the read-outs ``V`` (the variational means).
        train_weights: also train the unit weights ``W``.
        seed: seed of the samples and the minibatch order.

    Returns:
        The ELBO per data point at every step (a noisy estimate: ``num_samples`` samples).
    """
    _checked_data(model, x, y)
    _check_positive("epochs", epochs)
    _check_positive("num_samples", num_samples)
    frozen = []
    for layer in model.layers:
        frozen += [] if train_readout else [layer.readout]
        frozen += [] if train_weights else [layer.weights]
    parameters = [p for p in model.parameters() if all(p is not f for f in frozen)]
    optimizer = torch.optim.Adam(parameters, lr=lr)
    order = torch.Generator().manual_seed(int(seed))
    noise_generator = torch.Generator(device=x.device).manual_seed(int(seed))
    history = []
    flags = [f.requires_grad for f in frozen]
    for f in frozen:  # no graph through frozen weights: the layers then reuse their K_uu factor
        f.requires_grad_(False)
    try:
        for _ in range(int(epochs)):
            for index in _batches(x.shape[0], batch_size, order, x.device):
                optimizer.zero_grad()
                elbo = model.elbo(x[index], y[index], num_samples, noise_generator, x.shape[0])
                (-elbo).backward()
                optimizer.step()
                history.append(float(elbo.detach()))
    finally:
        for f, flag in zip(frozen, flags, strict=True):
            f.requires_grad_(flag)
    return history
