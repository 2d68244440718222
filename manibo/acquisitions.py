"""Acquisition functions by name, built on a surrogate and the data the loop holds.

An acquisition is a builder ``builder(model, data) -> AcquisitionFunction`` registered with
:func:`register_acquisition`; ``data`` is an :class:`AcquisitionData` (the observations, the
pending points, a seeded sampler, points drawn on the space). The loop, ``manibo run
--acquisition`` and plug-ins declared in the ``manibo.plugins`` entry-point group all use the one
registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from botorch.acquisition import (
    AcquisitionFunction,
    LogExpectedImprovement,
    PosteriorMean,
    UpperConfidenceBound,
    qKnowledgeGradient,
    qLogExpectedImprovement,
    qLogNoisyExpectedImprovement,
    qMaxValueEntropy,
    qNegIntegratedPosteriorVariance,
    qSimpleRegret,
    qUpperConfidenceBound,
)
from botorch.models.model import Model
from botorch.sampling import SobolQMCNormalSampler
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.models.marginals import posterior_marginals
from manibo.models.registry import FEATURES
from manibo.registry import Entry, Registry
from manibo.spaces.base import Space

__all__ = [
    "AcquisitionData",
    "available_acquisitions",
    "build_acquisition",
    "check_acquisition",
    "chooses_one_at_a_time",
    "register_acquisition",
    "required_features",
    "screen_baseline",
]

MC_SAMPLES = 128
"""Quasi-Monte Carlo samples of :meth:`AcquisitionData.sampler` by default."""
UCB_BETA = 4.0
"""The exploration weight of ``"ucb"`` and ``"qucb"``."""
BASELINE_SIZE = 1000
"""The most evaluated points ``"qlognei"`` hands to BoTorch as its baseline (see
:func:`screen_baseline`)."""
BASELINE_SDS = 4.0
"""Posterior standard deviations of the screen of :func:`screen_baseline`."""
MES_CANDIDATES = 1000
"""Uniform points on the space that, with the evaluated ones that can be the best
(:func:`screen_baseline`, at most :data:`BASELINE_SIZE`), are where ``"qmes"`` draws the maximum
from (BoTorch's candidate set)."""
MAX_FAILED_PENDING = 32
"""Failed points a Monte Carlo acquisition receives among its pending points, at most: those with
the highest posterior mean (the ones it would otherwise be drawn back to); each pending point
enlarges every joint posterior it samples (200 failed points made a proposal 9 times slower)."""
NIPV_POINTS = 256
"""Uniform points on the space over which ``"qnipv"`` integrates the posterior variance."""


@dataclass(frozen=True)
class AcquisitionData:
    """What the loop holds when it builds an acquisition function.

    Attributes:
        train_X: observed points, flattened to ``(n, D)``.
        train_Y: observed values ``(n, 1)``, oriented so that larger is better.
        X_pending: points whose values the acquisition should count as known, ``(k, D)``, or
            None (always None for an analytic acquisition): the asked-but-not-told points, then
            the failed ones (whose values never arrive; at most :data:`MAX_FAILED_PENDING`).
        seed: seed of the quasi-Monte Carlo sampler of this proposal.
        space: the search space (for :meth:`points_on_space`), or None.
    """

    train_X: Tensor
    train_Y: Tensor
    X_pending: Tensor | None
    seed: int
    space: Space | None = None

    @property
    def best_f(self) -> Tensor:
        """The best observed value, a 0-d tensor."""
        return self.train_Y.max()

    def sampler(self, num_samples: int = MC_SAMPLES) -> SobolQMCNormalSampler:
        """A scrambled-Sobol normal sampler seeded with :attr:`seed`."""
        return SobolQMCNormalSampler(torch.Size([num_samples]), seed=self.seed)

    def points_on_space(self, n: int) -> Tensor:
        """``n`` points drawn uniformly on :attr:`space` with :attr:`seed`, flattened to ``(n, D)``
        on the dtype and device of :attr:`train_X` (candidate or integration points).

        Raises:
            ConfigurationError: the data carry no space.
        """
        if self.space is None:
            raise ConfigurationError(
                "this acquisition draws points on the search space, but `build_acquisition` was "
                "called without `space=`; pass the space."
            )
        X = self.train_X
        points = self.space.random(n, generator=self.seed, dtype=X.dtype, device=X.device)
        return points.reshape(n, -1)


AcquisitionBuilder = Callable[[Model, AcquisitionData], AcquisitionFunction]


@dataclass(frozen=True)
class AcquisitionEntry(Entry):
    """An acquisition builder, whether it is analytic (q = 1, no pending points), whether it
    chooses a batch one point at a time (each pending for the next), and the model features (keys
    of :data:`manibo.models.FEATURES`) it needs of its surrogate."""

    analytic: bool = False
    required_features: tuple[str, ...] = ()
    one_at_a_time: bool = False


ACQUISITIONS: Registry[AcquisitionEntry] = Registry(
    "acquisition",
    advice="register your own with @manibo.acquisitions.register_acquisition('name')",
)


def register_acquisition(
    name: str,
    analytic: bool = False,
    required_features: tuple[str, ...] = (),
    one_at_a_time: bool = False,
) -> Callable[[AcquisitionBuilder], AcquisitionBuilder]:
    """Decorator registering ``builder(model, data) -> AcquisitionFunction`` under ``name``.

    The acquisition is maximised: ``data.train_Y`` is already oriented so that larger is better.

    Args:
        name: the name the loop, the command line and :func:`build_acquisition` use.
        analytic: the acquisition scores one point at a time and cannot account for pending
            points (BoTorch's analytic acquisitions); the loop then refuses ``q > 1`` and never
            passes pending points.
        required_features: the model features (keys of :data:`manibo.models.FEATURES`) the
            acquisition needs, e.g. ``("fantasize",)`` for the knowledge gradient; the loop refuses
            a surrogate that declares one of them out of its reach before any evaluation.
        one_at_a_time: the acquisition scores one point per q-batch but takes pending points
            (BoTorch's max-value entropy search): the loop chooses ``q > 1`` points one at a
            time, each pending for the next (``optimize_acqf_on_space(..., sequential=True)``).

    Raises:
        ConfigurationError: ``name`` is taken by another builder, or a required feature is not
            a key of :data:`manibo.models.FEATURES`.
    """
    ACQUISITIONS.check_name(name)
    if isinstance(required_features, str):
        raise ConfigurationError(
            "`required_features` is a tuple of feature names, e.g. ('fantasize',), got the "
            f"string {required_features!r}."
        )

    unknown = sorted(set(required_features) - set(FEATURES))
    if unknown:
        raise ConfigurationError(
            f"unknown feature(s) {unknown} in `required_features` of the acquisition {name!r}; "
            f"the features are {', '.join(sorted(FEATURES))}."
        )

    def decorate(builder: AcquisitionBuilder) -> AcquisitionBuilder:
        ACQUISITIONS.check_builder(name, builder, "a builder `(model, data) -> acquisition`", 2)
        entry = AcquisitionEntry(
            builder, bool(analytic), tuple(required_features), bool(one_at_a_time)
        )
        ACQUISITIONS.register(name, entry)
        return builder

    return decorate


def available_acquisitions() -> list[str]:
    """Names accepted by :func:`build_acquisition` (plug-ins included), sorted."""
    return ACQUISITIONS.names()


def required_features(name: str) -> tuple[str, ...]:
    """The model features the acquisition ``name`` needs of its surrogate.

    Raises:
        ConfigurationError: ``name`` is unknown.
    """
    return ACQUISITIONS.get(name).required_features


def chooses_one_at_a_time(name: str) -> bool:
    """Whether the loop chooses a batch of the acquisition ``name`` one point at a time.

    Raises:
        ConfigurationError: ``name`` is unknown.
    """
    return ACQUISITIONS.get(name).one_at_a_time


def check_acquisition(name: str, q: int) -> None:
    """Raise a clear error unless ``name`` is registered and can propose ``q`` points at once.

    Raises:
        ConfigurationError: ``name`` is unknown, or analytic with ``q != 1``.
    """
    if ACQUISITIONS.get(name).analytic and q != 1:
        raise ConfigurationError(
            f"the analytic acquisition {name!r} needs q = 1, got q = {q}; use q = 1, or a Monte "
            "Carlo acquisition such as 'qlognei'."
        )


def build_acquisition(
    name: str,
    model: Model,
    train_X: Tensor,
    train_Y: Tensor,
    X_pending: Tensor | None,
    seed: int,
    space: Space | None = None,
) -> AcquisitionFunction:
    """Build the acquisition ``name`` for maximising ``model``.

    Args:
        name: one of :func:`available_acquisitions`.
        model: the fitted surrogate.
        train_X: observed points, flattened to ``(n, D)``.
        train_Y: observed values ``(n, 1)``, larger is better.
        X_pending: pending points ``(k, D)`` (asked-but-not-told, then failed), or None.
        seed: seed of the quasi-Monte Carlo sampler (and of the points drawn on the space).
        space: the search space, for acquisitions that draw points on it (``"qmes"``,
            ``"qnipv"``).

    Raises:
        ConfigurationError: ``name`` is unknown, or analytic while points are pending, or its
            builder returned something other than an ``AcquisitionFunction``.
    """
    entry = ACQUISITIONS.get(name)
    if entry.analytic and X_pending is not None:
        raise ConfigurationError(
            f"the analytic acquisition {name!r} cannot account for pending points, and "
            f"{X_pending.shape[0]} point(s) are asked and not yet told; tell them before asking "
            "again (and use q = 1 and no parallel evaluations), or use a Monte Carlo acquisition "
            "such as 'qlognei', which accounts for them."
        )
    acquisition = entry.build(model, AcquisitionData(train_X, train_Y, X_pending, int(seed), space))
    if not isinstance(acquisition, AcquisitionFunction):
        builder = getattr(entry.build, "__qualname__", repr(entry.build))
        raise ConfigurationError(
            f"the builder of the acquisition {name!r} ({builder}) returned "
            f"{type(acquisition).__name__}, not a BoTorch AcquisitionFunction; make it return "
            "one, e.g. qUpperConfidenceBound(model, beta=..., X_pending=data.X_pending)."
        )
    return acquisition


def screen_baseline(
    model: Model, X: Tensor, max_points: int = BASELINE_SIZE, sds: float = BASELINE_SDS
) -> Tensor:
    r"""The evaluated points that can be the best one under the posterior, at most ``max_points``.

    Noisy expected improvement compares candidates with the best value of the evaluated points
    in each posterior draw, and BoTorch first prunes the points that are never the best in 2048
    joint draws; both take the joint posterior of every point, an ``n x n`` covariance and its
    Cholesky factor (``O(n^3)``; at 4000 points of a VISH surrogate 16 s of a 50 s proposal, at
    20,000 points 3.2 GB). With more than ``max_points`` points, a point whose upper bound
    :math:`\mu_i + c\sigma_i` falls short of the largest lower bound :math:`\mu_j - c\sigma_j`
    (``c = sds``) is left out: it beats that point ``j`` in a draw with probability at most
    :math:`2\Phi(-c)` (6.3e-5 at ``c = 4``, against the 1/2048 a point needs to survive
    BoTorch's pruning once). If more than ``max_points`` remain, those with the highest upper
    bounds are kept. The marginals come ``1000`` points at a time
    (:func:`~manibo.models.marginals.posterior_marginals`).

    Args:
        model: a one-output model oriented so that larger is better.
        X: the evaluated points, ``(n, D)``.
        max_points: ``n`` up to which every point is kept.
        sds: the width ``c`` of the bounds, in posterior standard deviations.

    Returns:
        The kept rows of ``X``, in their order, ``(k, D)`` with ``k <= max(n, max_points)``.
    """
    if X.shape[0] <= max_points:
        return X
    mean, variance = posterior_marginals(model, X)
    spread = sds * variance.clamp_min(0).sqrt()
    upper = mean + spread
    keep = upper >= (mean - spread).max()
    if int(keep.sum()) > max_points:
        keep = torch.zeros_like(keep)
        keep[upper.topk(max_points).indices] = True
    return X[keep]


# ---------------------------------------------------------------------------------- built-ins
@register_acquisition("qlognei")
def _q_log_noisy_expected_improvement(model: Model, data: AcquisitionData) -> AcquisitionFunction:
    return qLogNoisyExpectedImprovement(
        model,
        X_baseline=screen_baseline(model, data.train_X),
        X_pending=data.X_pending,
        sampler=data.sampler(),
        prune_baseline=True,
        cache_root=False,
    )


@register_acquisition("qlogei")
def _q_log_expected_improvement(model: Model, data: AcquisitionData) -> AcquisitionFunction:
    return qLogExpectedImprovement(
        model, best_f=data.best_f, X_pending=data.X_pending, sampler=data.sampler()
    )


@register_acquisition("qucb")
def _q_upper_confidence_bound(model: Model, data: AcquisitionData) -> AcquisitionFunction:
    return qUpperConfidenceBound(
        model, beta=UCB_BETA, X_pending=data.X_pending, sampler=data.sampler()
    )


@register_acquisition("qsr")
def _q_simple_regret(model: Model, data: AcquisitionData) -> AcquisitionFunction:
    return qSimpleRegret(model, X_pending=data.X_pending, sampler=data.sampler())


@register_acquisition("qkg", required_features=("fantasize",))
def _q_knowledge_gradient(model: Model, data: AcquisitionData) -> AcquisitionFunction:
    return qKnowledgeGradient(model, num_fantasies=16, X_pending=data.X_pending)


@register_acquisition("qmes", required_features=("fantasize",), one_at_a_time=True)
def _q_max_value_entropy(model: Model, data: AcquisitionData) -> AcquisitionFunction:
    # the evaluated points as the loop holds them: a model's train_inputs may be transformed
    # (an input transform) or missing (network surrogates); those that can hold the maximum
    # only (screen_baseline), since the maximum is drawn from one joint posterior of the whole
    # set (VISH refused 1000 + 9,500 points, past its 4 GiB)
    return qMaxValueEntropy(
        model,
        candidate_set=data.points_on_space(MES_CANDIDATES),
        X_pending=data.X_pending,
        train_inputs=screen_baseline(model, data.train_X),
    )


@register_acquisition("qnipv", required_features=("fantasize",))
def _q_negative_integrated_posterior_variance(
    model: Model, data: AcquisitionData
) -> AcquisitionFunction:
    return qNegIntegratedPosteriorVariance(
        model, mc_points=data.points_on_space(NIPV_POINTS), X_pending=data.X_pending
    )


@register_acquisition("logei", analytic=True)
def _log_expected_improvement(model: Model, data: AcquisitionData) -> AcquisitionFunction:
    return LogExpectedImprovement(model, best_f=data.best_f)


@register_acquisition("ucb", analytic=True)
def _upper_confidence_bound(model: Model, data: AcquisitionData) -> AcquisitionFunction:
    return UpperConfidenceBound(model, beta=UCB_BETA)


@register_acquisition("posterior-mean", analytic=True)
def _posterior_mean(model: Model, data: AcquisitionData) -> AcquisitionFunction:
    return PosteriorMean(model)
