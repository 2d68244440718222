"""The ``manibo`` command: ``demo`` (main demo), ``run`` (BO of a problem), ``bench``, ``info``.

``manibo run`` keeps a journal in ``--out``; running the same command again resumes it (the
settings must be the same, or the resume is refused with the list of differences; ``--fresh``
starts over). Mistakes in the arguments end with one ``manibo: error: ...`` line and status 2.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
from pathlib import Path

import torch

from manibo.exceptions import ConfigurationError, ManiboError

#: Where an editable install's checkout would be (the folder that holds the ``manibo`` package).
SOURCE_ROOT = Path(__file__).resolve().parents[1]


def _info(_: argparse.Namespace) -> int:
    import botorch
    import gpytorch

    import manibo

    print(f"manibo {manibo.__version__}")
    print(f"python {platform.python_version()} on {platform.machine()} ({platform.system()})")
    print(
        f"torch {torch.__version__}, gpytorch {gpytorch.__version__}, botorch {botorch.__version__}"
    )
    cuda = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(f"CUDA device: {cuda}; CPU threads: {torch.get_num_threads()}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    out = _output_folder(args.out)
    if args.name == "sphere-regression":
        from manibo.demos.sphere_regression import run

        if args.num_train < 2:
            raise ConfigurationError(
                f"--num-train must be at least 2 (a GP needs observations to fit), got "
                f"{args.num_train}."
            )
        run(out, num_train=args.num_train, seed=args.seed, device=args.device)
        return 0
    from manibo.demos.search_mission import run as run_search

    run_search(
        out,
        num_scenarios=args.scenarios,
        duration_h=args.budget,
        seed=args.seed,
        device=args.device,
        workers=args.workers,
    )
    return 0


def _finite(option: str, value: float, minimum: float) -> float:
    """``value`` if it is finite and at least ``minimum``; else a clear error."""
    if not (math.isfinite(value) and value >= minimum):
        raise ConfigurationError(f"{option} must be a finite number >= {minimum:g}, got {value!r}.")
    return value


def _output_folder(out: str) -> Path:
    """The folder ``out``, created if needed, or a clear error when it is a file or read-only."""
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
    import json

    from manibo.journal import set_aside
    from manibo.loop import BayesianOptimizer
    from manibo.problems import make_problem

    noise = _finite("--noise", args.noise, minimum=0.0)
    if args.budget < args.initial_design:
        raise ConfigurationError(
            f"--budget ({args.budget}) must be at least --initial-design ({args.initial_design})."
        )
    problem = make_problem(args.problem, noise_std=noise)
    out = _output_folder(args.out)
    stem = f"{problem.name}_{args.surrogate}_{args.acquisition}_seed{args.seed}"
    journal = out / f"{stem}.journal.jsonl"
    if args.fresh and journal.exists():
        print(f"moved the previous journal to {set_aside(journal)}")
    opt = BayesianOptimizer(
        problem.space,
        surrogate=args.surrogate,
        acquisition=args.acquisition,
        q=args.q,
        initial_design=args.initial_design,
        seed=args.seed,
        journal=journal,
        optimizer=args.optimizer,
        surrogate_options=_parse_options(args.surrogate_option),
        device=args.device,
        # the noise of evaluation i is drawn from a generator seeded by (seed, i): a resumed
        # noisy run observes exactly what the uninterrupted one would have
        metadata={
            "problem": problem.name,
            "noise_std": noise,
            "noise_generator": "torch.Generator().manual_seed(seed * 2**32 + index)",
        },
        resume=True,
    )
    if opt.history:
        print(f"resuming {journal} with {len(opt.history)} evaluations")

    def objective(x: torch.Tensor) -> float:
        generator = torch.Generator().manual_seed(args.seed * 2**32 + len(opt.history))
        return float(problem(x, generator=generator))

    with opt:
        opt.run(objective, budget=args.budget, progress=not args.quiet)
    values = [e.y if e.status == "ok" else None for e in opt.history]
    best_x, best_y = opt.best
    true_values = [
        float(problem.evaluate_true(torch.tensor(e.x, dtype=torch.float64))) for e in opt.history
    ]
    regret, best = [], float("inf")
    for v in true_values:
        best = min(best, v)
        regret.append(best - problem.optimal_value)
    summary = {
        "problem": problem.name,
        "config": opt.config,
        "optimal_value": problem.optimal_value,
        "observed": values,
        "true_values": true_values,
        "simple_regret": regret,
        "best_x": best_x.tolist(),
        "best_y": best_y,
        "journal": str(journal),
    }
    (out / f"{stem}.json").write_text(json.dumps(summary, indent=2))
    print(
        f"{problem.name}: best observed {best_y:.6g}, simple regret {regret[-1]:.3e} "
        f"after {len(opt.history)} evaluations; wrote {out / (stem + '.json')}"
    )
    return 0


def _bench(args: argparse.Namespace) -> int:
    """Run ``benchmarks/run_all.py`` of a manibo source checkout with the remaining arguments.

    The benchmarks are not part of the installed package: the checkout is the current folder or
    one above it, else the one an editable install runs from; a folder counts only when its
    ``pyproject.toml`` names the project ``manibo`` and it holds ``benchmarks/run_all.py``.
    """
    import re
    import subprocess
    import sys

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


def _parse_options(pairs: list[str]) -> dict:
    """``["nu=1.5", "num_features=660"]`` → ``{"nu": 1.5, "num_features": 660}`` (JSON values)."""
    import json

    options = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ConfigurationError(
                f"--surrogate-option must look like KEY=VALUE (for example nu=1.5), got {pair!r}."
            )
        try:
            options[key] = json.loads(text)
        except json.JSONDecodeError:
            options[key] = text  # a bare word such as a kernel name
    return options


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``manibo`` command."""
    parser = argparse.ArgumentParser(prog="manibo", description=__doc__)
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
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--device", default="cpu", help="cpu or cuda")
    demo.add_argument("--scenarios", type=int, default=8, help="search: scenarios compared")
    demo.add_argument("--budget", type=float, default=72.0, help="search: mission hours")
    demo.add_argument("--workers", type=int, default=2, help="search: processes for the comparison")
    demo.add_argument(
        "--num-train", type=int, default=150, help="sphere-regression: number of noisy observations"
    )
    demo.set_defaults(func=_demo)
    run = sub.add_parser("run", help="run Bayesian optimisation on a benchmark problem")
    run.add_argument(
        "--problem", required=True, help="e.g. ackley-sphere5, arm-torus3, orientation-so3"
    )
    run.add_argument(
        "--surrogate", default="matern", help="matern, heat, euclidean, chart, adgp, ..."
    )
    run.add_argument("--acquisition", default="qlognei")
    run.add_argument("--optimizer", default="riemannian", choices=["riemannian", "projection"])
    run.add_argument("--budget", type=int, default=100)
    run.add_argument("--initial-design", type=int, default=5)
    run.add_argument("--q", type=int, default=1)
    run.add_argument(
        "--noise", type=float, default=0.0, help="observation noise standard deviation"
    )
    run.add_argument("--seed", type=int, default=0)
    run.add_argument(
        "--surrogate-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="option of the surrogate factory, repeatable (values are read as JSON), e.g. nu=1.5",
    )
    run.add_argument("--device", default="cpu", help="cpu or cuda: where the surrogate runs")
    run.add_argument("--out", default="results")
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
    args, args.arguments = parser.parse_known_args(argv)
    if args.arguments and args.command != "bench":
        parser.error(f"unrecognized arguments: {' '.join(args.arguments)}")
    try:
        return args.func(args)
    except ManiboError as error:  # bad input: the message says what to do, no traceback
        parser.exit(2, f"manibo: error: {error}\n")
