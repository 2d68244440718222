r"""The collapsed (Titsias) bound of VISH and its weight-space posterior, from sufficient
statistics.

In weight coordinates the VISH posterior is Bayesian linear regression: :math:`f(x) = \phi(x)^\top
w` with prior :math:`w \sim \mathcal N(0, \Lambda)`, :math:`\Lambda = \sigma^2
\mathrm{diag}(\lambda)` (each level's eigenvalue repeated over its harmonics), plus the residual
process whose variance is :math:`\sigma^2 r^2 \rho`. With :math:`D = \Lambda^{1/2}`, noise
:math:`s^2` and statistics :math:`P = \Phi^\top\Phi`, :math:`p = \Phi^\top y`:

.. math::
    B = I + D P D / s^2 = L L^\top, \qquad c = L^{-1} D p / s^2,

    \mathcal L = -\tfrac N2 \log 2\pi - \textstyle\sum \log L_{ii} - \tfrac N2 \log s^2
        - \tfrac12 (y^\top y / s^2 - \|c\|^2) - \tfrac{\sigma^2 \rho}{2 s^2} \sum_i r_i^2,

    m_w = D L^{-\top} c, \qquad \Sigma_w = (D L^{-\top})(D L^{-\top})^\top .

Every step costs :math:`O(M^3)` whatever :math:`N`; :math:`\Lambda` is never inverted, so tiny
eigenvalues are harmless (:math:`B \succeq I`). The bound is the dense :math:`N \times N` Titsias
bound :math:`\log \mathcal N(y; 0, Q_{ff} + s^2 I) - \mathrm{tr}(K_{ff} - Q_{ff})/2s^2` exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from manibo.models.vish.statistics import SufficientStatistics


@dataclass(frozen=True)
class WeightPosterior:
    r"""The Gaussian posterior over the weights, in factored form.

    Attributes:
        mean: :math:`m_w`, shape ``(*batch, M)``.
        factor: :math:`F = L^{-1} D`, shape ``(*batch, M, M)`` (lower triangular), so that
            :math:`\Sigma_w = F^\top F` and the variance of :math:`\phi^\top w` is
            :math:`\|F\phi\|^2`.
        cholesky: :math:`L`, shape ``(*batch, M, M)``.
        whitened_mean: :math:`L^{-\top} c`, the optimal :math:`q(v)` mean in whitened coordinates
            :math:`w = D v`, shape ``(*batch, M)``.
    """

    mean: Tensor
    factor: Tensor
    cholesky: Tensor
    whitened_mean: Tensor


def _inner_system(stats: SufficientStatistics, scale: Tensor, noise: Tensor):
    """``L`` and ``c`` for prior standard deviations ``scale`` (``D``'s diagonal, shape
    ``(M,)``)."""
    eye = torch.eye(stats.num_features, dtype=stats.gram.dtype, device=stats.gram.device)
    noise = noise.reshape(())
    B = eye + scale.unsqueeze(-1) * stats.gram * scale / noise
    L = torch.linalg.cholesky(B)
    c = torch.linalg.solve_triangular(L, (scale * stats.cross / noise).unsqueeze(-1), upper=False)
    return L, c.squeeze(-1)


class _CollapsedBound(torch.autograd.Function):
    r"""The bound of :func:`collapsed_bound` with its gradient in closed form.

    With :math:`q = D p / s^2`, :math:`u = B^{-1} q` and :math:`K = P D`:

    .. math::
        \partial_P \mathcal L = -\tfrac{1}{2 s^2} D (B^{-1} + u u^\top) D, \qquad
        \partial_p \mathcal L = D u / s^2,

        \partial_{D_{ii}} \mathcal L = \big(u_i p_i - u_i (K u)_i
            - \textstyle\sum_j B^{-1}_{ij} K_{ij}\big) / s^2,

        \partial_{s^2} \mathcal L = \frac{y^\top y + \sigma^2\rho \sum_i r_i^2}{2 s^4}
            - \frac{N + u^\top q + \|u\|^2 - M + \mathrm{tr}\, B^{-1}}{2 s^2},

    and the scalars' derivatives are read off the bound. The backward pass costs one inverse from
    the Cholesky factor; autograd through the factorisation takes several triangular solves with
    ``M`` right-hand sides.
    """

    @staticmethod
    def forward(ctx, gram, cross, y_squared, radius_squared, count, scale, noise, residual):
        s2 = noise.reshape(())
        eye = torch.eye(gram.shape[-1], dtype=gram.dtype, device=gram.device)
        L = torch.linalg.cholesky(eye + scale.unsqueeze(-1) * gram * scale / s2)
        q = scale * cross / s2
        c = torch.linalg.solve_triangular(L, q.unsqueeze(-1), upper=False).squeeze(-1)
        ctx.save_for_backward(gram, cross, y_squared, radius_squared, count, scale, noise, residual)
        ctx.factors = (L, q, c)
        return (
            -0.5 * count * math.log(2 * math.pi)
            - torch.log(torch.diagonal(L)).sum()
            - 0.5 * count * torch.log(s2)
            - 0.5 * (y_squared / s2 - c @ c)
            - 0.5 * residual * radius_squared / s2
        )

    @staticmethod
    def backward(ctx, grad):
        gram, cross, y_squared, radius_squared, count, scale, noise, residual = ctx.saved_tensors
        L, q, c = ctx.factors
        s2 = noise.reshape(())
        inverse = torch.cholesky_inverse(L)
        u = torch.linalg.solve_triangular(L.T, c.unsqueeze(-1), upper=True).squeeze(-1)
        K = gram * scale
        d_gram = d_cross = d_scale = d_noise = None
        if ctx.needs_input_grad[0]:
            d_gram = -0.5 * scale.unsqueeze(-1) * (inverse + torch.outer(u, u)) * scale / s2
        if ctx.needs_input_grad[1]:
            d_cross = scale * u / s2
        if ctx.needs_input_grad[5]:
            d_scale = (u * cross - u * (K @ u) - (inverse * K).sum(-1)) / s2
        if ctx.needs_input_grad[6]:
            m = gram.shape[-1]
            d_noise = (
                0.5 * (y_squared + residual * radius_squared) / s2**2
                - 0.5 * (count + u @ q + u @ u - m + torch.diagonal(inverse).sum()) / s2
            )
            d_noise = d_noise.reshape(noise.shape)
        gradients = (
            d_gram,
            d_cross,
            -0.5 / s2,
            -0.5 * residual / s2,
            -0.5 * math.log(2 * math.pi) - 0.5 * torch.log(s2),
            d_scale,
            d_noise,
            -0.5 * radius_squared / s2,
        )
        return tuple(
            None if g is None or not needed else grad * g
            for g, needed in zip(gradients, ctx.needs_input_grad, strict=True)
        )


def collapsed_bound(
    stats: SufficientStatistics, scale: Tensor, noise: Tensor, residual_variance: Tensor
) -> Tensor:
    r"""The collapsed bound :math:`\mathcal L` (see the module docstring).

    Its gradient is computed in closed form, from the inverse of the Cholesky factor (cheaper than
    autograd through the factorisation).

    Args:
        stats: statistics of the (standardised) data, unbatched.
        scale: prior standard deviations :math:`\sqrt{\sigma^2 \lambda}` per feature, shape
        ``(M,)``.
        noise: noise variance :math:`s^2`, shape ``()`` or ``(1,)``.
        residual_variance: :math:`\sigma^2 \rho`, the prior variance the features miss on the unit
            sphere, shape ``()``.

    Returns:
        Shape ``()``, differentiable in ``scale``, ``noise``, ``residual_variance`` (and in the
        statistics when they carry a graph).
    """
    return _CollapsedBound.apply(
        stats.gram,
        stats.cross,
        stats.y_squared,
        stats.radius_squared,
        stats.count,
        scale,
        noise,
        residual_variance,
    )


def weight_posterior(stats: SufficientStatistics, scale: Tensor, noise: Tensor) -> WeightPosterior:
    r"""The posterior :math:`\mathcal N(m_w, \Sigma_w)` over the weights (batched over ``stats``).

    Args:
        stats: statistics, possibly batched (fantasies).
        scale: prior standard deviations per feature, shape ``(M,)``.
        noise: noise variance, shape ``()`` or ``(1,)``.
    """
    L, c = _inner_system(stats, scale, noise)
    whitened = torch.linalg.solve_triangular(
        L.transpose(-1, -2), c.unsqueeze(-1), upper=True
    ).squeeze(-1)
    eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device)
    factor = torch.linalg.solve_triangular(L, eye * scale, upper=False)
    return WeightPosterior(mean=scale * whitened, factor=factor, cholesky=L, whitened_mean=whitened)
