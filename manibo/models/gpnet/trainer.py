r"""GPNet training: minibatches, measurement points, KL and hyper steps.

Shi, Khan & Zhu (2019), Algorithm 1.

Iteration :math:`t` with step size :math:`\beta_t`, on a minibatch :math:`(X_n, y_n)` of size ``n``
out of ``N`` and measurement points :math:`X_M \sim c(x)`:

1. The network :math:`q_{\gamma_t}` and the prior :math:`k_{\theta_t}` are evaluated at
   :math:`X = [X_n; X_M]` (one forward pass; its values, detached, are :math:`q_t`).
2. Gaussian likelihood: the closed-form target :math:`\hat q_{t+1}(f_M)` is computed under
   ``no_grad`` and one Adam step is taken on :math:`\gamma` to decrease
   :math:`\mathrm{KL}(q_\gamma(f_M) \,\|\, \hat q_{t+1}(f_M))` (full covariance). Bernoulli and
   softmax likelihoods: one Adam step on :math:`\gamma` to increase
   :math:`\beta_t \frac Nn \sum_i \mathbb E_{q_\gamma} \log p(y_i\mid f_i) -
   \mathrm{KL}(q_\gamma(f_X) \,\|\, p_{\theta_t}^{\beta_t} q_t^{1-\beta_t})`.
3. Optionally (``hyper_lr > 0``), one step of a separate Adam on the prior's and the likelihood's
   hyperparameters to increase :math:`\sum_{i \in \text{batch}} \mathbb E_{q_t}\log p(y_i\mid f_i) -
   \mathrm{KL}(q_t(f_n) \,\|\, p_\theta(f_n))` with the *previous* network :math:`q_t` (not rescaled
   by ``N/n``, full covariance on the batch).

Steps 2 and 3 both start from the state at the beginning of the iteration, and each gradient is
taken with :func:`torch.autograd.grad` with respect to its own parameters only, so neither step can
leak into the other. :math:`q_t` and :math:`\theta_t` are read at the start of every iteration: the
"previous network and hyperparameters" are synchronised every iteration by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from gpytorch.distributions import MultitaskMultivariateNormal, MultivariateNormal
from gpytorch.kernels import Kernel
from gpytorch.likelihoods import (
    BernoulliLikelihood,
    GaussianLikelihood,
    Likelihood,
    SoftmaxLikelihood,
)
from gpytorch.settings import lazily_evaluate_kernels
from linear_operator.operators import DiagLinearOperator
from torch import Tensor, nn

from manibo._memory import TRIM_EVERY, release_freed_memory
from manibo._random import seeded_global_generators
from manibo._validation import as_tensor_arg, check_finite, check_same_dtype_device
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.gpnet.measurement import MeasurementDistribution
from manibo.models.gpnet.mirror_descent import (
    add_jitter,
    beta_schedule,
    cholesky_with_jitter,
    conjugate_target,
    default_jitter,
    gaussian_kl,
    tempered_prior,
)
from manibo.models.gpnet.networks import BayesianLinearNetwork
from manibo.spaces.base import Space


@dataclass
class StepResult:
    """What one GPNet iteration did.

    Attributes:
        iteration: the iteration ``t`` (from 1).
        beta: its step size :math:`\\beta_t`.
        loss: the network's loss before the step (detached 0-d tensor): the KL to the target for a
            Gaussian likelihood, minus the tempered objective otherwise.
        hyper_objective: the hyperparameter objective before the step (detached 0-d tensor), or
            None without a hyperparameter step.
    """

    iteration: int
    beta: float
    loss: Tensor
    hyper_objective: Tensor | None = None


def _check_rate(name: str, value: float, allow_zero: bool) -> float:
    value = float(value)
    if not (value >= 0 if allow_zero else value > 0) or value != value or value == float("inf"):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigurationError(f"`{name}` must be a finite number {bound}, got {value!r}.")
    return value


class GPNet(nn.Module):
    r"""A GP posterior approximated by an inference network, trained by functional mirror descent.

    Args:
        space: the space of the inputs (a :class:`~manibo.spaces.Box` for :math:`\mathbb R^D`);
            minibatch and measurement points must lie on it.
        network: the inference network (a :class:`BayesianLinearNetwork`).
        kernel: the prior covariance: any GPyTorch kernel on the space's points, manibo kernels
            included; wrap it in a ``ScaleKernel`` for a variance.
        likelihood: ``GaussianLikelihood`` (closed-form target; any number of latents, one per
            output column), ``BernoulliLikelihood`` (probit; one latent) or ``SoftmaxLikelihood``
            (one latent per class, ``mixing_weights=False``); default ``GaussianLikelihood()``.
        beta0: initial step size :math:`\beta_0 \in (0, 1]`.
        xi: decay of :math:`\beta_t = \beta_0/(1 + \xi\sqrt{t-1})`.
        lr: Adam learning rate of the network.
        hyper_lr: Adam learning rate of the kernel and likelihood hyperparameters; 0 (default)
            keeps them fixed, e.g. after :func:`~manibo.models.gpnet.pretrain_hyperparameters`.
        anneal_lr: scale the network's learning rate by :math:`\beta_t/\beta_0`.
        closed_form: with a Gaussian likelihood, use the closed-form target (default); False uses
            the general (non-conjugate) objective, whose optimum over Gaussians is the same.
        jitter: diagonal jitter on every covariance (default 1e-6 in float64, 1e-4 in float32).

    Training moves the module to the training data's dtype and device at the first iteration.
    """

    def __init__(
        self,
        space: Space,
        network: BayesianLinearNetwork,
        kernel: Kernel,
        likelihood: Likelihood | None = None,
        beta0: float = 1.0,
        xi: float = 0.1,
        lr: float = 3e-3,
        hyper_lr: float = 0.0,
        anneal_lr: bool = False,
        closed_form: bool = True,
        jitter: float | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(space, Space):
            raise ConfigurationError(f"`space` must be a manibo Space, got {type(space).__name__}.")
        if not isinstance(network, BayesianLinearNetwork):
            raise ConfigurationError(
                f"`network` must be a BayesianLinearNetwork, got {type(network).__name__}."
            )
        if not isinstance(kernel, Kernel):
            raise ConfigurationError(
                f"`kernel` must be a gpytorch Kernel, got {type(kernel).__name__}."
            )
        likelihood = GaussianLikelihood() if likelihood is None else likelihood
        self._check_likelihood(likelihood, network.num_latents)
        beta_schedule(1, beta0, xi)  # validates beta0 and xi
        if jitter is not None:
            _check_rate("jitter", jitter, allow_zero=True)
        self.space = space
        self.network = network
        self.kernel = kernel
        self.likelihood = likelihood
        self.beta0, self.xi = float(beta0), float(xi)
        self.lr = _check_rate("lr", lr, allow_zero=False)
        self.hyper_lr = _check_rate("hyper_lr", hyper_lr, allow_zero=True)
        self.anneal_lr = bool(anneal_lr)
        self.closed_form = bool(closed_form)
        self._jitter = jitter
        self.iteration = 0
        self._network_optimizer: torch.optim.Optimizer | None = None
        self._hyper_optimizer: torch.optim.Optimizer | None = None

    @staticmethod
    def _check_likelihood(likelihood: Likelihood, num_latents: int) -> None:
        if isinstance(likelihood, SoftmaxLikelihood):
            if likelihood.mixing_weights is not None or likelihood.num_features != num_latents:
                raise ConfigurationError(
                    "a SoftmaxLikelihood needs one latent function per class and no mixing "
                    f"weights: build it as SoftmaxLikelihood(num_classes={num_latents}, "
                    f"num_features={num_latents}, mixing_weights=False) for a network with "
                    f"{num_latents} latents."
                )
        elif isinstance(likelihood, BernoulliLikelihood):
            if num_latents != 1:
                raise ConfigurationError(
                    f"a BernoulliLikelihood needs a network with one latent, got {num_latents}."
                )
        elif type(likelihood) is not GaussianLikelihood:
            raise ConfigurationError(
                "`likelihood` must be a GaussianLikelihood, BernoulliLikelihood or "
                f"SoftmaxLikelihood, got {type(likelihood).__name__}."
            )

    @property
    def conjugate(self) -> bool:
        """True when the closed-form target is used (a Gaussian likelihood and ``closed_form``)."""
        return isinstance(self.likelihood, GaussianLikelihood) and self.closed_form

    @property
    def beta(self) -> float:
        r""":math:`\beta_t` of the next iteration."""
        return beta_schedule(self.iteration + 1, self.beta0, self.xi)

    def jitter(self, dtype: torch.dtype) -> float:
        """The diagonal jitter used for ``dtype``."""
        return default_jitter(dtype) if self._jitter is None else self._jitter

    # ------------------------------------------------------------------ inputs
    def _check_points(self, name: str, X: Tensor) -> int:
        self.space.check(X, name)
        if X.dim() != 1 + len(self.space.point_shape) or X.shape[0] == 0:
            raise InputDataError(
                f"`{name}` must have shape (n, {', '.join(map(str, self.space.point_shape))}) with "
                f"n >= 1 (one leading dimension), got {tuple(X.shape)}."
            )
        return X.shape[0]

    def _check_targets(self, y: Tensor, n: int, name: str) -> Tensor:
        """Observations in the likelihood's layout: ``(n, C)`` Gaussian, ``(n,)`` otherwise."""
        if not isinstance(y, Tensor):
            raise InputDataError(f"`{name}` must be a torch.Tensor, got {type(y).__name__}.")
        C = self.network.num_latents
        if isinstance(self.likelihood, SoftmaxLikelihood):
            y = y.reshape(-1) if y.dim() == 2 and y.shape[-1] == 1 else y
            bad_values = y.is_floating_point() and not torch.equal(y, y.round())
            if y.shape != (n,) or bad_values or ((y < 0) | (y >= C)).any():
                raise InputDataError(
                    f"`{name}` must hold {n} class labels in 0..{C - 1} (shape ({n},)), got shape "
                    f"{tuple(y.shape)} with values in [{float(y.min()):g}, {float(y.max()):g}]."
                )
            return y.long()
        as_tensor_arg(name, y)
        check_finite(name, y)
        if isinstance(self.likelihood, BernoulliLikelihood):
            y = y.reshape(-1) if y.dim() == 2 and y.shape[-1] == 1 else y
            if y.shape != (n,) or not ((y == 0) | (y == 1)).all():
                raise InputDataError(
                    f"`{name}` must hold {n} labels in {{0, 1}} (shape ({n},) or ({n}, 1)), got "
                    f"shape {tuple(y.shape)}."
                )
            return y
        if y.shape != (n, C):
            raise InputDataError(
                f"`{name}` must have shape ({n}, {C}) (one column per latent function), got "
                f"{tuple(y.shape)}. Use `y.reshape(-1, 1)` for one output."
            )
        return y

    def _check_module_matches(self, X: Tensor) -> None:
        parameter = self.network.weight_mean
        if parameter.dtype != X.dtype or parameter.device != X.device:
            raise InputDataError(
                f"GPNet's parameters are {parameter.dtype} on {parameter.device} but the inputs "
                f"are {X.dtype} on {X.device}; move it with `gpnet.to(X)` before the first "
                "iteration."
            )

    # ------------------------------------------------------------------ one iteration
    def _optimizers(self) -> tuple[torch.optim.Optimizer, torch.optim.Optimizer | None]:
        if self._network_optimizer is None:
            trainable = [p for p in self.network.parameters() if p.requires_grad]
            self._network_optimizer = torch.optim.Adam(trainable, lr=self.lr)
            hyper = [p for p in self._hyperparameters()]
            if self.hyper_lr > 0 and hyper:
                self._hyper_optimizer = torch.optim.Adam(hyper, lr=self.hyper_lr)
        return self._network_optimizer, self._hyper_optimizer

    def _prior_covariance(self, X: Tensor) -> Tensor:
        with lazily_evaluate_kernels(False):
            return self.kernel(X).to_dense()

    def _hyperparameters(self) -> list[nn.Parameter]:
        params = list(self.kernel.parameters()) + list(self.likelihood.parameters())
        return [p for p in params if p.requires_grad]

    def expected_log_likelihood(self, y: Tensor, mean: Tensor, variance: Tensor) -> Tensor:
        r""":math:`\sum_i \mathbb E_{\mathcal N(f_i;\, \mu_i, \sigma^2_i)} \log p(y_i \mid f_i)`.

        Closed form for the Gaussian likelihood, Gauss–Hermite quadrature for Bernoulli, Monte Carlo
        (GPyTorch's ``num_likelihood_samples``) for softmax.

        Args:
            y: observations in the likelihood's layout (``(n, C)``, or ``(n,)`` labels).
            mean: latent means, shape ``(C, n)``.
            variance: latent variances, shape ``(C, n)``.

        Returns:
            A 0-d tensor.
        """
        marginal = MultivariateNormal(mean, DiagLinearOperator(variance))
        if isinstance(self.likelihood, SoftmaxLikelihood):
            dist = MultitaskMultivariateNormal.from_batch_mvn(marginal, task_dim=-1)
            return self.likelihood.expected_log_prob(y, dist).sum()
        if isinstance(self.likelihood, BernoulliLikelihood):
            single = MultivariateNormal(mean[0], DiagLinearOperator(variance[0]))
            return self.likelihood.expected_log_prob(y, single).sum()
        return self.likelihood.expected_log_prob(y.transpose(-1, -2), marginal).sum()

    def step(self, X_n: Tensor, y_n: Tensor, X_M: Tensor, num_data: int) -> StepResult:
        """One GPNet iteration on a minibatch and measurement points.

        Args:
            X_n: minibatch inputs ``(n, *point_shape)`` on the space.
            y_n: minibatch observations: ``(n, C)`` for a Gaussian likelihood, ``(n,)`` labels
                otherwise.
            X_M: measurement points ``(M, *point_shape)`` on the space.
            num_data: ``N``, the size of the whole data set (``>= n``).

        Returns:
            A :class:`StepResult`.
        """
        n = self._check_points("X_n", X_n)
        self._check_points("X_M", X_M)
        check_same_dtype_device(X_n=X_n, X_M=X_M)
        y_n = self._check_targets(y_n, n, "y_n")
        if isinstance(num_data, bool) or int(num_data) != num_data or num_data < n:
            raise ConfigurationError(
                f"`num_data` (N) must be an integer >= the batch size {n}, got {num_data!r}."
            )
        self._check_module_matches(X_n)
        network_optimizer, hyper_optimizer = self._optimizers()
        beta, jitter = self.beta, self.jitter(X_n.dtype)
        X = torch.cat([X_n, X_M])
        # q_gamma at gamma_t: its detached values are q_t. The closed-form loss depends on gamma
        # through the measurement points only, so the minibatch rows are evaluated without a graph
        # (float64, n = 500, M = 100, F = 1000 on one CPU thread: 121 ms of CPU time per
        # iteration against 168 ms when differentiating through all n + M rows, whose minibatch
        # part has zero gradient)
        if self.conjugate:
            with torch.no_grad():
                batch_mean, batch_root = self.network(X_n)
            mean, root = self.network(X_M)
            prev_mean = torch.cat([batch_mean, mean.detach()], -1)
            prev_root = torch.cat([batch_root, root.detach()], -2)
        else:
            mean, root = self.network(X)
            prev_mean, prev_root = mean.detach(), root.detach()
        with torch.no_grad():
            K = add_jitter(self._prior_covariance(X), jitter)
            prev_cov = add_jitter(prev_root @ prev_root.transpose(-1, -2), jitter)
            if self.conjugate:
                target_mean, target_cov = conjugate_target(
                    K, prev_mean, prev_cov, y_n.transpose(-1, -2), self.likelihood.noise, beta,
                    int(num_data),
                )  # fmt: skip
            else:
                target_mean, target_cov = tempered_prior(K, prev_mean, prev_cov, beta)
            target_chol = cholesky_with_jitter(target_cov, jitter)
        q_chol = cholesky_with_jitter(root @ root.transpose(-1, -2), jitter)
        loss = gaussian_kl(mean, q_chol, target_mean, target_chol).sum()
        if not self.conjugate:
            variance = root[..., :n, :].square().sum(-1) + jitter
            fit = self.expected_log_likelihood(y_n, mean[..., :n], variance)
            loss = loss - beta * num_data / n * fit
        parameters = [p for g in network_optimizer.param_groups for p in g["params"]]
        for p, grad in zip(parameters, torch.autograd.grad(loss, parameters), strict=True):
            p.grad = grad
        if self.anneal_lr:
            for group in network_optimizer.param_groups:
                group["lr"] = self.lr * beta / self.beta0
        network_optimizer.step()
        hyper_objective = None
        if hyper_optimizer is not None:
            hyper_objective = self._hyper_step(hyper_optimizer, X_n, y_n, prev_mean, prev_cov, n)
        self.iteration += 1
        return StepResult(self.iteration, beta, loss.detach(), hyper_objective)

    @torch.no_grad()
    def start_at_posterior(self, X: Tensor, Y: Tensor) -> None:
        r"""Set the network's weights to the exact posterior of its own prior given ``(X, Y)``.

        The untrained network is the GP with kernel :math:`\phi(x)^\top\phi(x')` (weights
        :math:`w_c \sim \mathcal N(0, I)`); with the Gaussian likelihood's noise :math:`s^2` its
        posterior is :math:`w_c \sim \mathcal N(m_c, S)`, :math:`S = (I + \Phi^\top\Phi/s^2)^{-1}`,
        :math:`m_c = S\Phi^\top y_c/s^2` (Bayesian linear regression, :math:`O(nF^2 + F^3)`).
        For harmonic features of the prior this *is* the GP posterior, the fixed point that the
        full-batch iterations at :math:`\beta = 1` converge to; starting there spares them the
        climb from the prior, which is slow when the noise is small (the KL to a target with
        variances near :math:`s^2` is ill-conditioned). Later iterations (more data than ``X``,
        trainable features) continue from it.

        Args:
            X: inputs ``(n, *point_shape)`` on the space (a subset of the data, e.g. the one the
                hyperparameters were fitted on).
            Y: observations ``(n, C)``.

        Raises:
            ConfigurationError: the likelihood is not Gaussian.
        """
        if not isinstance(self.likelihood, GaussianLikelihood):
            raise ConfigurationError(
                "start_at_posterior needs a GaussianLikelihood (the posterior of a Bayesian linear "
                f"model is closed-form only then), got {type(self.likelihood).__name__}."
            )
        n = self._check_points("X", X)
        Y = self._check_targets(Y, n, "Y")
        self._check_module_matches(X)
        network = self.network
        phi = network.features(X)  # (n, F)
        noise = self.likelihood.noise.detach().reshape(())
        eye = torch.eye(phi.shape[-1], dtype=phi.dtype, device=phi.device)
        precision_chol = cholesky_with_jitter(eye + phi.transpose(-1, -2) @ phi / noise, 0.0)
        covariance = torch.cholesky_inverse(precision_chol)
        mean = torch.cholesky_solve(phi.transpose(-1, -2) @ Y / noise, precision_chol)  # (F, C)
        network.set_posterior(mean.transpose(-1, -2), cholesky_with_jitter(covariance, 0.0))

    def hyper_objective(
        self, X_n: Tensor, y_n: Tensor, prev_mean: Tensor, prev_cov: Tensor
    ) -> Tensor:
        r"""The minibatch bound on the log marginal likelihood used for hyperparameters.

        :math:`\sum_i \mathbb E_q\log p(y_i|f_i) - \mathrm{KL}(q(f_n)\|p_\theta(f_n))`.

        Differentiable in the kernel's and likelihood's hyperparameters; ``q`` is given.

        Args:
            X_n: batch inputs ``(n, *point_shape)``.
            y_n: batch observations in the likelihood's layout.
            prev_mean: mean of ``q`` at the batch, shape ``(C, n)``.
            prev_cov: covariance of ``q`` at the batch (with jitter), shape ``(C, n, n)``.

        Returns:
            A 0-d tensor.
        """
        K = add_jitter(self._prior_covariance(X_n), self.jitter(X_n.dtype))
        chol_K = cholesky_with_jitter(K, 0.0)
        chol_q = cholesky_with_jitter(prev_cov, 0.0)
        kl = gaussian_kl(prev_mean, chol_q, torch.zeros_like(prev_mean), chol_K).sum()
        variance = prev_cov.diagonal(dim1=-2, dim2=-1)
        return self.expected_log_likelihood(y_n, prev_mean, variance) - kl

    def _hyper_step(self, optimizer, X_n, y_n, prev_mean, prev_cov, n) -> Tensor:
        objective = self.hyper_objective(
            X_n, y_n, prev_mean[..., :n], prev_cov[..., :n, :n].contiguous()
        )
        parameters = [p for g in optimizer.param_groups for p in g["params"]]
        grads = torch.autograd.grad(-objective, parameters, allow_unused=True)
        for p, grad in zip(parameters, grads, strict=True):
            p.grad = grad
        optimizer.step()
        return objective.detach()

    # ------------------------------------------------------------------ training loop
    def fit(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        num_iterations: int,
        batch_size: int = 256,
        num_measurement: int = 64,
        measurement: MeasurementDistribution | None = None,
        seed: int = 0,
        callback: Callable[[StepResult], None] | None = None,
    ) -> list[StepResult]:
        """Run ``num_iterations`` GPNet iterations on shuffled minibatches (epoch by epoch).

        The cost of an iteration does not depend on ``N``: nothing of size ``N x N`` (or ``N x F``)
        is ever built, so ``N`` is limited by the memory of ``train_X`` and ``train_Y`` only. On
        the CPU, the C allocator's freed memory is given back to the system every
        :data:`~manibo._memory.TRIM_EVERY` iterations (its heaps would otherwise grow by 0.3 to
        0.7 MB per iteration on a data set of 927 points).

        Args:
            train_X: inputs ``(N, *point_shape)`` on the space.
            train_Y: observations: ``(N, C)`` for a Gaussian likelihood, ``(N,)`` labels otherwise.
            num_iterations: number of iterations.
            batch_size: minibatch size ``n`` (capped at ``N``).
            num_measurement: measurement points ``M`` per iteration.
            measurement: the distribution :math:`c(x)` (default: half uniform on the space, half
                training inputs).
            seed: seeds the minibatches, the measurement points and (in a forked RNG that leaves the
                global state untouched) Monte Carlo likelihood expectations.
            callback: called with each :class:`StepResult`.

        Returns:
            The :class:`StepResult` of every iteration.
        """
        N = self._check_points("train_X", train_X)
        train_Y = self._check_targets(train_Y, N, "train_Y")
        for name, value in (("num_iterations", num_iterations), ("batch_size", batch_size)):
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ConfigurationError(f"`{name}` must be an integer >= 1, got {value!r}.")
        if self._network_optimizer is None:
            self.to(device=train_X.device, dtype=train_X.dtype)
        measurement = measurement or MeasurementDistribution(self.space, train_X, 0.5)
        generator = torch.Generator().manual_seed(int(seed))
        batches = _minibatches(N, min(int(batch_size), N), generator)
        results = []
        on_cpu = train_X.device.type == "cpu"
        with seeded_global_generators(int(seed), train_X.device):
            for iteration in range(1, int(num_iterations) + 1):
                rows = next(batches).to(train_X.device)
                X_M = measurement.sample(
                    num_measurement, generator, dtype=train_X.dtype, device=train_X.device
                )
                result = self.step(train_X[rows], train_Y[rows], X_M, N)
                results.append(result)
                if on_cpu and iteration % TRIM_EVERY == 0:  # else the heap grows: 7.3 GB
                    release_freed_memory()
                if callback is not None:
                    callback(result)
        return results

    @torch.no_grad()
    def predict(self, X: Tensor, chunk_size: int = 4096) -> tuple[Tensor, Tensor]:
        """Marginal means and variances of the latent functions, in chunks of points.

        Args:
            X: points ``(P, *point_shape)`` on the space.
            chunk_size: points per chunk (bounds memory at ``chunk_size x F`` per latent).

        Returns:
            ``(mean, variance)``, each of shape ``(C, P)``.
        """
        self._check_points("X", X)
        self._check_module_matches(X)
        parts = [self.network.marginals(chunk) for chunk in X.split(int(chunk_size))]
        return torch.cat([m for m, _ in parts], -1), torch.cat([v for _, v in parts], -1)


def _minibatches(num_data: int, batch_size: int, generator: torch.Generator) -> Iterator[Tensor]:
    """Row indices of shuffled minibatches, epoch after epoch (each epoch is a new permutation)."""
    while True:
        order = torch.randperm(num_data, generator=generator)
        for start in range(0, num_data - batch_size + 1, batch_size):
            yield order[start : start + batch_size]
