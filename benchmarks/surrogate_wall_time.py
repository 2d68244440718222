"""Regret against time with thousands of evaluations in large batches: exact GP against VISH.

A cheap, noisy objective on a sphere (default: Ackley on S² with observation noise of standard
deviation 0.5) is optimised in batches of ``--q`` points (default 100) after ``--initial`` uniform
points (default 1000), until a run has spent ``--wall-budget`` seconds (default 600) on its
surrogate and its acquisition, or has made ``--max-evaluations`` evaluations. Each iteration:

1. the surrogate is built on every observation as the loop builds it (``build_surrogate`` with its
   defaults): ``matern``, the exact geometric Matérn-5/2 GP (hyperparameters by L-BFGS on the exact
   marginal likelihood: ``O(n^3)`` per step), or ``vish``, variational inducing spherical harmonics
   (one pass over the data, then ``O(M^3)`` steps whatever ``n``);
2. the batch is chosen by Thompson sampling (BoTorch's ``MaxPosteriorSampling``, without
   replacement): ``q`` joint posterior samples on ``--candidates`` candidate points, half uniform
   on the sphere, half the best observed points moved by tangent Gaussian noise; each sample's
   maximiser joins the batch (minimisation: the samples of ``-f``).

The clock counts the surrogate and the acquisition only (the objective costs microseconds). Each
iteration records both its wall time and its process CPU time; ``--clock cpu`` (the default) runs
each method for the same CPU time and reports regret against it, which other jobs on a shared
machine do not inflate (with one torch thread on an idle core the two agree); ``--clock wall``
uses the wall clock. Simple
regret is that of the evaluated points (the true, noise-free value of the best of them, minus the
optimum), as in ``regret.py``. A method that has not reached a time holds no value there.

    python benchmarks/surrogate_wall_time.py                        # S², 3 seeds, 600 s per run
    python benchmarks/surrogate_wall_time.py --problem ackley-sphere5 --seeds 3
    python benchmarks/surrogate_wall_time.py --smoke --out /tmp/bench   # seconds; the tests

Runs are stored per problem, method and seed under ``<out>/runs`` with their settings and reused
by a later invocation with the same settings (``--report-only`` only summarises them). Writes
``surrogate_wall_time.json`` and ``surrogate_wall_time.png`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path

import _common as common

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "surrogate_wall_time"
METHODS = ("matern", "vish")
SETTINGS = (
    "problem",
    "noise",
    "initial",
    "q",
    "candidates",
    "wall_budget",
    "clock",
    "max_evaluations",
    "smoke",
)


def candidate_points(space, X, y, count: int, scale: float, generator):
    """``count`` candidates: half uniform on ``space``, half the best observed points (lowest
    ``y``) moved by tangent Gaussian noise of standard deviation ``scale``.

    Args:
        space: the sphere.
        X: observed points ``(n, d + 1)``; y: their values ``(n,)``.
        generator: random generator.

    Returns:
        Points ``(count, d + 1)`` on the sphere.
    """
    import torch

    uniform = space.random(count - count // 2, generator=generator)
    best = X[torch.argsort(y)[: max(1, min(len(y), count // 20))]]
    centres = best[torch.randint(len(best), (count // 2,), generator=generator)]
    step = scale * torch.randn(centres.shape, generator=generator, dtype=centres.dtype)
    local = space.retract(centres, space.to_tangent(centres, step))
    return torch.cat([uniform, local])


def thompson_batch(model, candidates, q: int, seed: int):
    """``q`` points by Thompson sampling without replacement (maximising the model's outcome)."""
    import torch
    from botorch.generation import MaxPosteriorSampling

    torch.manual_seed(seed)
    with torch.no_grad():
        return MaxPosteriorSampling(model, replacement=False)(candidates, num_samples=q)


def run_path(problem_name: str, method: str, seed: int, args_dict: dict) -> Path:
    """Where the record of one run is stored."""
    return Path(args_dict["out"]) / "runs" / f"{problem_name}_{method}_seed{seed}.json"


def run_one(problem_name: str, method: str, seed: int, args_dict: dict) -> dict:
    """One seeded run (a record: per-iteration sizes, times and regret); cached on disk."""
    import torch

    from manibo.models import build_surrogate
    from manibo.problems import make_problem

    args = argparse.Namespace(**args_dict)
    path = run_path(problem_name, method, seed, args_dict)
    settings = {k: args_dict[k] for k in SETTINGS if k != "problem"} | {"problem": problem_name}
    if path.exists():
        stored = json.loads(path.read_text())
        if stored["settings"] == settings:
            return stored
    torch.set_num_threads(args.threads)
    problem = make_problem(problem_name, noise_std=args.noise)
    space = problem.space
    generator = torch.Generator().manual_seed(seed)
    noise = torch.Generator().manual_seed(seed + 7919)
    X = space.random(args.initial, generator=generator)
    y = problem(X, generator=noise).reshape(-1)  # noisy observations, for minimisation
    true = problem.evaluate_true(X).reshape(-1)
    iterations = []
    clock = {"wall": 0.0, "cpu": 0.0}
    load_start = common.load_average()
    while clock[args.clock] < args.wall_budget and len(y) < args.max_evaluations:
        q = min(args.q, args.max_evaluations - len(y))
        tic, cpu = time.perf_counter(), time.process_time()
        model = build_surrogate(method, space, X, (-y).unsqueeze(-1))
        fitted = time.perf_counter()
        lengthscale = _lengthscale(model)
        candidates = candidate_points(space, X, y, args.candidates, 0.5 * lengthscale, generator)
        batch = thompson_batch(model, candidates, q, seed * 1_000_003 + len(y))
        done = time.perf_counter()
        clock["wall"] += done - tic
        clock["cpu"] += time.process_time() - cpu
        X = torch.cat([X, batch])
        y = torch.cat([y, problem(batch, generator=noise).reshape(-1)])
        true = torch.cat([true, problem.evaluate_true(batch).reshape(-1)])
        iterations.append(
            {
                "n": len(y) - q,
                "fit_seconds": fitted - tic,
                "acquisition_seconds": done - fitted,
                "wall_seconds": clock["wall"],
                "cpu_seconds": clock["cpu"],
                "regret": float(true.min() - problem.optimal_value),
            }
        )
        print(
            f"{problem_name} {method} seed {seed}: n={len(y) - q} fit {fitted - tic:.1f} s, "
            f"acquisition {done - fitted:.1f} s, wall {clock['wall']:.0f} s, "
            f"CPU {clock['cpu']:.0f} s, "
            f"regret {iterations[-1]['regret']:.4g}",
            flush=True,
        )
    record = {
        "problem": problem_name,
        "method": method,
        "seed": seed,
        "settings": settings,
        "initial_regret": float(true[: args.initial].min() - problem.optimal_value),
        "iterations": iterations,
        "evaluations": len(y),
        "load_average_start": load_start,
        "load_average_end": common.load_average(),
        "cpu_model": common.cpu_model(),
    }
    common.write_json(path, record)
    return record


def _lengthscale(model) -> float:
    """The fitted lengthscale of a model's kernel (radians), or 0.3 when it has none."""
    for module in model.modules():
        if getattr(module, "has_lengthscale", False) and module.lengthscale is not None:
            return float(module.lengthscale.detach().reshape(-1)[0])
    return 0.3


def regret_at(record: dict, seconds: float, clock: str = "wall") -> float | None:
    """The run's regret once ``seconds`` of the ``clock`` (``"wall"`` or ``"cpu"``) are spent
    (its initial design's before the first iteration ends; None past the end of the run)."""
    key = f"{clock}_seconds"
    regret = record["initial_regret"]
    for it in record["iterations"]:
        if it[key] > seconds:
            return regret
        regret = it["regret"]
    last = record["iterations"][-1][key] if record["iterations"] else 0.0
    return regret if seconds <= last else None


def summarise(records: list[dict], checkpoints: list[float], clock: str = "wall") -> dict:
    """Per problem and method: median regret at each time of the ``clock`` (over the seeds that
    reached it), evaluations made, and the seconds of the last iteration."""
    import statistics

    table = {}
    for problem in sorted({r["problem"] for r in records}):
        table[problem] = {}
        for method in sorted({r["method"] for r in records if r["problem"] == problem}):
            mine = [r for r in records if r["problem"] == problem and r["method"] == method]
            at = {}
            for seconds in checkpoints:
                values = [v for r in mine if (v := regret_at(r, seconds, clock)) is not None]
                at[str(seconds)] = {
                    "median": statistics.median(values) if values else None,
                    "seeds": len(values),
                }
            table[problem][method] = {
                "seeds": len(mine),
                "regret_at_seconds": at,
                "evaluations": [r["evaluations"] for r in mine],
                "final_regret": [
                    r["iterations"][-1]["regret"] if r["iterations"] else r["initial_regret"]
                    for r in mine
                ],
                "seconds_per_iteration_last": [
                    r["iterations"][-1]["fit_seconds"] + r["iterations"][-1]["acquisition_seconds"]
                    for r in mine
                    if r["iterations"]
                ],
            }
    return table


def plot(records: list[dict], clock: str, path: Path, title: str) -> None:
    """Left: simple regret against the ``clock``'s time (each seed thin, median thick); right:
    seconds per iteration (of that clock) against the number of observations."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    problems = sorted({r["problem"] for r in records})
    fig, axes = plt.subplots(
        len(problems), 2, figsize=(11, 4 * len(problems)), squeeze=False, constrained_layout=True
    )
    colours = {"matern": "tab:orange", "vish": "tab:blue"}
    for row, problem in zip(axes, problems, strict=True):
        for method in sorted({r["method"] for r in records if r["problem"] == problem}):
            mine = [r for r in records if r["problem"] == problem and r["method"] == method]
            colour = colours.get(method)
            end = max(r["iterations"][-1][f"{clock}_seconds"] for r in mine if r["iterations"])
            grid = np.linspace(0, end, 200)
            curves = []
            for r in mine:
                values = [regret_at(r, t, clock) for t in grid]
                curve = np.array([np.nan if v is None else v for v in values])
                row[0].plot(grid, curve, color=colour, lw=0.6, alpha=0.5)
                curves.append(curve)
                n = [it["n"] for it in r["iterations"]]
                times = [0.0] + [it[f"{clock}_seconds"] for it in r["iterations"]]
                secs = [b - a for a, b in zip(times, times[1:], strict=False)]
                row[1].plot(n, secs, "o-", color=colour, ms=2, lw=0.6, alpha=0.6)
            median = np.nanmedian(np.array(curves), axis=0)
            row[0].plot(grid, median, color=colour, lw=2, label=f"{method} (median of {len(mine)})")
        row[0].set_yscale("log")
        row[0].set_xlabel(f"{clock} time of surrogate + acquisition [s]")
        row[0].set_ylabel("simple regret (true value)")
        row[0].set_title(problem)
        row[0].legend()
        row[1].set_yscale("log")
        row[1].set_xlabel("observations n")
        row[1].set_ylabel(f"{clock} seconds per iteration")
    fig.suptitle(title, fontsize=8)
    common.save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problem", action="append", help="repeatable (default ackley-sphere2)")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--noise", type=float, default=0.5, help="observation noise (std)")
    parser.add_argument("--initial", type=int, default=1000)
    parser.add_argument("--q", type=int, default=100, help="points per batch")
    parser.add_argument("--candidates", type=int, default=2000, help="Thompson-sampling set")
    parser.add_argument("--wall-budget", type=float, default=600.0, help="seconds per run")
    parser.add_argument(
        "--clock", choices=("cpu", "wall"), default="cpu", help="the time budgeted and reported"
    )
    parser.add_argument("--max-evaluations", type=int, default=20_000)
    parser.add_argument("--checkpoints", default="30,60,120,300,600")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run")
    parser.add_argument("--workers", type=int, default=1, help="runs in parallel")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--report-only", action="store_true", help="summarise stored runs only")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes for the test suite")
    args = parser.parse_args(argv)
    problems = args.problem or ["ackley-sphere2"]
    methods = args.methods.split(",")
    checkpoints = [float(c) for c in args.checkpoints.split(",")]
    if args.smoke:
        args.seeds, args.initial, args.q, args.candidates = 1, 30, 5, 50
        args.wall_budget, args.max_evaluations, args.workers = 1e9, 40, 1
        checkpoints = [0.5, 1.0]
    args.out.mkdir(parents=True, exist_ok=True)
    options = {k: getattr(args, k) for k in SETTINGS if k != "problem"} | {
        "out": str(args.out),
        "threads": args.threads,
    }
    jobs = [(p, m, s, options) for s in range(args.seeds) for p in problems for m in methods]
    load_start = common.load_average()
    records = common.gather(jobs, run_path, run_one, args.report_only, args.workers)
    loads = [
        r[key][0] for r in records for key in ("load_average_start", "load_average_end") if r[key]
    ]
    summary = {
        "config": {**{k: v for k, v in options.items() if k != "out"}, "problems": problems},
        "checkpoints_seconds": checkpoints,
        "load_average_runs_1_min": [min(loads), max(loads)] if loads else None,
        "table": summarise(records, checkpoints, args.clock),
        "runs": records,
    }
    caption = (
        f"q = {args.q} per batch after {args.initial} uniform points, noise sd {args.noise}, "
        f"Thompson sampling on {args.candidates} candidates; {args.clock} time budget "
        f"{args.wall_budget:g} s per run"
    )
    common.write_results(
        args.out, "surrogate_wall_time", summary, caption, partial(plot, records, args.clock),
        args.smoke,
        load_start,
    )  # fmt: skip
    for problem, rows in summary["table"].items():
        for method, row in rows.items():
            cells = "  ".join(
                f"{t} s: {v['median']:.3g}" if v["median"] is not None else f"{t} s: -"
                for t, v in row["regret_at_seconds"].items()
            )
            print(f"{problem} {method:7s} {cells}  evaluations {row['evaluations']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
