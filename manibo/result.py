"""``OptimizationResult``: what a run found, what the model recommends, and how the run went.

:func:`manibo.minimize`, :func:`manibo.maximize` and ``BayesianOptimizer.run`` return one;
``BayesianOptimizer.result()`` makes one at any time. The fitted model, and with it the
recommended point, is built on first access, so a caller that only wants the best point pays for
no extra fit.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import torch
from botorch.models.model import Model
from torch import Tensor

from manibo._proposal_warnings import ProposalWarnings
from manibo._random import seeded_global_generators
from manibo.exceptions import ConfigurationError
from manibo.journal import Evaluation
from manibo.models import build_surrogate
from manibo.models.marginals import posterior_marginals
from manibo.spaces.base import Space

STOP_REASONS = {
    "budget": "the budget of evaluations was reached",
    "max_seconds": "the wall-time budget (max_seconds) was crossed",
    "callback": "the callback asked to stop",
}
"""Why a run ends, as recorded in :attr:`OptimizationResult.stop_reason` and the journal."""


@dataclass(frozen=True, eq=False, repr=False)
class OptimizationResult:
    """The outcome of an optimisation run.

    Unpacking gives the best observed point and value, so ``x, y = manibo.minimize(...)`` works
    as it did when ``minimize`` returned a tuple (it raises ``ConfigurationError`` when no
    evaluation succeeded).

    Attributes:
        best_x: the best successful evaluation's point, shape ``point_shape``; None when no
            evaluation succeeded.
        best_y: its observed value; None when no evaluation succeeded. With noisy observations it
            is biased towards lucky draws: prefer :attr:`recommended_x`.
        best_index: its position among the evaluations (0-based), or None.
        X: every evaluated point, ``(n, *point_shape)``, float64, failed ones included.
        Y: the observed values ``(n,)``, NaN where the evaluation failed.
        failed: ``(n,)`` booleans, True where the evaluation failed.
        evaluation_seconds: ``(n,)`` wall time of each evaluation, NaN where unknown (failed
            evaluations told by hand, say).
        proposal_seconds: ``(n,)`` wall time of the ``ask`` that proposed each point, shared
            equally among the points it proposed (near 0 for the initial design); NaN where
            unknown (points told without ``ask``, journals of format 2).
        elapsed: ``(n,)`` seconds from the start of the run to the moment each evaluation was
            told, not counting time between a stop and a resume; NaN where unknown.
        minimize: whether the objective was minimised.
        space: the search space.
        config: the optimiser's settings (surrogate, acquisition, seed, ...).
        journal: the journal's path, or None.
        stop_reason: why the last run ended: ``"budget"``, ``"max_seconds"`` or ``"callback"``
            (see :data:`STOP_REASONS`); None when no run has ended since the last evaluation
            (ask/tell).

    Every tensor lies on the optimiser's device.
    """

    best_x: Tensor | None
    best_y: float | None
    best_index: int | None
    X: Tensor
    Y: Tensor
    failed: Tensor
    evaluation_seconds: Tensor
    proposal_seconds: Tensor
    elapsed: Tensor
    minimize: bool
    space: Space
    config: dict[str, Any]
    journal: Path | None
    stop_reason: str | None
    _fit: Callable[[], Model | None] = field(default=lambda: None, repr=False)
    _to_objective: tuple[float, float] = field(default=(1.0, 0.0), repr=False)

    def __repr__(self) -> str:
        best = "none" if self.best_x is None else f"{self.best_y!r} at {_point_text(self.best_x)}"
        return (
            f"OptimizationResult(best {best}; {self.num_evaluations} evaluations, "
            f"{self.num_failed} failed; stopped: {self.stop_reason}; {self.space!r})"
        )

    def __iter__(self) -> Iterator[Tensor | float]:
        if self.best_x is None:
            raise ConfigurationError(
                f"no successful evaluation among the {self.num_evaluations}: there is no best "
                "point to unpack. See `result.failed` and the journal for what went wrong."
            )
        return iter((self.best_x, self.best_y))

    @property
    def num_evaluations(self) -> int:
        """The number of evaluations, failed ones included."""
        return int(self.X.shape[0])

    @property
    def num_failed(self) -> int:
        """The number of failed evaluations."""
        return int(self.failed.sum())

    @cached_property
    def model(self) -> Model | None:
        """The surrogate fitted on every successful evaluation (built on first access, seeded),
        a BoTorch model of the objective oriented for maximisation (of ``-f`` when minimising);
        None with fewer than two successes.

        It models the objective oriented for maximisation and rescaled: its posterior mean at
        ``x`` equals the objective's times ``-1`` when minimising; when the observed values span
        less than ``2**-16`` it is their excess over the smallest of them times the power of two
        that brings their range near 1, and when they lie beyond ``2**±100`` they are times the
        power of two that brings them near 1. The surrogate standardises those outcomes in turn
        (BoTorch's ``Standardize``), so its hyperparameters, ``likelihood.noise`` among them, are
        in standardised units. :attr:`recommended_value` and :attr:`noise_std` are in the
        objective's units.
        """
        return self._fit()

    @cached_property
    def _recommendation(self) -> tuple[Tensor | None, float | None]:
        model = self.model
        if model is None:
            return None, None
        ok = ~self.failed
        points = self.X[ok]
        mean = posterior_marginals(model, points.reshape(points.shape[0], -1))[0]
        best = int(torch.argmax(mean))
        factor, offset = self._to_objective
        return points[best], factor * float(mean[best]) + offset

    @property
    def recommended_x(self) -> Tensor | None:
        """The evaluated point with the best posterior mean of :attr:`model`, ``point_shape``.

        On a noisy objective it is a better estimate of the optimum than :attr:`best_x`, which
        favours points whose noise happened to be favourable. It is chosen among the evaluated
        points rather than over the whole space: the objective is known to run there, and the
        model is most certain there. None with fewer than two successful evaluations.
        """
        return self._recommendation[0]

    @property
    def recommended_value(self) -> float | None:
        """The posterior mean of the objective at :attr:`recommended_x` (None likewise)."""
        return self._recommendation[1]

    @cached_property
    def noise_std(self) -> float | None:
        """The standard deviation of the observation noise that :attr:`model` fitted, in the
        objective's units; None with fewer than two successful evaluations, or when they all have
        one value (the noise then has no scale but the prior's). With a known ``noise_std``
        setting, the noise the model takes: that value, or more where it lies below GPyTorch's
        floor for known noise (1e-6 of the outcomes' variance), which raises it.

        Compare it with what you know of the measurement: a fit far below the noise you expect
        (0.07 where the truth is 0.6, as 20 evaluations of a function of range 2 often give)
        means that the model went through the noisy values, so :attr:`recommended_x` is then
        :attr:`best_x` and :attr:`recommended_value` is too optimistic; measuring points several
        times (tell each measurement at the same point) lets it tell noise from function.
        """
        known = self.config.get("noise_std")
        model = self.model
        values = self.Y[~self.failed]
        if model is None or bool(values.max() == values.min()):  # no spread to measure it by
            return None if known is None else float(known)
        measured = self._model_noise_std(model)
        if known is not None and abs(measured - known) <= 1e-6 * known:
            return float(known)  # taken as given (not its rounding through two variances)
        return measured

    def _model_noise_std(self, model) -> float:
        """The noise standard deviation of ``model`` in the objective's units: the gap between
        its noisy and its latent predictive variance at an evaluated point."""
        x = self.X[~self.failed][:1].reshape(1, -1)
        with torch.no_grad():
            noisy = model.posterior(x, observation_noise=True).variance.reshape(-1)[0]
            latent = model.posterior(x).variance.reshape(-1)[0]
        factor, _ = self._to_objective
        return abs(factor) * math.sqrt(max(float(noisy - latent), 0.0))

    def summary(self) -> str:
        """A few lines for people: best value (with its evaluation counted from 1, as the progress
        bar and the convergence figure count: evaluation ``best_index + 1`` of the run's, and
        ``best_index`` beside it, as the journal counts) and point, recommended point,
        evaluations, failures, time, why the run stopped, where the journal is."""
        verb = "minimised" if self.minimize else "maximised"
        lines = [
            f"{verb} on {self.space!r} with surrogate {self.config.get('surrogate')!r} and "
            f"acquisition {self.config.get('acquisition')!r} (seed {self.config.get('seed')})"
        ]
        if self.best_x is None:
            lines.append("best observed value: none (no evaluation succeeded)")
        else:
            lines.append(
                f"best observed value: {self.best_y!r} "
                f"(evaluation {self.best_index + 1} of {self.num_evaluations}; index "
                f"{self.best_index} counted from 0, as the journal and best_index count)"
            )
            lines.append(f"best point: {_point_text(self.best_x)}")
        if self.recommended_x is not None:
            lines.append(
                f"recommended point (best posterior mean among the evaluated points): "
                f"{_point_text(self.recommended_x)}, posterior mean {self.recommended_value:.6g}"
            )
            known = self.config.get("noise_std")
            if known is not None:
                line = f"known noise: standard deviation {known:.3g} (given)"
                if self.noise_std is not None and self.noise_std > 1.01 * known:
                    line += (
                        f"; the model takes {self.noise_std:.3g}, GPyTorch's floor for known "
                        "noise (1e-6 of the outcomes' variance)"
                    )
                lines.append(line)
            elif self.noise_std is not None:
                lines.append(f"fitted noise: standard deviation {self.noise_std:.3g}")
        lines.append(f"evaluations: {self.num_evaluations}, failed: {self.num_failed}")
        lines.append(_time_text(self))
        if self.stop_reason is not None:
            lines.append(f"stopped: {STOP_REASONS.get(self.stop_reason, self.stop_reason)}")
        if self.journal is not None:
            lines.append(f"journal: {self.journal}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """The result as JSON values: points as nested lists (every evaluated one in
        ``"points"``, in the order of ``"observed"``), None for failures and unknowns; the fitted
        model is represented by the recommended point, its posterior mean and the fitted noise
        (``"noise_std"``); ``best_index``
        counts from 0, like :attr:`best_index` (``summary()`` counts from 1)."""
        return {
            "minimize": self.minimize,
            "space": repr(self.space),
            "evaluations": self.num_evaluations,
            "failed": self.num_failed,
            "best_x": None if self.best_x is None else self.best_x.tolist(),
            "best_y": self.best_y,
            "best_index": self.best_index,
            "recommended_x": None if self.recommended_x is None else self.recommended_x.tolist(),
            "recommended_value": self.recommended_value,
            "noise_std": self.noise_std,
            "points": self.X.tolist(),  # in the order of "observed"
            "observed": _with_none(self.Y),
            "evaluation_seconds": _with_none(self.evaluation_seconds),
            "proposal_seconds": _with_none(self.proposal_seconds),
            "elapsed": _with_none(self.elapsed),
            "stop_reason": self.stop_reason,
            "journal": None if self.journal is None else str(self.journal),
        }

    def plot(self, path: str | Path | None = None, show: bool = False):
        """The convergence figure (:func:`manibo.plotting.plot_convergence`), saved to the file
        ``path`` when given (``~`` is the home folder; missing folders are created) and opened
        in a window when ``show`` is True (``plot(show=True)``, not ``plot().show()``); returns
        the ``matplotlib.figure.Figure``."""
        from manibo.plotting.convergence import plot_convergence

        return plot_convergence(self, path, show)


def result_from_history(
    history: list[Evaluation],
    space: Space,
    config: dict[str, Any],
    device: torch.device,
    journal: Path | None,
    stop_reason: str | None,
    fit: Callable[[], Model | None],
    to_objective: tuple[float, float],
) -> OptimizationResult:
    """Assemble an :class:`OptimizationResult` from the evaluations of a run.

    Args:
        history: the evaluations, in order.
        space: the search space.
        config: the optimiser's settings (``minimize`` among them).
        device: where the tensors go.
        journal: the journal's path, or None.
        stop_reason: why the last run ended, or None.
        fit: builds the surrogate on every successful evaluation (None with fewer than two).
        to_objective: ``(factor, offset)``: the objective's value is ``factor * outcome +
            offset`` for the model's outcome.
    """
    shape = space.point_shape
    n = len(history)
    X = torch.tensor([e.x for e in history], dtype=torch.float64, device=device).reshape(n, *shape)
    failed = torch.tensor([e.status != "ok" for e in history], dtype=torch.bool, device=device)

    def column(values: list[float | None]) -> Tensor:
        return torch.tensor(
            [math.nan if v is None else v for v in values], dtype=torch.float64, device=device
        )

    Y = column([e.y for e in history])
    best_x = best_y = best = None
    if not failed.all():
        oriented = torch.nan_to_num(-Y if config["minimize"] else Y, nan=-math.inf)
        best = int(oriented.argmax())
        best_x, best_y = X[best], float(Y[best])
    return OptimizationResult(
        best_x=best_x,
        best_y=best_y,
        best_index=best,
        X=X,
        Y=Y,
        failed=failed,
        evaluation_seconds=column([e.seconds for e in history]),
        proposal_seconds=column([e.proposal_seconds for e in history]),
        elapsed=column([e.elapsed for e in history]),
        minimize=bool(config["minimize"]),
        space=space,
        config=dict(config),
        journal=journal,
        stop_reason=stop_reason,
        _fit=fit,
        _to_objective=to_objective,
    )


def fit_surrogate_seeded(
    space: Space,
    name: str,
    options: dict[str, Any],
    train_X: Tensor,
    train_Y: Tensor,
    seed: int,
    previous_model: Model | None = None,
) -> Model | None:
    """The surrogate ``name`` fitted on ``train_X`` ``(n, D)``, ``train_Y`` ``(n, 1)``, with the
    global random state seeded by ``seed`` (and restored after); None when ``n < 2``.

    BoTorch's and GPyTorch's warnings are gathered and issued as one summary.
    """
    if train_X.shape[0] < 2:
        return None
    gathered = ProposalWarnings()
    with (
        seeded_global_generators(seed, train_X.device),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        model = build_surrogate(
            name, space, train_X, train_Y, previous_model=previous_model, **options
        )
    gathered.add(caught)
    gathered.report(
        stacklevel=4, activity=f"fitting the surrogate on {train_X.shape[0]} evaluations"
    )
    return model


def _with_none(values: Tensor) -> list[float | None]:
    return [None if math.isnan(v) else v for v in values.tolist()]


def _point_text(x: Tensor) -> str:
    return "[" + ", ".join(f"{v:.6g}" for v in x.reshape(-1).tolist()) + "]"


def _time_text(result: OptimizationResult) -> str:
    """The run's wall time and the summed evaluation and proposal times, each only as far as it
    was measured (an ask/tell run times no evaluation unless ``tell`` is given ``seconds``); it
    says when evaluations ran at the same time, so that their sum exceeds the wall time."""
    elapsed = result.elapsed[~torch.isnan(result.elapsed)]
    parts = []
    for name, values in (
        ("evaluations", result.evaluation_seconds),
        ("proposals", result.proposal_seconds),
    ):
        known = values[~torch.isnan(values)]
        if not known.numel():
            parts.append(f"{name} not timed")
        elif known.numel() < values.numel():
            parts.append(
                f"{name} {float(known.sum()):.3g} s ({known.numel()} of {values.numel()} timed)"
            )
        else:
            parts.append(f"{name} {float(known.sum()):.3g} s")
    if _evaluations_overlapped(result):
        parts[0] += " (summed over evaluations that ran at the same time)"
    if not elapsed.numel():
        if all(part.endswith("not timed") for part in parts):
            return "time: not measured"
        return "time: total not measured; " + ", ".join(parts)
    return f"time: {float(elapsed.max()):.3g} s in all; " + ", ".join(parts)


def _evaluations_overlapped(result: OptimizationResult) -> bool:
    """Whether two evaluations ran at the same time on the run's clock: each timed one ran from
    its told time less its seconds to its told time; one that would have begun before the run
    (seconds reported by ``tell`` for a measurement made elsewhere) says nothing and is left
    out."""
    ends, seconds = result.elapsed, result.evaluation_seconds
    timed = ~(torch.isnan(ends) | torch.isnan(seconds)) & (ends - seconds >= -1e-3)
    spans = sorted(zip((ends - seconds)[timed].tolist(), ends[timed].tolist(), strict=True))
    latest_end = -math.inf
    for start, end in spans:
        if start < latest_end - 1e-3:
            return True
        latest_end = max(latest_end, end)
    return False
