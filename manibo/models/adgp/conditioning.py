r"""Fantasy models of the activated deep GP: the last layer's inducing posterior, conditioned.

Given its input :math:`h`, the last layer is linear-Gaussian in its whitened inducing variables:
output :math:`j` is :math:`f_j(x) = a(h)^\top v_j + r_j(x)` with :math:`a(h) = L_{uu}^{-1} k_u(h)`,
:math:`q(v_j) = \mathcal N(\mu_j, \Sigma_j)`, :math:`\Sigma_j = R_jR_j^\top`, and a residual
:math:`r_j(x)` of variance :math:`\rho(h) = \max(K_{ff} - Q_{ff}, 0)`, independent across
points — the model that the posterior's samples follow. New observations
:math:`y_{ij} = f_j(x_i) + \varepsilon_{ij}` (noise variances :math:`\sigma^2_{ij}`) update
:math:`q(v_j)` by Gaussian conditioning on the first two moments of :math:`(v_j, y_j)` under the
hidden layers' posterior:

.. math::
    \mathbb E y_j = \bar A \mu_j, \quad \operatorname{Cov}(v_j, y_j) = \Sigma_j \bar A^\top,
    \quad \operatorname{Cov}(y_j) = \mathbb E[A \Sigma_j A^\top]
        + \operatorname{Cov}(A\mu_j) + \operatorname{diag}(\mathbb E\rho + \sigma^2_j),

with :math:`A` the rows :math:`a(h_i)` and :math:`\bar A = \mathbb E A`; then
:math:`\mu_j' = \mu_j + \Sigma_j \bar A^\top \operatorname{Cov}(y_j)^{-1}(y_j - \bar A\mu_j)` and
:math:`\Sigma_j' = \Sigma_j - \Sigma_j \bar A^\top \operatorname{Cov}(y_j)^{-1} \bar A \Sigma_j`.
With one layer :math:`h = x`, the expectations are exact and this is Bayesian conditioning of the
model's predictive (a linear-Gaussian model with heteroscedastic noise :math:`\rho + \sigma^2`).
With hidden layers it is the best linear update of :math:`v_j` given :math:`y_j` (the hidden layers
are kept); the expectations average :data:`CONDITIONING_SAMPLES` draws of the hidden layers from
fixed normals, so a fantasy model is a deterministic, differentiable function of the fantasy points.

The update is computed in the coordinates :math:`v_j = \mu_j + R_j z`: with :math:`B = \bar A R_j`
and :math:`D = \operatorname{Cov}(y_j) - BB^\top` (the covariance the inducing variables do not
explain, positive definite), :math:`\Lambda = I + B^\top D^{-1} B = CC^\top`,
:math:`\mu_j' = \mu_j + R_j\Lambda^{-1}B^\top D^{-1}(y_j - \bar A\mu_j)` and
:math:`R_j' = R_j C^{-\top}`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from manibo.models.adgp.layer import LayerState
from manibo.models.adgp.network import ActivatedDeepGP

CONDITIONING_SAMPLES = 32
"""Draws of the hidden layers behind the expectations of a deep model's update."""


def conditioned_last_layer(
    network: ActivatedDeepGP,
    states: list[LayerState],
    x: Tensor,
    y: Tensor,
    noise: Tensor,
    seed: int = 0,
) -> tuple[Tensor, Tensor]:
    r"""The last layer's read-out and whitened factors after conditioning on ``(x, y)``.

    Args:
        network: the deep GP.
        states: its layer states (the last one may already be conditioned, with a batch).
        x: inputs, shape ``(*batch, n, D)``, ``n >= 0``.
        y: targets in the network's units, shape ``(*fantasy, *batch, n, P)``.
        noise: noise variances :math:`\sigma^2_{ij} > 0`, shape broadcastable to
            ``(*batch, n, P)``.
        seed: seed of the normals behind the hidden layers' draws.

    Returns:
        ``(readout, scale_tril)`` of shapes ``(*fantasy, *batch', M, P)`` and
        ``(*batch', P, M, M)``, ``batch'`` the broadcast of ``batch`` and the state's batch.
    """
    last, state = network.layers[-1], states[-1]
    batch = torch.broadcast_shapes(x.shape[:-2], state.scale_tril.shape[:-3])
    x = x.expand(*batch, *x.shape[-2:])
    samples = 1 if len(network.layers) == 1 else CONDITIONING_SAMPLES
    generator = torch.Generator(device=x.device).manual_seed(int(seed))
    h = network._hidden_samples(x, samples, generator, states)  # (S, *batch, n, D')
    _, A, residual = last.conditional_variance(h, state)  # a(h_i): (S, *batch, n, M); rho
    scale = state.scale_tril  # R_j: (*b, P, M, M)
    mean = state.chol.transpose(-1, -2) @ state.readout  # mu_j as columns: (*b, M, P)
    fits = (A @ mean).transpose(-1, -2)  # a_i^T mu_j: (S, *batch, P, n)
    A_mean = A.mean(0)
    B = A_mean.unsqueeze(-3) @ scale  # (*batch, P, n, M)
    spread = (A - A_mean).unsqueeze(-3) @ scale  # (S, *batch, P, n, M)
    fit_spread = fits - fits.mean(0)
    P = scale.shape[-3]
    variance = residual.mean(0).unsqueeze(-1) + noise.expand(*x.shape[:-1], P)  # (*batch, n, P)
    D = (spread @ spread.transpose(-1, -2)).mean(0)  # E[(A - Abar) S (A - Abar)^T]
    D = D + (fit_spread.unsqueeze(-1) * fit_spread.unsqueeze(-2)).mean(0)  # Cov(A mu)
    D = D + torch.diag_embed(variance.transpose(-1, -2))  # (*batch, P, n, n)
    chol_D = torch.linalg.cholesky(D)
    W = torch.linalg.solve_triangular(chol_D, B, upper=False)  # D^-1/2 B
    eye = torch.eye(scale.shape[-1], dtype=scale.dtype, device=scale.device)
    chol = torch.linalg.cholesky(eye + W.transpose(-1, -2) @ W)  # Lambda = C C^T
    residuals = (y.transpose(-1, -2) - fits.mean(0)).unsqueeze(-1)  # (*fantasy, *batch, P, n, 1)
    whitened = torch.linalg.solve_triangular(chol_D, residuals, upper=False)
    z = torch.cholesky_solve(W.transpose(-1, -2) @ whitened, chol)  # (..., P, M, 1)
    shift = (scale @ z).squeeze(-1).transpose(-1, -2)  # R z as columns: (..., M, P)
    readout = state.readout + state.inverse.transpose(-1, -2) @ shift  # V' = V + L^-T R z
    factors = torch.linalg.solve_triangular(chol, scale.transpose(-1, -2), upper=False)
    return readout, factors.transpose(-1, -2)  # R C^-T
