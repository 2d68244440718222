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


def collapsed_bound(
    stats: SufficientStatistics, scale: Tensor, noise: Tensor, residual_variance: Tensor
) -> Tensor:
    r"""The collapsed bound :math:`\mathcal L` (see the module docstring).

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
    L, c = _inner_system(stats, scale, noise)
    noise = noise.reshape(())
    n = stats.count
    return (
        -0.5 * n * math.log(2 * math.pi)
        - torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)
        - 0.5 * n * torch.log(noise)
        - 0.5 * (stats.y_squared / noise - (c * c).sum(-1))
        - 0.5 * residual_variance * stats.radius_squared / noise
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
