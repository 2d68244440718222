r"""Likelihoods of the activated deep GP: Gaussian (regression) and categorical (classification).

A likelihood tells each stage of training what the last layer's outputs :math:`f` mean:

* stage 1 (:func:`~manibo.models.adgp.fit_network`) trains the network on its loss at the
  network's outputs: the mean squared error (Gaussian) or the cross-entropy (categorical);
* the stage-2 start (:mod:`manibo.models.adgp.initialization`) expands the expected log
  likelihood to second order around the network's outputs, so it needs the log likelihood there
  and its curvature :math:`H_i = -\nabla_f^2 \log p(y_i \mid f)` per point;
* stage 2 (:func:`~manibo.models.adgp.fit_elbo`) needs the expected log likelihood under the last
  layer's Gaussian marginals, and the validation checks the log predictive density.

Gaussian: :math:`\log p(y \mid f) = \log\mathcal N(y; f, \sigma^2 I)`; its expectation and
predictive density are closed forms, its curvature :math:`I/\sigma^2` (the start factors the
:math:`1/\sigma^2` out, so :meth:`~GaussianLikelihood.curvature` returns :math:`I`).

Categorical: the outputs are the logits of ``C = output_dim`` classes, :math:`\log p(y \mid f) =
\log\operatorname{softmax}(f)_y`, with targets holding class indices ``0, ..., C - 1`` as integers
of shape ``(n,)``; the curvature is :math:`\operatorname{diag}(p) - pp^\top` with
:math:`p = \operatorname{softmax}(f)`. Its expectations have no closed form and are Monte Carlo
averages over draws of :math:`f` (reparameterised, so the ELBO stays differentiable).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor
from torch.nn import functional

from manibo._validation import as_tensor_arg, check_finite, check_same_dtype_device
from manibo.exceptions import ConfigurationError, InputDataError

#: Draws of the last layer's outputs per hidden-layer sample in the categorical expectations.
LOGIT_DRAWS = 8


class GaussianLikelihood:
    r""":math:`y = f + \varepsilon`, :math:`\varepsilon \sim \mathcal N(0, \sigma^2 I)`;
    targets ``(n, output_dim)`` in the inputs' dtype."""

    name = "gaussian"
    has_noise = True

    def check_targets(self, x: Tensor, y: Tensor, output_dim: int) -> None:
        """Raise ``InputDataError`` unless ``y`` is finite ``(n, output_dim)`` like ``x``."""
        as_tensor_arg("y", y)
        check_finite("y", y)
        check_same_dtype_device(x=x, y=y)
        if y.shape != (x.shape[0], output_dim):
            raise InputDataError(
                f"`y` must have shape (n, {output_dim}) = ({x.shape[0]}, {output_dim}), got "
                f"{tuple(y.shape)}. Use `y.reshape(-1, 1)` for one output."
            )

    def network_loss(self, f: Tensor, y: Tensor) -> Tensor:
        """Stage 1's loss: the mean squared error of outputs ``f`` ``(n, P)``, a scalar."""
        return (f - y).pow(2).mean()

    def curvature(self, f: Tensor) -> Tensor:
        """The identity per point for outputs ``f`` ``(n, P)``: ``(n, P, P)`` (the start divides
        by the noise itself)."""
        eye = torch.eye(f.shape[-1], dtype=f.dtype, device=f.device)
        return eye.expand(f.shape[0], -1, -1)

    def expected_log_likelihood(
        self, means: Tensor, variances: Tensor, y: Tensor, noise: Tensor, generator=None
    ) -> Tensor:
        r""":math:`\mathbb E_{f \sim \mathcal N(\mu, v)} \log p(y \mid f)` in closed form.

        Args:
            means, variances: the last layer's marginals, ``(S, n, P)``.
            y: targets ``(n, P)``.
            noise: :math:`\sigma^2`, a scalar tensor.
            generator: unused (closed form).

        Returns:
            ``(S, n)``, summed over outputs.
        """
        terms = math.log(2 * math.pi) + noise.log() + ((y - means).pow(2) + variances) / noise
        return -0.5 * terms.sum(-1)

    def log_predictive(
        self, means: Tensor, variances: Tensor, y: Tensor, noise: Tensor, generator=None
    ) -> Tensor:
        r""":math:`\log \mathcal N(y; \mu, v + \sigma^2)` per hidden sample, ``(S, n)``."""
        total = variances + noise
        log_normal = -0.5 * (math.log(2 * math.pi) + total.log() + (y - means).pow(2) / total)
        return log_normal.sum(-1)


class CategoricalLikelihood:
    r"""Class probabilities :math:`\operatorname{softmax}(f)`; targets: class indices ``(n,)``,
    an integer dtype."""

    name = "categorical"
    has_noise = False

    def check_targets(self, x: Tensor, y: Tensor, output_dim: int) -> None:
        """Raise ``InputDataError`` unless ``y`` holds ``n`` class indices in
        ``[0, output_dim)``."""
        if not isinstance(y, Tensor):
            raise InputDataError(
                f"`y` must be a torch.Tensor of class indices, got {type(y).__name__}."
            )
        if y.dtype.is_floating_point or y.dtype.is_complex or y.dtype == torch.bool:
            raise InputDataError(
                f"`y` must hold class indices as integers (torch.long) for a categorical "
                f"likelihood, got dtype {y.dtype}. Use `y.long()`."
            )
        if y.shape != (x.shape[0],):
            raise InputDataError(
                f"`y` must have shape (n,) = ({x.shape[0]},) for a categorical likelihood (one "
                f"class index per input), got {tuple(y.shape)}."
            )
        if y.device != x.device:
            raise InputDataError(f"`y` is on {y.device} but `x` is on {x.device}.")
        if y.numel() and (int(y.min()) < 0 or int(y.max()) >= output_dim):
            raise InputDataError(
                f"`y` must hold class indices in [0, {output_dim}), got values from "
                f"{int(y.min())} to {int(y.max())}; `output_dim` is the number of classes."
            )

    def network_loss(self, f: Tensor, y: Tensor) -> Tensor:
        """Stage 1's loss: the mean cross-entropy of logits ``f`` ``(n, C)``, a scalar."""
        return functional.cross_entropy(f, y)

    def curvature(self, f: Tensor) -> Tensor:
        r""":math:`\operatorname{diag}(p) - pp^\top` per point for logits ``f`` ``(n, C)``:
        ``(n, C, C)`` (it does not depend on the class observed)."""
        p = f.softmax(-1)
        return torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)

    @staticmethod
    def _log_softmax_draws(means: Tensor, variances: Tensor, generator) -> Tensor:
        r""":math:`\log\operatorname{softmax}(f)` at ``LOGIT_DRAWS`` reparameterised draws
        :math:`f \sim \mathcal N(\mu, v)`, shape ``(K, *means.shape)``."""
        eps = torch.randn(
            (LOGIT_DRAWS, *means.shape),
            generator=generator,
            dtype=means.dtype,
            device=means.device,
        )
        return (means + variances.sqrt() * eps).log_softmax(-1)

    def _log_probabilities(self, means: Tensor, variances: Tensor, y: Tensor, generator) -> Tensor:
        r""":math:`\log\operatorname{softmax}(f)_y` at the draws of ``f``, ``(K, S, n)``."""
        log_p = self._log_softmax_draws(means, variances, generator)
        index = y.reshape(1, 1, -1, 1).expand(*log_p.shape[:-1], 1)
        return log_p.gather(-1, index).squeeze(-1)

    def probabilities(self, means: Tensor, variances: Tensor, generator=None) -> Tensor:
        r""":math:`\mathbb E_{f \sim \mathcal N(\mu, v)}\operatorname{softmax}(f)` by Monte Carlo,
        the shape of ``means`` (``(..., C)``)."""
        return self._log_softmax_draws(means, variances, generator).exp().mean(0)

    def expected_log_likelihood(
        self, means: Tensor, variances: Tensor, y: Tensor, noise=None, generator=None
    ) -> Tensor:
        r"""Monte Carlo :math:`\mathbb E_{f \sim \mathcal N(\mu, v)}\log\operatorname{softmax}(f)_y`
        with ``LOGIT_DRAWS`` draws of ``f`` per hidden sample.

        Args:
            means, variances: the last layer's marginals, ``(S, n, C)``.
            y: class indices ``(n,)``.
            noise: unused.
            generator: random generator of the draws.

        Returns:
            ``(S, n)``, differentiable in ``means`` and ``variances``.
        """
        return self._log_probabilities(means, variances, y, generator).mean(0)

    def log_predictive(
        self, means: Tensor, variances: Tensor, y: Tensor, noise=None, generator=None
    ) -> Tensor:
        r""":math:`\log \mathbb E_f \operatorname{softmax}(f)_y` per hidden sample, ``(S, n)``."""
        log_p = self._log_probabilities(means, variances, y, generator)
        return torch.logsumexp(log_p, dim=0) - math.log(log_p.shape[0])


LIKELIHOODS = {"gaussian": GaussianLikelihood, "categorical": CategoricalLikelihood}


def make_likelihood(name: str) -> GaussianLikelihood | CategoricalLikelihood:
    """The likelihood called ``name`` (``"gaussian"`` or ``"categorical"``)."""
    if name not in LIKELIHOODS:
        raise ConfigurationError(
            f"`likelihood` must be one of {', '.join(sorted(LIKELIHOODS))}, got {name!r}."
        )
    return LIKELIHOODS[name]()
