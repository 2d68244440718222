r"""The whitened, uncollapsed SVGP bound of VISH, for any one-dimensional GPyTorch likelihood.

Weights are whitened, :math:`w = D v` with :math:`D = \sqrt{\sigma^2 \mathrm{diag}(\lambda)}` and
:math:`v \sim \mathcal N(0, I)` under the prior; :math:`q(v) = \mathcal N(\mu, SS^\top)` with lower
triangular :math:`S`. The marginals of :math:`f` at a point are

.. math::
    \mathbb E f = \phi^\top D \mu, \qquad \mathbb V f = \|S^\top D \phi\|^2 + \sigma^2 r^2 \rho,

(the second term is the prior variance the features miss), and for a minibatch :math:`B` of
:math:`N` points

.. math::
    \mathcal L = \frac{N}{|B|} \sum_{i \in B} \mathbb E_{q(f_i)} \log p(y_i \mid f_i)
        - \tfrac12 \left[\mathrm{tr}(SS^\top) + \mu^\top\mu - M - \log|SS^\top|\right],

an unbiased estimate of the full bound. Whitening makes Adam well conditioned although the
eigenvalues span many decades. With a Gaussian likelihood and the optimal
:math:`q(v) = \mathcal N(L^{-\top} c, B^{-1})` of :mod:`manibo.models.vish.collapsed`, the full
bound equals the collapsed one.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from gpytorch.distributions import MultivariateNormal
from gpytorch.likelihoods import Likelihood
from linear_operator.operators import DiagLinearOperator
from torch import Tensor

from manibo._validation import as_tensor_arg, check_finite
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.vish.prior import VISHPrior


class VariationalVISH(torch.nn.Module):
    r"""A VISH sparse GP with a free Gaussian :math:`q(v)` in whitened coordinates.

    Args:
        prior: the :class:`~manibo.models.vish.prior.VISHPrior` (features, kernel, spectrum).
        likelihood: a one-dimensional GPyTorch likelihood, e.g.
            :class:`gpytorch.likelihoods.BernoulliLikelihood` (labels in {0, 1}) or
            :class:`gpytorch.likelihoods.GaussianLikelihood`.

    ``q(v)`` starts at the prior, :math:`\mu = 0, S = I`.
    """

    def __init__(self, prior: VISHPrior, likelihood: Likelihood) -> None:
        super().__init__()
        if not isinstance(likelihood, Likelihood):
            raise ConfigurationError(
                f"`likelihood` must be a gpytorch Likelihood, got {type(likelihood).__name__}."
            )
        self.prior = prior
        self.likelihood = likelihood
        m = prior.features.num_features
        self.q_mean = torch.nn.Parameter(torch.zeros(m, dtype=torch.float64))
        self.q_scale_tril = torch.nn.Parameter(torch.eye(m, dtype=torch.float64))

    def scale_tril(self) -> Tensor:
        """:math:`S`, the lower triangle of the parameter, shape ``(M, M)``."""
        return torch.tril(self.q_scale_tril)

    def kl_divergence(self) -> Tensor:
        r""":math:`\mathrm{KL}(q(v) \,\|\, \mathcal N(0, I))`, shape ``()``."""
        S = self.scale_tril()
        diag = torch.diagonal(S)
        return 0.5 * (
            (S * S).sum() + self.q_mean @ self.q_mean - len(diag) - 2 * torch.log(diag.abs()).sum()
        )

    def marginals(self, X: Tensor) -> tuple[Tensor, Tensor]:
        r"""Mean and variance of :math:`q(f)` at inputs ``X`` (standardisation is the caller's).

        Args:
            X: inputs, shape ``(n, input_dim)``.

        Returns:
            ``(mean, variance)``, each of shape ``(n,)``, float64.
        """
        Phi = self.prior.features.harmonics(X)
        radius, _ = self.prior.features.radius_direction(X.to(torch.float64))
        scale = self.prior.scale()
        projected = Phi * scale  # rows D phi_i
        mean = projected @ self.q_mean
        variance = ((projected @ self.scale_tril()) ** 2).sum(-1)
        return mean, variance + self.prior.residual_variance() * radius**2

    def elbo(self, X: Tensor, y: Tensor, num_data: int) -> Tensor:
        """The minibatch estimate of the bound (see the module docstring).

        Args:
            X: a minibatch of inputs, shape ``(b, input_dim)``.
            y: its outcomes, shape ``(b,)`` (labels in {0, 1} for a Bernoulli likelihood).
            num_data: ``N``, the size of the full data set.

        Returns:
            Shape ``()``.
        """
        mean, variance = self.marginals(X)
        q_f = MultivariateNormal(mean, DiagLinearOperator(variance))
        expected = self.likelihood.expected_log_prob(y.reshape(-1).to(mean), q_f).sum()
        return expected * (num_data / X.shape[0]) - self.kl_divergence()


def fit_variational(
    model: VariationalVISH,
    X: Tensor,
    y: Tensor,
    batch_size: int = 1024,
    num_steps: int = 2000,
    lr: float = 0.01,
    generator: torch.Generator | None = None,
    train_hyperparameters: bool = False,
    callback: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Maximise the minibatch bound with Adam.

    Args:
        model: the variational model.
        X: inputs, shape ``(N, input_dim)``.
        y: outcomes, shape ``(N,)``.
        batch_size: minibatch size (``>= N`` gives full-batch steps).
        num_steps: Adam steps.
        lr: Adam learning rate.
        generator: draws the minibatches (seeded for reproducibility).
        train_hyperparameters: also train the kernel variance and spectrum parameters and the
            likelihood's parameters; otherwise only :math:`q(v)` is trained (the lift is never
            trained: the features stay fixed).
        callback: called as ``callback(step, elbo)`` after every step.

    Returns:
        The minibatch bound after every step, divided by ``N``.
    """
    as_tensor_arg("X", X)
    as_tensor_arg("y", y)
    model.prior.features.check_inputs("X", X)
    check_finite("y", y)
    if y.reshape(-1).shape[0] != X.shape[0]:
        raise InputDataError(
            f"`y` must hold one outcome per row of `X` ({X.shape[0]}), got shape {tuple(y.shape)}."
        )
    params = [model.q_mean, model.q_scale_tril]
    if train_hyperparameters:
        params += model.prior.hyperparameters() + list(model.likelihood.parameters())
    optimizer = torch.optim.Adam(params, lr=lr)
    n = X.shape[0]
    history = []
    for step in range(int(num_steps)):
        index = torch.randperm(n, generator=generator)[: min(batch_size, n)].to(X.device)
        optimizer.zero_grad()
        loss = -model.elbo(X[index], y.reshape(-1)[index], n) / n
        loss.backward()
        optimizer.step()
        history.append(-float(loss.detach()))
        if callback is not None:
            callback(step, history[-1])
    return history
