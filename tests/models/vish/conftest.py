"""Dense reference computations for the VISH tests (independent of the streaming code)."""

import math

import pytest
import torch


def dense_titsias(Kff_diag, Phi, prior_var, y, noise):
    r"""The N x N Titsias bound log N(y; 0, Q + s^2 I) - tr(Kff - Q) / 2s^2, Q = Phi
    diag(prior_var) Phi^T."""
    Q = Phi @ torch.diag(prior_var) @ Phi.T
    n = len(y)
    L = torch.linalg.cholesky(Q + noise * torch.eye(n, dtype=Q.dtype))
    alpha = torch.cholesky_solve(y[:, None], L)[:, 0]
    log_marginal = (
        -0.5 * n * math.log(2 * math.pi) - torch.log(torch.diagonal(L)).sum() - 0.5 * (y @ alpha)
    )
    return log_marginal - 0.5 * (Kff_diag - torch.diagonal(Q)).sum() / noise


def dense_projected_process(K_test, Phi_train, Phi_test, prior_var, y, noise):
    """Predictive mean and covariance of SGPR (projected process) by N x N algebra."""
    Lam = torch.diag(prior_var)
    Q_ff = Phi_train @ Lam @ Phi_train.T
    Q_tf = Phi_test @ Lam @ Phi_train.T
    C = Q_ff + noise * torch.eye(len(y), dtype=y.dtype)
    mean = Q_tf @ torch.linalg.solve(C, y)
    cov = K_test - Q_tf @ torch.linalg.solve(C, Q_tf.T)
    return mean, cov


@pytest.fixture
def reference():
    """The dense reference functions."""
    return {"titsias": dense_titsias, "projected_process": dense_projected_process}
