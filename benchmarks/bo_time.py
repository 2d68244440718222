"""Time of one Bayesian-optimisation iteration against the number of observations, per space.

For each problem (``--problem``, repeatable; default Ackley on S², the orientation problem on SO(3)
and the robot arm on T³) and each number of observations n (default 25, 50, 100, 200, 400), n
uniform points are drawn (seeded) and evaluated, and in a fresh process per case:

* **fit**: ``build_surrogate("matern", space, X, Y)``, the geometric Matérn-5/2 GP with its
  hyperparameters fitted, as the loop builds it every iteration;
* **iteration**: ``BayesianOptimizer.ask()`` on an optimiser told the n points: the fit plus the
  acquisition (``--acquisitions``, default LogEI and qLogNEI) maximised on the space with the
  loop's defaults (8 restarts from 256 raw samples, Riemannian L-BFGS). Each timed call is a fresh
  optimiser with another seed, told the same data.

The time is the median of ``--repeats`` calls after one warm-up call (wall and CPU time), the
memory the peak added by the work. ``--device cuda`` (or ``auto`` where a GPU is present) runs
every case on the GPU as well and records the CPU/GPU ratio. Writes ``bo_time.json`` and
``bo_time.png`` to ``--out``, and each case to ``--out``/cases/ as it finishes: a run stopped
half-way (to share a machine, say) resumes where it stopped, with the same options, and
``--report-only`` writes the JSON and PNG from the cases kept so far (the others are listed in
``not_measured``). Each case records the load average before and after it.

    python benchmarks/bo_time.py --threads 1
    python benchmarks/bo_time.py --problem ackley-sphere2 --observations 50 100 --device auto
    python benchmarks/bo_time.py --smoke --out /tmp/bench            # seconds; used by the tests
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import _common as common

HERE = Path(__file__).resolve().parent
SCRIPT = Path(__file__).resolve()
WORKER_TIMEOUT_S = 1800

PROBLEMS = ("ackley-sphere2", "orientation-so3", "arm-torus3")
OBSERVATIONS = (25, 50, 100, 200, 400)
ACQUISITIONS = ("logei", "qlognei")
SMOKE = {"problems": ("ackley-sphere2",), "observations": (8,)}
#: the loop's defaults, and the reduced options of a smoke run
LOOP_OPTIONS = {"num_restarts": 8, "raw_samples": 256}
SMOKE_OPTIONS = {
    "num_restarts": 2,
    "raw_samples": 16,
    "optimizer_options": {"maxiter": 5},
}
SURROGATE = "matern"
TASKS = ("fit", *ACQUISITIONS)


# --------------------------------------------------------------------------------------------
# worker
# --------------------------------------------------------------------------------------------
def observations(problem_name: str, n: int, seed: int):
    """The problem, ``n`` seeded uniform points ``(n, D)`` on its space, their values ``(n,)``."""
    import torch

    from manibo.problems import make_problem

    problem = make_problem(problem_name)
    X = problem.space.random(n, generator=torch.Generator().manual_seed(seed))
    return problem, X, problem.evaluate_true(X)


def build_case(spec: dict) -> common.WorkerCase:
    """One fit, or one ``ask`` of a fresh optimiser, per call (see the module docstring)."""
    from manibo.loop import BayesianOptimizer
    from manibo.models import build_surrogate

    problem, X, Y = observations(spec["problem"], spec["n"], spec["seed"])
    device, task = spec["device"], spec["task"]
    info = {
        "problem": spec["problem"],
        "space": repr(problem.space),
        "n": spec["n"],
        "task": task,
    }
    versions = common.package_versions(("manibo", "torch", "gpytorch", "botorch"))
    if task == "fit":
        train_X, train_Y = (
            X.to(device),
            -Y.to(device).reshape(-1, 1),
        )  # minimised, as the loop does
        return common.WorkerCase(
            lambda: build_surrogate(SURROGATE, problem.space, train_X, train_Y),
            versions,
            info=info,
        )

    calls = spec["repeats"] + 1  # the warm-up call and the timed calls each take a fresh optimiser
    settings = {"surrogate": SURROGATE, "acquisition": task, "device": device, **spec["options"]}
    pool = []
    for seed in range(calls):
        optimizer = BayesianOptimizer(problem.space, seed=seed, **settings)
        optimizer.tell(X, Y)
        pool.append(optimizer)
    pool = iter(pool)

    def ask():
        return next(pool).ask()

    def inspect(candidate) -> dict:
        problem.space.check(candidate.cpu())
        return {"candidate_on_space": True, "candidate_device": str(candidate.device)}

    return common.WorkerCase(ask, versions, inspect, info)


# --------------------------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------------------------
def run(args: argparse.Namespace, devices: list[str]) -> dict:
    """Every (problem, n, task, device) case; returns the records and the CPU/GPU ratios.

    Each finished case is kept in ``<out>/cases/``; a later run with the same settings reuses it
    instead of measuring again (unless ``--fresh``), so a long run can be stopped and resumed.
    """
    results = {d: [] for d in devices}
    missing = []
    cases = args.out / "cases"
    with tempfile.TemporaryDirectory(prefix="bo_time_") as tmp:
        for problem in args.problem:
            for n in args.observations:
                for task in ("fit", *args.acquisitions):
                    for device in devices:
                        spec = {
                            "problem": problem,
                            "n": n,
                            "task": task,
                            "seed": args.seed,
                            "device": device,
                            "repeats": args.repeats,
                            "min_time_s": 0.0,
                            "budget_s": args.case_budget,
                            "threads": args.threads,
                            "options": args.options,
                        }
                        path = cases / f"{problem}_n{n}_{task}_{device}.json"
                        record = None if args.fresh else cached(path, spec)
                        if record is None and args.report_only:
                            missing.append({"problem": problem, "n": n, "task": task})
                            missing[-1]["device"] = device
                            print(f"  {problem:<16} n={n:>4} {task:<8} {device:<4} not measured")
                            continue
                        if record is None:
                            record = common.run_case(
                                SCRIPT,
                                spec,
                                build_case,
                                Path(tmp),
                                inline=args.inline,
                                timeout=WORKER_TIMEOUT_S,
                            )
                            record.update(problem=problem, n=n, task=task, spec=spec)
                            if "error" not in record:
                                common.write_json(path, record)
                        results[device].append(record)
                        print(
                            f"  {problem:<16} n={n:>4} {task:<8} {device:<4} {describe(record)}",
                            flush=True,
                        )
    loads = [
        load[0]
        for d in results.values()
        for r in d
        for load in r.get("load_average_before_after", [])
    ]
    return {
        "results": results,
        "device_ratios": device_ratios(results),
        "not_measured": missing,
        "load_average_cases_1_min": [min(loads), max(loads)] if loads else None,
    }


def cached(path: Path, spec: dict) -> dict | None:
    """The record kept at ``path`` when it was measured with exactly ``spec``, else None."""
    if not path.exists():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    return record if record.get("spec") == spec else None


def describe(record: dict) -> str:
    """One progress line for a finished case."""
    if "error" in record:
        return f"FAILED: {record['error']}"
    return (
        f"{record['time_s']:8.3f} s (cpu {record['cpu_time_s']:.3f} s)  "
        f"{record['peak_memory_bytes'] / common.MIB:8.1f} MiB"
    )


def device_ratios(results: dict) -> list[dict]:
    """CPU time / GPU time for every case measured on both (empty when only the CPU ran)."""

    def key(r: dict) -> tuple:
        return r["problem"], r["n"], r["task"]

    cpu = {key(r): r for r in results["cpu"]}
    return [
        {
            "problem": r["problem"],
            "n": r["n"],
            "task": r["task"],
            "device": device,
            "cpu_over_device_time": common.device_ratio(cpu.get(key(r)), r),
        }
        for device in results
        if device != "cpu"
        for r in results[device]
    ]


TASK_TITLES = {
    "fit": "fit of the GP",
    "logei": "iteration with LogEI",
    "qlognei": "iteration with qLogNEI",
}


def plot(data: dict, path: Path) -> None:
    """Time against n: one panel per task (fit, iterations), one line per problem and device."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    tasks = ["fit", *data["config"]["acquisitions"]]
    with_gpu = any(r["cpu_over_device_time"] for r in data["device_ratios"])
    columns = len(tasks) + with_gpu
    fig, axes = plt.subplots(
        1, columns, figsize=(5 * columns, 4.8), layout="constrained", squeeze=False
    )
    axes = axes[0]
    colors = {p: f"C{i}" for i, p in enumerate(data["config"]["problems"])}
    plain = FuncFormatter(lambda value, _: f"{value:g}")
    for ax, task in zip(axes, tasks, strict=False):
        for device, records in data["results"].items():
            for problem, color in colors.items():
                rows = [
                    r
                    for r in records
                    if r["problem"] == problem and r["task"] == task and "error" not in r
                ]
                if rows:
                    ax.plot(
                        [r["n"] for r in rows],
                        [r["time_s"] for r in rows],
                        marker="o",
                        color=color,
                        linestyle="-" if device == "cpu" else "--",
                        markerfacecolor=color if device == "cpu" else "none",
                        label=f"{problem}, {device.upper()}",
                    )
                    if device == "cpu":  # the CPU time of the process: what other jobs leave out
                        ax.plot(
                            [r["n"] for r in rows],
                            [r["cpu_time_s"] for r in rows],
                            color=color,
                            linestyle=":",
                        )
        ax.set_title(TASK_TITLES[task])
        ax.set_ylabel("wall time [s], median (dotted: CPU time)")
    if with_gpu:
        ax = axes[-1]
        for problem, color in colors.items():
            for task, style in zip(tasks, ("-", "--", ":"), strict=False):
                rows = [
                    r
                    for r in data["device_ratios"]
                    if r["problem"] == problem and r["task"] == task and r["cpu_over_device_time"]
                ]
                if rows:
                    ax.plot(
                        [r["n"] for r in rows],
                        [r["cpu_over_device_time"] for r in rows],
                        color=color,
                        linestyle=style,
                        marker="o",
                        label=f"{problem}, {task}",
                    )
        ax.set_title("CPU time / GPU time")
        ax.set_ylabel("speed-up of the GPU")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(data["config"]["observations"])
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_formatter(plain)
        ax.set_xlabel("number of observations n")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # none in a --report-only run with no cases yet
            ax.legend(fontsize=8)
    config = data["config"]
    cases = data.get("load_average_cases_1_min")
    title = common.run_title(
        data["environment"],
        config["devices"],
        (None, None) if cases else data["load_average_start_end"],
        config["smoke"],
    )
    if cases:
        title += f"; load average {cases[0]:g} to {cases[1]:g} around the cases"
    fig.suptitle(
        "Time of one BO iteration (fit + acquisition optimisation) against the number of "
        f"observations\n{title}"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options (``--worker`` and ``--result`` are internal)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--problem",
        action="append",
        help=f"a problem (repeatable; default {', '.join(PROBLEMS)})",
    )
    parser.add_argument(
        "--observations",
        type=int,
        nargs="+",
        help=f"values of n (default {OBSERVATIONS})",
    )
    parser.add_argument(
        "--acquisitions", nargs="+", choices=ACQUISITIONS, default=list(ACQUISITIONS)
    )
    common.add_run_arguments(parser, HERE / "results", repeats=3)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="one problem, tiny n, one repeat, --inline by default",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the observed points")
    parser.add_argument(
        "--fresh", action="store_true", help="measure every case again, ignoring <out>/cases/"
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="measure nothing: the JSON and PNG from the cases kept in <out>/cases/",
    )
    args = parser.parse_args(argv)
    args.options = SMOKE_OPTIONS if args.smoke else LOOP_OPTIONS
    if args.smoke:
        args.repeats = 1
        args.problem = args.problem or list(SMOKE["problems"])
        args.observations = args.observations or list(SMOKE["observations"])
    args.problem = args.problem or list(PROBLEMS)
    args.observations = sorted(args.observations or OBSERVATIONS)
    if args.inline is None:
        args.inline = args.smoke
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (with ``--worker``, one case of it)."""
    args = parse_args(argv)
    if args.worker:
        common.serve_worker(args.worker, args.result, build_case)
        return 0
    import torch

    devices = common.resolve_devices(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    env = common.environment(devices[-1])
    print(f"bo_time on {', '.join(devices)}; {common.hardware_label(env, 'cpu')}", flush=True)
    load_start = common.load_average()
    measured = run(args, devices)
    data = {
        "benchmark": "bo_time",
        "description": "time of one BO iteration (fit + acquisition optimisation) against the "
        "number of observations",
        "config": {
            "problems": args.problem,
            "observations": args.observations,
            "acquisitions": args.acquisitions,
            "surrogate": f"{SURROGATE} (geometric Matérn-5/2 GP, hyperparameters fitted)",
            "optimizer": {**args.options, "optimizer": "riemannian"},
            "devices": devices,
            "repeats": args.repeats,
            "case_budget_s": args.case_budget,
            "warmup_calls": 1,
            "seed": args.seed,
            "threads": args.threads,
            "smoke": args.smoke,
            "inline": args.inline,
            "time": "median wall (and CPU) time of the timed calls after one warm-up call; an "
            "iteration is BayesianOptimizer.ask() of a fresh optimiser told the n observations",
            "memory": common.memory_note(args.inline),
        },
        "environment": env,
        **measured,
        "load_average_start_end": [load_start, common.load_average()],
    }
    common.write_json(args.out / "bo_time.json", data)
    plot(data, args.out / "bo_time.png")
    print(f"wrote {args.out / 'bo_time.json'} and {args.out / 'bo_time.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
