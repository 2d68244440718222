r"""The stage-2 start: variances and :math:`q(v)` near the ELBO's optimum for the network's mean.

After stage 1 the mean of every layer is the network's (:math:`m_v = L_{uu}^\top V`); what is left
to choose are the whitened covariances :math:`S_{\ell j} = R_{\ell j}R_{\ell j}^\top`, the kernel
variances :math:`s_\ell = \sigma_{k,\ell}^2` and the noise :math:`\sigma^2`. Starting them at a
small :math:`S = \epsilon I` leaves the ELBO dominated by the KL of thousands of collapsed
coordinates (about :math:`\tfrac12(-1 - 2\log\epsilon)` nats each), which the optimiser then
spends its steps undoing. Here they start where the ELBO of the *linearised* network is maximal.

Linearisation. Around the network's forward pass, a perturbation of layer :math:`\ell`'s output
:math:`j` at input :math:`x_i` moves the output :math:`o` by :math:`J_{io\ell j} =
\partial f_o(x_i)/\partial h_{\ell j}(x_i)` (one backward pass per output). With
:math:`w_{i\ell j} = \sum_o J_{io\ell j}^2`, the whitened features at unit kernel variance
:math:`a_i = L_1^{-1} k_u(x_i)` (:math:`K_{uu} = L_1L_1^\top/s`), the unit residual
:math:`r_i = \tilde k(x_i, x_i) - \|a_i\|^2` and the unit RKHS norm of the layer's mean
:math:`c_j = V_j^\top L_1 L_1^\top V_j`, the ELBO of the linearised model is

.. math::
    -\tfrac{nO}2\log 2\pi\sigma^2 - \frac{\mathrm{SSE} + \sum_\ell s_\ell \sum_{ij} w_{i\ell j}
    (r_i + a_i^\top S_{\ell j} a_i)}{2\sigma^2} - \sum_{\ell j}\tfrac12\Bigl(\frac{c_{\ell j}}
    {s_\ell} + \operatorname{tr} S_{\ell j} - M - \log\det S_{\ell j}\Bigr)

(SSE: the network's training sum of squared errors over :math:`n` points and :math:`O`
outputs). It is exact for the last layer (:math:`w = 1`) and accurate for the hidden ones while
their variances are small. Its maximiser in :math:`S` is the Gauss–Newton posterior

.. math::
    S_{\ell j} = \Bigl(I + \frac{s_\ell}{\sigma^2} B_{\ell j}\Bigr)^{-1}, \qquad
    B_{\ell j} = \sum_i w_{i\ell j}\, a_i a_i^\top,

and with it the bound collapses to a smooth function of :math:`(\sigma^2, s_\ell)` through the
eigenvalues :math:`\beta` of :math:`B_{\ell j}`:
:math:`-\tfrac{nO}2\log 2\pi\sigma^2 - (\mathrm{SSE} + \sum_\ell s_\ell t_\ell)/2\sigma^2 -
\tfrac12\sum_{\ell j}\bigl(c_{\ell j}/s_\ell + \sum_\beta \log(1 + s_\ell\beta/\sigma^2)\bigr)`,
:math:`t_\ell = \sum_{ij} w_{i\ell j} r_i`.

Hidden variances. Maximised jointly, that function puts the hidden layers' variances where the
linearisation no longer holds: the network's layers have a large RKHS norm (:math:`c/s`), which
the bound trades against conditional noise :math:`s\,r` injected into every hidden layer (the 128
activated features of a 14-dimensional layer leave about a fifth of the arc-cosine prior
unexplained). The sampled hidden layers then move the deep GP's predictive mean far from the
network. So the hidden variances start at a scale set by the network instead: :math:`s_\ell` such
that the layer's prior variance, carried to the outputs by the network's sensitivities, equals
``hidden_scale`` times the network's training mean squared error,

.. math::
    s_\ell\,\frac1n\sum_{ij} w_{i\ell j}\,\tilde k(x_i, x_i) = \texttt{hidden\_scale}\cdot
    \mathrm{SSE}/(nO),

and stage 2 (:func:`~manibo.models.adgp.fit_elbo`) moves them from there under the ELBO. The noise
and the last layer's variance are the maximisers of the collapsed bound given the hidden
variances, and every :math:`S_{\ell j}` is the Gauss–Newton posterior above.

Categorical likelihood (classification). The same construction with the softmax's curvature
:math:`H_i = \operatorname{diag}(p_i) - p_ip_i^\top` in place of :math:`I/\sigma^2`: the
sensitivities become :math:`w_{i\ell j} = \sum_{oo'} J_{io\ell j}H_{ioo'}J_{io'\ell j}` (the
diagonal blocks of the generalised Gauss–Newton matrix, which is what a factorised
:math:`q(v_j)` can hold), the noise is 1 and is not learned, and the hidden variances follow the
rule above with the training MSE replaced by 1 (a logit variance of ``hidden_scale``): the rule
carries the variance to the outputs by the plain sensitivities :math:`\sum_o J_{io\ell j}^2`,
not the curvature-weighted ones, which vanish where the softmax saturates and, on data that the
network separates, sent the hidden variances to values at which the sampled hidden layers made
the predictions almost uniform. The last layer is not expanded: where the
network is confident its curvature is small, so a quadratic expansion makes large logit
variances look cheap and overstated the last layer's best kernel variance (by 2.4 times, and the
bound by 3% of the sampled ELBO, on the three-class test problem); its expected log likelihood is
instead a Monte Carlo average over fixed normals under its Gaussian marginals, and its KL
divergence is exact.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.models.adgp.network import ActivatedDeepGP
from manibo.models.adgp.training import check_training_data


@dataclass
class LayerStatistics:
    r"""What the linearised bound needs from one layer, at unit kernel variance.

    Attributes:
        prior: :math:`\tilde k(x_i, x_i)`, shape ``(n,)``.
        residual: :math:`r_i = \max(\tilde k(x_i, x_i) - \|a_i\|^2, 0)`, shape ``(n,)``.
        precision_data: :math:`B_j = \sum_i w_{ij} a_i a_i^\top`, shape ``(P, M, M)``.
        sensitivity: :math:`w_{ij} = \sum_{oo'} J_{ioj} H_{ioo'} J_{io'j}`, ``(n, P)``, with
            :math:`J_{ioj} = \partial f_o(x_i)/\partial h_j(x_i)` and the likelihood's curvature
            :math:`H_i` (Gaussian: :math:`I`, so :math:`w_{ij} = \sum_o J_{ioj}^2`).
        carry: :math:`\sum_o J_{ioj}^2`, ``(n, P)``: how a unit's variance reaches the outputs,
            unweighted by the likelihood (the hidden-variance rule).
        rkhs_norm: :math:`c_j = V_j^\top L_1L_1^\top V_j`, shape ``(P,)``.
        features: the whitened features :math:`a_i`, shape ``(n, M)``.
    """

    prior: Tensor
    residual: Tensor
    precision_data: Tensor
    sensitivity: Tensor
    carry: Tensor
    rkhs_norm: Tensor
    features: Tensor

    def eigenvalues(self) -> Tensor:
        """Eigenvalues of :math:`B_j`, shape ``(P, M)`` (clamped at 0)."""
        return torch.linalg.eigvalsh(self.precision_data).clamp_min(0)


def layer_statistics(model: ActivatedDeepGP, x: Tensor) -> list[LayerStatistics]:
    """:class:`LayerStatistics` of every layer at the network's forward pass through ``x``.

    Args:
        model: the deep GP (its layers' means are the network).
        x: inputs, shape ``(n, D)``.

    Returns:
        One entry per layer.
    """
    with torch.no_grad():
        inputs = [x]
        for layer in model.layers:
            inputs.append(layer.network(inputs[-1]))
        curvature = model.likelihood.curvature(inputs[-1])
    statistics = []
    for index, layer in enumerate(model.layers):
        sensitivity, carry = _output_sensitivity(model, index, inputs[index + 1], curvature)
        with torch.no_grad():
            state = layer.state()
            variance = layer.variance
            _, whitened, residual = layer.conditional_variance(inputs[index], state)
            whitened = whitened / variance.sqrt()  # a_i at unit kernel variance, (n, M)
            mean = state.chol.transpose(-1, -2) @ layer.readout  # (M, P)
            statistics.append(
                LayerStatistics(
                    prior=layer.prior_variance(inputs[index]) / variance,
                    residual=residual / variance,
                    precision_data=torch.einsum("ip,im,ik->pmk", sensitivity, whitened, whitened),
                    sensitivity=sensitivity,
                    carry=carry,
                    rkhs_norm=mean.pow(2).sum(0) * variance,
                    features=whitened,
                )
            )
    return statistics


def _output_sensitivity(
    model: ActivatedDeepGP, index: int, hidden: Tensor, curvature: Tensor
) -> tuple[Tensor, Tensor]:
    r""":math:`\sum_{oo'} J_{oj} H_{oo'} J_{o'j}` and :math:`\sum_o J_{oj}^2` per input and
    unit, each ``(n, P)``, with :math:`J_{oj} = \partial f_o / \partial h_{index, j}` and
    ``curvature`` :math:`H` ``(n, O, O)``.

    Rows are independent (every layer acts point by point), so one backward pass of each summed
    output gives every input's gradient.
    """
    with torch.enable_grad():
        h = hidden.detach().requires_grad_(True)
        out = h
        for layer in model.layers[index + 1 :]:
            out = layer.network(out)
        jacobian = torch.stack(
            [
                torch.autograd.grad(out[:, o].sum(), h, retain_graph=True)[0]
                for o in range(out.shape[-1])
            ]
        )  # (O, n, P)
    weighted = torch.einsum("oip,ioq,qip->ip", jacobian, curvature, jacobian)
    return weighted.detach(), jacobian.pow(2).sum(0).detach()


def linearised_bound(
    statistics: list[LayerStatistics],
    eigenvalues: list[Tensor],
    fit: Tensor,
    noise: Tensor,
    variances: list[Tensor],
) -> Tensor:
    r"""The linearised ELBO (total, not per point) at the Gauss–Newton :math:`S` (module doc).

    Args:
        statistics: from :func:`layer_statistics`.
        eigenvalues: :meth:`LayerStatistics.eigenvalues` of each layer, shapes ``(P, M)``.
        fit: the log likelihood of the training targets at the network's outputs, a scalar
            (Gaussian: :math:`-	frac{nO}2\log 2\pi\sigma^2 - \mathrm{SSE}/2\sigma^2`).
        noise: :math:`\sigma^2`, a scalar tensor (1 for a categorical likelihood, whose
            curvature the sensitivities already carry).
        variances: the kernel variances :math:`s_\ell`, scalar tensors.

    Returns:
        A scalar, differentiable in ``fit``, ``noise`` and ``variances``.
    """
    total = fit
    for stats, beta, s in zip(statistics, eigenvalues, variances, strict=True):
        trace = (stats.sensitivity * stats.residual.unsqueeze(-1)).sum()
        total = total - 0.5 * s * trace / noise
        total = total - 0.5 * (stats.rkhs_norm / s).sum()
        total = total - 0.5 * torch.log1p(s * beta / noise).sum()
    return total


@dataclass
class StageTwoStart:
    """What :func:`initialize_from_network` chose.

    Attributes:
        bound: the linearised ELBO per data point at the start (the sampled ELBO of
            :meth:`~manibo.models.adgp.ActivatedDeepGP.elbo` agrees with it while the hidden
            variances are small).
        hidden_scale: the hidden-variance scale of the start.
        candidates: ``(hidden_scale, validation NLPD)`` of every candidate when validation data
            chose among several; empty otherwise.
    """

    bound: float
    hidden_scale: float
    candidates: list[tuple[float, float]] = field(default_factory=list)


@torch.no_grad()
def initialize_from_network(
    model: ActivatedDeepGP,
    x: Tensor,
    y: Tensor,
    hidden_scale: float | Sequence[float] = 0.1,
    validation: tuple[Tensor, Tensor] | None = None,
    validation_samples: int = 32,
    seed: int = 0,
) -> StageTwoStart:
    r"""Set the noise, kernel variances and :math:`q(v)` of a trained network for stage 2.

    The mean stays the network's (it is parametrised by :math:`V`). The hidden layers' kernel
    variances are set by the network's training error and sensitivities (``hidden_scale``), the
    noise and the last layer's variance maximise the linearised ELBO, and every whitened
    covariance is its Gauss–Newton maximiser (see the module docstring for the formulas).

    Several ``hidden_scale`` values with ``validation`` data: each start is built and the one
    with the lowest validation NLPD (``validation_samples`` hidden-layer samples from ``seed``)
    is kept. (The ELBO itself cannot choose: it prefers hidden variances at which the sampled
    hidden layers no longer follow the network; see the module docstring.)

    Args:
        model: the deep GP after :func:`~manibo.models.adgp.fit_network`.
        x: training inputs, shape ``(n, D)``.
        y: training targets, shape ``(n, output_dim)``.
        hidden_scale: the hidden layers' prior variance, carried to the outputs by the network's
            sensitivities, as a multiple of the training mean squared error; or several
            candidates (then ``validation`` is required).
        validation: ``(x_val, y_val)``, shapes ``(n_val, D)`` and ``(n_val, output_dim)``, not
            training points.
        validation_samples: hidden-layer samples of the validation NLPD.
        seed: seed of those samples.

    Returns:
        A :class:`StageTwoStart`.
    """
    check_training_data(model, x, y)
    scales = [hidden_scale] if not isinstance(hidden_scale, Sequence) else list(hidden_scale)
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in scales)
    if isinstance(hidden_scale, str) or not scales or not numbers or not all(v > 0 for v in scales):
        raise ConfigurationError(
            f"`hidden_scale` must be > 0 (or a non-empty sequence of such), got {hidden_scale!r}."
        )
    if len(scales) > 1 and validation is None:
        raise ConfigurationError(
            f"{len(scales)} `hidden_scale` candidates need `validation` data to choose among them; "
            "pass validation=(x_val, y_val) or a single value."
        )
    if validation is not None:
        check_training_data(model, *validation)
    statistics = layer_statistics(model, x)
    eigenvalues = [stats.eigenvalues() for stats in statistics]
    start_bound = (_GaussianStart if model.likelihood.has_noise else _CategoricalStart)(
        model, x, y, statistics, eigenvalues
    )
    start_variance = float(model.layers[-1].variance)
    best = None
    candidates = []
    for scale in scales:
        model.layers[-1].set_variance(start_variance)
        bound = _apply_start(model, statistics, start_bound, float(scale))
        if validation is None:
            return StageTwoStart(bound / x.shape[0], float(scale))
        generator = torch.Generator(device=x.device).manual_seed(int(seed))
        nlpd = float(
            -model.log_predictive_density(*validation, validation_samples, generator).mean()
        )
        candidates.append((float(scale), nlpd))
        if best is None or nlpd < best[0]:
            best = (
                nlpd,
                StageTwoStart(bound / x.shape[0], float(scale)),
                copy.deepcopy(model.state_dict()),
            )
    model.load_state_dict(best[2])
    best[1].candidates = candidates
    return best[1]


#: Fixed standard normals per point and class of the categorical start's last-layer expectation.
START_LOGIT_DRAWS = 64


class _GaussianStart:
    r"""The linearised bound of a Gaussian likelihood: exact in the last layer, closed form in
    :math:`(\sigma^2, s_\ell)`; the noise starts at the training MSE and is optimised."""

    learn_noise = True

    def __init__(self, model: ActivatedDeepGP, x: Tensor, y: Tensor, statistics, eigenvalues):
        self.statistics, self.eigenvalues = statistics, eigenvalues
        self.sse = (model.network(x) - y).pow(2).sum()
        self.terms = y.numel()
        floor = 1e-6 * float(y.var()) if y.shape[0] > 1 else 1e-6
        self.reference = max(float(self.sse) / self.terms, floor)

    def bound(self, noise: Tensor, variances: list[Tensor]) -> Tensor:
        r"""The bound (total) at noise :math:`\sigma^2` and kernel variances :math:`s_\ell`."""
        fit = -0.5 * self.terms * torch.log(2 * math.pi * noise) - 0.5 * self.sse / noise
        return linearised_bound(self.statistics, self.eigenvalues, fit, noise, variances)


class _CategoricalStart:
    r"""The bound of a categorical likelihood: the hidden layers linearised (the softmax curvature
    in their sensitivities, noise 1), the last layer exact.

    A second-order expansion of :math:`\log\operatorname{softmax}` in the last layer's logits
    would make their variance look cheap where the network is confident (the curvature
    :math:`p(1-p)` is small there) and so overstate the last layer's best kernel variance. So its
    expected log likelihood is taken under its Gaussian marginals :math:`f_{ij} \sim \mathcal
    N(\bar f_{ij}, s\,(r_i + a_i^\top S_j a_i))` with :math:`S_j = (I + sB_j)^{-1}` (the
    Gauss–Newton covariance), by Monte Carlo with ``START_LOGIT_DRAWS`` fixed normals per point
    and class, and its KL divergence is exact.
    """

    learn_noise = False
    reference = 1.0

    def __init__(self, model: ActivatedDeepGP, x: Tensor, y: Tensor, statistics, eigenvalues):
        self.statistics, self.eigenvalues = statistics[:-1], eigenvalues[:-1]
        last = statistics[-1]
        self.logits, self.labels = model.network(x), y
        beta, vectors = torch.linalg.eigh(last.precision_data)  # (P, M), (P, M, M)
        self.beta = beta.clamp_min(0)
        self.projected = torch.einsum("im,pmk->pik", last.features, vectors).pow(2)  # (P, n, M)
        self.residual, self.rkhs_norm = last.residual, last.rkhs_norm
        generator = torch.Generator().manual_seed(0)
        self.normals = torch.randn(
            (START_LOGIT_DRAWS, *self.logits.shape), generator=generator, dtype=x.dtype
        ).to(x.device)

    def bound(self, noise: Tensor, variances: list[Tensor]) -> Tensor:
        r"""The bound (total) at kernel variances :math:`s_\ell` (``noise`` is 1)."""
        s = variances[-1]
        shrink = 1 / (1 + s * self.beta)  # eigenvalues of S_j, (P, M)
        quadratic = (self.projected * shrink.unsqueeze(1)).sum(-1)  # a_i^T S_j a_i, (P, n)
        variance = s * (self.residual + quadratic).T  # (n, P)
        logits = self.logits + variance.sqrt() * self.normals
        index = self.labels.reshape(1, -1, 1).expand(logits.shape[0], -1, 1)
        fit = logits.log_softmax(-1).gather(-1, index).mean(0).sum()
        kl = 0.5 * (shrink.sum() + (self.rkhs_norm / s).sum() - shrink.numel())
        kl = kl + 0.5 * torch.log1p(s * self.beta).sum()
        return linearised_bound(self.statistics, self.eigenvalues, fit - kl, noise, variances[:-1])


def _apply_start(
    model: ActivatedDeepGP,
    statistics: list[LayerStatistics],
    start: _GaussianStart | _CategoricalStart,
    hidden_scale: float,
) -> float:
    """Set the start for one hidden scale; returns the bound (total)."""
    like = {"dtype": statistics[0].prior.dtype, "device": statistics[0].prior.device}
    log_variances = []
    for stats in statistics[:-1]:
        carried = float((stats.carry * stats.prior.unsqueeze(-1)).sum(-1).mean())
        value = hidden_scale * start.reference / max(carried, 1e-300)
        log_variances.append(torch.tensor(math.log(value), **like))
    last = torch.log(model.layers[-1].variance.detach().clone()).requires_grad_(True)
    log_noise = torch.tensor(math.log(start.reference), **like).requires_grad_(start.learn_noise)

    def bound() -> Tensor:
        variances = [v.exp() for v in [*log_variances, last]]
        return start.bound(log_noise.exp(), variances)

    num_terms = statistics[0].prior.shape[0] * model.output_dim
    optimizer = torch.optim.LBFGS(
        [log_noise, last] if start.learn_noise else [last],
        max_iter=200,
        tolerance_grad=1e-9,
        tolerance_change=1e-12,
        line_search_fn="strong_wolfe",
    )

    def closure() -> Tensor:
        optimizer.zero_grad()
        loss = -bound() / num_terms
        loss.backward()
        return loss

    with torch.enable_grad():
        optimizer.step(closure)
    noise = float(log_noise.exp())
    if start.learn_noise:
        model.set_noise(noise)
    for layer, stats, log_s in zip(model.layers, statistics, [*log_variances, last], strict=True):
        s = float(log_s.exp())
        layer.set_variance(s)
        eye = torch.eye(layer.num_units, **like)
        precision = eye + (s / noise) * stats.precision_data
        covariance = torch.cholesky_inverse(torch.linalg.cholesky(precision))
        layer.set_scale_tril(torch.linalg.cholesky(covariance))
    return float(bound())
