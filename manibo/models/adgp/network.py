r"""The activated deep GP: stacked activated GP layers whose mean forward pass is a neural network.

Layer :math:`\ell` maps :math:`\mathbb R^{D_{\ell-1}} \to \mathbb R^{D_\ell}`; the hidden widths
:math:`D_\ell` are the numbers of GP outputs ("heads") and ``num_units`` is the number of inducing
variables (hidden units) of every layer. Dutordoir (2021), §4.4.1, uses three layers, 128 units and
hidden heads equal to the input dimension, which are the defaults here. Inference is doubly
stochastic (Salimbeni & Deisenroth 2017): samples are propagated through the layers by
reparameterisation, and the likelihood's expectation under the last layer is taken in closed form
(Gaussian, regression) or by Monte Carlo (categorical, classification;
:mod:`manibo.models.adgp.likelihoods`).
"""

from __future__ import annotations

import math

import torch
from gpytorch.constraints import Positive
from gpytorch.module import Module
from torch import Tensor, nn

from manibo._validation import as_tensor_arg, check_finite
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.adgp.activations import Activation
from manibo.models.adgp.layer import ActivatedGPLayer, KernelFactory, LayerState
from manibo.models.adgp.likelihoods import make_likelihood
from manibo.models.inputs import check_model_dtype


class ActivatedDeepGP(Module):
    r"""A deep GP of :class:`ActivatedGPLayer` s with a Gaussian or a categorical likelihood.

    Args:
        input_dim: ``D``, the input dimension.
        output_dim: number of outputs of the last layer (for ``"categorical"``: of classes).
        num_layers: number of GP layers (>= 1).
        num_units: inducing variables (hidden units) per layer.
        hidden_dim: outputs of each hidden layer (default ``input_dim``, as in Dutordoir 2021).
        activation: ``"softplus"``, ``"relu"`` or an :class:`Activation`.
        kernel: factory ``Sphere(D) -> ZonalKernel`` (default: order-1 arc-cosine).
        num_levels: truncation level of every layer's :math:`K_{uu}`.
        bias: initial bias of every lift.
        noise: initial likelihood noise variance (Gaussian likelihood only).
        likelihood: ``"gaussian"`` (regression; targets ``(n, output_dim)``) or ``"categorical"``
            (classification; the outputs are logits, targets are class indices ``(n,)``).
        seed: seed of the initial weights.
        dtype: dtype of the parameters (float64 by default).
        device: device of the parameters.
    """

    def __init__(
        self,
        input_dim: int,
        output_dim: int = 1,
        num_layers: int = 3,
        num_units: int = 128,
        hidden_dim: int | None = None,
        activation: str | Activation = "softplus",
        kernel: KernelFactory | None = None,
        num_levels: int = 20,
        bias: float = 1.0,
        noise: float = 1e-2,
        likelihood: str = "gaussian",
        seed: int = 0,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str | None = None,
    ) -> None:
        if isinstance(num_layers, bool) or int(num_layers) != num_layers or num_layers < 1:
            raise ConfigurationError(f"`num_layers` must be an integer >= 1, got {num_layers!r}.")
        if not float(noise) > 0:
            raise ConfigurationError(f"`noise` must be > 0, got {noise!r}.")
        likelihood_model = make_likelihood(likelihood)
        if likelihood == "categorical" and output_dim < 2:
            raise ConfigurationError(
                f"a categorical likelihood needs `output_dim` >= 2 classes, got {output_dim!r}."
            )
        super().__init__()
        self.likelihood = likelihood_model
        hidden = input_dim if hidden_dim is None else hidden_dim
        dims = [input_dim] + [hidden] * (int(num_layers) - 1) + [output_dim]
        generator = torch.Generator().manual_seed(int(seed))
        self.layers = nn.ModuleList(
            ActivatedGPLayer(
                dims[i],
                dims[i + 1],
                num_units,
                activation=activation,
                kernel=kernel,
                num_levels=num_levels,
                bias=bias,
                generator=generator,
                dtype=dtype,
                device=device,
            )
            for i in range(int(num_layers))
        )
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.raw_noise = nn.Parameter(torch.zeros((), dtype=dtype, device=device))
        self.register_constraint("raw_noise", Positive())
        self.raw_noise_constraint.to(dtype=dtype, device=device)
        self.noise = noise

    @property
    def noise(self) -> Tensor:
        """Likelihood noise variance :math:`\\sigma^2 > 0`, a scalar tensor (``raw_noise``
        through a ``Positive`` constraint)."""
        return self.raw_noise_constraint.transform(self.raw_noise)

    @noise.setter
    def noise(self, value: float | Tensor) -> None:
        value = torch.as_tensor(value, dtype=self.raw_noise.dtype, device=self.raw_noise.device)
        self.initialize(raw_noise=self.raw_noise_constraint.inverse_transform(value.reshape(())))

    def set_noise(self, value: float | Tensor) -> None:
        """Set the likelihood noise variance (> 0; the same as assigning ``noise``)."""
        self.noise = value

    def check_inputs(self, x: Tensor, name: str = "x") -> Tensor:
        """Raise ``InputDataError`` unless ``x`` is finite ``(*batch, n, D)`` on the parameters'
        dtype and device."""
        as_tensor_arg(name, x)
        if x.dim() < 2 or x.shape[-1] != self.input_dim:
            raise InputDataError(
                f"`{name}` must have shape (*batch, n, {self.input_dim}), got {tuple(x.shape)}."
            )
        check_finite(name, x)
        check_model_dtype(x, self.raw_noise, name)
        return x

    # ------------------------------------------------------------------ the equivalent network
    def network(self, x: Tensor) -> Tensor:
        """Forward pass of the equivalent network: the layer means composed.

        Args:
            x: inputs, shape ``(*batch, n, D)``.

        Returns:
            Shape ``(*batch, n, output_dim)``.
        """
        h = x
        for layer in self.layers:
            h = layer.network(h)
        return h

    # ------------------------------------------------------------------ sampling
    def states(self) -> list[LayerState]:
        """One :class:`LayerState` per layer (one Cholesky each)."""
        return [layer.state() for layer in self.layers]

    def num_point_normals(self, observation_noise: bool = False) -> int:
        """Standard normals one input needs per sample: a residual per output of every layer."""
        return sum(layer.output_dim for layer in self.layers) + (
            self.output_dim if observation_noise else 0
        )

    def num_shared_normals(self) -> int:
        """Normals per sample shared by all inputs: one whitened draw of every :math:`u`."""
        return sum(layer.output_dim * layer.num_units for layer in self.layers)

    def sample(
        self,
        x: Tensor,
        point_normals: Tensor,
        shared_normals: Tensor,
        states: list[LayerState] | None = None,
        observation_noise: bool | Tensor = False,
    ) -> Tensor:
        r"""Reparameterised samples at ``x``, a deterministic function of the normals.

        Args:
            x: inputs, shape ``(*batch, n, D)``.
            point_normals: shape ``(*sample, *batch, n, K)``, ``K = num_point_normals(...)``.
            shared_normals: shape ``(*sample, *ones, G)``, ``G = num_shared_normals()``, with
                ``len(batch)`` singleton (or full) dimensions: one draw of :math:`u` per sample.
            states: from :meth:`states` (computed when omitted).
            observation_noise: add the likelihood noise (True) or noise of the given variances (a
                tensor broadcastable to ``(*batch, n, output_dim)``); its normals are the last
                ``output_dim`` of ``point_normals``.

        Returns:
            Samples, shape ``(*sample, *batch, n, output_dim)``, differentiable in ``x``.
        """
        states = self.states() if states is None else states
        h, point_at, shared_at = x, 0, 0
        for layer, state in zip(self.layers, states, strict=True):
            p, m = layer.output_dim, layer.num_units
            eps_f = point_normals[..., point_at : point_at + p]
            eps_u = shared_normals[..., shared_at : shared_at + p * m].unflatten(-1, (p, m))
            h = layer.sample(h, state, eps_u, eps_f)
            point_at, shared_at = point_at + p, shared_at + p * m
        if isinstance(observation_noise, Tensor) or observation_noise:
            variance = self.noise if observation_noise is True else observation_noise
            h = h + variance.sqrt() * point_normals[..., point_at : point_at + self.output_dim]
        return h

    def _hidden_samples(self, x: Tensor, num_samples: int, generator, states) -> Tensor:
        """Samples of the last layer's input, ``(S, *batch, n, D_{L-1})`` (``S = 1``: one layer)."""
        if len(self.layers) == 1:
            return x.unsqueeze(0)
        h = x
        ones = [1] * (x.dim() - 2)
        for layer, state in zip(self.layers[:-1], states[:-1], strict=True):
            p, m = layer.output_dim, layer.num_units
            eps_u = self._normals((num_samples, *ones, p, m), generator, x)
            eps_f = self._normals((num_samples, *x.shape[:-1], p), generator, x)
            h = layer.sample(h, state, eps_u, eps_f)
        return h

    @staticmethod
    def _normals(shape, generator, like: Tensor) -> Tensor:
        return torch.randn(shape, generator=generator, dtype=like.dtype, device=like.device)

    def predict(
        self, x: Tensor, num_samples: int = 64, generator: torch.Generator | None = None
    ) -> tuple[Tensor, Tensor]:
        r"""The last layer's marginals given sampled hidden layers: the predictive is their mixture.

        Args:
            x: inputs, shape ``(*batch, n, D)``.
            num_samples: ``S`` samples of the hidden layers.
            generator: random generator on ``x``'s device.

        Returns:
            ``(means, variances)`` of the latent :math:`f`, each ``(S, *batch, n, output_dim)``.
        """
        self.check_inputs(x)
        states = self.states()
        h = self._hidden_samples(x, num_samples, generator, states)
        return self.layers[-1].marginal(h, states[-1])

    def log_predictive_density(
        self,
        x: Tensor,
        y: Tensor,
        num_samples: int = 256,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        r""":math:`\log \frac1S \sum_s p_s(y)` per point, :math:`p_s` the predictive density given
        the :math:`s`-th sample of the hidden layers (Gaussian: :math:`\mathcal N(y; \mu_s(x),
        v_s(x) + \sigma^2)`; categorical: :math:`\mathbb E_f\operatorname{softmax}(f)_y`).

        Args:
            x: inputs, shape ``(n, D)``.
            y: targets, shape ``(n, output_dim)`` (categorical: class indices ``(n,)``).
            num_samples: samples of the hidden layers.
            generator: random generator.

        Returns:
            Shape ``(n,)``, summed over outputs.
        """
        means, variances = self.predict(x, num_samples, generator)
        log_p = self.likelihood.log_predictive(means, variances, y, self.noise, generator)
        return torch.logsumexp(log_p, dim=0) - math.log(means.shape[0])

    def class_probabilities(
        self, x: Tensor, num_samples: int = 64, generator: torch.Generator | None = None
    ) -> Tensor:
        r"""Predictive class probabilities :math:`\mathbb E\operatorname{softmax}(f)` of a
        categorical likelihood, averaged over ``num_samples`` hidden-layer samples and Monte Carlo
        draws of the last layer's logits.

        Args:
            x: inputs, shape ``(*batch, n, D)``.
            num_samples: samples of the hidden layers.
            generator: random generator.

        Returns:
            Shape ``(*batch, n, output_dim)``; each row sums to 1.
        """
        if self.likelihood.name != "categorical":
            raise ConfigurationError(
                "`class_probabilities` needs a categorical likelihood; this deep GP's is "
                f"{self.likelihood.name!r} (use `predict` for its marginals)."
            )
        means, variances = self.predict(x, num_samples, generator)
        return self.likelihood.probabilities(means, variances, generator).mean(0)

    def elbo(
        self,
        x: Tensor,
        y: Tensor,
        num_samples: int = 4,
        generator: torch.Generator | None = None,
        num_data: int | None = None,
    ) -> Tensor:
        r"""Doubly stochastic ELBO per data point, :math:`(\frac{N}{n}\sum_i \mathbb E_q \log
        p(y_i \mid f_i) - \sum_\ell \mathrm{KL}_\ell) / N`.

        Args:
            x: a (mini)batch of inputs, shape ``(n, D)``.
            y: targets, shape ``(n, output_dim)`` (categorical: class indices ``(n,)``).
            num_samples: samples of the hidden layers.
            generator: random generator.
            num_data: ``N``, the size of the full data set (default ``n``).

        Returns:
            A scalar, differentiable in every parameter.
        """
        return self._objective(x, y, num_samples, generator, num_data, predictive=False)

    def predictive_log_likelihood(
        self,
        x: Tensor,
        y: Tensor,
        num_samples: int = 4,
        generator: torch.Generator | None = None,
        num_data: int | None = None,
    ) -> Tensor:
        r"""The predictive log likelihood objective per data point, :math:`(\frac{N}{n}\sum_i
        \log \frac1S \sum_s p_s(y_i) - \sum_\ell \mathrm{KL}_\ell) / N`.

        :math:`p_s` is the predictive density given the :math:`s`-th sample of the hidden layers,
        as in :meth:`log_predictive_density` (Gaussian: :math:`\mathcal N(y; \mu_s, v_s +
        \sigma^2)`). This is the objective of parametric GP regressors and deep sigma point
        processes (Jankowiak, Pleiss & Gardner 2020; GPyTorch's ``PredictiveLogLikelihood``):
        where the ELBO charges the latent variance :math:`v` as a penalty
        :math:`v / 2\sigma^2` beside the noise, so that the noise absorbs the prior variance
        that the inducing functions leave unexplained and the prediction adds it again, this
        objective fits the total predictive variance :math:`v + \sigma^2` to the data.

        Args:
            x: a (mini)batch of inputs, shape ``(n, D)``.
            y: targets, shape ``(n, output_dim)`` (categorical: class indices ``(n,)``).
            num_samples: samples of the hidden layers.
            generator: random generator.
            num_data: ``N``, the size of the full data set (default ``n``).

        Returns:
            A scalar, differentiable in every parameter.
        """
        return self._objective(x, y, num_samples, generator, num_data, predictive=True)

    def _objective(
        self, x: Tensor, y: Tensor, num_samples: int, generator, num_data, predictive: bool
    ) -> Tensor:
        num_data = x.shape[-2] if num_data is None else int(num_data)
        states = self.states()
        h = self._hidden_samples(x, num_samples, generator, states)
        means, variances = self.layers[-1].marginal(h, states[-1])
        if predictive:
            log_p = self.likelihood.log_predictive(means, variances, y, self.noise, generator)
            per_point = torch.logsumexp(log_p, dim=0) - math.log(means.shape[0])
        else:
            expected = self.likelihood.expected_log_likelihood(
                means, variances, y, self.noise, generator
            )
            per_point = expected.mean(0)
        fit = per_point.sum() * (num_data / x.shape[-2])
        kl = sum(
            layer.kl_divergence(state) for layer, state in zip(self.layers, states, strict=True)
        )
        return (fit - kl) / num_data
