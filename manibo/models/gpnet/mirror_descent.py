r"""GPNet's stochastic functional mirror-descent step (Shi, Khan & Zhu 2019): schedule, targets, KL.

One step of the mirror descent with step size :math:`\beta_t` turns the current approximation
:math:`q_t` into (Shi, Khan & Zhu 2019, eqs. 6–7)

.. math::
    \hat q_{t+1}(f) \propto p(y_n \mid f)^{N\beta_t/n}\, p(f)^{\beta_t}\, q_t(f)^{1-\beta_t}.

At a finite set of points (minibatch :math:`X_n` stacked on measurement points :math:`X_M`) the last
two factors are the *tempered prior* :math:`\mathcal N(\tilde m, \tilde K)`, with precision
:math:`\beta K^{-1} + (1-\beta)\Sigma_t^{-1}`. Written with :math:`c = \beta/(1-\beta)` and :math:`B
= K + c\,\Sigma_t`,

.. math::
    \tilde m = K B^{-1} \mu_t, \qquad \tilde K = \tfrac1\beta\,(K - K B^{-1} K),

which never inverts :math:`\Sigma_t` (rank deficient whenever the network has fewer features than
points) and only factorises :math:`B`, positive definite because :math:`K` is (it carries jitter).
At :math:`\beta = 1` the tempered prior is the prior itself. For a Gaussian likelihood the target is
then a GP regression on the batch with noise :math:`s^2 n/(\beta N)` (eq. 27); otherwise the step
maximises :math:`\beta\frac Nn\sum_i \mathbb E_q \log p(y_i\mid f_i) - \mathrm{KL}(q \,\|\, \mathcal
N(\tilde m, \tilde K))` (the paper's joint bound, up to a constant).

Tensors carry the latent functions as a leading batch dimension: means ``(C, P)``, covariances
``(C, P, P)``, with ``P`` points; the prior covariance ``K`` ``(P, P)`` is shared by the latents.
"""

from __future__ import annotations

import math

import torch
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

from manibo.exceptions import ConfigurationError, InputDataError


def check_beta(beta: float, name: str = "beta") -> float:
    """Return ``beta`` as a float if it lies in (0, 1], else raise ``ConfigurationError``."""
    beta = float(beta)
    if not 0.0 < beta <= 1.0:
        raise ConfigurationError(
            f"`{name}` must lie in (0, 1] (a mirror-descent step size; 1 replaces q_t by the "
            f"prior), got {beta!r}. Typical values are 1, 0.1 and 0.01."
        )
    return beta


def beta_schedule(t: int, beta0: float = 1.0, xi: float = 0.1) -> float:
    r"""Step size :math:`\beta_t = \beta_0 / (1 + \xi\sqrt{t - 1})`, so :math:`\beta_1 = \beta_0`.

    The paper writes :math:`\sqrt t`; the official code counts from 0, which is the form here.
    Decaying as :math:`t^{-1/2}` makes the stochastic mirror descent converge.

    Args:
        t: iteration, ``>= 1``.
        beta0: initial step size in (0, 1].
        xi: decay rate ``>= 0`` (0 keeps :math:`\beta` constant).
    """
    beta0 = check_beta(beta0, "beta0")
    if not float(xi) >= 0 or math.isinf(float(xi)):
        raise ConfigurationError(f"`xi` must be a finite number >= 0, got {xi!r}.")
    if isinstance(t, bool) or int(t) != t or t < 1:
        raise ConfigurationError(f"the iteration `t` must be an integer >= 1, got {t!r}.")
    return beta0 / (1.0 + float(xi) * math.sqrt(t - 1))


def default_jitter(dtype: torch.dtype) -> float:
    """Diagonal jitter on every covariance: 1e-6 in float64, 1e-4 in float32 (GPflow-style)."""
    return 1e-6 if dtype == torch.float64 else 1e-4


def add_jitter(matrix: Tensor, jitter: float) -> Tensor:
    """``matrix + jitter * I`` for a batch of square matrices ``(..., P, P)``."""
    return matrix + jitter * torch.eye(matrix.shape[-1], dtype=matrix.dtype, device=matrix.device)


def _symmetrise(matrix: Tensor) -> Tensor:
    return 0.5 * (matrix + matrix.transpose(-1, -2))


def _check_square(name: str, matrix: Tensor, size: int) -> None:
    if matrix.dim() < 2 or matrix.shape[-2:] != (size, size):
        raise InputDataError(
            f"`{name}` must have shape (..., {size}, {size}) to match {size} points, got "
            f"{tuple(matrix.shape)}."
        )


def tempered_prior(K: Tensor, mean: Tensor, cov: Tensor, beta: float) -> tuple[Tensor, Tensor]:
    r"""Mean and covariance of :math:`p^\beta q_t^{1-\beta}` (normalised) at ``P`` points.

    Args:
        K: prior covariance, positive definite (with jitter), shape ``(P, P)``.
        mean: mean of :math:`q_t`, shape ``(C, P)``.
        cov: covariance of :math:`q_t`, positive semi-definite (may be rank deficient), shape
            ``(C, P, P)``.
        beta: step size in (0, 1].

    Returns:
        ``(m_tilde, K_tilde)`` of shapes ``(C, P)`` and ``(C, P, P)`` (symmetric).
    """
    beta = check_beta(beta)
    size = K.shape[-1]
    _check_square("K", K, size)
    _check_square("cov", cov, size)
    if mean.shape[-1] != size:
        raise InputDataError(f"`mean` must have shape (C, {size}), got {tuple(mean.shape)}.")
    if beta == 1.0:  # p^1 q^0: the prior itself (the limit c -> infinity of the general form)
        return torch.zeros_like(mean), K.expand(*cov.shape[:-2], size, size).clone()
    c = beta / (1.0 - beta)
    chol = psd_safe_cholesky(_symmetrise(K + c * cov))
    m_tilde = (K @ torch.cholesky_solve(mean.unsqueeze(-1), chol)).squeeze(-1)
    half = torch.linalg.solve_triangular(chol, K.expand_as(cov), upper=False)
    K_tilde = _symmetrise(K - half.transpose(-1, -2) @ half) / beta
    return m_tilde, K_tilde


def condition_on_batch(
    m_tilde: Tensor, K_tilde: Tensor, y: Tensor, noise: Tensor | float
) -> tuple[Tensor, Tensor]:
    r"""GP regression under :math:`\mathcal N(\tilde m, \tilde K)`: measurement points | batch.

    The first ``n`` points are the minibatch with observations ``y`` and noise variance ``noise``;
    the remaining ``M`` are the measurement points.

    Args:
        m_tilde: prior mean, shape ``(C, n + M)``.
        K_tilde: prior covariance, shape ``(C, n + M, n + M)``.
        y: observations, shape ``(C, n)``.
        noise: observation noise variance (a scalar, or a tensor broadcastable to ``(C, 1)``).

    Returns:
        ``(mean, cov)`` at the measurement points, shapes ``(C, M)`` and ``(C, M, M)``.
    """
    n = y.shape[-1]
    noise = torch.as_tensor(noise, dtype=K_tilde.dtype, device=K_tilde.device)
    K_nn = K_tilde[..., :n, :n]
    K_nM = K_tilde[..., :n, n:]
    K_y = K_nn + noise.reshape(*noise.shape, 1) * torch.eye(n, dtype=y.dtype, device=y.device)
    chol = psd_safe_cholesky(_symmetrise(K_y))
    half = torch.linalg.solve_triangular(chol, K_nM, upper=False)
    residual = torch.linalg.solve_triangular(
        chol, (y - m_tilde[..., :n]).unsqueeze(-1), upper=False
    )
    mean = m_tilde[..., n:] + (half.transpose(-1, -2) @ residual).squeeze(-1)
    cov = _symmetrise(K_tilde[..., n:, n:] - half.transpose(-1, -2) @ half)
    return mean, cov


def conjugate_target(
    K: Tensor,
    prev_mean: Tensor,
    prev_cov: Tensor,
    y: Tensor,
    noise: Tensor | float,
    beta: float,
    num_data: int,
) -> tuple[Tensor, Tensor]:
    r"""The closed-form target :math:`\hat q_{t+1}(f_M)` of a Gaussian likelihood.

    Shi, Khan & Zhu (2019), eq. 27.

    The minibatch likelihood is tempered by :math:`\beta N/n`: Gaussian with variance :math:`s^2 n /
    (\beta N)`. At :math:`\beta = 1` and :math:`n = N` this is the exact GP posterior at the
    measurement points.

    Args:
        K: prior covariance at the ``n`` batch points followed by the ``M`` measurement points,
            shape ``(n + M, n + M)``, with jitter.
        prev_mean: mean of :math:`q_t` at the same points, shape ``(C, n + M)``.
        prev_cov: covariance of :math:`q_t` (with jitter), shape ``(C, n + M, n + M)``.
        y: minibatch observations, shape ``(C, n)``.
        noise: likelihood noise variance :math:`s^2`.
        beta: step size in (0, 1].
        num_data: ``N``, the size of the whole data set (``>= n``).

    Returns:
        ``(mean, cov)`` of the target at the measurement points, shapes ``(C, M)``, ``(C, M, M)``.
    """
    n = y.shape[-1]
    if isinstance(num_data, bool) or int(num_data) != num_data or num_data < n:
        raise ConfigurationError(
            f"`num_data` (N, the size of the data set) must be an integer >= the batch size {n}, "
            f"got {num_data!r}."
        )
    m_tilde, K_tilde = tempered_prior(K, prev_mean, prev_cov, beta)
    tempered_noise = torch.as_tensor(noise, dtype=K.dtype, device=K.device) * n / (beta * num_data)
    return condition_on_batch(m_tilde, K_tilde, y, tempered_noise)


def gaussian_kl(mean_q: Tensor, chol_q: Tensor, mean_p: Tensor, chol_p: Tensor) -> Tensor:
    r"""Full-covariance KL divergence between Gaussians given by means and Cholesky factors.

    :math:`\mathrm{KL}(\mathcal N(\mu_q, L_qL_q^\top) \| \mathcal N(\mu_p, L_pL_p^\top))`.

    Args:
        mean_q: shape ``(..., P)``.
        chol_q: lower Cholesky factor of the first covariance, shape ``(..., P, P)``.
        mean_p: shape ``(..., P)``.
        chol_p: lower Cholesky factor of the second covariance, shape ``(..., P, P)``.

    Returns:
        The divergences, shape ``(...)``.
    """
    size = mean_q.shape[-1]
    scaled = torch.linalg.solve_triangular(chol_p, chol_q, upper=False)
    diff = torch.linalg.solve_triangular(
        chol_p, (mean_p - mean_q).unsqueeze(-1), upper=False
    ).squeeze(-1)
    logdet_p = 2 * chol_p.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    logdet_q = 2 * chol_q.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    trace = scaled.square().sum((-2, -1))
    return 0.5 * (trace + diff.square().sum(-1) - size + logdet_p - logdet_q)


def cholesky_with_jitter(cov: Tensor, jitter: float) -> Tensor:
    """Lower Cholesky factor of ``cov + jitter I`` (more jitter is added only if that fails)."""
    return psd_safe_cholesky(_symmetrise(add_jitter(cov, jitter)))
