"""BoTorch acquisition functions by name, built on a surrogate and the data the loop holds."""

from __future__ import annotations

from collections.abc import Callable

import torch
from botorch.acquisition import (
    AcquisitionFunction,
    LogExpectedImprovement,
    PosteriorMean,
    UpperConfidenceBound,
    qKnowledgeGradient,
    qLogExpectedImprovement,
    qLogNoisyExpectedImprovement,
    qSimpleRegret,
    qUpperConfidenceBound,
)
from botorch.models.model import Model
from botorch.sampling import SobolQMCNormalSampler
from torch import Tensor

from manibo.exceptions import ConfigurationError

Builder = Callable[..., AcquisitionFunction]


def _sampler(seed: int, samples: int = 128) -> SobolQMCNormalSampler:
    return SobolQMCNormalSampler(torch.Size([samples]), seed=seed)


_BUILDERS: dict[str, Builder] = {
    "qlognei": lambda m, X, Y, P, s: qLogNoisyExpectedImprovement(
        m, X_baseline=X, X_pending=P, sampler=_sampler(s), prune_baseline=True, cache_root=False
    ),
    "qlogei": lambda m, X, Y, P, s: qLogExpectedImprovement(
        m, best_f=Y.max(), X_pending=P, sampler=_sampler(s)
    ),
    "qucb": lambda m, X, Y, P, s: qUpperConfidenceBound(
        m, beta=4.0, X_pending=P, sampler=_sampler(s)
    ),
    "qsr": lambda m, X, Y, P, s: qSimpleRegret(m, X_pending=P, sampler=_sampler(s)),
    "qkg": lambda m, X, Y, P, s: qKnowledgeGradient(m, num_fantasies=16, X_pending=P),
    "logei": lambda m, X, Y, P, s: LogExpectedImprovement(m, best_f=Y.max()),
    "ucb": lambda m, X, Y, P, s: UpperConfidenceBound(m, beta=4.0),
    "posterior-mean": lambda m, X, Y, P, s: PosteriorMean(m),
}
ANALYTIC = {"logei", "ucb", "posterior-mean"}
REQUIRED_FEATURES = {"qkg": ("fantasize",)}
"""Model features (keys of :data:`manibo.models.FEATURES`) an acquisition needs of its surrogate."""


def required_features(name: str) -> tuple[str, ...]:
    """The model features the acquisition ``name`` needs (see :data:`REQUIRED_FEATURES`)."""
    return REQUIRED_FEATURES.get(name, ())


def available_acquisitions() -> list[str]:
    """Names accepted by :func:`build_acquisition`."""
    return sorted(_BUILDERS)


def build_acquisition(
    name: str, model: Model, train_X: Tensor, train_Y: Tensor, X_pending: Tensor | None, seed: int
) -> AcquisitionFunction:
    """Build the acquisition ``name`` for maximising ``model``.

    ``train_Y`` is already oriented for maximisation.

    Args:
        name: one of :func:`available_acquisitions`.
        model: the fitted surrogate.
        train_X: observed points, flattened to ``(n, D)``.
        train_Y: observed values ``(n, 1)``, larger is better.
        X_pending: asked-but-not-told points ``(k, D)``, or None.
        seed: seed of the quasi-Monte Carlo sampler.
    """
    if name not in _BUILDERS:
        raise ConfigurationError(
            f"unknown acquisition {name!r}; choose one of {', '.join(available_acquisitions())}."
        )
    if name in ANALYTIC and X_pending is not None:
        raise ConfigurationError(
            f"the analytic acquisition {name!r} cannot account for pending points; "
            "use q = 1 and no parallel evaluations, or a Monte Carlo acquisition such as 'qlognei'."
        )
    return _BUILDERS[name](model, train_X, train_Y, X_pending, seed)
