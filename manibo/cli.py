"""The ``manibo`` command: ``demo`` (main demo), ``run`` (BO of a problem), ``bench``, ``info``.

``manibo run`` keeps a journal in ``--out``; running the same command again resumes it (the
settings must be the same, or the resume is refused with the list of differences; ``--fresh``
starts over), evaluating first the points of a batch that the interrupted run asked for and did
not evaluate. Exit statuses: 0, done; 2, manibo refused the input (arguments, settings, a resume
with other settings, data off the space), told in one ``manibo: error: ...`` line without a
traceback; 1, the run failed: an error in the code
of your objective shows its traceback, and an objective that returns something other than one
number, or a run in which no evaluation succeeded, ends with one ``manibo: error: ...`` line
(a journal that cannot be written, a full disk, adds the journal lines it could not write);
130, Ctrl-C (one ``manibo: interrupted`` line); 143, SIGTERM (``manibo: terminated``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import importlib.util
import inspect
import math
import os
import platform
import re
import signal
import sys
import textwrap
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from manibo import _json
from manibo.exceptions import (
    ConfigurationError,
    ManiboError,
    ManiboWarning,
    NoEvaluationSucceededWarning,
    ObjectiveError,
    ObjectiveExitedError,
)

if TYPE_CHECKING:
    import numpy as np

    from manibo.journal import JournalWriteError

#: ``manibo run`` says how long its set-up took (building the space, say the spectrum of a large
#: mesh, and checking the settings) when it took longer than this, in seconds: the run's clock,
#: and the time its summary reports, start after it.
SET_UP_NOTICE_SECONDS = 5.0

#: Where an editable install's checkout would be (the folder that holds the ``manibo`` package).
SOURCE_ROOT = Path(__file__).resolve().parents[1]


def _info(_: argparse.Namespace) -> int:
    import botorch
    import gpytorch
    import torch

    import manibo

    print(f"manibo {manibo.__version__}")
    print(f"python {platform.python_version()} on {platform.machine()} ({platform.system()})")
    print(
        f"torch {torch.__version__}, gpytorch {gpytorch.__version__}, botorch {botorch.__version__}"
    )
    cuda = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(f"CUDA device: {cuda}; CPU threads: {torch.get_num_threads()}")
    return 0


#: The options of one demo only: option -> (the demo, the keyword of its ``run``, the smallest
#: value it takes and why, and whether that value itself is refused). They are absent from the
#: parsed arguments unless given (their default is ``argparse.SUPPRESS``): the demo's ``run`` has
#: the defaults.
_DEMO_OPTIONS = {
    "--scenarios": ("search", "num_scenarios", 1, "a comparison needs a scenario", False),
    "--budget": ("search", "duration_h", 0, "the mission needs hours to search", True),
    "--workers": ("search", "workers", 1, "the missions need a process", False),
    "--num-train": ("sphere-regression", "num_train", 2, "a GP needs observations to fit", False),
}


def _demo(args: argparse.Namespace) -> int:
    options = {}
    for option, (name, keyword, minimum, reason, exclusive) in _DEMO_OPTIONS.items():
        if keyword not in args:
            continue
        value = options[keyword] = getattr(args, keyword)
        if name != args.name:
            raise ConfigurationError(
                f"{option} is an option of the {name} demo (manibo demo {name}), not of the "
                f"{args.name} demo."
            )
        if not (math.isfinite(value) and (value > minimum if exclusive else value >= minimum)):
            bound = f"a finite number above {minimum}" if exclusive else f"at least {minimum}"
            raise ConfigurationError(f"{option} must be {bound} ({reason}), got {value!r}.")
    out = _output_folder(args.out)
    if args.name == "sphere-regression":
        from manibo.demos.sphere_regression import run
    else:
        from manibo.demos.search_mission import run
    run(out, seed=args.seed, device=args.device, **options)
    return 0


def _integer(text: str) -> int:
    """The integer ``text`` writes (an argument type: a clear message otherwise)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None


def _number(text: str) -> float:
    """The number ``text`` writes (an argument type: a clear message otherwise)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None


def _finite(option: str, value: float, minimum: float) -> float:
    """``value`` if it is finite and at least ``minimum``; else a clear error."""
    if not (math.isfinite(value) and value >= minimum):
        raise ConfigurationError(f"{option} must be a finite number >= {minimum:g}, got {value!r}.")
    return value


def _output_folder(out: str) -> Path:
    """The folder ``out``, created if needed, or a clear error when it is empty, a file or
    read-only."""
    if not out.strip():  # an unset shell variable: "" would quietly mean the current folder
        raise ConfigurationError("--out is empty; give a folder (--out . for the current one).")
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise ConfigurationError(f"--out {out} is a file, not a folder; choose a folder.")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigurationError(
            f"--out {out}: cannot create the folder ({err.strerror or err}); choose a writable "
            "folder."
        ) from err
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigurationError(f"--out {out} is not writable; choose a writable folder.")
    return folder


def _run(args: argparse.Namespace) -> int:
    from manibo._threads import DaemonThreadExecutor
    from manibo.journal import JournalWriteError, set_aside
    from manibo.loop import BayesianOptimizer

    started = time.perf_counter()
    noise = _finite("--noise", args.noise, minimum=0.0)
    max_seconds = args.max_seconds
    if max_seconds is not None and not (math.isfinite(max_seconds) and max_seconds > 0):
        raise ConfigurationError(
            f"--max-seconds must be a positive number of seconds, got {max_seconds!r}."
        )
    if args.budget < args.initial_design:
        raise ConfigurationError(
            f"--budget ({args.budget}) must be at least --initial-design ({args.initial_design})."
        )
    if args.q > args.budget:  # before the optimiser builds the acquisition on a batch of --q
        raise ConfigurationError(
            f"--q ({args.q}) must be at most --budget ({args.budget}): a batch of --q points does "
            f"not fit in the budget; pass --q {args.budget} or fewer, or raise --budget."
        )
    if args.parallel < 1:
        raise ConfigurationError(f"--parallel must be at least 1, got {args.parallel}.")
    if args.parallel > 1 and args.q > 1:
        raise ConfigurationError(
            f"--parallel {args.parallel} proposes each point when an evaluation ends (the others "
            f"in flight pending), so --q {args.q} would have no effect; drop --q."
        )
    if args.parallel > 1 and noise:
        raise ConfigurationError(
            f"--noise draws the noise of evaluation i from --seed and i, which needs the "
            f"evaluations of a benchmark problem one at a time, and --parallel is "
            f"{args.parallel}; drop --parallel or --noise."
        )
    task = _task(args, noise)
    on_error = _failure_types(args.on_error, _objective_modules(task))
    # one thread per evaluation in flight, none of which keeps an interrupted command alive
    executor = DaemonThreadExecutor() if args.parallel > 1 else None
    parallel = args.parallel if executor else None
    out = _output_folder(args.out)
    folder = out.absolute()
    stem = f"{task.name}_{args.surrogate}_{args.acquisition}_seed{args.seed}"
    journal = out / f"{stem}.journal.jsonl"
    args.journal_path = folder / journal.name  # for the line of an interrupted command
    resuming = journal.exists() and not args.fresh
    if resuming:
        task.metadata = _journal_spelling(journal, task.metadata)
    settings = {
        "surrogate": args.surrogate,
        "acquisition": args.acquisition,
        "q": args.q,
        "minimize": not args.maximize,
        "initial_design": args.initial_design,
        "initial_points": _initial_points(args.initial_points),
        "seed": args.seed,
        "optimizer": args.optimizer,
        "num_restarts": args.num_restarts,
        "raw_samples": args.raw_samples,
        "exclude_evaluated": not args.repeat_evaluated,
        "surrogate_options": _parse_options(args.surrogate_option),
        "device": args.device,
        "metadata": task.metadata,
        "noise_std": args.known_noise,
    }
    opt = BayesianOptimizer(task.space, **settings)
    # every check (the surrogate's build check, those of run) before the journal is moved or
    # written: a refused command leaves nothing on disk for the corrected one to stumble on
    opt._checked_run(
        task.objective(opt),
        args.budget,
        executor,
        parallel,
        on_error=on_error,
        max_seconds=max_seconds,
    )
    if args.fresh and journal.exists():
        print(f"moved the previous journal to {set_aside(journal)}")
    elif journal.exists():
        _refuse_another_objective(journal, task.metadata)
    opt._open_journal(journal, resume=True)
    waiting = 0 if opt.pending is None else opt.pending.shape[0]
    if resuming and (opt.history or waiting):  # not the initial points of a new run
        done = len(opt.history)
        more = (
            f"; that is already --budget {args.budget} or more, so nothing is evaluated (raise "
            "--budget to go on)"
            if done >= args.budget
            else ""
        )
        asked = f" and {waiting} asked point(s) not evaluated yet (they go first)"
        asked = asked if waiting else ""
        print(f"resuming {journal} with {done} evaluations{asked}{more}")
    set_up = time.perf_counter() - started
    if set_up > SET_UP_NOTICE_SECONDS:  # not in the run's clock, which starts with the run
        print(f"set-up: {set_up:.1f} s (the space and its spectrum, the checks of the settings)")
    try:
        with opt, warnings.catch_warnings():
            # a run in which nothing succeeded ends the command with an error line (below)
            warnings.simplefilter("ignore", NoEvaluationSucceededWarning)
            result = opt.run(
                _refusing_exit(task.objective(opt)),
                budget=args.budget,
                executor=executor,
                max_parallel=parallel,
                progress=not args.quiet,
                on_error=on_error,
                max_seconds=max_seconds,
                callback=_stop_when_signalled(args.interrupts, args.budget),
            )
    except JournalWriteError as error:  # the evaluations it holds die with this process
        sys.stderr.write(_unwritten_evaluations_message(journal, error))
        return 1
    summary = {"name": task.name, "config": opt.config, **result.as_dict()}
    summary["errors"] = [e.error for e in opt.history]  # None where the evaluation succeeded
    summary.update(task.extra(result))
    # written by absolute path: the objective may have changed the working folder
    paths = {kind: out / f"{stem}.{kind}" for kind in ("json", "png", "txt")}
    text = result.summary() + "".join(f"\n{line}" for line in task.lines(summary))
    try:
        _write_together(
            (folder / paths["json"].name, _text_writer(_json.dumps(summary, indent=2))),
            (folder / paths["png"].name, result.plot),
            (folder / paths["txt"].name, _text_writer(text + "\n")),
        )
    except OSError as error:  # a full disk: the run is in its journal, the results are not
        sys.stderr.write(
            f"manibo: error: could not write the results in {out} ({error}); the "
            f"{len(opt.history)} evaluations are in journal {journal}. Once there is room, run "
            "the same command again: it writes the results from the journal.\n"
        )
        return 1
    print(text)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    if result.best_x is None:  # nothing found: a script that runs manibo must be able to tell
        last = next((e.error for e in reversed(opt.history) if e.error), None)
        sys.stderr.write(
            f"manibo: error: no evaluation succeeded ({result.num_failed} of "
            f"{result.num_evaluations} failed"
            + (f"; the last: {last}" if last else "")
            + f"); each failure's message is in {paths['json']}.\n"
        )
        return 1
    return 0


def _write_together(*files: tuple[Path, Callable[[Path], object]]) -> None:
    """Write each ``(target, write)`` by ``write(temporary)`` on a file beside its target, and
    only once all of them are written, rename each over its target: a kill or a full disk leaves
    the previous files or the new ones, never a part of one, nor the new summary beside the
    previous figure. The temporary names keep the suffix (``savefig`` reads the format from
    it)."""
    temporaries = [
        target.with_name(f".{target.stem}.{os.getpid()}.tmp{target.suffix}") for target, _ in files
    ]
    try:
        for temporary, (_, write) in zip(temporaries, files, strict=True):
            write(temporary)
            with open(temporary, "rb") as f:
                os.fsync(f.fileno())
        for temporary, (target, _) in zip(temporaries, files, strict=True):
            os.replace(temporary, target)
    except BaseException:
        for temporary in temporaries:
            temporary.unlink(missing_ok=True)
        raise


def _text_writer(text: str) -> Callable[[Path], object]:
    return lambda path: path.write_text(text)


def _unwritten_evaluations_message(journal: Path, error: JournalWriteError) -> str:
    """The error line of a run stopped by a failed journal write, followed by the journal lines
    of the evaluations it could not write, so that the user can keep them."""
    from manibo.journal import unwritten_lines_message

    return "manibo: error: " + unwritten_lines_message(journal, error, "run the same command again")


def _objective_modules(task: _Task) -> list[ModuleType]:
    """The modules where ``--on-error`` looks up a bare name, in order: the one ``--objective``
    was found in, then the one that defines the function (an objective imported from elsewhere,
    or a ``functools.partial`` of one); none for a ``--problem``."""
    if task.module is None:
        return []
    function = task.objective(None)
    function = inspect.unwrap(getattr(function, "func", function))
    defining = sys.modules.get(getattr(function, "__module__", None) or "")
    return [task.module] + ([defining] if defining not in (None, task.module) else [])


def _failure_types(names: list[str], homes: list[ModuleType]) -> tuple[type[Exception], ...]:
    """The exception types that ``--on-error`` names, in order.

    A bare name is looked up in ``homes`` (:func:`_objective_modules`: the objective's own
    exception classes) and then among Python's built-in exceptions; ``MODULE:CLASS`` is imported,
    except that a module that is one of ``homes``'s files is that module itself (imported again,
    its classes would be others than those the objective raises).

    Raises:
        ConfigurationError: a name finds nothing, or something that is not a subclass of
            ``Exception``.
    """
    import builtins

    types = []
    for name in names:
        module_name, sep, attribute = name.rpartition(":")
        if sep and module_name.endswith(".py"):
            raise ConfigurationError(
                f"--on-error {name}: name an exception of the --objective file by its name alone "
                f"(--on-error {attribute}), or one of an importable module as MODULE:CLASS."
            )
        if sep:
            module = _exception_module(module_name, name, homes)
            found, where = getattr(module, attribute, None), f"module {module_name!r}"
        else:
            found = next((getattr(m, name) for m in [*homes, builtins] if hasattr(m, name)), None)
            where = ("the --objective's module or " if homes else "") + "Python's built-ins"
        if not (isinstance(found, type) and issubclass(found, Exception)):
            what = (
                f"{where} has no exception of that name"
                if found is None
                else f"it names {found!r}, not a subclass of Exception (Ctrl-C and SystemExit "
                "always stop the run)"
            )
            raise ConfigurationError(
                f"--on-error {name}: {what}; give a built-in exception (RuntimeError, "
                "TimeoutError), a class of the --objective's module by its name, or "
                "MODULE:CLASS."
            )
        types.append(found)
    return tuple(types)


def _exception_module(module_name: str, name: str, homes: list[ModuleType]) -> ModuleType:
    """The module of ``--on-error MODULE:CLASS``: the one of ``homes`` loaded from MODULE's file,
    else MODULE imported."""
    _current_folder_first()
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise ConfigurationError(
            f"--on-error {name}: cannot import {module_name!r}: no module of that name is found; "
            "run from the folder that holds it or install its package, or name an exception of "
            "the --objective's module by its name alone."
        )
    for home in homes:
        home_file = getattr(home, "__file__", None)
        if home_file and spec.origin and Path(spec.origin).resolve() == Path(home_file).resolve():
            return home
    return importlib.import_module(module_name)


def _journal_spelling(journal: Path, metadata: dict) -> dict:
    """``metadata`` with the space spec and the objective spelled as ``journal`` records them,
    where the two name one space or one objective, so that the resumed run matches the journal.

    Journals written before specs were normalised hold them as typed (``' so3 * box2 '``).
    An objective is the same where it is spelled alike (its folder may have moved) or where its
    file and function are (``panel:f`` run in the folder of ``panel.py``, ``/abs/panel.py:f``
    from elsewhere); journals written before the file was recorded are resumed by the spelling
    alone, as then.
    """
    from manibo.journal import recorded_config
    from manibo.spaces.registry import normal_spec

    recorded = (recorded_config(journal) or {}).get("metadata") or {}
    if not isinstance(recorded, dict):
        return metadata
    metadata = dict(metadata)
    space = recorded.get("space")
    if isinstance(space, str) and "space" in metadata and space != metadata["space"]:
        try:
            if normal_spec(space) == metadata["space"]:
                metadata["space"] = space
        except ConfigurationError:
            pass
    if "objective_file" in metadata and "objective" in recorded:
        if "objective_file" not in recorded:
            del metadata["objective_file"]
        elif recorded["objective"] == metadata["objective"]:
            # spelled alike: the same objective, wherever its folder is now (moved, synced)
            metadata["objective_file"] = recorded["objective_file"]
        elif (
            recorded["objective_file"] == metadata["objective_file"]
            and str(recorded["objective"]).rpartition(":")[2]
            == metadata["objective"].rpartition(":")[2]
        ):
            metadata["objective"] = recorded["objective"]
    return metadata


def _refuse_another_objective(journal: Path, metadata: dict) -> None:
    """A clear error when ``journal`` holds a run of another objective, space or problem than
    ``metadata`` names: its file name is the same because it comes from the function's name (not
    its module), the space, the surrogate, the acquisition and the seed only. A journal that
    cannot be read is left to the loop, which says what is wrong with it."""
    from manibo.journal import recorded_config

    recorded = (recorded_config(journal) or {}).get("metadata")
    if not isinstance(recorded, dict):
        return
    keys = ("objective", "space", "problem")
    if "objective_file" in recorded:  # journals of older versions do not record it
        keys += ("objective_file",)
    differences = [
        f"{key}: {recorded.get(key)!r} in the journal, {metadata.get(key)!r} now"
        for key in keys
        if recorded.get(key) != metadata.get(key)
    ]
    if differences:
        raise ConfigurationError(
            f"{journal} holds the run of another objective ({'; '.join(differences)}): a run's "
            "files are named after the function (not its module), the space, --surrogate, "
            "--acquisition and --seed only. Give this run another folder with --out; --fresh "
            "would move the other run's journal aside (renamed, not deleted) and start this "
            "one in its place."
        )


@dataclass
class _Task:
    """What ``manibo run`` optimises: a benchmark problem, or the user's objective on a space."""

    name: str
    space: object
    metadata: dict
    objective: Callable  # objective(optimizer) -> the function of one point
    extra: Callable = lambda result: {}  # more JSON values from the result
    lines: Callable = lambda summary: []  # more summary lines from the JSON values
    module: ModuleType | None = None  # the module --objective was found in


def _task(args: argparse.Namespace, noise: float) -> _Task:
    if (args.problem is None) == (args.objective is None):
        raise ConfigurationError(
            "give either --problem NAME (a benchmark problem) or --objective MODULE:FUNCTION with "
            "--space SPEC (your own function); see `manibo run --help` for the names."
        )
    if args.objective is not None:
        return _objective_task(args, noise)
    for option, given in (("--space", args.space is not None), ("--maximize", args.maximize)):
        if given:
            raise ConfigurationError(
                f"{option} goes with --objective; a benchmark problem (--problem) brings its own "
                "space and is minimised."
            )
    return _problem_task(args, noise)


def _objective_task(args: argparse.Namespace, noise: float) -> _Task:
    from manibo.spaces import make_space
    from manibo.spaces.registry import normal_spec

    if args.space is None:
        raise ConfigurationError(
            "--objective needs --space SPEC, the space its points lie on (e.g. sphere2, so3, "
            "torus3, sphere2*circle); see `manibo run --help` for the specs."
        )
    if noise:
        raise ConfigurationError(
            "--noise adds noise to benchmark problems (--problem); your objective's own noise is "
            "what it returns."
        )
    function, module = load_objective(args.objective)
    space = make_space(args.space)
    spec = normal_spec(args.space)  # " so3 * box2 " resumes the run of "so3*box2"
    name = f"{args.objective.rpartition(':')[2]}_{_file_safe(spec)}"
    metadata = {"objective": args.objective, "space": spec}
    source = getattr(module, "__file__", None)
    if source:  # the objective's identity however it is spelled: its file and function
        metadata["objective_file"] = str(Path(source).resolve())
    return _Task(name, space, metadata, lambda opt: function, module=module)


def _problem_task(args: argparse.Namespace, noise: float) -> _Task:
    import torch

    from manibo.problems import make_problem

    problem = make_problem(args.problem, noise_std=noise)
    # the noise of evaluation i is drawn from a generator seeded by (seed, i): a resumed noisy
    # run observes exactly what the uninterrupted one would have
    metadata = {
        "problem": problem.name,
        "noise_std": noise,
        "noise_generator": "torch.Generator().manual_seed(seed * 2**32 + index)",
    }

    def objective(opt):
        def evaluate(x) -> float:
            generator = torch.Generator().manual_seed(args.seed * 2**32 + len(opt.history))
            return float(problem(x, generator=generator))

        return evaluate

    def extra(result) -> dict:
        true_values = [float(problem.evaluate_true(x)) for x in result.X.cpu()]
        regret, best = [], math.inf
        for value in true_values:
            best = min(best, value)
            regret.append(best - problem.optimal_value)
        recommended = result.recommended_x
        if recommended is not None:
            recommended = float(problem.evaluate_true(recommended.cpu())) - problem.optimal_value
        return {
            "problem": problem.name,
            "optimal_value": problem.optimal_value,
            "true_values": true_values,
            "simple_regret": regret,
            "recommended_regret": recommended,
        }

    def lines(summary: dict) -> list[str]:
        shown = [
            "simple regret (noise-free; the best true value among the evaluated points): "
            f"{summary['simple_regret'][-1]:.3e}"
        ]
        if summary["recommended_regret"] is not None:
            shown.append(
                "regret of the recommended point (noise-free; the point a noisy run should "
                f"return): {summary['recommended_regret']:.3e}"
            )
        return shown

    return _Task(problem.name, problem.space, metadata, objective, extra, lines)


def load_objective(reference: str) -> tuple[Callable, ModuleType]:
    """The function ``reference`` names and the module it was found in.

    ``reference`` is ``package.module:function`` (imported; the current folder is searched first)
    or ``path/to/file.py:function`` (run as a module, its folder put first on ``sys.path`` as
    ``python path/to/file.py`` does, so that it imports its neighbours).

    Raises:
        ConfigurationError: the reference is malformed, there is no such module or file, the
            module name finds a module outside the current folder while the current folder
            holds a file of that name, or the module has no such callable.
        Exception: whatever the module's own code raises while it is imported (a
            ``SyntaxError``, an ``ImportError`` of a module it imports ...), as it is.
    """
    module_name, sep, attribute = reference.rpartition(":")
    dotted = module_name.endswith(".py") or all(
        part.isidentifier() for part in module_name.split(".")
    )
    if not sep or not module_name or not attribute.isidentifier() or not dotted:
        raise ConfigurationError(
            f"--objective must look like MODULE:FUNCTION (mypkg.costs:f) or FILE.py:FUNCTION, got "
            f"{reference!r}."
        )
    try:
        module = _import(module_name, reference)
    except SystemExit as exit_:  # a module that calls sys.exit() when imported
        raise ObjectiveExitedError(
            f"the module of --objective {reference} called sys.exit({exit_.code!r}) while it was "
            "imported; an objective's module must define the function without ending the "
            "program (put a script's own code under `if __name__ == '__main__':`)."
        ).with_traceback(exit_.__traceback__) from None
    function = getattr(module, attribute, None)
    if not callable(function):
        raise ConfigurationError(
            f"--objective {reference}: {module_name!r} has no function {attribute!r}"
            + ("" if function is None else f" (it is a {type(function).__name__})")
            + "."
        )
    return function, module


def _refusing_exit(function: Callable) -> Callable:
    """``function`` with a ``SystemExit`` it raises turned into :class:`ObjectiveExitedError`."""

    @functools.wraps(function)
    def evaluate(x):
        try:
            return function(x)
        except SystemExit as exit_:
            raise ObjectiveExitedError(
                f"the objective called sys.exit({exit_.code!r}); it must return a number (or "
                "raise an exception for a failed evaluation)."
            ).with_traceback(exit_.__traceback__) from None

    return evaluate


def _import(module_name: str, reference: str):
    """The module ``module_name`` names: a dotted name, imported, or a ``.py`` file, run.

    A file runs as a module of a private name (``_manibo_objective_<stem>``, numbered when taken),
    registered in ``sys.modules`` so that what it defines can be pickled, and never in place of
    a module already there (a file ``json.py`` does not hide the standard library's ``json``).
    """
    if module_name.endswith(".py"):
        path = Path(module_name).expanduser().resolve()
        if not path.is_file():
            raise ConfigurationError(f"--objective {reference}: no such file {str(path)!r}.")
        if sys.path[:1] != [str(path.parent)]:
            sys.path.insert(0, str(path.parent))
        name, number = f"_manibo_objective_{path.stem}", 1
        while name in sys.modules:
            number += 1
            name = f"_manibo_objective_{path.stem}_{number}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module
    _current_folder_first()
    _refuse_shadowed(module_name, reference)
    try:
        found = importlib.util.find_spec(module_name) is not None
    except ModuleNotFoundError as err:  # a package of the dotted name is missing, or else the
        if err.name is None or not f"{module_name}.".startswith(f"{err.name}."):
            raise  # package's own code imports a missing module: its error, as it is
        found = False
    except ValueError:  # in sys.modules without a spec (__main__)
        found = True
    if not found:
        raise ConfigurationError(
            f"--objective {reference}: cannot import {module_name!r}: no module of that name is "
            "found; run from the folder that holds it, install its package, or give the file's "
            "path (FILE.py:FUNCTION)."
        )
    return importlib.import_module(module_name)


def _current_folder_first() -> None:
    """Put the current folder first on ``sys.path`` (unless it is there), as ``python -m`` does:
    the modules that the command's options name are searched for there first."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())


def _refuse_shadowed(module_name: str, reference: str) -> None:
    """A clear error when the first name of ``module_name`` finds a module outside the current
    folder (the standard library's ``random``, say) while the current folder holds a file or a
    package of that name, which the user most likely means."""
    top = module_name.partition(".")[0]
    here = Path.cwd().resolve()
    local = next((p for p in (here / f"{top}.py", here / top / "__init__.py") if p.is_file()), None)
    if local is None:
        return
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return
    if spec is None:
        return
    origin = spec.origin if spec.has_location else None
    if origin is not None and Path(origin).resolve().is_relative_to(here):
        return
    where = origin or ("built into Python" if spec.origin == "built-in" else "elsewhere")
    path = "./" + module_name.replace(".", "/") + ".py"
    raise ConfigurationError(
        f"--objective {reference}: the module {top!r} is {where}, not {local.relative_to(here)} "
        f"of the current folder (a module of that name comes first); give the file's path "
        f"instead: --objective {path}:{reference.rpartition(':')[2]}"
    )


#: The loop's parameters that ``manibo run`` sets from flags, and the flags.
_RUN_FLAGS = {
    "budget": "--budget",
    "initial_design": "--initial-design",
    "initial_points": "--initial-points",
    "max_seconds": "--max-seconds",
    "max_parallel": "--parallel",
    "noise_std": "--known-noise",
    "q": "--q",
    "seed": "--seed",
    "exclude_evaluated=False": "--repeat-evaluated",
    "num_restarts": "--num-restarts",
    "raw_samples": "--raw-samples",
}


def _in_flags(message: str) -> str:
    """``message`` (of the loop) in the words of ``manibo run``: a parameter of :data:`_RUN_FLAGS`
    in backquotes becomes its flag (```q``` becomes ``--q``), ``q = 2`` becomes ``--q 2``, and a
    journal's ``exclude_evaluated`` difference is said as ``--repeat-evaluated`` given or not."""
    message = re.sub(r"`([\w=]+)`", lambda name: _RUN_FLAGS.get(name[1], name[0]), message)
    message = re.sub(
        r"\bexclude_evaluated: (True|False) in the journal, (?:True|False) now",
        lambda m: "--repeat-evaluated: "
        + ("not given in the journal's run, given now" if m[1] == "True" else "given in the "
           "journal's run, not now"),
        message,
    )  # fmt: skip
    message = re.sub(
        r"(?<![\w.])noise_std: (\S+) in the journal, (\S+) now",
        lambda m: (
            "--known-noise: "
            + " in the journal's run, ".join("not given" if v == "None" else v for v in m.groups())
            + " now"
        ),
        message,
    )
    message = re.sub(r"\bmax_parallel ?= ?(\d+)", r"--parallel \1", message)
    return re.sub(r"\bq = (\d+)", r"--q \1", message)


def _file_safe(text: str) -> str:
    """``text`` with every character other than letters, digits, ``.``, ``-`` and ``_`` replaced
    by ``-`` (for file names)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


def _bench(args: argparse.Namespace) -> int:
    """Run ``benchmarks/run_all.py`` of a manibo source checkout with the remaining arguments.

    The benchmarks are not part of the installed package: the checkout is the current folder or
    one above it, else the one an editable install runs from; a folder counts only when its
    ``pyproject.toml`` names the project ``manibo`` and it holds ``benchmarks/run_all.py``.
    """
    import re
    import subprocess

    def is_checkout(folder: Path) -> bool:
        project = folder / "pyproject.toml"
        if not (project.is_file() and (folder / "benchmarks" / "run_all.py").is_file()):
            return False
        return re.search(r'^name\s*=\s*"manibo"', project.read_text(), re.MULTILINE) is not None

    here = Path.cwd().resolve()
    root = next((f for f in (here, *here.parents, SOURCE_ROOT) if is_checkout(f)), None)
    if root is None:
        raise ConfigurationError(
            "manibo bench runs benchmarks/run_all.py of a manibo source checkout, which the "
            f"installed package does not include, and found none in {here} or above it, nor at "
            f"{SOURCE_ROOT}: clone the repository and run `manibo bench` inside it."
        )
    script = root / "benchmarks" / "run_all.py"
    return subprocess.run([sys.executable, str(script), *args.arguments]).returncode


def _initial_points(path: str | None) -> np.ndarray | None:
    """The points of the file ``--initial-points`` names, in float64, or None without the flag:
    a table ``(k, D)`` from a text file; from .npy and .json as stored, each point of more than
    one dimension (a rotation matrix) flattened row-major. The loop checks them.

    Raises:
        ConfigurationError: the file is missing, does not hold a table of numbers, or is empty.
    """
    import json

    import numpy as np

    if path is None:
        return None
    file = Path(path).expanduser()
    try:
        if file.suffix == ".npy":
            points = np.load(file, allow_pickle=False)
        elif file.suffix == ".json":
            points = np.asarray(json.loads(file.read_text()), dtype=np.float64)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # numpy's "input contained no data": said below
                delimiter = "," if file.suffix == ".csv" else None
                points = np.loadtxt(file, delimiter=delimiter, ndmin=2)
        points = np.asarray(points, dtype=np.float64)
    except (OSError, ValueError) as err:
        raise ConfigurationError(
            f"--initial-points {path}: cannot read points from it ({err}). Give a .npy array, a "
            ".json list of points, or text with one point's coordinates per line."
        ) from err
    if points.size == 0 or points.ndim == 0:
        raise ConfigurationError(
            f"--initial-points {path}: the file holds no points (a table of them, one point per "
            f"row, was expected; got {'a single number' if points.ndim == 0 else 'none'}); "
            "give one point per row, or leave the flag out."
        )
    # a point per row: matrices (SO(3) as (k, 3, 3)) flattened row-major, as manibo's points are
    return points.reshape(len(points), -1) if points.ndim > 2 else points


def _parse_options(pairs: list[str]) -> dict:
    """``["nu=1.5", "num_features=660"]`` → ``{"nu": 1.5, "num_features": 660}``: JSON values,
    and the Python spellings ``True``, ``False`` and ``None`` of ``true``, ``false`` and ``null``
    (manibo's messages write options as Python, ``per_factor=True``)."""
    import json

    python = {"True": True, "False": False, "None": None}

    options = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ConfigurationError(
                f"--surrogate-option must look like KEY=VALUE (for example nu=1.5), got {pair!r}."
            )
        if text in python:
            options[key] = python[text]
            continue
        try:
            options[key] = json.loads(text)
        except json.JSONDecodeError:
            options[key] = text  # a bare word such as a kernel name
    return options


class _Parser(argparse.ArgumentParser):
    """An argument parser whose epilog may be computed when the help is shown (``epilog_from``):
    listing the names ``manibo run`` accepts imports the surrogates, which takes seconds."""

    def __init__(self, *args, epilog_from: Callable[[], str] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._epilog_from = epilog_from

    def format_help(self) -> str:
        if self._epilog_from is not None:
            self.epilog, self._epilog_from = self._epilog_from(), None
        return super().format_help()

    def error(self, message: str) -> None:
        """A value that does not fit its argument: one ``manibo: error:`` line naming the
        argument, what it takes and what came, status 2. Other mistakes (an unknown option, a
        missing command) show the command's usage first, as argparse does."""
        match = re.fullmatch(r"argument (\S+): (.*)", message, re.DOTALL)
        if match is None:
            super().error(message)
        name, text = match[1].split("/")[-1], match[2]
        if not name.startswith("-"):  # a positional argument: `manibo demo NAME`
            name = f"{self.prog} {name.upper()}"
        choice = re.fullmatch(r"invalid choice: (.*) \(choose from (.*)\)", text, re.DOTALL)
        if choice:
            text = f"must be one of {choice[2]}, got {choice[1]}"
        elif text == "expected one argument":
            text = "needs a value"
        elif not text.startswith("must"):
            text = f"{text[:1].lower()}{text[1:]}".join(("(", ")"))
        self.exit(2, f"manibo: error: {name} {text}.\n")


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults after each option's help (where there is one); the listings as written."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None or action.default is False or action.default == []:
            return action.help
        return super()._get_help_string(action)


def _listings() -> str:
    """The names ``manibo run`` accepts, plug-ins included, for its ``--help``."""
    from manibo.acquisitions import available_acquisitions
    from manibo.models import available_surrogates
    from manibo.problems import available_problems
    from manibo.spaces.registry import describe_spaces

    try:
        spaces = describe_spaces()
        width = max(len(spec) for spec, _ in spaces)
        listed = [
            "spaces (--space; join specs with * for a product, e.g. sphere2*circle):",
            *(
                line
                for spec, text in spaces
                for line in _wrap(f"{spec:<{width}}  {text}", width + 4)
            ),
        ]
        for title, names in (
            ("surrogates (--surrogate)", available_surrogates()),
            ("acquisitions (--acquisition)", available_acquisitions()),
            ("problems (--problem; <...> stands for an integer)", available_problems()),
        ):
            listed += [f"{title}:", *_wrap(", ".join(names), 2)]
    except ManiboError as error:  # a broken plug-in: say so, and let the other commands work
        return f"(the names cannot be listed: {error})"
    listed.append(
        "Packages that declare an entry point in the group 'manibo.plugins' add their own names."
    )
    return "\n".join(listed)


def _wrap(text: str, indent: int) -> list[str]:
    """``text`` in lines of at most 96 characters, indented by 2, continued at ``indent``."""
    return textwrap.wrap(
        text, 96, initial_indent="  ", subsequent_indent=" " * indent, break_on_hyphens=False
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``manibo`` command.

    Nothing heavy (torch, the surrogates) is imported before the arguments are parsed, so that
    ``--help`` and mistakes in the arguments answer at once, and every import runs where Ctrl-C
    ends the command with its one line.
    """
    command = args = None
    interrupts = _Interrupts()
    try:
        parser = _parser()
        args, args.arguments = parser.parse_known_args(argv)
        command = args.command
        if args.arguments and command != "bench":
            parser.commands[command].error(f"unrecognized arguments: {' '.join(args.arguments)}")
        try:
            with interrupts.deferred():
                for module in _HEAVY_IMPORTS.get(command, ()):
                    importlib.import_module(module)
            with warnings.catch_warnings():
                warnings.showwarning = _show_run_warning if command == "run" else _show_warning
                args.interrupts = interrupts
                status = args.func(args)
            if interrupts.seen:  # a library caught the KeyboardInterrupt and went on
                raise KeyboardInterrupt
            return status
        except ObjectiveError as error:  # the user's objective returned no number: their code
            parser.exit(1, f"manibo: error: {error}\n")
        except ManiboError as error:  # bad input: the message says what to do, no traceback
            message = _in_flags(str(error)) if command == "run" else str(error)
            parser.exit(2, f"manibo: error: {message}\n")
        except Exception as error:  # in the user's code (or manibo's): its traceback, status 1
            if interrupts.seen:
                raise
            _print_traceback(error)
            parser.exit(1)
    except BaseException as error:
        # Ctrl-C: one line and the status a shell gives it, no traceback; also where a library
        # turned the KeyboardInterrupt into another error (numpy's C extension interrupted while
        # it loads raises ImportError, torch goes on without it, and a later import fails)
        if not (interrupts.seen or isinstance(error, KeyboardInterrupt)):
            raise
        pending = getattr(error, "manibo_pending_error", None)
        if pending is not None:  # the error a run waited on its evaluations in flight to raise
            _print_traceback(pending)
        journal = getattr(args, "journal_path", None)  # set once `run` knows it
        resume = (  # not before the journal exists: a run stopped then left nothing to resume
            "; the same command resumes the run from its journal"
            if journal is not None and journal.exists()
            else ""
        )
        terminated = interrupts.signum == signal.SIGTERM
        sys.stderr.write(f"\nmanibo: {'terminated' if terminated else 'interrupted'}{resume}\n")
        sys.exit(128 + interrupts.signum)  # the status a shell gives the signal: 130, 143
    finally:
        interrupts.close()


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Show a warning to the command's user in one line on stderr: manibo's own as ``manibo:
    warning: <message>`` (where in manibo it was issued says nothing to them), any other (the
    objective's, a library's) as ``warning: <message> (<category> at <file>:<line>)``, so that a
    library's deprecation is not taken for manibo's and the objective's points at its line."""
    if issubclass(category, ManiboWarning):
        text = f"manibo: warning: {message}"
    else:
        text = f"warning: {message} ({category.__name__} at {_short_path(filename)}:{lineno})"
    (file or sys.stderr).write(text + "\n")


def _short_path(filename: str) -> str:
    """``filename`` from its package inside ``site-packages`` (or ``dist-packages``), or relative
    to the current folder when it lies within it; else as it is."""
    path = Path(filename)
    for folder in ("site-packages", "dist-packages"):  # dist-packages: Debian's system Python
        if folder in path.parts:
            return "/".join(path.parts[len(path.parts) - path.parts[::-1].index(folder) :])
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return filename


def _show_run_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """:func:`_show_warning` for ``manibo run``: manibo's own warnings (the summary of a run's
    proposals among them) name the command's flags (:func:`_in_flags`)."""
    if issubclass(category, ManiboWarning):
        message = _in_flags(str(message))
    _show_warning(message, category, filename, lineno, file, line)


def _print_traceback(error: BaseException) -> None:
    """Print ``error`` as Python does, less the frames of manibo, of the import machinery and of
    ``concurrent.futures`` above the first frame of other code (the user's objective, its
    module): a ``NameError`` in the objective shows the objective's lines, a ``SyntaxError`` in
    its module only its file and line. An error with no other frame (one of manibo's own) keeps
    its whole traceback."""
    import concurrent.futures
    import traceback

    modules = (_json, importlib, concurrent.futures)  # the last: an evaluation in a thread
    internal = tuple(os.path.dirname(module.__file__) + os.sep for module in modules)
    internal += ("<frozen importlib",)
    frames = error.__traceback__
    while frames is not None and frames.tb_frame.f_code.co_filename.startswith(internal):
        frames = frames.tb_next
    if frames is None and not isinstance(error, SyntaxError):
        frames = error.__traceback__
    traceback.print_exception(type(error), error, frames)


#: What each command imports first, with Ctrl-C deferred (:meth:`_Interrupts.deferred`).
_HEAVY_IMPORTS = {
    "info": ("torch", "gpytorch", "botorch"),
    "demo": ("torch",),
    "run": ("torch", "manibo.journal", "manibo.loop", "manibo.problems", "manibo.spaces"),
}


def _stop_when_signalled(interrupts: _Interrupts, budget: int) -> Callable[..., None]:
    """A ``run`` callback that raises ``KeyboardInterrupt`` once Ctrl-C or SIGTERM came, for an
    objective that caught the one raised inside it and went on (the evaluation is recorded);
    not after the last evaluation of the budget, so that the run ends and writes its files."""

    def callback(optimizer, evaluation) -> None:
        if interrupts.seen and len(optimizer.history) < budget:
            raise KeyboardInterrupt

    return callback


class _Interrupts:
    """While open, SIGINT, and SIGTERM (what ``kill``, Slurm and systemd send) where it has its
    default action, raise ``KeyboardInterrupt`` as Python's own SIGINT handler does, and are
    remembered (``seen``, and ``signum``, the last one); :meth:`close` puts the previous handlers
    back. Only in the main thread (elsewhere nothing changes and ``seen`` stays False)."""

    def __init__(self) -> None:
        import threading

        self.seen = False
        self.signum = signal.SIGINT
        self._deferring = False
        self._previous = {}
        if threading.current_thread() is threading.main_thread():
            for signum, default in (
                (signal.SIGINT, signal.default_int_handler),
                (signal.SIGTERM, signal.SIG_DFL),
            ):
                if signal.getsignal(signum) is default:
                    self._previous[signum] = signal.signal(signum, self._interrupt)

    def _interrupt(self, signum, frame) -> None:
        self.seen, self.signum = True, signum
        if not self._deferring:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def deferred(self):
        """Within the block, Ctrl-C is only remembered, and raised as ``KeyboardInterrupt`` when
        the block ends: for the imports of torch, numpy and the like, whose code at times
        catches the exception and goes on half loaded (a ``KeyboardInterrupt`` raised in a
        ``getattr`` of ``typing``, or in numpy's class bodies, was lost in 2 of 24 tries)."""
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
        if self.seen:
            raise KeyboardInterrupt

    def close(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}


def _parser() -> argparse.ArgumentParser:
    """The parser of the ``manibo`` command and its subcommands."""
    parser = _Parser(prog="manibo", description=re.sub(r"``(.*?)``", r"\1", __doc__))
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="print versions and the compute device")
    info.set_defaults(func=_info)
    demo = sub.add_parser("demo", help="run a demonstration on the globe (default: the search)")
    demo.add_argument(
        "name",
        nargs="?",
        default="search",
        choices=["search", "sphere-regression"],
        help="search: plan the search for a lost aircraft and compare planners (default); "
        "sphere-regression: a geometric GP against a latitude/longitude GP",
    )
    demo.add_argument("--out", default="demo-output", help="directory for figures and JSON")
    demo.add_argument(
        "--seed", type=_integer, default=0, help="seeds everything random in the demo (default 0)"
    )
    demo.add_argument("--device", default="cpu", help="cpu or cuda")
    for option, kind, text in (
        ("--scenarios", _integer, "search: scenarios compared (default 8)"),
        ("--budget", _number, "search: mission hours (default 72)"),
        ("--workers", _integer, "search: processes for the comparison (default 2)"),
        ("--num-train", _integer, "sphere-regression: number of noisy observations (default 150)"),
    ):
        keyword, metavar = _DEMO_OPTIONS[option][1], option[2:].upper().replace("-", "_")
        demo.add_argument(
            option, type=kind, dest=keyword, metavar=metavar, default=argparse.SUPPRESS, help=text
        )
    demo.set_defaults(func=_demo)
    run = sub.add_parser(
        "run",
        help="run Bayesian optimisation of your own function (--objective) or a benchmark problem",
        description="Minimise (or with --maximize, maximise) your function on a space, or a "
        "benchmark\nproblem. Writes a journal (running the same command again resumes it), the "
        "results\nas JSON, a convergence figure (PNG) and a text summary to --out. Exit "
        "statuses: `manibo --help`.",
        epilog_from=_listings,
        formatter_class=_HelpFormatter,
    )
    what = run.add_argument_group("what to optimise (one of)")
    what.add_argument(
        "--objective",
        metavar="MODULE:FUNCTION",
        help="your function of one point (a torch tensor) returning a float: mypkg.costs:f, "
        "imported from the current folder or an installed package, or path/to/file.py:f",
    )
    what.add_argument("--space", metavar="SPEC", help="the space of --objective's points, e.g. so3")
    what.add_argument(
        "--maximize", action="store_true", help="maximise --objective (default: minimise)"
    )
    what.add_argument(
        "--problem", help="a benchmark problem, e.g. ackley-sphere5, arm-torus3, orientation-so3"
    )
    run.add_argument("--surrogate", default="matern", help="the surrogate model")
    run.add_argument("--acquisition", default="qlognei", help="the acquisition function")
    run.add_argument(
        "--optimizer",
        default="riemannian",
        choices=["riemannian", "projection"],
        help="how the acquisition is optimised",
    )
    run.add_argument("--budget", type=_integer, default=100, help="number of evaluations")
    run.add_argument(
        "--max-seconds", type=_number, default=None, help="wall-time budget in seconds"
    )
    run.add_argument(
        "--initial-design", type=_integer, default=5, help="random points before the first model"
    )
    run.add_argument(
        "--initial-points",
        metavar="FILE",
        default=None,
        help="points to evaluate first, one per row: a .npy array, a .json list of points, or "
        "text with one point's coordinates per line (.csv: comma-separated); they count toward "
        "--initial-design and --budget",
    )
    run.add_argument("--q", type=_integer, default=1, help="points proposed together")
    run.add_argument(
        "--parallel",
        type=_integer,
        default=1,
        metavar="N",
        help="evaluate N points at once, each in a thread of this process: for an objective "
        "that waits on a simulator, a subprocess or a remote job (a function that computes in "
        "Python gains nothing; pass a process pool as `executor=` in Python instead). The "
        "points in flight are pending for the surrogate; needs a Monte Carlo acquisition "
        "(such as the default) above 1",
    )
    run.add_argument(
        "--num-restarts",
        type=_integer,
        default=8,
        help="starts of each acquisition ascent, chosen among the raw samples",
    )
    run.add_argument(
        "--raw-samples",
        type=_integer,
        default=256,
        help="random points at which the acquisition is evaluated to choose the starts",
    )
    run.add_argument(
        "--repeat-evaluated",
        action="store_true",
        help="on a finite space (graph, mesh), let an evaluated point be proposed again (a noisy "
        "objective measured twice); by default each point is evaluated once",
    )
    run.add_argument(
        "--noise",
        type=_number,
        default=0.0,
        help="standard deviation of Gaussian noise added to a benchmark problem's values "
        "(--problem only; your own --objective is measured as it is)",
    )
    run.add_argument(
        "--known-noise",
        type=_number,
        default=None,
        metavar="SD",
        help="the standard deviation of your objective's measurement noise, if you know it: the "
        "surrogate takes it instead of fitting a noise level (exact GP surrogates only)",
    )
    run.add_argument(
        "--seed", type=_integer, default=0, help="seed of the design and the proposals"
    )
    run.add_argument(
        "--surrogate-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="option of the surrogate factory, repeatable (values are read as JSON, and True, "
        "False and None as in Python), e.g. nu=1.5",
    )
    run.add_argument(
        "--on-error",
        action="append",
        default=[],
        metavar="EXCEPTION",
        help="an exception type the objective may raise that is recorded as a failed evaluation "
        "(the run goes on), repeatable: a built-in name (RuntimeError), a class of the "
        "--objective's module by its name, or MODULE:CLASS; manibo.EvaluationFailed always is",
    )
    run.add_argument("--device", default="cpu", help="cpu or cuda: where the surrogate runs")
    run.add_argument("--out", default="results", help="folder for the journal and the results")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "--fresh",
        action="store_true",
        help="start the run over: move its journal aside (renamed, not deleted) first",
    )
    run.set_defaults(func=_run)
    bench = sub.add_parser(
        "bench",
        help="regenerate the benchmark figures and tables of the docs (benchmarks/run_all.py)",
        description="Every argument goes to benchmarks/run_all.py: --smoke, --only STEP, "
        "--device, --lock FILE, --list.",
    )
    bench.set_defaults(func=_bench)
    parser.commands = sub.choices  # name -> the parser of the command
    return parser
