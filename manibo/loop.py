"""``BayesianOptimizer``: ask / tell / run on a space, with a journal on disk and exact resume.

What a run guarantees:

* every setting is checked by the constructor, before a journal or an evaluation exists;
* a told evaluation is never lost: it is in ``history`` at once and in the journal before ``tell``
  returns, or, if the journal cannot be written, ``tell`` raises
  :class:`~manibo.journal.JournalWriteError` (with the point and the value) and the evaluation
  waits in memory for the next write;
* an objective that raises anything but a declared failure (:class:`~manibo.EvaluationFailed`,
  or a type passed as ``on_error``) stops the run at once with its own traceback; with an
  executor the evaluations in flight are finished and told first;
* every batch ``ask`` hands out is in the journal before ``ask`` returns it;
* a resumed run continues with the same settings (a resume with others is refused, with the list
  of differences): it hands out first the points asked and never told, then proposes the same
  points as the run it continues, so it evaluates what the uninterrupted run would have;
* ``run`` returns an :class:`~manibo.result.OptimizationResult`, and the journal records why the
  run ended (the budget, the wall-time budget ``max_seconds``, or the callback).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import inspect
import math
import numbers
import pickle
import re
import sys
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gpytorch
import numpy as np
import torch
from botorch.models.model import Model
from torch import Tensor

from manibo._autograd import autograd_on
from manibo._loop_settings import (
    ADDED_SETTINGS,
    SETTINGS,
    check_batch_size,
    check_buildable,
    checked_initial_design,
    json_values,
    number_of_points,
    settings_differences,
    validated_settings,
)
from manibo._memory import physical_memory_bytes
from manibo._proposal_warnings import ProposalWarnings
from manibo._random import seeded_global_generators
from manibo._stack import user_stacklevel
from manibo._validation import (
    as_points,
    as_seconds,
    as_tensor_arg,
    as_values,
    check_bool,
    check_int,
    checked_device,
    type_name,
)
from manibo.acquisitions import (
    ACQUISITIONS,
    MAX_FAILED_PENDING,
    build_acquisition,
    chooses_one_at_a_time,
)
from manibo.exceptions import (
    ConfigurationError,
    EvaluationFailed,
    InputDataError,
    ManiboError,
    ManiboWarning,
    NoEvaluationSucceededWarning,
    NonFiniteAcquisitionError,
    ObjectiveError,
    ObjectiveExitedError,
)
from manibo.journal import (
    RELEASED_WHEN_TOLD,
    Asked,
    Evaluation,
    Journal,
    JournalError,
    JournalTamperedError,
    JournalWarning,
    JournalWriteError,
    JournalWriter,
    Stop,
    check_is_journal,
    unwritten_lines_message,
)
from manibo.models import build_surrogate
from manibo.optim import LBFGSOptions, optimize_acqf_on_space
from manibo.optim.projection import optimize_acqf_by_projection
from manibo.result import OptimizationResult, fit_surrogate_seeded, result_from_history
from manibo.spaces.base import Space

Objective = Callable[[Tensor], float]
Callback = Callable[["BayesianOptimizer", Evaluation], "bool | None"]

PENDING_TOL = 1e-4
"""A told point clears the pending (asked, not yet told) point nearest to it within this distance
(:meth:`~manibo.spaces.base.Space.scaled_distance`: on a box, in units of each coordinate's width),
so that a point rounded by the user's own code (to 1e-6, say) still clears it, on a box of width
1000 as on one of width 1e-4."""

OUTLIER_RANGES = 100.0
"""A told value worse than every earlier successful value (five at least) by more than this many
times their range is reported, once per optimiser: a glitched reading or a failure code (1e6
among values in [0, 2]) makes a Gaussian-process surrogate take the rest for noise."""

FLAT_SPAN = 1e-9
"""... unless the earlier values span less than this fraction of the told value's magnitude: flat
at its scale, they have no structure for it to hide."""


@dataclass
class _Pending:
    """A point asked and not yet told.

    Attributes:
        point: the point ``(D,)`` on the optimiser's device.
        seconds: its proposal time.
        handed_out: True while a caller holds it (``ask`` returned it); False while it waits for
            ``ask`` to hand it out (an initial point, a point restored from the journal, or one
            handed back by a run that stopped before evaluating it).
        key: its coordinates in float64, as a tuple (a told point that equals them clears it
            without a distance to every pending point).
    """

    point: Tensor
    seconds: float
    handed_out: bool = False
    key: tuple[float, ...] = field(init=False)  # its float64 coordinates

    def __post_init__(self) -> None:
        self.key = _key(self.point.detach().to("cpu", torch.float64))


_OUTCOME_SCALE_LIMIT = 2.0**100
"""Outcomes larger (or smaller, when nonzero) in magnitude than this are rescaled by an exact power
of two before modelling, so that their squares neither overflow nor underflow in float64."""
_OUTCOME_SPREAD_LIMIT = 2.0**-16
"""Outcomes whose range (largest minus smallest) is below this are rescaled by an exact power of
two that brings the range near 1: BoTorch's ``Standardize`` does not rescale outcomes whose
standard deviation is below 1e-8, and GPyTorch floors posterior variances at 1e-10 after they are
brought back to the outcomes' units (a standard deviation of 1e-5 whatever the data)."""


def _one_caller_at_a_time(method: Callable) -> Callable:
    """``method`` of a :class:`BayesianOptimizer` under its lock: threads that share one optimiser
    (``ask`` and ``tell`` from a pool of workers) take turns, so that each sees the evaluations and
    asked points of the others and the journal is written once per record, in order."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return locked


class BayesianOptimizer:
    """Bayesian optimisation of an expensive function on a space, by ``ask``/``tell`` or ``run``.

    Args:
        space: the search space.
        surrogate: a registered surrogate name (``"matern"``, ``"heat"``, ``"euclidean"``,
            ``"chart"``, ...; see ``manibo.models.available_surrogates()``).
        acquisition: a registered acquisition name (``"qlognei"`` by default; see
            ``manibo.acquisitions.available_acquisitions()``).
        q: points proposed per ``ask``.
        minimize: minimise (default) or maximise the objective.
        initial_design: number of uniform random points before the surrogate takes over (on a
            finite space, distinct points). They are drawn here, all at once; a design that
            would fill more than a quarter of the machine's memory is refused. To start from
            points already evaluated, ``tell(X, Y)`` them before the first ``ask``: they count
            toward the initial design (and toward ``run``'s budget), and ``ask`` hands out only
            the rest of it (:func:`~manibo.minimize` and :func:`~manibo.maximize` take no known
            values; to evaluate chosen points first, pass ``initial_points``).
        seed: seed of the initial design, the acquisition samplers and the optimiser's starts,
            an integer in ``[0, 2**32 - 1]``.
        journal: path of a JSON-lines journal (``~`` is the home folder; missing folders are
            created); every ``tell`` and every batch ``ask`` hands out are on disk before they
            return. The optimiser holds the journal's lock until
            :meth:`close` (or until it is deleted).
        surrogate_options: passed to the surrogate factory (JSON values, recorded in the journal).
        optimizer: ``"riemannian"`` (on the space) or ``"projection"`` (box optimisation of the
            ambient coordinates followed by projection; only for surrogates defined off the space).
        num_restarts: local optimisations per ``ask``.
        raw_samples: uniform samples scored to choose the starts (at least ``num_restarts``).
        exclude_evaluated: finite spaces: never propose an evaluated point, nor one asked and not
            yet told, again (in the initial design and after it); ``ask`` refuses, naming both
            counts, when every point is taken.
        optimizer_options: fields of :class:`~manibo.optim.LBFGSOptions` (``maxiter``, ``gtol``,
            ...) for the Riemannian optimiser.
        device: where the surrogate is fitted and the acquisition optimised (``"cpu"``, ``"cuda"``);
            ``ask`` returns points there. The journal and the history are device-independent, so a
            run can be resumed on another device.
        metadata: JSON values recorded in the journal's header and compared on resume (the
            command line keeps its problem and noise level there).
        resume: when ``journal`` already holds a run, continue it (its settings must equal these;
            a difference is refused with the list of differences) instead of refusing the path.
        initial_points: points ``(k, *point_shape)`` of the space to evaluate first (a known good
            configuration, a grid of your own), a tensor or NumPy array: the first asks hand
            them out, in order, before any random point (an ``ask`` of ``q`` points returns at
            most those that wait). They count toward ``initial_design``, which random points
            fill up to its size, and toward ``run``'s budget; the journal records them as asked
            before anything else, so a resumed run evaluates only those not yet told.
        noise_std: the standard deviation of the objective's measurement noise, in its own
            units, when you know it (an instrument's precision, the Monte Carlo error of a
            simulation); the surrogate then takes it as every evaluation's noise
            (``train_Yvar``) instead of fitting one, which few or clustered evaluations cannot
            do reliably. None (default): fitted. Only surrogates that take known noise
            variances accept it (the exact GPs: ``"matern"``, ``"heat"``, ``"euclidean"``,
            ``"chart"``).

    Every setting is checked here, before the journal is written and before any evaluation: the
    surrogate and the acquisition are built once on 4 random points (a fraction of a second for
    the exact GPs) so that options the surrogate refuses are reported now.

    Threads may share one optimiser: ``ask``, ``tell``, ``tell_failure``, ``flush``, ``close``,
    ``result`` and the ``history``, ``pending`` and ``best`` properties take turns under its lock
    (an ``ask`` that fits the surrogate holds the others back while it does), and each sees what
    the others told and asked. Another process needs its own journal.
    """

    _writer: JournalWriter | None = None  # on the class: __del__ runs even when __init__ never did
    _lock = threading.RLock()  # replaced by the optimiser's own first thing in __init__

    def __init__(
        self,
        space: Space,
        surrogate: str = "matern",
        acquisition: str = "qlognei",
        q: int = 1,
        minimize: bool = True,
        initial_design: int = 5,
        seed: int = 0,
        journal: str | Path | None = None,
        surrogate_options: dict[str, Any] | None = None,
        optimizer: str = "riemannian",
        num_restarts: int = 8,
        raw_samples: int = 256,
        exclude_evaluated: bool = True,
        optimizer_options: dict[str, Any] | None = None,
        device: str | torch.device | None = None,
        metadata: dict[str, Any] | None = None,
        resume: bool = False,
        initial_points: Tensor | np.ndarray | None = None,
        noise_std: float | None = None,
    ) -> None:
        self._lock = threading.RLock()
        # evaluations an interrupted run left in flight, each set once told (or given up)
        self._late: list[threading.Event] = []
        self._close_when_told = False  # close() came while some were in flight
        if not isinstance(space, Space):
            spec = (
                f"; build it from its spec with manibo.spaces.make_space({space!r})"
                if isinstance(space, str)
                else ""
            )
            raise ConfigurationError(
                f"`space` must be a manibo space (Sphere, Torus, Graph, ...), got "
                f"{type(space).__name__}{spec}."
            )
        self.space = space
        self.device = checked_device(device)
        settings = validated_settings(
            space,
            surrogate=surrogate,
            acquisition=acquisition,
            q=q,
            minimize=minimize,
            initial_design=initial_design,
            seed=seed,
            surrogate_options=surrogate_options,
            optimizer=optimizer,
            num_restarts=num_restarts,
            raw_samples=raw_samples,
            exclude_evaluated=exclude_evaluated,
            optimizer_options=optimizer_options,
            initial_points=initial_points,
            noise_std=noise_std,
        )
        self.config = {
            "space": repr(space),
            "space_fingerprint": space.fingerprint(),
            **settings,
            "metadata": json_values("metadata", metadata),
        }
        self._lbfgs = (
            LBFGSOptions.from_options(settings["optimizer_options"])
            if settings["optimizer"] == "riemannian"
            else None
        )
        design = _drawn_design(space, settings["initial_design"], settings["seed"])
        check_buildable(space, settings, design, self.device)
        self._design = design.to(self.device)
        self._previous_model = None  # offered to surrogates that warm-start (not journaled)
        self._history: list[Evaluation] = []
        self._pending: list[_Pending] = []  # in the order asked
        self._unwritten_asked: list[Asked] = []  # asked batches not yet in the journal
        self._clock_start: float | None = None  # the run's clock: started by the first ask/tell
        self._elapsed_offset = 0.0  # the clock of the journal's last record, when resumed
        self._stop_reason: str | None = None
        self._warned_unmatched = False  # a tell matched none of the held asked points
        self._warned_repeat = False  # a tell repeated a told point that was not asked again
        self._warned_failed_again = False  # an analytic acquisition proposed a failed point
        self._told_keys: dict[tuple[float, ...], int] = {}  # point -> index, of the first
        self._keyed = 0  # evaluations in _told_keys
        self._warned_outlier = False  # a told value lay far beyond the range of the others
        self._warned_noise_floor = False  # the known noise lay below GPyTorch's floor
        self._value_range: list[float] = []  # [low, high, count] of the successes in it
        self._ranged = 0  # evaluations in _value_range
        self._warnings = ProposalWarnings()
        self._in_run = False
        self._caller_frames = 0  # frames between `run` and the user's code (minimize: 2)
        self._last_error: str | None = None
        self._progress_width = 0
        self._progress_shown = ""
        self._written = 0
        self.journal: Path | None = None
        self._enqueue_initial_points()
        self._open_journal(journal, resume)

    def _enqueue_initial_points(self) -> None:
        """Make the points of ``initial_points`` pending, waiting for the first asks to hand them
        out, and queue their asked record (written with the journal's first records)."""
        points = self.config["initial_points"]
        if points is None:
            return
        for x in points:
            point = torch.tensor(x, dtype=torch.float64, device=self.device).reshape(-1)
            self._pending.append(_Pending(point, 0.0))
        self._unwritten_asked.append(Asked(0, 0, points, [0.0] * len(points), 0.0))

    def _open_journal(self, journal: str | Path | None, resume: object) -> None:
        """Open ``journal`` (None: none), continuing the run it holds when ``resume`` is True."""
        if journal is None:
            return
        resume = check_bool("resume", resume)
        self.journal = Path(journal).expanduser()  # not a folder named "~"
        check_is_journal(self.journal)  # before its lock file is created beside it
        writer = JournalWriter(self.journal)
        try:
            recorded, evaluations = writer.load()
            if recorded is None:
                writer.create(self.config)
            elif not resume:
                raise JournalError(
                    f"journal {self.journal} already holds a run; continue it with "
                    "`BayesianOptimizer.resume(path)` (or pass resume=True), or choose another "
                    "path."
                )
            else:
                differences = settings_differences(recorded, self.config)
                if differences:
                    raise ConfigurationError(
                        f"journal {self.journal} holds a run with other settings: "
                        f"{'; '.join(differences)}. Continue it with its own settings, or start "
                        "a new run at another path (`manibo run --fresh` moves the old journal "
                        "aside)."
                    )
                self._check_recorded_points(evaluations, writer.asked)
                if evaluations or writer.asked:  # the journal's own pending points, not ours
                    self._pending, self._unwritten_asked = [], []
                self._history = evaluations
                self._written = len(evaluations)
                self._restore_pending(writer.asked)
                self._continue_clock([*writer.stops, *writer.asked])
        except OSError as err:
            writer.close()
            raise JournalError(
                f"cannot write journal {self.journal}: {err}. Choose a writable path for `journal`."
            ) from err
        except BaseException:
            writer.close()
            raise
        self._writer = writer

    # ------------------------------------------------------------------ construction from a journal
    @classmethod
    def resume(
        cls,
        journal: str | Path,
        space: Space | None = None,
        device: str | torch.device | None = None,
        **settings: Any,
    ) -> BayesianOptimizer:
        """Continue the run recorded in ``journal`` with the same state (data, design, seeds).

        The points the journal records as asked and never told (the rest of a batch cut short)
        are :attr:`pending`, and :meth:`ask` hands them out before proposing anything new: the
        resumed run evaluates the points the uninterrupted run would have, in the same order.

        Args:
            journal: the journal path.
            space: the space; needed for every space but spheres, circles, tori, SO(n), SU(n)
                and RP^d, which are rebuilt from their name, and the spaces of ``manibo run``
                (whose spec, ``"sphere2*box1"`` say, the journal's metadata records: it is
                rebuilt with :func:`~manibo.spaces.make_space` when it gives the journal's
                fingerprint). Meshes, graphs, integers, choices, products, Grassmann,
                hyperbolic and SPD spaces, SE(3) and boxes need it otherwise. It must be the
                journal's space (same content fingerprint).
            device: where to continue (the journal does not depend on the device it was written on).
            **settings: constructor settings the caller expects (``q=2``, ``metadata=...``); any
                that differs from the journal's is refused, with the list of differences.

        Raises:
            JournalError: the journal is missing, malformed, or written by another manibo.
            JournalLockedError: another process (or optimiser) is writing it.
            ConfigurationError: ``space`` or ``settings`` differ from the journal's.
        """
        recorded, _ = Journal(journal).read()
        required = [k for k in (*SETTINGS, "space", "space_fingerprint") if k not in ADDED_SETTINGS]
        missing = [k for k in required if k not in recorded]
        if missing:
            raise JournalError(f"journal {journal}: its header lacks {', '.join(missing)}.")
        unknown = sorted(set(settings) - {*SETTINGS, "metadata"})
        if unknown:
            raise ConfigurationError(
                f"unknown setting(s) {', '.join(unknown)} for resume(); settings are "
                f"{', '.join((*SETTINGS, 'metadata'))}."
            )
        if space is None:
            space = _space_from_journal(recorded)
        wanted = {k: recorded.get(k, ADDED_SETTINGS.get(k)) for k in SETTINGS}
        if wanted["initial_points"] is not None:  # as the journal holds them: nested lists
            wanted["initial_points"] = torch.tensor(wanted["initial_points"], dtype=torch.float64)
        wanted["metadata"] = recorded.get("metadata", {})
        wanted.update(settings)
        return cls(space, device=device, journal=journal, resume=True, **wanted)

    def _check_recorded_points(self, evaluations: list[Evaluation], asked: list[Asked]) -> None:
        """Refuse a journal whose evaluated or asked points are not points of the space (a line
        edited by hand, or a journal of another space with the same settings)."""
        recorded = [(f"evaluation {e.index}", [e.x]) for e in evaluations]
        recorded += [(f"the batch asked at step {a.step}", a.points) for a in asked]
        shape = self.space.point_shape
        for what, points in recorded:
            try:
                X = torch.tensor(points, dtype=torch.float64)
                if tuple(X.shape[1:]) != shape:
                    raise InputDataError(
                        f"points of shape {tuple(X.shape[1:])}, not the space's {shape}"
                    )
                self.space.check(X, "the recorded points")
            except (InputDataError, ValueError) as err:
                raise JournalError(
                    f"journal {self.journal}: {what} holds points that are not points of "
                    f"{self.space!r} ({err}). Was it edited by hand? Restore it, or start a new "
                    "run at another path."
                ) from err

    def _restore_pending(self, asked: list[Asked]) -> None:
        """Replay the journal's asked batches and evaluations in their order, as ``ask`` and
        ``tell`` went: the points asked and never told wait to be handed out first."""
        batches = iter(asked)
        batch = next(batches, None)
        for told in range(len(self._history) + 1):
            while batch is not None and batch.evaluations == told:
                for x, seconds in zip(batch.points, batch.proposal_seconds, strict=True):
                    point = torch.tensor(x, dtype=torch.float64, device=self.device)
                    self._pending.append(_Pending(point.reshape(-1), seconds))
                batch = next(batches, None)
            if told < len(self._history):
                self._clear_pending(torch.tensor(self._history[told].x, dtype=torch.float64))

    def _continue_clock(self, records: list[Stop | Asked]) -> None:
        """Continue the run's clock from the journal's last record; take its last stop reason
        when no evaluation followed it."""
        times = [r.elapsed for r in (*self._history, *records) if r.elapsed is not None]
        self._elapsed_offset = max(times, default=0.0)
        stops = [r for r in records if isinstance(r, Stop)]
        if stops and stops[-1].evaluations == len(self._history):
            self._stop_reason = stops[-1].reason

    def _elapsed(self) -> float:
        """Seconds on the run's clock (started now if it was not running)."""
        now = time.perf_counter()
        if self._clock_start is None:
            self._clock_start = now
        return self._elapsed_offset + now - self._clock_start

    @_one_caller_at_a_time
    def close(self) -> None:
        """Release the journal (and its lock); telling or asking afterwards keeps the evaluations
        and asked points in memory and raises :class:`~manibo.journal.JournalWriteError`.

        While evaluations of an interrupted :meth:`run` are still in flight in its executor, the
        journal is released once they have returned and been told (see :meth:`run`)."""
        if self._writer is None:  # also where __init__ never ran (so no lock either)
            return
        with self._lock:
            if self._late:
                if not self._close_when_told:  # a later open of the journal is refused till then
                    RELEASED_WHEN_TOLD[self._writer.lock_path] = len(self._late)
                    sys.stderr.write(
                        f"manibo: journal {self.journal} stays open until the {len(self._late)} "
                        "evaluation(s) of the interrupted run still in flight return and are "
                        "recorded; it is released then.\n"
                    )
                self._close_when_told = True
                return
            writer, self._writer = self._writer, None
        if writer is not None:
            RELEASED_WHEN_TOLD.pop(writer.lock_path, None)
            writer.close()

    def __getstate__(self) -> dict[str, Any]:
        if self._writer is not None:
            raise TypeError(
                f"this BayesianOptimizer holds journal {self.journal}, and a copy (pickled or "
                "copied) would write to it without its lock; close() it first, or resume the "
                "journal where the copy is needed (BayesianOptimizer.resume)."
            )
        state = self.__dict__.copy()
        del state["_lock"]  # a lock cannot be pickled or copied; each copy gets its own
        state["_in_run"] = False  # a copy taken in a callback is not running: it may run
        state["_late"], state["_close_when_told"] = [], False  # the original tells those
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def __enter__(self) -> BayesianOptimizer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    # ------------------------------------------------------------------ state
    @property
    @_one_caller_at_a_time
    def history(self) -> list[Evaluation]:
        """Every told evaluation, failed ones included, in order."""
        return list(self._history)

    @property
    @_one_caller_at_a_time
    def pending(self) -> Tensor | None:
        """Asked-but-not-told points ``(k, D)`` on ``device`` in the order asked, or None: those
        a caller holds and those waiting for ``ask`` to hand them out (the ``initial_points``
        not yet asked for, and points handed back or restored from the journal)."""
        return torch.stack([p.point for p in self._pending]) if self._pending else None

    @property
    @_one_caller_at_a_time
    def best(self) -> tuple[Tensor, float]:
        """The best successful evaluation as ``(x, y)`` (lowest observed ``y`` when minimising).

        ``x`` has shape ``point_shape`` and lies on ``device``. With noisy observations this is the
        best *observed* value; the surrogate's posterior mean at the history is a less biased pick.
        """
        ok = [e for e in self._history if e.status == "ok"]
        if not ok:
            raise ConfigurationError("no successful evaluation has been told yet.")
        pick = min if self.config["minimize"] else max
        e = pick(ok, key=lambda r: r.y)
        return torch.tensor(e.x, dtype=torch.float64, device=self.device), float(e.y)

    def _fit_options(self, to_objective: tuple[float, float], Y: Tensor) -> dict[str, Any]:
        """The surrogate's options for training outcomes ``Y`` ``(n, 1)`` (as
        :meth:`_training_data` gives them, with its map ``to_objective``): with a known
        ``noise_std``, ``train_Yvar`` in the units of ``Y``."""
        options = dict(self.config["surrogate_options"])
        if self.config["noise_std"] is not None:
            factor, _ = to_objective
            ratio = self.config["noise_std"] / abs(factor)  # factor: the outcomes' rescaling
            variance = min(max(ratio * ratio, sys.float_info.min), sys.float_info.max / 4)
            options["train_Yvar"] = torch.full_like(Y, variance)
            self._warn_if_below_noise_floor(variance, Y)
        return options

    def _warn_if_below_noise_floor(self, variance: float, Y: Tensor) -> None:
        """Warn once where the known noise ``variance`` (in the units of ``Y`` ``(n, 1)``) lies
        below GPyTorch's floor for known noise, 1e-6 of the standardised outcomes' variance in
        float64, which raises it: the model then takes more noise than ``noise_std`` says."""
        if self._warned_noise_floor or Y.shape[0] < 2:
            return
        spread = float(Y.var())
        floor = gpytorch.settings.min_fixed_noise.value(Y.dtype)
        if spread > 0 and variance < floor * spread:
            self._warned_noise_floor = True
            warnings.warn(
                f"noise_std = {self.config['noise_std']:.3g} lies below what the surrogate takes "
                f"as known noise: GPyTorch raises known noise variances to {floor:g} of the "
                f"outcomes' variance, so the model takes a noise standard deviation of about "
                f"{self.config['noise_std'] * math.sqrt(floor * spread / variance):.3g} (which "
                "grows with the spread of the values). result.noise_std reports what it takes.",
                ManiboWarning,
                stacklevel=user_stacklevel(),
            )

    def _training_data(self) -> tuple[Tensor, Tensor, tuple[float, float]]:
        """The successful evaluations as the surrogate sees them: ``X`` ``(n, D)``, ``Y``
        ``(n, 1)`` oriented for maximisation and rescaled (:func:`_scaled_outcomes`), and the
        map ``(factor, offset)`` from ``Y`` back to the objective's values,
        ``factor * Y + offset``."""
        ok = [e for e in self._history if e.status == "ok"]
        X = torch.tensor([e.x for e in ok], dtype=torch.float64, device=self.device)
        Y = torch.tensor([e.y for e in ok], dtype=torch.float64, device=self.device)
        X, Y = X.reshape(len(ok), math.prod(self.space.point_shape)), Y.reshape(-1, 1)
        sign = -1.0 if self.config["minimize"] else 1.0
        Y, offset, scale = _scaled_outcomes(sign * Y)
        return X, Y, (sign / scale, sign * offset)

    @_one_caller_at_a_time
    def result(self) -> OptimizationResult:
        """The run so far: best point, recommended point, history, timings, stop reason.

        The surrogate fitted on every successful evaluation, and the recommended point with it,
        are built when first asked for (seeded: the same data give the same model).
        """
        with autograd_on():  # tensors the fit can differentiate through, in inference_mode() too
            X, Y, to_objective = self._training_data()
        fit = functools.partial(
            fit_surrogate_seeded,
            self.space,
            self.config["surrogate"],
            self._fit_options(to_objective, Y),
            X,
            Y,
            self.config["seed"] * 1_000_003 + len(self._history),
            self._previous_model,
        )
        return result_from_history(
            list(self._history),
            self.space,
            self.config,
            self.device,
            self.journal,
            self._stop_reason,
            fit,
            to_objective,
        )

    # ------------------------------------------------------------------ ask / tell
    @_one_caller_at_a_time
    def ask(self, n: int | None = None) -> Tensor:
        """Propose ``n`` (default ``q``) points; they stay pending until told.

        Points asked earlier, never told and held by nobody (restored by :meth:`resume`, or
        handed back by a run that stopped before evaluating them) come first: while any waits,
        ``ask`` returns those (at most ``n``, in the order they were asked) and proposes nothing.
        A resumed run thus evaluates the rest of an interrupted batch, then proposes what the
        uninterrupted run proposed next.

        A new batch is written to the journal before ``ask`` returns it.

        Returns:
            Tensor ``(k, D)`` of points on the space, on ``device``; ``k = n`` unless fewer
            points wait to be handed out again.

        Raises:
            JournalWriteError: the batch (or an earlier record) could not be written to the
                journal; its points wait in memory, and the next ``ask`` hands them out once the
                journal can be written.
            ConfigurationError: on a finite space with ``exclude_evaluated``, fewer than ``n``
                points are neither evaluated nor asked and not yet told.
        """
        n = self.config["q"] if n is None else check_int("n", n, minimum=1)
        check_batch_size(self.config["acquisition"], self.config["optimizer"], n)
        if all(p.handed_out for p in self._pending):
            self._propose_batch(n)
        self.flush()
        waiting = [p for p in self._pending if not p.handed_out][:n]
        for p in waiting:
            p.handed_out = True
        return torch.stack([p.point.clone() for p in waiting])  # the caller may change them

    def _propose_batch(self, n: int) -> None:
        """Propose ``n`` points, pending and waiting to be handed out; queue their asked record.

        A proposal that fails (an error, Ctrl-C, out of memory) leaves no point of the batch
        pending, so the next ``ask`` proposes the whole batch again."""
        before = len(self._pending)
        try:
            self._propose_points(n)
        except BaseException:
            del self._pending[before:]
            raise

    def _propose_points(self, n: int) -> None:
        self._check_points_left(n)
        started = len(self._history) + len(self._pending)
        num_ok = sum(e.status == "ok" for e in self._history)
        self._elapsed()  # the run's clock starts with its first ask
        begin = time.perf_counter()
        # the rest of the initial design first (all of the batch while the surrogate has fewer
        # than 2 values); the surrogate proposes the others with those pending
        design = n if num_ok < 2 else min(max(self.config["initial_design"] - started, 0), n)
        if design:
            points = self._random_points(started, design)
            seconds = (time.perf_counter() - begin) / design
            self._pending.extend(_Pending(x.clone(), seconds) for x in points)
        if design < n:
            begin = time.perf_counter()
            proposed = self._propose(n - design, seed=self.config["seed"] * 1_000_003 + started)
            seconds = (time.perf_counter() - begin) / (n - design)
            self._pending.extend(_Pending(x.clone(), seconds) for x in proposed)
        if self.journal is not None:
            batch, shape = self._pending[len(self._pending) - n :], self.space.point_shape
            points = [p.point.to("cpu", torch.float64).reshape(shape).tolist() for p in batch]
            seconds = [p.seconds for p in batch]
            told, elapsed = len(self._history), self._elapsed()
            self._unwritten_asked.append(Asked(started, told, points, seconds, elapsed))

    def _excludes_taken(self) -> bool:
        """Whether proposals skip the taken points: a finite space with ``exclude_evaluated``."""
        return self.space.is_discrete and self.config["exclude_evaluated"]

    def _taken(self) -> tuple[set[tuple], set[tuple]]:
        """The evaluated points and the points asked and not yet told (not evaluated), each as a
        set of coordinate tuples: on a finite space with ``exclude_evaluated`` no proposal repeats
        one of them."""
        evaluated = {_evaluation_key(e) for e in self._history}
        return evaluated, {p.key for p in self._pending} - evaluated

    def _check_points_left(self, n: int) -> None:
        """Refuse to propose ``n`` points on a finite space with ``exclude_evaluated`` when fewer
        than ``n`` of its points are neither evaluated nor asked and not yet told."""
        if not self._excludes_taken():
            return
        evaluated, asked = self._taken()
        count = number_of_points(self.space)
        left = count - len(evaluated) - len(asked)
        if left < n:
            tell = (
                "Tell the pending points (`tell`, or `tell_failure`) before asking for more, or "
                if asked
                else "Every point is evaluated; "
            )
            raise ConfigurationError(
                f"`ask` needs {n} new point(s) of {self.space!r}, but only {left} of its {count} "
                f"points are left: {len(evaluated)} are evaluated and {len(asked)} asked and not "
                f"yet told, and with exclude_evaluated=True none of those is proposed again. {tell}"
                "pass `exclude_evaluated=False` to allow repeats."
            )

    def _points_to_avoid(self, model: Model) -> Tensor | None:
        """The acquisition's pending points ``(k, D)``, or None: the asked-but-not-told points
        and, for a Monte Carlo acquisition, the failed points, whose values will never arrive.
        Left out of the model, a point that failed would otherwise stay as attractive as before
        and be proposed again and again; as a pending point it is one whose value the
        acquisition counts as known, so it gains nothing from a point on or near it. Of the
        distinct failed points, the :data:`~manibo.acquisitions.MAX_FAILED_PENDING` with the
        highest posterior mean under ``model`` are kept."""
        points = [p.point.to(self.device, torch.float64) for p in self._pending]
        if not ACQUISITIONS.get(self.config["acquisition"]).analytic:
            failed = {_evaluation_key(e): e.x for e in self._history if e.status == "failed"}
            if failed:
                F = torch.tensor(list(failed.values()), dtype=torch.float64, device=self.device)
                F = F.reshape(len(failed), -1)
                if len(F) > MAX_FAILED_PENDING:
                    with torch.no_grad():
                        mean = model.posterior(F).mean.reshape(len(F))
                    F = F[torch.topk(mean, MAX_FAILED_PENDING).indices.sort().values]
                points += list(F)
        return torch.stack(points) if points else None

    def _random_points(self, start: int, n: int) -> Tensor:
        """``n`` points of the initial design from its row ``start`` on, drawn afresh beyond its
        end; on a finite space with ``exclude_evaluated``, rows already evaluated or asked (told
        before the first ask, or given as ``initial_points``) are skipped."""
        design = self._design
        rows = [design[i] for i in range(start, min(start + n, design.shape[0]))]
        taken = set.union(*self._taken()) if self._excludes_taken() else set()
        if taken:  # (a key reads the point: on CUDA a device read, so only where needed)
            rows = [x for x in rows if _key(x) not in taken]
        if len(rows) < n:  # beyond the design (a first batch larger than it, or failures)
            gen = torch.Generator().manual_seed(self.config["seed"] * 7919 + start)
            missing = n - len(rows)
            if self._excludes_taken():
                # distinct from every point asked so far: draw extra and skip the taken ones
                taken |= {_key(x) for x in rows}
                count = min(len(taken) + missing, number_of_points(self.space))
                fresh = _distinct_random_points(self.space, count, gen)
                fresh = [p for p in fresh if _key(p) not in taken]
                rows.extend(p.to(self.device) for p in fresh[:missing])
            else:
                rows.extend(self.space.random(missing, generator=gen).to(self.device))
        return torch.stack(rows).reshape(n, -1)

    def _propose(self, n: int, seed: int) -> Tensor:
        # BoTorch draws some seeds from the global RNG (qLogNEI's baseline pruning): fork and seed
        # it, so a proposal depends only on (seed, data) and a resumed run proposes the same point.
        with (
            seeded_global_generators(seed, self.device),
            warnings.catch_warnings(record=True) as caught,
            autograd_on(),  # also inside a caller's torch.no_grad() or inference_mode()
        ):
            warnings.simplefilter("always")
            points = self._propose_seeded(n, seed)
        self._warnings.add(caught)
        if not self._in_run:  # ask/tell: report this proposal's warnings now, gathered
            self._warnings.report(stacklevel=user_stacklevel(), final=False)
        return points

    def _propose_seeded(self, n: int, seed: int) -> Tensor:
        X, Y, to_objective = self._training_data()
        model = build_surrogate(
            self.config["surrogate"],
            self.space,
            X,
            Y,
            previous_model=self._previous_model,
            **self._fit_options(to_objective, Y),
        )
        self._previous_model = model
        name = self.config["acquisition"]
        acqf = build_acquisition(
            name, model, X, Y, self._points_to_avoid(model), seed, space=self.space
        )
        try:
            candidates = self._optimized(acqf, n, seed, X)
        except NonFiniteAcquisitionError as err:  # say which surrogate, fitted to what
            raise NonFiniteAcquisitionError(
                f"the surrogate {self.config['surrogate']!r}, fitted to {X.shape[0]} "
                f"evaluations, and the acquisition {name!r}: {err}"
            ) from err
        return self._off_failed_points(candidates.detach().reshape(n, -1), seed)

    def _optimized(self, acqf, n: int, seed: int, X: Tensor) -> Tensor:
        """The ``n`` points ``(n, D)`` that the configured optimiser finds for ``acqf``, with
        ``X`` ``(m, D)`` the evaluated points (the reference for the starts)."""
        common = {
            "num_restarts": self.config["num_restarts"],
            "raw_samples": self.config["raw_samples"],
        }
        if self.config["optimizer"] == "projection":
            maxiter = self.config["optimizer_options"].get("maxiter")
            candidates, _ = optimize_acqf_by_projection(
                acqf, self.space, q=n, seed=seed, maxiter=maxiter, reference=X, **common
            )
            return candidates
        exclude = None
        if self._excludes_taken() and (taken := sorted(set.union(*self._taken()))):
            exclude = torch.tensor(taken, dtype=torch.float64, device=self.device)
        candidates, _ = optimize_acqf_on_space(
            acqf,
            self.space,
            q=n,
            seed=seed,
            exclude=exclude,
            options=self._lbfgs,
            sequential=n > 1 and chooses_one_at_a_time(self.config["acquisition"]),
            reference=X,
            **common,
        )
        return candidates

    def _off_failed_points(self, candidates: Tensor, seed: int) -> Tensor:
        """``candidates`` ``(n, D)``, less those of an analytic acquisition at a failed point:
        it cannot take failed points as pending points and, deterministic, proposes the same
        failed point at every step (logei: 22 of 30 evaluations failed at one point). Such a
        candidate is replaced by a random point (seeded by ``seed``), with a warning once per
        optimiser."""
        if not ACQUISITIONS.get(self.config["acquisition"]).analytic:
            return candidates
        failed = [e for e in self._history if e.status == "failed"]
        if not failed:
            return candidates
        shape = self.space.point_shape
        F = torch.tensor([e.x for e in failed], dtype=torch.float64).reshape(-1, *shape)
        out = []
        for k, x in enumerate(candidates):
            nearest, distance = _nearest(self.space, F, x.to("cpu", torch.float64).reshape(shape))
            if distance > PENDING_TOL:
                out.append(candidates[k])
                continue
            generator = torch.Generator().manual_seed(seed + k)
            out.append(self.space.random(1, generator=generator).reshape(-1).to(candidates))
            if not self._warned_failed_again:
                self._warned_failed_again = True
                warnings.warn(
                    f"the analytic acquisition {self.config['acquisition']!r} proposed the point "
                    f"of failed evaluation {failed[nearest].index} again (it cannot take failed "
                    "points into account, and would propose it at every step); a random point is "
                    "proposed instead. A Monte Carlo acquisition (such as 'qlogei') steers clear "
                    "of failed points itself. Shown once per optimiser.",
                    ManiboWarning,
                    stacklevel=user_stacklevel(),
                )
        return torch.stack(out)

    @_one_caller_at_a_time
    def tell(
        self,
        X: Tensor | np.ndarray,
        Y: Tensor | float,
        seconds: float | None = None,
        extra: dict[str, Any] | list[dict[str, Any]] | None = None,
    ) -> None:
        """Record successful evaluations; they are written to the journal before this returns.

        Args:
            X: points ``(n, D)`` (or one point ``(D,)``) on the space, a tensor on any device or
                a NumPy array, of any floating dtype: the loop records points in float64, as its
                journal holds them (a float32 point as its float64 value), whatever ``device``
                and dtype it ran on.
            Y: values ``(n,)``, ``(n, 1)`` or a scalar, all finite (use :meth:`tell_failure` for
                failed evaluations).
            seconds: wall time of the evaluation, recorded in the journal: a finite number
                ``>= 0`` (a NumPy scalar or a 0-d tensor counts) or None.
            extra: your own JSON values for the record (:attr:`~manibo.journal.Evaluation.extra`:
                the solver's settings, a run id): a dict with string keys, shared by every point,
                or a list of them, one per point.

        Each told point clears the pending point nearest to it within :data:`PENDING_TOL` by
        ``space.scaled_distance`` (the distance on the space, with box coordinates in units of
        their width), so a point your code rounded still clears its entry.

        Raises:
            InputDataError: ``X``, ``Y``, ``seconds`` or ``extra`` is malformed (nothing is
                recorded).
            JournalWriteError: the journal could not be written; the evaluations are recorded in
                ``history`` all the same and are written by the next ``tell`` or :meth:`flush`.
        """
        X = self._validated_points(X)
        Y = as_values("Y", Y)
        seconds = as_seconds("seconds", seconds)
        extras = _extras(extra, X.shape[0])
        if Y.shape[0] != X.shape[0]:
            several = (
                " The optimiser minimises one objective; for several outcomes, fit "
                "`manibo.models.build_surrogate(name, space, X, Y)` with one column of `Y` per "
                "outcome and optimise a BoTorch multi-objective or constrained acquisition with "
                "`manibo.optim.optimize_acqf_on_space`."
                if Y.shape[0] > X.shape[0] and Y.shape[0] % X.shape[0] == 0
                else ""
            )
            raise InputDataError(
                f"`Y` has {Y.shape[0]} values for {X.shape[0]} points in `X`; give one value per "
                f"point.{several}"
            )
        if not torch.isfinite(Y).all():
            raise InputDataError(
                f"`Y` contains NaN or infinite values ({Y.tolist()}). Report failed evaluations "
                "with `tell_failure(X, error)` so that they are recorded and kept out of the model."
            )
        self._record(
            [
                Evaluation(
                    x=x.tolist(),
                    y=float(y),
                    index=len(self._history) + i,
                    seconds=seconds,
                    extra=e,
                )
                for i, (x, y, e) in enumerate(zip(X, Y, extras, strict=True))
            ]
        )

    @_one_caller_at_a_time
    def tell_failure(
        self,
        X: Tensor | np.ndarray,
        error: str | BaseException | list[str | BaseException] | None = None,
        seconds: float | None = None,
        extra: dict[str, Any] | list[dict[str, Any]] | None = None,
    ) -> None:
        """Record failed evaluations (kept in the history and journal, left out of the model).

        Args:
            X: points ``(n, D)`` (or one point ``(D,)``) on the space, a tensor on any device
                or a NumPy array, of any floating dtype (recorded in float64, as for
                :meth:`tell`).
            error: what went wrong: a message or the exception, shared by every point; or a
                list (or tuple) of them, one per point; None records "failed (no message
                given)".
            seconds: wall time of the evaluation, as for :meth:`tell`.
            extra: your own JSON values for the record, as for :meth:`tell`.

        Raises:
            InputDataError: ``X``, ``error``, ``seconds`` or ``extra`` is malformed (nothing is
                recorded).
            JournalWriteError: as for :meth:`tell`.
        """
        X = self._validated_points(X)
        seconds = as_seconds("seconds", seconds)
        extras = _extras(extra, X.shape[0])
        if isinstance(error, (list, tuple)):
            if len(error) != X.shape[0]:
                raise InputDataError(
                    f"`error` lists {len(error)} messages for {X.shape[0]} points in `X`; give "
                    "one message (or exception) per point, or one shared by all."
                )
            messages = [_failure_message(e) for e in error]
        else:
            messages = [_failure_message(error)] * X.shape[0]
        self._last_error = messages[-1]
        self._record(
            [
                Evaluation(
                    x=x.tolist(),
                    y=None,
                    status="failed",
                    error=message,
                    index=len(self._history) + i,
                    seconds=seconds,
                    extra=e,
                )
                for i, (x, message, e) in enumerate(zip(X, messages, extras, strict=True))
            ]
        )

    def _validated_points(self, X: Tensor | np.ndarray) -> Tensor:
        """``X`` as float64 CPU points ``(n, *point_shape)``, checked (a NumPy array counts as
        the tensor of its values and dtype)."""
        X = as_tensor_arg("X", as_points("X", X)).detach().to("cpu", torch.float64)
        if X.dim() == len(self.space.point_shape):
            X = X.unsqueeze(0)
        self.space.check_point_shape(X, "X")
        if X.dim() != 1 + len(self.space.point_shape):
            raise InputDataError(
                f"`X` must have shape (n, *point_shape), got {tuple(X.shape)}; stack the points "
                "along one leading dimension."
            )
        return self.space.check(X, "X")

    def _record(self, evaluations: list[Evaluation]) -> None:
        for evaluation in evaluations:
            evaluation.elapsed = self._elapsed()
            self._history.append(evaluation)  # in memory first: a failed write loses nothing
            x = torch.tensor(evaluation.x, dtype=torch.float64)
            held = sum(p.handed_out for p in self._pending)
            evaluation.proposal_seconds = self._clear_pending(x)
            if evaluation.proposal_seconds is None and not self._warned_repeat:
                self._warn_if_told_before(evaluation, x)
            if evaluation.status == "ok" and not self._warned_outlier:
                self._warn_if_outlier(evaluation)
            if held and evaluation.proposal_seconds is None and not self._warned_unmatched:
                self._warned_unmatched = True
                warnings.warn(
                    f"the point told as evaluation {evaluation.index} is none of the {held} "
                    f"point(s) asked and not yet told (none within {PENDING_TOL:g} on the space, "
                    "box coordinates counted in units of their width); those stay pending, and a "
                    "run resumed from the journal evaluates them first. Tell the points as `ask` "
                    f"returned them (rounding them is fine up to {PENDING_TOL:g}, of the width "
                    "on a box, and so is float32). Shown once per optimiser.",
                    ManiboWarning,
                    stacklevel=user_stacklevel(),
                )
        self._stop_reason = None
        self.flush()

    def _warn_if_outlier(self, evaluation: Evaluation) -> None:
        """Warn (once per optimiser) when the value of ``evaluation`` is worse than every
        successful evaluation before it by more than :data:`OUTLIER_RANGES` times their range,
        and that range is not flat at the value's scale (:data:`FLAT_SPAN`); the range is kept
        as it grows, so a tell costs O(1)."""
        while self._ranged < evaluation.index:
            earlier = self._history[self._ranged]
            if earlier.status == "ok":
                low, high, count = self._value_range or (earlier.y, earlier.y, 0)
                self._value_range = [min(low, earlier.y), max(high, earlier.y), count + 1]
            self._ranged += 1
        if not self._value_range or self._value_range[2] < 5:
            return
        low, high, count = self._value_range
        span, y = high - low, evaluation.y
        beyond = y - high if self.config["minimize"] else low - y  # worse than all: a better
        # value is what the search is for (a needle found), and values flat at its scale (a
        # plateau seen to rounding) lose no structure to it
        if beyond <= OUTLIER_RANGES * span or span <= FLAT_SPAN * abs(y):
            return
        self._warned_outlier = True
        warnings.warn(
            f"evaluation {evaluation.index} has the value {y:.6g}, {beyond / span:.3g} "
            f"times the range of the {count} successful values before it ([{low:.6g}, "
            f"{high:.6g}]) beyond that range, on the worse side. A Gaussian-process surrogate "
            "fitted to it takes the others for noise around a flat function (a reading of 1e6 "
            "among values in [0, 2] gave a noise variance of 3e8, and the search then did worse "
            "than random points). If it is a glitch or a failure code, record such points as "
            "failed (`tell_failure`, or raise EvaluationFailed from the objective); if it is "
            "real, a transform of the objective that compresses its bad values (the logarithm "
            "of a positive objective) is easier to model. Shown once per optimiser.",
            ManiboWarning,
            stacklevel=user_stacklevel(),
        )

    def _warn_if_told_before(self, evaluation: Evaluation, x: Tensor) -> None:
        """Warn (once per optimiser) when ``evaluation``, at ``x``, which no asked point matched,
        is at exactly the point of an evaluation told before (:meth:`Space.point_key`: on RP^d
        ``-x`` too, on a Grassmannian another frame of the subspace): an executor that retried a
        task, or a callback run twice, tells a result twice, and the model counts it twice (or
        takes two values for one point)."""
        while self._keyed < evaluation.index:  # the evaluations told (or resumed) since
            earlier = self._history[self._keyed]
            point = torch.tensor(earlier.x, dtype=torch.float64)
            self._told_keys.setdefault(self.space.point_key(point), earlier.index)
            self._keyed += 1
        index = self._told_keys.get(self.space.point_key(x))  # x and -x on RP^d: one point
        if index is None:
            return
        self._warned_repeat = True
        before = self._history[index]
        value = f"y = {before.y!r}" if before.status == "ok" else "failed"
        now = f"y = {evaluation.y!r}" if evaluation.status == "ok" else "failed"
        warnings.warn(
            f"the point told as evaluation {evaluation.index} ({now}) was told before, as "
            f"evaluation {index} ({value}), and was not asked again; both are kept"
            + (", so the model counts the point twice" if value[0] == now[0] == "y" else "")
            + ". If a retried task or a callback run twice told it, tell each result once (a "
            "deliberate second measurement is fine). Shown once per optimiser.",
            ManiboWarning,
            stacklevel=user_stacklevel(),
        )

    def _clear_pending(self, x: Tensor) -> float | None:
        """Forget the pending point nearest to ``x`` (``point_shape``) within ``PENDING_TOL`` (by
        ``space.scaled_distance``); returns its proposal time (None when no pending point was that
        near)."""
        nearest = self._nearest_pending(x, self._pending)
        return None if nearest is None else self._pending.pop(nearest).seconds

    def _nearest_pending(self, x: Tensor, among: list[_Pending]) -> int | None:
        """Position in ``among`` of the first point equal to ``x`` (``point_shape``, float64 on
        the CPU), else of the point nearest to it within ``PENDING_TOL`` by
        ``space.scaled_distance``, else of the first whose float32 rounding is ``x``; or None."""
        if not among:
            return None
        key = _key(x)
        exact = next((i for i, p in enumerate(among) if p.key == key), None)
        if exact is not None:  # told as asked: the usual case, in O(1) tensor work
            return exact
        shape = self.space.point_shape
        pending = torch.stack([p.point for p in among]).to("cpu", torch.float64)
        pending = pending.reshape(-1, *shape)
        nearest, distance = _nearest(self.space, pending, x.reshape(shape))
        if distance <= PENDING_TOL:
            return nearest
        # the point as float32 rounds it: near the edge of a wide SPD domain (eigenvalues 1e-3
        # and 1e3) by 0.003-0.007, far beyond the tolerance
        rounded = pending.to(torch.float32).to(torch.float64) == x.reshape(shape)
        exact = rounded.flatten(1).all(1).nonzero()
        return int(exact[0]) if len(exact) else None

    def _hand_back(self, points: Tensor) -> None:
        """Hand back asked-but-not-told ``points`` ``(k, D)`` that nobody evaluates any more
        (a run stopped before them): the next ``ask`` hands them out again, first."""
        for point in points:
            held = [p for p in self._pending if p.handed_out]
            nearest = self._nearest_pending(point.detach().to("cpu", torch.float64), held)
            if nearest is not None:
                held[nearest].handed_out = False

    @_one_caller_at_a_time
    def flush(self) -> None:
        """Write the evaluations and asked batches that a failed journal write left in memory
        only, in the order they were told and asked.

        ``ask``, ``tell`` and ``run`` call it first; call it yourself once the disk has room again.

        Raises:
            JournalWriteError: they still cannot be written (its ``evaluations`` lists the
                evaluations).
        """
        if self.journal is None:
            return
        while self._written < len(self._history) or self._unwritten_asked:
            asked = self._unwritten_asked[0] if self._unwritten_asked else None
            if asked is not None and asked.evaluations > self._written:
                asked = None  # evaluations told before the batch was asked go first
            try:
                if self._writer is None:
                    raise JournalError("the optimiser was closed, so it holds no journal")
                if asked is None:
                    self._writer.append(self._history[self._written])
                else:
                    self._writer.append_asked(asked)  # a journal of format 3 has no asked records
            except (OSError, JournalError) as err:
                unwritten = self._history[self._written :]
                waiting = sum(len(a.points) for a in self._unwritten_asked)
                lines = [self._writer.line(e) for e in unwritten] if self._writer else []
                closed = self._writer is None
                raise JournalWriteError(
                    _write_error_message(self.journal, err, unwritten, waiting, closed),
                    unwritten,
                    lines,
                ) from err
            if asked is None:
                self._written += 1
            else:
                del self._unwritten_asked[0]

    # ------------------------------------------------------------------ run
    def run(
        self,
        objective: Objective,
        budget: int,
        executor: Executor | None = None,
        max_parallel: int | None = None,
        progress: bool = True,
        on_error: type[Exception] | tuple[type[Exception], ...] = (),
        callback: Callback | None = None,
        max_seconds: float | None = None,
    ) -> OptimizationResult:
        """Evaluate ``objective`` until ``budget`` evaluations are told (resumed ones included),
        the wall-time budget is crossed, or the callback asks to stop.

        Failures: an objective that raises :class:`~manibo.EvaluationFailed`, or an exception of a
        type in ``on_error``, or returns NaN or ±inf, has a *failed evaluation*: it is recorded
        (history and journal, with the message) and kept out of the model, and the run goes on.
        Anything else the objective raises (a ``NameError``, a ``TypeError`` ...), or a return
        value that is not one real number (a tuple, None, a boolean of Python, NumPy or torch,
        an integer too large for a float), is a programming error: the run stops
        at once and raises it with its traceback, without recording the point. With an executor,
        the evaluations still in flight are finished and told before it is raised. An exception
        raised by ``callback`` stops the run in the same way (its evaluation is recorded).

        Stopping early: ``callback(optimizer, evaluation)`` is called after every told
        evaluation (``evaluation`` is its :class:`~manibo.journal.Evaluation` record, failed ones
        included); returning True stops the run, None or False lets it go on (NumPy booleans
        and 0-d boolean tensors count; a number such as 0 or 1 is refused, as ambiguous). With
        ``max_seconds``, the run stops after the first evaluation told once that many seconds have
        passed since this call began. Either way, with an executor no new evaluation starts and
        those in flight are finished and told (the callback is still called for them). The
        journal records why the run ended (:attr:`OptimizationResult.stop_reason`).

        Ctrl-C (``KeyboardInterrupt``) with an executor is raised at once: the evaluations told
        by then stay, those not started are cancelled and handed back (the next ``ask``, or a
        run resumed from the journal, evaluates them first), and each one still running is told
        when it returns (from the thread that completes it, under the optimiser's lock), so that
        a thread pool whose ``with`` block waits for them keeps their results. Meanwhile no
        ``ask`` hands their points out again, a later ``run`` first waits for them, and
        :meth:`close` (which ``minimize`` and ``maximize`` call on the way out) keeps the
        journal until they are told. A process that ends first (``manibo run`` ends at once)
        leaves them asked but not told in the journal, and the resumed run evaluates them first.

        Args:
            objective: maps one point ``(D,)`` (on ``device``) to a float.
            budget: total number of evaluations, at least ``initial_design`` and ``q``. A budget
                equal to ``initial_design`` evaluates random points only, with a
                :class:`~manibo.exceptions.ManiboWarning` saying so.
            executor: evaluate in parallel with any ``concurrent.futures.Executor`` (process pool,
                Dask, Ray); asked-but-not-told points are pending for the surrogate meanwhile.
            max_parallel: evaluations in flight with an executor (default: the executor's
                number of workers where it tells it, as ``ThreadPoolExecutor`` and
                ``ProcessPoolExecutor`` do, else ``q``; 1 with an analytic acquisition); each
                in-flight point is pending for the surrogate, so new proposals avoid it. Until
                the initial design is told, the points beyond it wait, so that the first model
                sees the whole design.
            progress: print a progress bar on stderr (with the last failure): one line redrawn
                in place on a terminal; elsewhere (a log file, a pipe) a line per thirtieth of
                the budget.
            on_error: exception types (a type or a tuple) recorded as failed evaluations:
                subclasses of ``Exception`` (``KeyboardInterrupt`` and ``SystemExit`` always
                stop the run; ``on_error=BaseException`` is refused).
            callback: ``callback(optimizer, evaluation) -> bool | None``, called after each told
                evaluation; True stops the run.
            max_seconds: wall-time budget of this call in seconds (positive and finite); None:
                no limit.

        Returns:
            The :class:`~manibo.result.OptimizationResult` of the run (resumed evaluations
            included); unpacking it gives the best point and value, ``x, y = opt.run(...)``.

        Raises:
            ConfigurationError: a setting of this call is invalid, or another ``run`` of this
                optimiser is under way (before any evaluation).
            JournalWriteError: the journal could not be written; nothing is lost (see
                :meth:`tell`), and calling ``run`` again continues.
        """
        self._claim_run()
        try:
            budget, declared, parallel, should_stop = self._prepared_run(
                objective, budget, executor, max_parallel, progress, on_error, callback, max_seconds
            )
        except BaseException:
            self._in_run = False
            raise
        try:
            if executor is None:
                reason = self._run_serial(objective, budget, declared, progress, should_stop)
            else:
                reason = self._run_parallel(
                    objective, budget, executor, parallel, declared, progress, should_stop
                )
        except BaseException:
            self._end_run(progress, failing=True)
            raise
        self._record_stop(reason)
        self._end_run(progress, failing=False)
        self._warn_if_nothing_succeeded()
        return self.result()

    def _claim_run(self) -> None:
        """Mark a run as under way, refusing a second one at once: two threads' ``run(budget=8)``
        on one optimiser made 9 evaluations, each counting only its own evaluation in flight."""
        with self._lock:
            if self._in_run:
                raise ConfigurationError(
                    "`run` is already running on this optimiser (in another thread, or it was "
                    "called from the running one's objective or callback); one run at a time "
                    "keeps its budget. To evaluate in parallel, pass an executor to one run "
                    "(`executor=`, `max_parallel=`), or call ask and tell from the threads."
                )
            self._in_run = True

    def _prepared_run(
        self, objective, budget, executor, max_parallel, progress, on_error, callback, max_seconds
    ):
        """The checked settings of a run (see :meth:`_checked_run`) and its stopping rule, after
        the warnings they call for and a flush of what a failed write left in memory."""
        budget, declared, parallel = self._checked_run(
            objective, budget, executor, max_parallel, progress, on_error, callback, max_seconds
        )
        if budget <= self.config["initial_design"] and len(self._history) < budget:
            warnings.warn(
                f"the budget ({budget}) does not exceed the initial design "
                f"({self.config['initial_design']} random points), so every point of this run is "
                "random and no surrogate model proposes points (one is still fitted for the "
                "recommendation); raise `budget` above `initial_design` for model-based "
                "proposals.",
                ManiboWarning,
                stacklevel=3 + self._caller_frames,
            )
        should_stop = _stop_rule(self, callback, max_seconds)
        waiting = [told for told in list(self._late) if not told.is_set()]
        if waiting:  # an interrupted run's evaluations in flight count first
            sys.stderr.write(
                f"manibo: waiting for the {len(waiting)} evaluation(s) of the interrupted run "
                "still in flight to return and be recorded before this run starts.\n"
            )
        for told in waiting:
            told.wait()
        self.flush()  # what a failed write left in memory goes first
        return budget, declared, parallel, should_stop

    def _checked_run(
        self,
        objective,
        budget,
        executor=None,
        max_parallel=None,
        progress=True,
        on_error=(),
        callback=None,
        max_seconds=None,
    ) -> tuple[int, tuple[type[Exception], ...], int]:
        """Check the arguments of :meth:`run` (with its defaults); returns the budget, the
        exception types recorded as failures and the number of evaluations in flight.

        Raises:
            ConfigurationError: naming the argument, what it must be and what arrived.
        """
        given = len(self.config["initial_points"] or [])
        budget = _checked_budget(budget, self.config["initial_design"], self.config["q"], given)
        if not callable(objective):
            raise ConfigurationError(
                f"`objective` must be callable, got {type(objective).__name__}."
            )
        declared = _declared_failures(on_error)
        parallel = self._checked_parallelism(objective, executor, max_parallel)
        self._check_budget_fits(budget)
        check_bool("progress", progress)
        if callback is not None and not callable(callback):
            raise ConfigurationError(
                f"`callback` must be callable as callback(optimizer, evaluation), got "
                f"{type(callback).__name__}."
            )
        if callback is not None:
            _check_callback_signature(callback)
        if max_seconds is not None and not (
            isinstance(max_seconds, numbers.Real)
            and not isinstance(max_seconds, bool)
            and 0 < max_seconds < math.inf
        ):
            raise ConfigurationError(
                f"`max_seconds` must be a positive number of seconds, finite (pass None for no "
                f"limit), got {max_seconds!r}."
            )
        return budget, declared, parallel

    def _record_stop(self, reason: str) -> None:
        """Remember why the run ended and write it to the journal (a failed write warns: no
        evaluation depends on it)."""
        self._stop_reason = reason
        if self._writer is None:
            return
        stop = Stop(reason, len(self._history), self._elapsed())
        try:
            self._writer.append_stop(stop)
        except (OSError, JournalError) as err:
            warnings.warn(
                f"could not record in journal {self.journal} why the run stopped ({reason}): "
                f"{str(err).rstrip('.')}."
                + ("" if isinstance(err, JournalTamperedError) else " Every evaluation is in it."),
                JournalWarning,
                stacklevel=3,
            )

    def _end_run(self, progress: bool, failing: bool) -> None:
        """End the progress line, then issue the run's warnings (after it, not inside the bar)."""
        self._in_run = False
        self._progress_shown = ""
        if progress and _on_terminal(sys.stderr):
            sys.stderr.write("\n")
            sys.stderr.flush()
        try:
            self._warnings.report(stacklevel=3 + self._caller_frames)
        except Exception:  # a warning turned into an error must not hide the run's own error
            if not failing:
                raise

    def _warn_if_nothing_succeeded(self) -> None:
        """Warn, at the user's call of ``run`` (or of minimize, maximize), where every evaluation
        failed: the result then has no best point, and nothing else would say so."""
        if not self._history or any(e.status == "ok" for e in self._history):
            return
        last = next((e.error for e in reversed(self._history) if e.error), None)
        warnings.warn(
            f"no evaluation succeeded ({len(self._history)} of {len(self._history)} failed"
            + (f"; the last: {last}" if last else "")
            + "), so the result has no best point (best_x, best_y and recommended_x are None). "
            "Check the objective (and what was told with tell_failure) on a point of the space, "
            "e.g. `objective(space.random(1)[0])`: "
            "it must return a finite float (NaN and infinite values count as failures). Every "
            "failure's message is in the journal, if the run has one, and in "
            "`BayesianOptimizer.history` (`.error`).",
            NoEvaluationSucceededWarning,
            stacklevel=3 + self._caller_frames,
        )

    def _check_budget_fits(self, budget: int) -> None:
        count = number_of_points(self.space)
        if count is not None and self.config["exclude_evaluated"] and budget > count:
            raise ConfigurationError(
                f"`budget` ({budget}) exceeds the {count} points of {self.space!r}, and evaluated "
                "points are never proposed again; lower the budget, or pass "
                "`exclude_evaluated=False` to let evaluated points be proposed again (a noisy "
                "objective measured twice)."
            )

    def _checked_parallelism(self, objective, executor, max_parallel) -> int:
        if executor is None:
            if max_parallel is not None:
                raise ConfigurationError(
                    "`max_parallel` applies to evaluations through an `executor`; pass one, or "
                    "leave max_parallel out."
                )
            return 1
        if not isinstance(executor, Executor):
            raise ConfigurationError(
                f"`executor` must be a concurrent.futures.Executor, got {type(executor).__name__}."
            )
        analytic = ACQUISITIONS.get(self.config["acquisition"]).analytic
        if max_parallel is None:  # as many as the executor runs at once, where it says
            workers = getattr(executor, "_max_workers", None)  # concurrent.futures' pools
            parallel = workers if isinstance(workers, int) and not analytic else self.config["q"]
        else:
            parallel = max_parallel
        parallel = check_int("max_parallel", parallel, minimum=1)
        if parallel > 1 and analytic:
            raise ConfigurationError(
                f"the analytic acquisition {self.config['acquisition']!r} cannot account for "
                f"points in flight, and max_parallel = {parallel}; use max_parallel=1 or a Monte "
                "Carlo acquisition such as 'qlognei'."
            )
        if isinstance(executor, ProcessPoolExecutor):
            try:
                pickle.dumps(objective)
            except Exception as err:
                raise ConfigurationError(
                    f"the objective cannot be sent to the process pool: it cannot be pickled "
                    f"({type(err).__name__}: {err}). Define it at module level (not a lambda or a "
                    "nested function), or use a thread pool."
                ) from err
        return parallel

    def _run_serial(self, objective, budget, declared, progress, should_stop) -> str:
        while len(self._history) < budget:
            batch = self.ask(min(self.config["q"], budget - len(self._history)))
            for i, x in enumerate(batch):
                start = time.perf_counter()
                try:
                    try:
                        value = objective(x.clone())
                    except declared as err:
                        self.tell_failure(x, err, seconds=time.perf_counter() - start)
                    else:
                        self._tell_value(x, value, time.perf_counter() - start)
                except BaseException as err:
                    _note_programming_error(err, x)
                    # asked and not told: the next ask hands them out again
                    self._hand_back(batch[i + (1 if isinstance(err, JournalWriteError) else 0) :])
                    raise
                self._progress(budget, progress)
                try:
                    reason = should_stop(self._history[-1])
                except BaseException:
                    self._hand_back(batch[i + 1 :])
                    raise
                if reason is not None:
                    self._hand_back(batch[i + 1 :])
                    return reason
        return "budget"

    def _tell_value(self, x: Tensor, value: object, seconds: float | None) -> None:
        value = _as_objective_value(value, x)
        if math.isfinite(value):
            self.tell(x, value, seconds=seconds)
        else:
            self.tell_failure(x, f"objective returned {value}", seconds=seconds)

    def _tell_future(self, future: Future, x: Tensor, start: float, declared) -> None:
        try:
            value, seconds = future.result()
        except declared as err:
            seconds = getattr(err, "_manibo_seconds", time.perf_counter() - start)
            self.tell_failure(x, err, seconds=seconds)
        else:
            self._tell_value(x, value, seconds)

    def _run_parallel(
        self, objective, budget, executor, max_parallel, declared, progress, should_stop
    ) -> str:
        running: dict[Future, tuple[Tensor, float]] = {}
        reason = None
        try:
            while True:
                while (
                    reason is None
                    and len(running) < max_parallel
                    and len(self._history) + len(running) < budget
                    and not self._design_in_flight(running)
                ):
                    x = self.ask(1)[0]
                    try:
                        future = executor.submit(_TimedObjective(objective), x.clone())
                    except BaseException:  # a shut-down executor, say: x was never evaluated
                        self._hand_back(x[None])
                        raise
                    running[future] = (x, time.perf_counter())
                if not running:
                    return reason or "budget"
                done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in done:
                    x, start = running.pop(future)
                    try:
                        self._tell_future(future, x, start, declared)
                    except BaseException as err:
                        _note_programming_error(err, x)
                        if not isinstance(err, JournalWriteError):
                            self._hand_back(x[None])
                        raise
                    self._progress(budget, progress)
                    reason = should_stop(self._history[-1]) or reason
        except BaseException as err:
            finish = isinstance(err, Exception)
            try:
                unfinished = sum(not future.done() for future in running)
                if finish and unfinished:  # say so now: the evaluations may take hours
                    sys.stderr.write(
                        f"manibo: the run stops on {type(err).__name__}: "
                        f"{_shorten(str(err), 100)}; waiting for the {unfinished} other "
                        "evaluation(s) in flight to return and be recorded before raising it "
                        "(Ctrl-C stops waiting: they are then recorded as they return, or "
                        "evaluated again by a resumed run).\n"
                    )
                    sys.stderr.flush()
                self._drain(running, declared, finish=finish, error=err)
            except KeyboardInterrupt as interrupt:  # Ctrl-C while waiting: keep the error
                if finish:
                    interrupt.manibo_pending_error = err
                self._drain(running, declared, finish=False, error=err)
                raise
            raise

    def _design_in_flight(self, running: dict) -> bool:
        """Whether the next ``ask`` would fit the surrogate while points of the initial design
        are still being evaluated: a run with an executor then waits for them, so that the first
        model sees the whole design (with 4 workers it saw 2 of 5 values, the 3 others pending),
        as the serial run's does."""
        design = self.config["initial_design"]
        if not running or len(self._history) >= design:  # after the design: at once, no scan
            return False
        if any(not p.handed_out for p in self._pending):
            return False  # the next ask hands out a waiting point: no fit
        started = len(self._history) + len(self._pending)
        return started >= design and sum(e.status == "ok" for e in self._history) >= 2

    def _drain(self, running: dict, declared, finish: bool, error: BaseException) -> None:
        """Tell what the evaluations in flight return (waiting for them unless ``finish`` is
        False, as after Ctrl-C: then those not started are cancelled and handed back, and those
        running are told when they return, see :meth:`_tell_when_done`). Each is taken out of
        ``running`` as it is dealt with, so that a call interrupted by Ctrl-C can be followed by
        one with ``finish=False`` for the rest."""
        if finish:
            wait(list(running))
        lost = 0
        while running:
            future = next(iter(running))  # in the order they were submitted
            x, start = running.pop(future)
            if not future.done():
                if not future.cancel():
                    self._tell_when_done(future, x, start, declared)
                    continue
            else:
                try:
                    self._tell_future(future, x, start, declared)
                    continue
                except JournalWriteError:
                    continue  # recorded in history; the first error is raised anyway
                except BaseException:
                    lost += 1
            self._hand_back(x[None])
        if lost:
            error.add_note(
                f"manibo: {lost} other evaluation(s) in flight also raised; they were not recorded."
            )

    def _tell_when_done(self, future: Future, x: Tensor, start: float, declared) -> None:
        """Tell what ``future`` returns once it returns, from the thread that completes it and
        under the optimiser's lock, while the optimiser has its journal (or has none); ``x``
        stays handed out meanwhile, so that no ``ask`` hands it out again. An error of the
        objective leaves it unrecorded and hands it back. :meth:`close` waits for these to
        release the journal, and :meth:`run` waits for them first."""
        told = threading.Event()
        with self._lock:
            self._late.append(told)

        def tell(future: Future) -> None:
            with self._lock:
                try:
                    if self.journal is not None and self._writer is None:
                        self._hand_back(x[None])  # closed: the journal keeps it asked, not told
                    else:
                        self._tell_future(future, x, start, declared)
                except JournalWriteError:
                    pass  # in history; the next write catches up
                except BaseException:  # the objective's error, or a cancelled future
                    self._hand_back(x[None])
                finally:
                    self._late.remove(told)
                    told.set()
                    if self._close_when_told and not self._late:
                        self._close_when_told = False
                        self._close_saying_what_is_unwritten()

        future.add_done_callback(tell)

    def _close_saying_what_is_unwritten(self) -> None:
        """The deferred :meth:`close`, once the last late evaluation is told: what a failed write
        left in memory is written first, and where it still cannot be, its journal lines go to
        stderr, to be appended (nothing holds them once the journal is released)."""
        try:
            self.flush()
        except JournalWriteError as error:
            again = "resume the run"
            sys.stderr.write("manibo: " + unwritten_lines_message(self.journal, error, again))
        self.close()

    def _progress(self, budget: int, enabled: bool) -> None:
        if not enabled:
            return
        done = len(self._history)
        width = 30
        filled = int(width * min(done, budget) / budget)
        try:
            best = f"best {self.best[1]:.5g}"
        except ConfigurationError:
            best = "no success yet"
        bar = f"[{'#' * filled}{'.' * (width - filled)}]"
        line = f"{bar} {done}/{budget} {best}"
        if self._last_error is not None:
            line += f" | last failure: {_shorten(self._last_error, 60)}"
        if _on_terminal(sys.stderr):
            # one line redrawn: pad with blanks over the end of a longer previous line
            sys.stderr.write(f"\r{line.ljust(self._progress_width)}")
            self._progress_width = len(line)
        elif bar != self._progress_shown or done >= budget:
            # a log file or a pipe: a line per step of the bar (at most 31 per run), not a
            # carriage-return redraw per evaluation
            sys.stderr.write(f"{line}\n")
            self._progress_shown = "" if done >= budget else bar
        sys.stderr.flush()


def _on_terminal(stream) -> bool:
    """Whether ``stream`` is an interactive terminal (where a bar can be redrawn in place)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _checked_budget(budget: object, initial_design: int, q: int, given: int = 0) -> int:
    """``budget`` as an int, refused unless it covers the ``given`` initial points, the initial
    design and one batch of ``q`` points (``q`` already checked)."""
    budget = check_int("budget", budget, minimum=1)
    if budget < given:
        raise ConfigurationError(
            f"`budget` ({budget}) must be at least the number of `initial_points` ({given}), "
            "which are all evaluated first; raise `budget`, or pass fewer points."
        )
    if budget < initial_design:
        raise ConfigurationError(
            f"`budget` ({budget}) must be an integer at least the initial design size "
            f"({initial_design}): raise `budget`, or pass `initial_design={max(budget, 1)}` or "
            "fewer (on a space of few points, at most their number)."
        )
    if q > budget:
        raise ConfigurationError(
            f"`q` ({q}) must be at most `budget` ({budget}): a batch of `q` points does not fit "
            f"in the budget, so no batch of that size would ever be proposed; pass `q` of "
            f"{budget} or fewer, or raise `budget`."
        )
    return budget


def _count_of_points(points: object) -> int:
    """How many points ``initial_points`` holds, for the budget's check before the optimiser
    checks them: the rows of a table ``(k, D)``, one for a point ``(D,)``; 0 for what is not a
    table (refused by the optimiser)."""
    try:
        shape = np.shape(points)
    except ValueError:  # ragged lists
        return 0
    return shape[0] if len(shape) > 1 else len(shape)


def _drawn_design(space: Space, n: int, seed: int) -> Tensor:
    """:func:`seeded_design`, refused with a :class:`ConfigurationError` naming
    ``initial_design`` when its points cannot be held in memory.

    The design is drawn whole (the first ``k`` of ``n`` points drawn at once are not the ``k``
    points drawn alone), so its size is checked first: more than a quarter of the machine's
    memory (drawing needs temporaries of its size) is refused before anything is allocated, and
    an allocation that fails all the same is reported as the same error.
    """
    size = n * math.prod(space.point_shape) * torch.finfo(torch.float64).bits // 8
    memory = physical_memory_bytes()

    def refused(why: str) -> ConfigurationError:
        return ConfigurationError(
            f"`initial_design` ({n}) asks for {n} points of {space!r} drawn at once, "
            f"{size:,} bytes in float64{why}. Each point of the design is one evaluation of the "
            "objective before the surrogate takes over: lower `initial_design` (5 to a few "
            "hundred is usual)."
        )

    if memory is not None and 4 * size > memory:
        raise refused(f", more than a quarter of this machine's memory ({memory:,} bytes)")
    try:
        return seeded_design(space, n, seed)
    except MemoryError as err:
        raise refused(", which could not be allocated") from err
    except RuntimeError as err:
        if "alloc" not in str(err) and not isinstance(err, torch.OutOfMemoryError):
            raise
        raise refused(f", which could not be allocated ({_shorten(str(err), 120)})") from err


def seeded_design(space: Space, n: int, seed: int) -> Tensor:
    """The ``n`` initial points a :class:`BayesianOptimizer` with ``seed`` evaluates first, for
    baselines that share them (random search in the regret benchmark).

    Drawn on the CPU, so that a seed gives the same design on every device; on a finite space the
    points are distinct.

    Returns:
        Tensor ``(n, *point_shape)`` on the CPU.
    """
    return _distinct_random_points(space, n, torch.Generator().manual_seed(seed))


def _distinct_random_points(space: Space, n: int, generator: torch.Generator) -> Tensor:
    """``n`` points drawn by ``space.random``; on a finite space, ``n`` distinct points.

    On a finite space repeated draws are skipped, which samples without replacement with the
    space's own weights (vertex areas on a mesh); ``n`` must not exceed the number of points.

    Returns:
        Tensor ``(n, *point_shape)`` on the CPU.
    """
    if not space.is_discrete:
        return space.random(n, generator=generator)
    chosen: dict[tuple, Tensor] = {}
    for _ in range(64):
        for point in space.random(max(2 * n, 16), generator=generator):
            chosen.setdefault(tuple(point.reshape(-1).tolist()), point)
            if len(chosen) == n:
                return torch.stack(list(chosen.values()))
    # very uneven weights: complete the design with the remaining points in a seeded order
    everything = space.all_points()
    for point in everything[torch.randperm(everything.shape[0], generator=generator)]:
        chosen.setdefault(tuple(point.reshape(-1).tolist()), point)
        if len(chosen) == n:
            break
    return torch.stack(list(chosen.values()))


def _extras(extra: object, n: int) -> list[dict[str, Any]]:
    """``extra`` of ``tell`` as one JSON record per point (a dict is shared by all ``n``).

    Raises:
        InputDataError: ``extra`` is not a dict of JSON values or a list of ``n`` of them.
    """
    records = list(extra) if isinstance(extra, (list, tuple)) else [extra] * n
    if len(records) != n:
        raise InputDataError(
            f"`extra` lists {len(records)} records for {n} points in `X`; give one dict per "
            "point, or one dict shared by all."
        )
    try:
        return [json_values("extra", record) for record in records]
    except ConfigurationError as err:
        raise InputDataError(str(err)) from None


def _nearest(space: Space, points: Tensor, x: Tensor) -> tuple[int, float]:
    """The position of the point of ``points`` ``(k, *point_shape)`` nearest to ``x``
    (``point_shape``) by ``space.scaled_distance``, and that distance (NaN counts as infinite)."""
    distance = torch.nan_to_num(space.scaled_distance(points, x.expand_as(points)), nan=math.inf)
    nearest = int(torch.argmin(distance))
    return nearest, float(distance[nearest])


def _key(point: Tensor) -> tuple[float, ...]:
    """The coordinates of one point (any shape) as a tuple, to compare points of a finite space."""
    return tuple(point.reshape(-1).tolist())


def _evaluation_key(evaluation: Evaluation) -> tuple[float, ...]:
    """:func:`_key` of an evaluation's point (recorded as nested lists, in float64)."""
    return _key(torch.tensor(evaluation.x, dtype=torch.float64))


def _scaled_outcomes(Y: Tensor) -> tuple[Tensor, float, float]:
    """``((Y - offset) * scale, offset, scale)``, the values as the surrogate sees them.

    When the range of ``Y`` is below :data:`_OUTCOME_SPREAD_LIMIT`, ``offset`` is the smallest
    value and ``scale`` the exact power of two that brings the range near 1: values equal to
    their last bits (sin(1) computed several ways) become a few units instead of 1.9e15 +- 0.5,
    whose differences acquisitions working in the model's units (qMES) lose to rounding.
    Otherwise ``offset`` is 0, and ``scale`` is 1 unless the largest magnitude lies outside
    ``[2**-100, 2**100]``, where it is the power of two that brings it near 1. The scaling is
    exact in float64, and so is the subtraction when the values lie within a factor of two of
    one another (Sterbenz's lemma: the case of values equal to their last bits); otherwise it
    rounds to the last place of the range. Surrogates standardise their outcomes, so the model is
    the same up to the map, but the squares of ``1e300`` no longer overflow and a range of
    ``1e-9`` is modelled as well as a range of 1 (see :data:`_OUTCOME_SPREAD_LIMIT`)."""
    largest = float(Y.abs().max()) if Y.numel() else 0.0
    if largest == 0.0:
        return Y, 0.0, 1.0
    spread = float(Y.max() - Y.min())
    if 0.0 < spread < _OUTCOME_SPREAD_LIMIT:
        offset, (_, exponent) = float(Y.min()), math.frexp(spread)  # spread = m * 2**exponent
    elif 1 / _OUTCOME_SCALE_LIMIT <= largest <= _OUTCOME_SCALE_LIMIT:
        return Y, 0.0, 1.0
    else:
        offset, (_, exponent) = 0.0, math.frexp(largest)
    scaled = torch.ldexp(Y - offset, torch.tensor(-exponent, device=Y.device))
    return scaled, offset, math.ldexp(1.0, -exponent)


def _failure_message(error: object) -> str:
    """The recorded message of a failed evaluation: a string as it is, an exception as
    ``Type: message``, None as "failed (no message given)".

    Raises:
        InputDataError: ``error`` is something else (a number, a list inside the list).
    """
    if isinstance(error, str):
        return error
    if error is None:
        return "failed (no message given)"
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}"
    raise InputDataError(
        f"`error` must be a message (a string), an exception, a list of those (one per point) "
        f"or None, got {type_name(error)} {_shorten(repr(error), 40)}."
    )


def _declared_failures(on_error) -> tuple[type[Exception], ...]:
    types = on_error if isinstance(on_error, tuple) else (on_error,)
    for t in types:
        if not (isinstance(t, type) and issubclass(t, BaseException)):
            raise ConfigurationError(
                f"`on_error` must be an exception type or a tuple of them (e.g. "
                f"on_error=(TimeoutError, RuntimeError)), got {on_error!r}."
            )
        if not issubclass(t, Exception):
            raise ConfigurationError(
                f"`on_error` takes subclasses of Exception, got {t.__name__} (a BaseException "
                "that is not an Exception): Ctrl-C (KeyboardInterrupt) and SystemExit must stop "
                "the run, not be recorded as failed evaluations. Pass on_error=Exception to "
                "record every error of the objective as a failure."
            )
    return (EvaluationFailed, *types)


def _stop_rule(
    opt: BayesianOptimizer, callback: Callback | None, max_seconds: float | None
) -> Callable[[Evaluation], str | None]:
    """``should_stop(evaluation)``: why the run must stop after ``evaluation`` (``"callback"``,
    ``"max_seconds"``), or None. The wall-time budget counts on the run's clock from this call
    to the moment ``evaluation`` was told (its ``elapsed``). ``callback`` and ``max_seconds``
    are checked (:meth:`BayesianOptimizer._checked_run`)."""
    started = opt._elapsed()  # the run's clock starts (or goes on) now

    def should_stop(evaluation: Evaluation) -> str | None:
        if callback is not None:
            try:
                answer = callback(opt, evaluation)
            except Exception as err:
                err.add_note(
                    f"manibo: the callback raised this after evaluation {evaluation.index}, "
                    "which is recorded; the run stopped."
                )
                raise
            if answer is not None and not (_is_boolean(answer) and _shape(answer) == ()):
                raise ConfigurationError(
                    f"the callback returned {type_name(answer)} {_shorten(repr(answer), 40)} "
                    f"after evaluation {evaluation.index}; it must return a boolean (Python, "
                    "NumPy, or a 0-d torch tensor): True to stop the run, False or None to go "
                    "on. A number is not taken as a boolean: return `bool(...)` of it."
                )
            if answer:
                return "callback"
        if max_seconds is not None and evaluation.elapsed - started >= max_seconds:
            return "max_seconds"
        return None

    return should_stop


def _check_callback_signature(callback: Callable[..., object]) -> None:
    """Refuse a callback that cannot be called with ``(optimizer, evaluation)``, before the first
    evaluation is paid for (a callable whose signature Python cannot read passes).

    Raises:
        ConfigurationError: naming the callback, its signature and the call it refuses.
    """
    try:
        signature = inspect.signature(callback)
    except (TypeError, ValueError):  # a builtin or an extension type without a signature
        return
    try:
        signature.bind(None, None)
    except TypeError as err:
        name = getattr(callback, "__qualname__", type(callback).__name__)
        raise ConfigurationError(
            f"`callback` must accept two arguments, callback(optimizer, evaluation), but "
            f"{name}{signature} does not ({err}); it is called after every told evaluation. "
            "Define it as `def callback(optimizer, evaluation): ...` (returning True stops the "
            "run)."
        ) from None


def _as_objective_value(value: object, x: Tensor) -> float:
    """One real number from what the objective returned, or an :class:`ObjectiveError`.

    A one-element tensor or NumPy array of a real dtype counts; a boolean (Python, NumPy or
    torch: ``True`` is not 1.0) or a complex number does not."""
    if isinstance(value, Tensor):
        value = value.detach()  # float() of a tensor that requires grad would warn
        number = value.numel() == 1 and not (value.is_complex() or value.dtype == torch.bool)
    elif hasattr(value, "dtype") and hasattr(value, "size"):  # a NumPy scalar or array
        number = value.size == 1 and getattr(value.dtype, "kind", "") in ("i", "u", "f")
    else:
        number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    reason = ""
    if number:
        scalar = value
        if not isinstance(value, Tensor) and getattr(value, "ndim", 0):
            # float() of a NumPy array of shape (1,) warns ("Conversion of an array with ndim >
            # 0 to a scalar is deprecated"); its one element, reshaped to (), converts quietly
            with contextlib.suppress(AttributeError, TypeError, ValueError):  # np.matrix: 2-D
                scalar = value.reshape(())
        try:
            return float(scalar)
        except OverflowError:  # an integer beyond float: 10**400
            reason = ", and this one is too large for a float (at most about 1.8e308)"
        except (TypeError, ValueError):
            pass
    raise ObjectiveError(
        f"the objective returned {type_name(value)} {_shorten(repr(value), 80)} at x = "
        f"{_shorten(str(x.tolist()), 80)}; it must return one real number (a float){reason}. "
        "Return float(...) of the quantity to optimise; declare a failed evaluation by raising "
        "manibo.EvaluationFailed."
    )


def _is_boolean(value: object) -> bool:
    """Whether ``value`` is a bool, a NumPy bool or a boolean array or tensor."""
    return isinstance(value, bool) or str(getattr(value, "dtype", "")) in ("bool", "torch.bool")


def _shape(value: object) -> tuple[int, ...]:
    """The shape of an array or tensor; ``()`` for a Python scalar."""
    return tuple(getattr(value, "shape", ()))


def _note_programming_error(err: BaseException, x: Tensor) -> None:
    """Say where the objective raised ``err`` (not for errors manibo raised with that already)."""
    stopped = (
        ObjectiveError,
        ObjectiveExitedError,
        JournalWriteError,
        KeyboardInterrupt,
        SystemExit,
    )
    if isinstance(err, stopped):  # no failure to record: the note's advice would not apply
        return
    err.add_note(
        f"manibo: the objective raised this at x = {_shorten(str(x.tolist()), 80)}; the run "
        "stopped without recording the point. To record expected failures and go on, raise "
        "manibo.EvaluationFailed, or name their types: run(..., on_error=...) in Python, "
        "--on-error with manibo run."
    )


def _shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


class _TimedObjective:
    """The objective as an executor runs it, returning ``(value, seconds)`` timed where it runs,
    so that an evaluation's time leaves out the wait for the loop to collect it (the loop
    proposes the next points meanwhile); an exception it raises carries its seconds as
    ``_manibo_seconds``."""

    def __init__(self, objective: Objective) -> None:
        self.objective = objective

    def __call__(self, x: Tensor) -> tuple[object, float]:
        start = time.perf_counter()
        try:
            value = self.objective(x)
        except BaseException as err:
            with contextlib.suppress(AttributeError):  # an exception that takes no attributes
                err._manibo_seconds = time.perf_counter() - start
            raise
        return value, time.perf_counter() - start


def _write_error_message(
    path: Path, err: BaseException, unwritten: list[Evaluation], asked: int, closed: bool
) -> str:
    shown = "; ".join(
        f"index {e.index}: x = {_shorten(str(e.x), 60)}, "
        + (f"y = {e.y!r}" if e.status == "ok" else f"failed ({_shorten(e.error or '', 40)})")
        for e in unwritten[:5]
    )
    more = f" and {len(unwritten) - 5} more" if len(unwritten) > 5 else ""
    what = [f"{len(unwritten)} evaluation(s)"] if unwritten else []
    what += [f"{asked} asked point(s)"] if asked else []
    if closed:
        message = (
            f"could not write {' and '.join(what)} to journal {path}: this optimiser was closed "
            "(by close() or at the end of its `with` block) and writes no journal any more. They "
            "are in memory (`history`); to record them, resume the journal "
            "(BayesianOptimizer.resume) and tell them to the resumed optimiser"
        )
    elif isinstance(err, JournalTamperedError):
        message = (
            f"could not write {' and '.join(what)} to journal {path} ({err}). They are in "
            "memory (`history`), but this optimiser will not write to that journal again: to "
            "keep them, tell the evaluations of `history` to a new optimiser with a new journal"
        )
    else:
        message = (
            f"could not write {' and '.join(what)} to journal {path} ({err}). Nothing is lost: "
            "they are in memory and are written by the next `ask`, `tell`, `run` or `flush()` "
            "once the journal can be written"
        )
    if asked and not closed and not isinstance(err, JournalTamperedError):
        message += " (asked points not handed out yet are handed out by the next `ask`)"
    return message + (f". Unwritten: {shown}{more}." if unwritten else ".")


def _space_from_journal(recorded: dict[str, Any]) -> Space:
    """The space of the journal whose header is ``recorded``: rebuilt from its name, or from the
    ``manibo run`` spec its metadata records when that spec builds a space of the recorded
    fingerprint.

    Raises:
        ConfigurationError: neither rebuilds it; the message says what to pass as ``space=``.
    """
    text = recorded["space"]
    space = _space_from_repr(text)
    if space is not None:
        return space
    spec = (recorded.get("metadata") or {}).get("space")
    if not isinstance(spec, str):
        raise ConfigurationError(
            f"cannot rebuild the space {text!r} from its name; pass `space=` to resume()."
        )
    from manibo.spaces import make_space

    try:
        space = make_space(spec)
        if space.fingerprint() == recorded["space_fingerprint"]:
            return space
        why = "builds a space with another content fingerprint"
    except ManiboError as err:
        why = f"cannot be built here ({_shorten(str(err), 120).rstrip('.')})"
    raise ConfigurationError(
        f"cannot rebuild the space {text!r} from its name, and the spec {spec!r} that the "
        f'journal\'s metadata records {why}; pass `space=make_space("{spec}")` to resume() '
        "where it builds the journal's space (a graph or mesh file as in the original run), or "
        "the space itself as `space=`."
    )


def _space_from_repr(text: str) -> Space | None:
    """The space named ``text`` when it is fixed by its name (``Sphere(2)``), else None."""
    from manibo.spaces import (
        Circle,
        RealProjectiveSpace,
        SpecialOrthogonal,
        SpecialUnitary,
        Sphere,
        Torus,
    )

    patterns = {
        r"Sphere\((\d+)\)": lambda m: Sphere(int(m.group(1))),
        r"Circle\(\)": lambda m: Circle(),
        r"Torus\((\d+)\)": lambda m: Torus(int(m.group(1))),
        r"SpecialOrthogonal\((\d+)\)": lambda m: SpecialOrthogonal(int(m.group(1))),
        r"SpecialUnitary\((\d+)\)": lambda m: SpecialUnitary(int(m.group(1))),
        r"RealProjectiveSpace\((\d+)\)": lambda m: RealProjectiveSpace(int(m.group(1))),
    }
    for pattern, build in patterns.items():
        match = re.fullmatch(pattern, text)
        if match:
            return build(match)
    return None


_RUN_OPTIONS = ("progress", "executor", "max_parallel", "on_error", "callback", "max_seconds")


def _optimize(
    objective: Objective, space: Space, budget: int, minimizing: bool, name: str, /, **options
) -> OptimizationResult:
    if "minimize" in options:
        other = "maximize" if name == "minimize" else "minimize"
        raise ConfigurationError(
            f"`{name}()` takes no `minimize` option: it always {name}s. Call manibo.{other}(...) "
            f"to {other} the objective."
        )
    settings = list(inspect.signature(BayesianOptimizer).parameters)[1:]
    known = {*settings, *_RUN_OPTIONS}
    unknown = sorted(set(options) - known)
    if unknown:
        close = {u: difflib.get_close_matches(u, sorted(known), n=1, cutoff=0.8) for u in unknown}
        hints = "".join(f" Did you mean `{c[0]}` for `{u}`?" for u, c in close.items() if c)
        raise ConfigurationError(
            f"unknown option(s) {', '.join(unknown)} for {name}().{hints} It takes "
            f"{', '.join(s for s in settings if s != 'minimize')} (the settings of "
            f"BayesianOptimizer) and {', '.join(_RUN_OPTIONS)}; options of the surrogate (`nu`, "
            "`max_levels`, ...) go in `surrogate_options={...}`."
        )
    # the budget covers the initial design before the optimiser draws it (a design of 10**9
    # points would be drawn, out of memory, before run() could refuse the budget of 6)
    defaults = inspect.signature(BayesianOptimizer).parameters
    initial_design = checked_initial_design(
        options.get("initial_design", defaults["initial_design"].default)
    )
    # and a batch of q points, before the optimiser builds an acquisition of q points (q = 10**11
    # ran out of memory there)
    q = check_int("q", options.get("q", defaults["q"].default), minimum=1)
    _checked_budget(budget, initial_design, q, _count_of_points(options.get("initial_points")))
    run_options = {k: options.pop(k) for k in _RUN_OPTIONS if k in options}
    journal, resume = options.pop("journal", None), options.pop("resume", False)
    with BayesianOptimizer(space, minimize=minimizing, **options) as opt:
        # the run's options are checked before the journal is written: a refused call leaves
        # nothing on disk, and the corrected call finds no run there
        opt._checked_run(objective, budget, **run_options)
        opt._open_journal(journal, resume)
        opt._caller_frames = 2  # the run's warnings point at the call of minimize or maximize
        try:
            return opt.run(objective, budget, **run_options)
        except JournalWriteError as err:
            # the optimiser closes here, so no later call writes what it holds: the message says
            # how to keep it (not "Nothing is lost ... written by the next ask")
            again = f"call {name}(..., resume=True) with the same arguments"
            message = unwritten_lines_message(opt.journal, err, again).rstrip("\n")
            raise JournalWriteError(message, err.evaluations, err.lines) from (err.__cause__ or err)


def minimize(objective: Objective, space: Space, budget: int, **options) -> OptimizationResult:
    """Minimise ``objective`` on ``space`` in at most ``budget`` evaluations.

    Args:
        objective: maps one point ``(*point_shape,)`` to a float.
        space: the search space.
        budget: the number of evaluations, at least ``initial_design`` (checked before the
            optimiser is built).
        **options: the settings of :class:`BayesianOptimizer` (``surrogate``, ``seed``,
            ``journal``, ...) and of its ``run``: ``progress``, ``executor``, ``max_parallel``,
            ``on_error``, ``callback`` (``callback(optimizer, evaluation)`` returning True stops
            the run) and ``max_seconds`` (a wall-time budget).

    Returns:
        An :class:`~manibo.result.OptimizationResult`: ``result.best_x``, ``result.best_y``,
        ``result.recommended_x`` (the evaluated point with the best posterior mean, what a noisy
        objective needs), the history as tensors, timings, the fitted model, ``result.plot(path)``.
        ``x, y = minimize(...)`` unpacks the best point and value. To maximise, call
        :func:`maximize`.

    Raises:
        JournalWriteError: the journal could not be written. The optimiser is closed on the way
            out, so the evaluations it held are in no journal: the message ends with their
            journal lines (also its ``lines``); append them to the journal once it can be
            written and call again with ``resume=True`` to continue without evaluating them
            again.
    """
    return _optimize(objective, space, budget, True, "minimize", **options)


def maximize(objective: Objective, space: Space, budget: int, **options) -> OptimizationResult:
    """Maximise ``objective`` on ``space`` in at most ``budget`` evaluations.

    Takes the arguments of :func:`minimize` and returns the same
    :class:`~manibo.result.OptimizationResult`; ``x, y = maximize(...)`` unpacks the best point
    and value. To minimise, call :func:`minimize`.
    """
    return _optimize(objective, space, budget, False, "maximize", **options)
