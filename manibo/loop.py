"""``BayesianOptimizer``: ask / tell / run on a space, with a journal on disk and exact resume."""

from __future__ import annotations

import math
import re
import sys
import time
import warnings
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from manibo._validation import as_tensor_arg, check_trailing_shape, checked_device
from manibo.acquisitions import build_acquisition, check_acquisition, required_features
from manibo.exceptions import ConfigurationError, InputDataError, TruncationWarning
from manibo.journal import Evaluation, Journal
from manibo.models import build_surrogate, check_surrogate_supports
from manibo.optim import LBFGSOptions, optimize_acqf_on_space
from manibo.optim.projection import optimize_acqf_by_projection
from manibo.spaces.base import Space

Objective = Callable[[Tensor], float]


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
        initial_design: number of uniform random points before the surrogate takes over.
        seed: seed of the initial design, the acquisition samplers and the optimiser's starts.
        journal: path of a JSON-lines journal; every ``tell`` is on disk before it returns.
        surrogate_options: passed to the surrogate factory.
        optimizer: ``"riemannian"`` (on the space) or ``"projection"`` (box optimisation of the
            ambient coordinates followed by projection; only for surrogates defined off the space).
        num_restarts: local optimisations per ``ask``.
        raw_samples: uniform samples scored to choose the starts.
        exclude_evaluated: discrete spaces: never propose an evaluated point again.
        optimizer_options: fields of :class:`~manibo.optim.LBFGSOptions` (``maxiter``, ``gtol``).
        device: where the surrogate is fitted and the acquisition optimised (``"cpu"``, ``"cuda"``);
            ``ask`` returns points there. The journal and the history are device-independent, so a
            run can be resumed on another device.
    """

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
    ) -> None:
        check_surrogate_supports(surrogate, space)
        check_acquisition(acquisition, q)
        check_surrogate_supports(surrogate, space, required_features(acquisition))
        if optimizer not in ("riemannian", "projection"):
            raise ConfigurationError(
                f"`optimizer` must be 'riemannian' or 'projection', got {optimizer!r}."
            )
        if int(initial_design) != initial_design or initial_design < 1:
            raise ConfigurationError(
                f"`initial_design` must be a positive integer, got {initial_design!r}."
            )
        self.space = space
        self.device = checked_device(device)
        self.config = {
            "space": repr(space),
            "surrogate": surrogate,
            "acquisition": acquisition,
            "q": int(q),
            "minimize": bool(minimize),
            "initial_design": int(initial_design),
            "seed": int(seed),
            "surrogate_options": dict(surrogate_options or {}),
            "optimizer": optimizer,
            "num_restarts": int(num_restarts),
            "raw_samples": int(raw_samples),
            "exclude_evaluated": bool(exclude_evaluated),
            "optimizer_options": dict(optimizer_options or {}),
        }
        self._lbfgs = LBFGSOptions(**self.config["optimizer_options"])
        self._truncation_reported = False
        self._previous_model = None  # offered to surrogates that warm-start (not journaled)
        self._history: list[Evaluation] = []
        self._pending: list[Tensor] = []
        # drawn on the CPU so that a seed gives the same design on every device
        self._design = space.random(
            initial_design, generator=torch.Generator().manual_seed(int(seed))
        ).to(self.device)
        self.journal = Journal(journal) if journal is not None else None
        if self.journal is not None:
            self.journal.write_header(self.config)

    # ------------------------------------------------------------------ construction from a journal
    @classmethod
    def resume(
        cls,
        journal: str | Path,
        space: Space | None = None,
        device: str | torch.device | None = None,
    ) -> BayesianOptimizer:
        """Continue the run recorded in ``journal`` with the same state (data, design, seeds).

        Args:
            journal: the journal path.
            space: the space; needed for spaces that cannot be rebuilt from their name (meshes,
                graphs, products).
            device: where to continue (the journal does not depend on the device it was written on).
        """
        config, evaluations = Journal(journal).read()
        if space is None:
            space = _space_from_repr(config["space"])
        elif repr(space) != config["space"]:
            raise ConfigurationError(
                f"the journal was written for {config['space']}, but `space` is {space!r}."
            )
        opt = cls(space, device=device, **{k: v for k, v in config.items() if k != "space"})
        opt.journal = Journal(journal)  # continue the existing file: no new header
        opt._history = evaluations
        return opt

    # ------------------------------------------------------------------ state
    @property
    def history(self) -> list[Evaluation]:
        """Every told evaluation, failed ones included, in order."""
        return list(self._history)

    @property
    def pending(self) -> Tensor | None:
        """Asked-but-not-told points ``(k, D)`` on ``device``, or None."""
        return torch.stack(self._pending) if self._pending else None

    @property
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

    def _training_data(self) -> tuple[Tensor, Tensor]:
        ok = [e for e in self._history if e.status == "ok"]
        X = torch.tensor([e.x for e in ok], dtype=torch.float64, device=self.device)
        Y = torch.tensor([e.y for e in ok], dtype=torch.float64, device=self.device)
        X, Y = X.reshape(len(ok), -1), Y.reshape(-1, 1)
        return X, (-Y if self.config["minimize"] else Y)

    # ------------------------------------------------------------------ ask / tell
    def ask(self, n: int | None = None) -> Tensor:
        """Propose ``n`` (default ``q``) points; they stay pending until told.

        Returns:
            Tensor ``(n, D)`` of points on the space, on ``device``.
        """
        n = self.config["q"] if n is None else int(n)
        if n < 1:
            raise ConfigurationError(f"`n` must be >= 1, got {n}.")
        started = len(self._history) + len(self._pending)
        num_ok = sum(e.status == "ok" for e in self._history)
        if started + n <= self.config["initial_design"] or num_ok < 2:
            points = self._random_points(started, n)
        else:
            points = self._propose(n, seed=self.config["seed"] * 1_000_003 + started)
        self._pending.extend(points)
        return points

    def _random_points(self, start: int, n: int) -> Tensor:
        design = self._design
        rows = [design[i] for i in range(start, min(start + n, design.shape[0]))]
        if len(rows) < n:  # beyond the design (all evaluations failed so far): keep drawing, seeded
            gen = torch.Generator().manual_seed(self.config["seed"] * 7919 + start)
            rows.extend(self.space.random(n - len(rows), generator=gen).to(self.device))
        return torch.stack(rows)

    def _propose(self, n: int, seed: int) -> Tensor:
        # BoTorch draws some seeds from the global RNG (qLogNEI's baseline pruning): fork and seed
        # it, so a proposal depends only on (seed, data) and a resumed run proposes the same point.
        cuda = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TruncationWarning)
            torch.manual_seed(seed)
            points = self._propose_seeded(n, seed)
        for w in caught:  # a new surrogate every iteration: say a truncation binds once per run
            if not (issubclass(w.category, TruncationWarning) and self._truncation_reported):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            self._truncation_reported |= issubclass(w.category, TruncationWarning)
        return points

    def _propose_seeded(self, n: int, seed: int) -> Tensor:
        X, Y = self._training_data()
        model = build_surrogate(
            self.config["surrogate"],
            self.space,
            X,
            Y,
            previous_model=self._previous_model,
            **self.config["surrogate_options"],
        )
        self._previous_model = model
        acqf = build_acquisition(self.config["acquisition"], model, X, Y, self.pending, seed)
        common = {
            "num_restarts": self.config["num_restarts"],
            "raw_samples": self.config["raw_samples"],
        }
        if self.config["optimizer"] == "projection":
            candidates, _ = optimize_acqf_by_projection(acqf, self.space, q=n, seed=seed, **common)
        else:
            exclude = None
            if self.space.is_discrete and self.config["exclude_evaluated"]:
                evaluated = [
                    torch.tensor(e.x, dtype=torch.float64, device=self.device).reshape(-1)
                    for e in self._history
                ]
                exclude = (
                    torch.stack(evaluated + self._pending) if evaluated or self._pending else None
                )
            candidates, _ = optimize_acqf_on_space(
                acqf, self.space, q=n, seed=seed, exclude=exclude, options=self._lbfgs, **common
            )
        return candidates.detach().reshape(n, -1)

    def tell(self, X: Tensor, Y: Tensor | float, seconds: float | None = None) -> None:
        """Record successful evaluations; they are written to the journal before this returns.

        Args:
            X: points ``(n, D)`` (or one point ``(D,)``) on the space, on any device.
            Y: values ``(n,)``, ``(n, 1)`` or a scalar, all finite (use :meth:`tell_failure` for
                failed evaluations).
            seconds: wall time of the evaluation, recorded in the journal.
        """
        X = self._validated_points(X)
        Y = torch.as_tensor(Y, dtype=torch.float64).detach().cpu().reshape(-1)
        if Y.shape[0] != X.shape[0]:
            raise InputDataError(
                f"`Y` has {Y.shape[0]} values for {X.shape[0]} points in `X`; give one value per "
                "point."
            )
        if not torch.isfinite(Y).all():
            raise InputDataError(
                f"`Y` contains NaN or infinite values ({Y.tolist()}). Report failed evaluations "
                "with `tell_failure(X, error)` so that they are recorded and kept out of the model."
            )
        for x, y in zip(X, Y, strict=True):
            self._record(
                Evaluation(x=x.tolist(), y=float(y), index=len(self._history), seconds=seconds)
            )

    def tell_failure(self, X: Tensor, error: str | BaseException) -> None:
        """Record failed evaluations (kept in the history and journal, left out of the model)."""
        X = self._validated_points(X)
        message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        for x in X:
            self._record(
                Evaluation(
                    x=x.tolist(), y=None, status="failed", error=message, index=len(self._history)
                )
            )

    def _validated_points(self, X: Tensor) -> Tensor:
        X = as_tensor_arg("X", X).detach().to("cpu", torch.float64)
        if X.dim() == len(self.space.point_shape):
            X = X.unsqueeze(0)
        check_trailing_shape("X", X, self.space.point_shape, repr(self.space))
        if X.dim() != 1 + len(self.space.point_shape):
            raise InputDataError(
                f"`X` must have shape (n, *point_shape), got {tuple(X.shape)}; stack the points "
                "along one leading dimension."
            )
        return self.space.check(X, "X")

    def _record(self, evaluation: Evaluation) -> None:
        if self.journal is not None:
            self.journal.append(evaluation)
        self._history.append(evaluation)
        x = torch.tensor(evaluation.x, dtype=torch.float64, device=self.device)
        for i, p in enumerate(self._pending):
            if torch.allclose(p, x, atol=1e-12, rtol=0):
                del self._pending[i]
                break

    # ------------------------------------------------------------------ run
    def run(
        self,
        objective: Objective,
        budget: int,
        executor: Executor | None = None,
        max_parallel: int | None = None,
        progress: bool = True,
    ) -> tuple[Tensor, float]:
        """Evaluate ``objective`` until ``budget`` evaluations are told (resumed ones included).

        Args:
            objective: maps one point ``(D,)`` (on ``device``) to a float; raising or returning
                NaN marks a failure.
            budget: total number of evaluations, at least ``initial_design``.
            executor: evaluate in parallel with any ``concurrent.futures.Executor`` (process pool,
                Dask, Ray); asked-but-not-told points are pending for the surrogate meanwhile.
            max_parallel: evaluations in flight with an executor (default ``q``); each in-flight
                point is pending for the surrogate, so new proposals avoid it.
            progress: print a one-line progress bar on stderr.

        Returns:
            ``best``: the best point and its value.
        """
        if int(budget) != budget or budget < self.config["initial_design"]:
            raise ConfigurationError(
                f"`budget` ({budget}) must be an integer at least the initial design size "
                f"({self.config['initial_design']})."
            )
        if executor is None:
            while len(self._history) < budget:
                batch = self.ask(min(self.config["q"], budget - len(self._history)))
                for x in batch:
                    self._evaluate_and_tell(objective, x)
                    self._progress(budget, progress)
        else:
            self._run_parallel(
                objective, budget, executor, max_parallel or self.config["q"], progress
            )
        if progress:
            sys.stderr.write("\n")
        return self.best

    def _evaluate_and_tell(self, objective: Objective, x: Tensor) -> None:
        start = time.perf_counter()
        try:
            value = float(objective(x))
        except Exception as err:  # the objective is user code: any failure is recorded, not raised
            self.tell_failure(x, err)
            return
        self._tell_value(x, value, time.perf_counter() - start)

    def _tell_value(self, x: Tensor, value: float, seconds: float | None) -> None:
        if math.isfinite(value):
            self.tell(x, value, seconds=seconds)
        else:
            self.tell_failure(x, f"objective returned {value}")

    def _run_parallel(self, objective, budget, executor, max_parallel, progress) -> None:
        running: dict[Future, tuple[Tensor, float]] = {}
        while len(self._history) < budget:
            while running.__len__() < max_parallel and len(self._history) + len(running) < budget:
                x = self.ask(1)[0]
                running[executor.submit(objective, x)] = (x, time.perf_counter())
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in done:
                x, start = running.pop(future)
                try:
                    value = float(future.result())
                except Exception as err:  # a failed evaluation is recorded and the run goes on
                    self.tell_failure(x, err)
                else:
                    self._tell_value(x, value, time.perf_counter() - start)
                self._progress(budget, progress)

    def _progress(self, budget: int, enabled: bool) -> None:
        if not enabled:
            return
        done = len(self._history)
        width = 30
        filled = int(width * done / budget)
        try:
            best = f"best {self.best[1]:.5g}"
        except ConfigurationError:
            best = "no success yet"
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{budget} {best}")
        sys.stderr.flush()


def _space_from_repr(text: str) -> Space:
    from manibo.spaces import Circle, SpecialOrthogonal, Sphere, Torus

    patterns = {
        r"Sphere\((\d+)\)": lambda m: Sphere(int(m.group(1))),
        r"Circle\(\)": lambda m: Circle(),
        r"Torus\((\d+)\)": lambda m: Torus(int(m.group(1))),
        r"SpecialOrthogonal\(3\)": lambda m: SpecialOrthogonal(3),
    }
    for pattern, build in patterns.items():
        match = re.fullmatch(pattern, text)
        if match:
            return build(match)
    raise ConfigurationError(
        f"cannot rebuild the space {text!r} from its name; pass `space=` to resume()."
    )


def _optimize(
    objective: Objective, space: Space, budget: int, minimize: bool, **options
) -> tuple[Tensor, float]:
    progress = options.pop("progress", True)
    return BayesianOptimizer(space, minimize=minimize, **options).run(
        objective, budget, progress=progress
    )


def minimize(objective: Objective, space: Space, budget: int, **options) -> tuple[Tensor, float]:
    """Minimise ``objective`` on ``space`` in ``budget`` evaluations; returns ``(x_best, y_best)``.

    ``options`` go to :class:`BayesianOptimizer`; ``progress`` goes to its ``run``.
    """
    return _optimize(objective, space, budget, True, **options)


def maximize(objective: Objective, space: Space, budget: int, **options) -> tuple[Tensor, float]:
    """Maximise ``objective`` on ``space`` in ``budget`` evaluations; returns ``(x_best, y_best)``.

    ``options`` go to :class:`BayesianOptimizer`; ``progress`` goes to its ``run``.
    """
    return _optimize(objective, space, budget, False, **options)
