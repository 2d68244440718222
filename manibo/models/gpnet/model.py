"""GPNet as a BoTorch model (joint Gaussian posterior over q points); the ``"gpnet"`` surrogate."""

from __future__ import annotations

import math

import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.models.model import Model
from botorch.models.transforms.outcome import OutcomeTransform, Standardize
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import Kernel, RBFKernel
from gpytorch.likelihoods import GaussianLikelihood
from torch import Tensor

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels.spectral import GeometricMaternKernel
from manibo.models.exact_gp import (
    SURROGATE_TRUNCATION_TOL,
    lengthscale_prior,
    validate_training_data,
)
from manibo.models.gpnet.features import (
    HarmonicFeatures,
    MLPFeatures,
    RandomFourierFeatures,
    RandomPhaseFeatures,
    levels_within,
)
from manibo.models.gpnet.measurement import MeasurementDistribution, lengthscale_noise
from manibo.models.gpnet.mirror_descent import add_jitter
from manibo.models.gpnet.networks import BayesianLinearNetwork
from manibo.models.gpnet.pretrain import pretrain_hyperparameters
from manibo.models.gpnet.trainer import GPNet
from manibo.models.registry import register_surrogate
from manibo.spaces.base import CompactSpace, Space
from manibo.spaces.box import Box


class GPNetModel(Model):
    r"""A trained single-output GPNet (Gaussian likelihood) as a BoTorch model.

    The posterior at ``q`` points is the network's joint Gaussian :math:`\mathcal N(\Phi m, \Phi
    LL^\top\Phi^\top + \epsilon I)`, differentiable in the points, so every BoTorch acquisition
    (analytic or Monte Carlo, ``qLogNEI`` included) works on it. Fantasy models
    (``condition_on_observations``, hence knowledge gradient) are not supported.

    Args:
        gpnet: a trained :class:`~manibo.models.gpnet.GPNet` with a Gaussian likelihood and one
            latent function.
        outcome_transform: the transform its training targets went through (fitted, e.g.
            ``Standardize``), undone on every posterior; None if the targets were raw.
    """

    _num_outputs = 1

    def __init__(self, gpnet: GPNet, outcome_transform: OutcomeTransform | None = None) -> None:
        super().__init__()
        if not isinstance(gpnet.likelihood, GaussianLikelihood) or gpnet.network.num_latents != 1:
            raise ConfigurationError(
                "GPNetModel needs a GPNet with a Gaussian likelihood and one latent function, got "
                f"{type(gpnet.likelihood).__name__} with {gpnet.network.num_latents} latents."
            )
        self.gpnet = gpnet
        self.likelihood = gpnet.likelihood  # BoTorch's fantasize() inspects model.likelihood
        if outcome_transform is not None:
            self.outcome_transform = outcome_transform
        self.eval()

    @property
    def num_outputs(self) -> int:
        """One output."""
        return self._num_outputs

    @property
    def batch_shape(self) -> torch.Size:
        """The model is not batched: ``torch.Size([])``."""
        return torch.Size([])

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs,
    ) -> GPyTorchPosterior:
        """Joint Gaussian posterior at ``X``.

        Args:
            X: points ``(*batch, q, *point_shape)`` on the space.
            output_indices: None or ``[0]``.
            observation_noise: add the likelihood's noise (True) or the given noise variances
                (a tensor ``(*batch, q, 1)``, in the units of the training targets after the outcome
                transform) to the covariance.
            posterior_transform: applied last.

        Returns:
            A ``GPyTorchPosterior`` with mean of shape ``(*batch, q, 1)``.
        """
        if output_indices not in (None, [0]):
            raise InputDataError(f"`output_indices` must be None or [0], got {output_indices!r}.")
        self.eval()
        X = self.transform_inputs(X)
        space = self.gpnet.space
        space.check(X, "X")
        if X.dim() < 1 + len(space.point_shape):
            raise InputDataError(
                f"`X` must have shape (*batch, q, {', '.join(map(str, space.point_shape))}), got "
                f"{tuple(X.shape)}."
            )
        mean, root = self.gpnet.network(X)
        mean, root = mean[..., 0, :], root[..., 0, :, :]
        cov = add_jitter(root @ root.transpose(-1, -2), self.gpnet.jitter(X.dtype))
        if isinstance(observation_noise, Tensor):
            cov = cov + torch.diag_embed(observation_noise[..., 0].expand_as(mean))
        elif observation_noise:
            noise = self.likelihood.noise.detach().reshape(()).expand_as(mean)
            cov = cov + torch.diag_embed(noise)
        posterior = GPyTorchPosterior(MultivariateNormal(mean, cov))
        if hasattr(self, "outcome_transform"):
            posterior = self.outcome_transform.untransform_posterior(posterior, X=X)
        if posterior_transform is not None:
            posterior = posterior_transform(posterior)
        return posterior


def default_kernel(space: Space, nu: float = 2.5, max_features: int | None = None) -> Kernel:
    """The prior kernel the ``"gpnet"`` surrogate uses by default.

    On compact spaces, the geometric Matérn-``nu`` kernel; with ``max_features`` it is truncated to
    the whole levels whose eigenfunctions number at most ``max_features`` (renormalised to average
    variance 1), so that a harmonic network with that budget represents the prior, and hence every
    posterior, exactly. On a :class:`~manibo.spaces.Box`, RBF with one lengthscale per coordinate.
    """
    if isinstance(space, CompactSpace):
        num_levels = None
        if max_features is not None:
            available = space.num_levels_available or int(max_features)
            _, multiplicities = space.levels(min(int(max_features), available))
            num_levels = levels_within(multiplicities.tolist(), int(max_features))
        return GeometricMaternKernel(
            space,
            nu=nu,
            num_levels=num_levels,
            truncation_tol=SURROGATE_TRUNCATION_TOL,
            lengthscale_prior=lengthscale_prior(),
        )
    if isinstance(space, Box):
        return RBFKernel(ard_num_dims=space.dim)
    raise ConfigurationError(
        f"no default GPNet prior for {space!r}: use a compact space or a Box, or build a GPNet "
        "with your own kernel."
    )


def build_network(
    kind: str,
    space: Space,
    prior: Kernel,
    max_features: int = 256,
    num_phases: int = 32,
    widths: tuple[int, ...] = (64, 64),
    seed: int = 0,
) -> BayesianLinearNetwork:
    """An inference network of the given kind for a prior kernel.

    Args:
        kind: ``"harmonic"`` (eigenfunction features of the prior), ``"random-phase"``,
            ``"rff"`` (random Fourier features, RBF/Matérn priors on a Box; ``max_features / 2``
            frequencies), ``"mlp"`` (tanh network with a Bayesian last layer), or ``"auto"``
            (harmonic on compact spaces with explicit eigenfunctions, rff on a Box).
        space: the input space.
        prior: the prior kernel (usually a ``ScaleKernel``).
        max_features: feature budget of harmonic and rff networks.
        num_phases: phases per level of random-phase features.
        widths: hidden widths of the mlp network.
        seed: seed of random features and initial weights.
    """
    generator = torch.Generator().manual_seed(int(seed))
    if kind == "auto":
        kind = "rff" if isinstance(space, Box) else "harmonic"
    if kind == "harmonic":
        features = HarmonicFeatures(prior, max_features=max_features)
    elif kind == "random-phase":
        features = RandomPhaseFeatures(prior, num_phases, generator=generator)
    elif kind == "rff":
        features = RandomFourierFeatures.from_kernel(prior, max(1, max_features // 2), generator)
    elif kind == "mlp":
        variance = float(getattr(prior, "outputscale", torch.tensor(1.0)).detach())
        dtype = next(prior.parameters()).dtype
        features = MLPFeatures(space, widths, variance, generator=generator, dtype=dtype)
    else:
        raise ConfigurationError(
            f"unknown network {kind!r}; choose 'auto', 'harmonic', 'random-phase', 'rff' or 'mlp'."
        )
    return BayesianLinearNetwork(features)


def _measurement_noise(prior: Kernel, space: Space) -> Tensor:
    base = getattr(prior, "base_kernel", prior)
    if getattr(base, "lengthscale", None) is None:
        return torch.zeros(1, dtype=torch.float64)
    noise = lengthscale_noise(base.lengthscale)
    return noise if noise.numel() in (1, math.prod(space.point_shape)) else noise[:1]


@register_surrogate("gpnet")
def gpnet_surrogate(
    space: Space,
    train_X: Tensor,
    train_Y: Tensor,
    network: str = "auto",
    nu: float = 2.5,
    num_iterations: int = 150,
    batch_size: int = 256,
    num_measurement: int = 32,
    lr: float = 0.1,
    beta0: float = 1.0,
    xi: float | None = None,
    uniform_fraction: float = 0.5,
    max_features: int = 128,
    num_phases: int = 32,
    pretrain_points: int = 1000,
    start_at_posterior: bool = True,
    seed: int = 0,
) -> GPNetModel:
    """GPNet surrogate: hyperparameters by exact marginal likelihood, then GPNet iterations.

    Outcomes are standardised. The prior (:func:`default_kernel`, truncated to ``max_features``
    eigenfunctions on compact spaces when the network is harmonic), its constant mean and the noise
    are fitted by exact marginal likelihood on at most ``pretrain_points`` points and then fixed
    (the official pretrained setting; the mean is subtracted from the targets and added back to the
    predictions). The network (:func:`build_network`) starts at the exact posterior of its prior
    on those points (``start_at_posterior``; at the prior otherwise) and is trained by
    ``num_iterations`` GPNet iterations on minibatches of ``batch_size`` with ``num_measurement``
    measurement points from ``c(x)`` (``uniform_fraction`` uniform on the space, the rest training
    inputs with tangent noise of standard deviation lengthscale/sqrt(2)).

    Cost: per iteration a forward and backward pass of the network at ``n + M`` points
    (``O((n + M) F^2)``) and Cholesky factors of ``(n + M)``-square matrices; nothing grows with
    ``N`` beyond ``batch_size``. With at most ``batch_size`` points every iteration sees all the
    data, and the default ``xi`` is then 0 (constant ``beta = 1``): each iteration's target is the
    exact posterior at the measurement points, the fastest route for BO-sized data. With more data
    ``xi`` defaults to 0.1, the official toy setting.

    Args:
        space: the input space.
        train_X: inputs ``(N, *point_shape)``.
        train_Y: outcomes ``(N, 1)``.
        network: kind of network (see :func:`build_network`).
        nu: smoothness of the Matérn prior on compact spaces.
        num_iterations: GPNet iterations.
        batch_size: minibatch size.
        num_measurement: measurement points per iteration.
        lr: Adam learning rate of the network.
        beta0: initial mirror-descent step size.
        xi: its decay (default: 0 for full-batch data, else 0.1).
        uniform_fraction: share of uniform measurement points.
        max_features: feature budget (harmonic, rff).
        num_phases: phases per level (random-phase).
        pretrain_points: subset size for the hyperparameters.
        start_at_posterior: start the network at the exact posterior of its prior on the
            pretraining subset (:meth:`~manibo.models.gpnet.GPNet.start_at_posterior`) instead of
            at the prior.
        seed: seed of everything random.
    """
    validate_training_data(space, train_X, train_Y)
    standardize = Standardize(m=1)
    standardize.train()
    Y, _ = standardize(train_Y)
    standardize.eval()
    harmonic = network == "harmonic" or (network == "auto" and isinstance(space, CompactSpace))
    kernel = default_kernel(space, nu, max_features if harmonic else None).to(train_X)
    prior, likelihood, mean, rows = pretrain_hyperparameters(
        space, kernel, train_X, Y, pretrain_points, seed
    )
    Y = Y - mean  # GPNet's prior has mean zero: the fitted constant goes into the transform
    standardize.means = standardize.means + standardize.stdvs * mean
    net = build_network(network, space, prior, max_features, num_phases, seed=seed)
    if xi is None:
        xi = 0.0 if train_X.shape[0] <= batch_size else 0.1
    gpnet = GPNet(space, net, prior, likelihood, beta0=beta0, xi=xi, lr=lr).to(train_X)
    if start_at_posterior:
        gpnet.start_at_posterior(train_X[rows], Y[rows])
    measurement = MeasurementDistribution(
        space, train_X, uniform_fraction, _measurement_noise(prior, space)
    )
    gpnet.fit(train_X, Y, num_iterations, batch_size, num_measurement, measurement, seed=seed)
    for p in gpnet.parameters():
        p.requires_grad_(False)
    return GPNetModel(gpnet, standardize).to(train_X)
