r"""Fantasy models of the activated deep GP: the last layer's inducing posterior, updated.

Given its input :math:`h`, the last layer is linear-Gaussian in its whitened inducing variables:
:math:`f_j(x) = a(h)^\top v_j + r_j(h)`, with :math:`a(h) = L_{uu}^{-1} k_u(h)`,
:math:`q(v_j) = \mathcal N(\mu_j, R_jR_j^\top)` and an independent residual :math:`r_j`. New
observations :math:`y_{ij} = f_j(x_i) + \varepsilon_{ij}` with noise variances
:math:`\sigma^2_{ij}` change :math:`q(v_j)` to the maximiser of the ELBO's terms for them,

.. math::
    q'(v_j) \propto q(v_j)\,\exp\Big(\sum_i \mathbb E_{q(h_i)}
        \log \mathcal N\big(y_{ij};\, a(h_i)^\top v_j,\, \sigma^2_{ij}\big)\Big),

the update that training :math:`q(v_j)` to convergence on the new data would reach, with the hidden
layers kept. The exponent is quadratic in :math:`v_j`, so :math:`q'` is Gaussian: in the
coordinates :math:`v_j = \mu_j + R_j z`, with :math:`b_i = R_j^\top a(h_i)`,

.. math::
    \Lambda = I + \sum_i \frac{\mathbb E[b_i b_i^\top]}{\sigma^2_{ij}}, \qquad
    \ell = \sum_i \frac{y_{ij}\,\mathbb E[b_i] - \mathbb E[b_i a(h_i)^\top]\mu_j}{\sigma^2_{ij}},

:math:`\mu_j' = \mu_j + R_j \Lambda^{-1}\ell` and :math:`R_j' = R_j C^{-\top}` with
:math:`\Lambda = CC^\top`. With one layer :math:`h = x` and the expectations are exact: the update
is then Bayesian conditioning of a linear-Gaussian model. With hidden layers the expectations are
averages over :data:`CONDITIONING_SAMPLES` draws of the hidden layers from fixed normals, so a
fantasy model is a deterministic, differentiable function of the fantasy points.
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
    inverse_noise: Tensor,
    seed: int = 0,
) -> tuple[Tensor, Tensor]:
    r"""The last layer's read-out and whitened factors after conditioning on ``(x, y)``.

    Args:
        network: the deep GP.
        states: its layer states (the last one may already be conditioned, with a batch).
        x: inputs, shape ``(*batch, n, D)``, ``n >= 0``.
        y: targets in the network's units, shape ``(*fantasy, *batch, n, P)``.
        inverse_noise: :math:`1/\sigma^2_{ij}` (0 for an output that is not observed), shape
            broadcastable to ``(*batch, n, P)``.
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
    _, whitened, _ = last.conditional_variance(h, state)  # a(h_i): (S, *batch, n, M)
    scale = state.scale_tril  # (*b, P, M, M)
    mean = state.chol.transpose(-1, -2) @ state.readout  # whitened means (*b, M, P)
    b = whitened.unsqueeze(-3) @ scale  # rows b_i^T = a_i^T R_j: (S, *batch', P, n, M)
    fitted = (whitened @ mean).transpose(-1, -2).unsqueeze(-1)  # a_i^T mu_j: (S, *., P, n, 1)
    weight = inverse_noise.expand(*x.shape[:-1], scale.shape[-3]).transpose(-1, -2).unsqueeze(-1)
    precision = (b.transpose(-1, -2) @ (weight * b)).mean(0)  # (*batch', P, M, M)
    eye = torch.eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    chol = torch.linalg.cholesky(precision + eye)
    expected_b = (weight * b).mean(0)  # E[b_i] / sigma^2: (*batch', P, n, M)
    expected_fit = (weight * fitted * b).mean(0).sum(-2)  # (*batch', P, M)
    targets = y.transpose(-1, -2).unsqueeze(-2)  # (*fantasy, *batch, P, 1, n)
    linear = (targets @ expected_b).squeeze(-2) - expected_fit  # (*fantasy, *batch', P, M)
    z = torch.cholesky_solve(linear.unsqueeze(-1), chol)  # Lambda^-1 l: (..., P, M, 1)
    shift = (scale @ z).squeeze(-1).transpose(-1, -2)  # R z: (..., M, P)
    readout = state.readout + state.inverse.transpose(-1, -2) @ shift  # V' = V + L^-T R z
    factors = torch.linalg.solve_triangular(chol, scale.transpose(-1, -2), upper=False)
    return readout, factors.transpose(-1, -2)  # R C^-T
