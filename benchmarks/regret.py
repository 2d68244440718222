"""Regret curves of Bayesian optimisation on spaces: manibo's geometric GP against baselines.

For each problem, method and seed, one BO run (MaternGaBO protocol: a shared uniform initial
design of ``--initial`` points per seed, then one point per iteration) is written as JSON; the
summary JSON holds every per-seed array and the median [IQR] simple regret at fixed budgets; the
PNG plots log10 simple regret (over all evaluations, the initial design included and marked) with
median and interquartile band.

Methods: ``matern`` (geometric Matérn-5/2 GP, Riemannian acquisition optimisation), ``heat``,
``euclidean`` (Matérn-5/2 on ambient coordinates, box L-BFGS-B then projection: GaBO's Euclidean
baseline), ``chart`` (Matérn-5/2 on latitude/longitude-type charts), ``cholesky`` (SPD problems
only: the ``euclidean`` GP and BoTorch's L-BFGS-B on the box of Cholesky coordinates of
:class:`~manibo.problems.spd.CholeskyPullback`, each point evaluated as the SPD matrix
L Lᵀ), ``gpnet`` (a GPNet inference network, see ``docs/gpnet.md``), ``random`` (uniform
search); any registered surrogate name works.

Runs are spread over ``--workers`` processes (one thread each) and every finished run is written at
once to ``<out>/runs``, so a campaign cut short keeps what it finished; ``--report-only`` then
summarises the stored runs.

    python benchmarks/regret.py --problem ackley-sphere5 --seeds 10 --budget 100
    python benchmarks/regret.py --problems ackley-spd2,ackley-hyperbolic3 --seeds 0-19 --workers 16
    python benchmarks/regret.py --timing           # time per iteration at 100 observations on S²
    python benchmarks/regret.py --smoke            # seconds; used by the test suite
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _common import (  # noqa: E402
    count,
    cpu_model,
    environment,
    load_average,
    run_setup,
    write_json,
)

DEFAULT_OUT = Path(__file__).parent / "results"


def run_one(
    problem_name: str,
    method: str,
    seed: int,
    budget: int,
    initial: int,
    acquisition: str,
    out_dir: str,
    fast: bool,
    device: str = "cpu",
    deadline: float | None = None,
) -> dict | None:
    """One seeded run; writes and returns its record (values, regret, time per iteration).

    A run still going at ``deadline`` (``time.time()`` seconds) stops between two iterations and
    returns None, writing nothing.

    A record already on disk for the same problem, method, seed, budget, initial design and
    acquisition is returned as it is, so an interrupted or extended benchmark only runs what is
    missing (the runs of many invocations accumulate in ``<out>/runs``). The record names the
    problem's space (its ``repr``, which says how its random points are drawn); a record of the
    same problem on a differently sampled space is run again.
    """
    import torch

    torch.set_num_threads(1)
    from manibo.loop import BayesianOptimizer
    from manibo.problems import make_problem

    problem = make_problem(problem_name)
    space = repr(problem.space)
    path = _record_path(out_dir, problem_name, method, seed)
    cached = _cached_record(path, budget, initial, acquisition, fast, space)
    if cached is not None:
        return cached
    surrogate = method
    if method == "cholesky":
        from manibo.problems.spd import CholeskyPullback

        problem, surrogate = CholeskyPullback(problem), "euclidean"
    start = time.perf_counter()
    if method == "random":
        xs = _random_search(problem.space, initial, budget, seed)
        iteration_seconds = []
    else:
        options = (
            {"num_restarts": 2, "raw_samples": 32, "optimizer_options": {"maxiter": 10}}
            if fast
            else {}
        )
        opt = BayesianOptimizer(
            problem.space,
            surrogate=surrogate,
            acquisition=acquisition,
            initial_design=initial,
            seed=seed,
            # GaBO's Euclidean baseline: a box optimiser, then projection onto the space (finite
            # spaces are enumerated whatever the surrogate)
            optimizer="projection"
            if surrogate == "euclidean" and not problem.space.is_discrete
            else "riemannian",
            device=device,
            **options,
        )
        if method == "cholesky":  # the SPD methods' initial design, in Cholesky coordinates
            generator = torch.Generator().manual_seed(seed)
            design = problem.coordinates(problem.problem.space.random(initial, generator=generator))
            opt.tell(design, problem.evaluate_true(design))
        iteration_seconds = []
        while len(opt.history) < budget:
            if deadline is not None and time.time() > deadline:
                return None
            t0 = time.perf_counter()
            x = opt.ask()
            if len(opt.history) >= initial:
                iteration_seconds.append(time.perf_counter() - t0)
            opt.tell(x, [float(problem.evaluate_true(x[0]))])
        xs = torch.tensor([e.x for e in opt.history], dtype=torch.float64)
    values = problem.evaluate_true(xs)
    regret = (torch.cummin(values, 0).values - problem.optimal_value).clamp_min(0).tolist()
    record = {
        "problem": problem_name,
        "method": method,
        "seed": seed,
        "budget": budget,
        "initial": initial,
        "acquisition": acquisition,
        "space": space,
        "optimal_value": problem.optimal_value,
        "values": values.tolist(),
        "simple_regret": regret,
        "seconds_per_iteration": iteration_seconds,
        "wall_seconds": time.perf_counter() - start,
        "smoke": fast,
        "finished_utc": _utc(time.time()),
        "load_average_end": load_average(),
        "cpu_model": cpu_model(),
        "setup": run_setup(),
    }
    write_json(path, record)
    return record


def _applicable(problems: list[str], methods: list[str]) -> list[tuple[str, str]]:
    """The ``(problem, method)`` pairs whose surrogate models the problem's space; the others
    are reported and left out (VISH needs a sphere, the ambient GP coordinates)."""
    from manibo.models import unsupported_reason
    from manibo.problems import make_problem
    from manibo.spaces import SymmetricPositiveDefinite

    pairs = []
    for problem in problems:
        space = make_problem(problem).space
        for method in methods:
            if method == "cholesky":
                spd = isinstance(space, SymmetricPositiveDefinite)
                reason = None if spd else "the Cholesky baseline needs an SPD problem"
            else:
                reason = None if method == "random" else unsupported_reason(method, space)
            if reason is None:
                pairs.append((problem, method))
            else:
                print(f"skipped {method} on {problem}: {reason}")
    return pairs


def _runs_provenance(records: list[dict]) -> dict:
    """When the runs finished, the load average at their ends, the CPUs they ran on and their
    setups (cores, torch threads, versions; "not recorded" for runs of older versions)."""
    loads = [r["load_average_end"][0] for r in records if r.get("load_average_end")]
    machines: dict[str, int] = {}
    setups: dict[str, int] = {}
    for r in records:
        model = r.get("cpu_model", "not recorded")
        machines[model] = machines.get(model, 0) + 1
        setup = r.get("setup", "not recorded")
        setups[setup] = setups.get(setup, 0) + 1
    return {
        "measured_utc": [
            min(r["finished_utc"] for r in records),
            max(r["finished_utc"] for r in records),
        ],
        "load_average_runs_1_min": [min(loads), max(loads)] if loads else None,
        "load_average_runs_recorded": [len(loads), len(records)],
        "cpu_models_runs": machines,
        "setups_runs": setups,
    }


def _utc(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="seconds")


def _stored_record(job: tuple) -> dict | None:
    """The stored record of a job ``(problem, method, seed, budget, initial, acquisition, out,
    smoke, device, deadline)``, or None when it has not been run."""
    problem, method, seed, budget, initial, acquisition, out_dir, fast = job[:8]
    return _cached_record(
        _record_path(out_dir, problem, method, seed), budget, initial, acquisition, fast
    )


def _record_path(out_dir: str, problem: str, method: str, seed: int) -> Path:
    return Path(out_dir) / "runs" / f"{problem}_{method}_seed{seed}.json"


def _random_search(space, initial: int, budget: int, seed: int):
    """Random search's ``budget`` points ``(budget, *point_shape)``: the initial design the loop
    draws for ``seed`` (shared with every method), then uniform draws; on a finite space every
    point is distinct, as in the loop's own design (sampling without replacement)."""
    import torch

    from manibo.loop import seeded_design

    design = seeded_design(space, initial, seed)
    generator = torch.Generator().manual_seed(seed + 1_000_003)
    if not space.is_discrete:
        return torch.cat([design, space.random(budget - initial, generator=generator)])
    chosen = {tuple(x.reshape(-1).tolist()): x for x in design}
    while len(chosen) < budget:
        for x in space.random(budget, generator=generator):
            if len(chosen) < budget:
                chosen.setdefault(tuple(x.reshape(-1).tolist()), x)
    return torch.stack(list(chosen.values()))


def _cached_record(
    path: Path, budget: int, initial: int, acquisition: str, fast: bool, space: str | None = None
):
    """The record at ``path`` if it was run with these settings (and on ``space``, where both the
    record and the caller name one), else None."""
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    record.setdefault("finished_utc", _utc(path.stat().st_mtime))  # records of older versions
    same = (record["budget"], record["initial"], record.get("smoke", False))
    if same != (budget, initial, fast):
        return None
    if record["method"] != "random" and record["acquisition"] != acquisition:
        return None
    if space is not None and record.get("space", space) != space:
        return None
    return record


def summarise(records: list[dict], checkpoints: list[int]) -> dict:
    """Median [IQR] simple regret at ``checkpoints`` and mean time per iteration, by method."""
    import numpy as np

    table = {}
    for method in sorted({r["method"] for r in records}):
        runs = np.array([r["simple_regret"] for r in records if r["method"] == method])
        secs = [s for r in records if r["method"] == method for s in r["seconds_per_iteration"]]
        table[method] = {
            "seeds": int(runs.shape[0]),
            "regret": {
                str(t): {
                    "median": float(np.median(runs[:, t - 1])),
                    "q25": float(np.quantile(runs[:, t - 1], 0.25)),
                    "q75": float(np.quantile(runs[:, t - 1], 0.75)),
                }
                for t in checkpoints
                if t <= runs.shape[1]
            },
            "seconds_per_iteration": float(np.mean(secs)) if secs else None,
        }
    return table


def plot(records: list[dict], path: Path, title: str) -> None:
    """Simple regret vs evaluations: median line and interquartile band per method.

    log10 regret, except where runs reach the optimum exactly (a finite space: mesh vertices,
    graph nodes): then the regret on a linear axis, beside the fraction of seeds that have
    evaluated the optimum.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from manibo.plotting import plot_median_curves

    exact = any(min(r["simple_regret"]) == 0 for r in records)
    fig, axes = plt.subplots(
        1, 2 if exact else 1, figsize=(12 if exact else 7, 4.5), constrained_layout=True
    )
    ax = axes[0] if exact else axes
    initial = records[0]["initial"]
    for i, method in enumerate(sorted({r["method"] for r in records})):
        regret = np.array([r["simple_regret"] for r in records if r["method"] == method])
        runs = regret if exact else np.log10(regret + 1e-12)
        t = np.arange(1, runs.shape[1] + 1)
        label = f"{method} ({count(runs.shape[0], 'seed')})"
        plot_median_curves(ax, t, {label: runs}, {label: f"C{i}"})
        if exact:
            axes[1].plot(t, (regret == 0).mean(0), color=f"C{i}", label=method)
    for axis in axes if exact else [ax]:
        axis.axvline(initial, color="grey", ls="--", lw=1, label=f"initial design ({initial})")
        axis.set_xlabel("number of evaluations")
    ax.set_ylabel("simple regret" if exact else "log10 simple regret")
    ax.set_title(title)
    ax.legend()
    if exact:
        axes[1].set_ylabel("fraction of seeds that found the optimum")
        axes[1].set_ylim(0, 1.02)
        axes[1].legend()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def timing(out: Path, observations: int = 100, repeats: int = 3) -> dict:
    """Time per BO iteration (fit + acquisition optimisation) at ``observations`` points on S²."""
    import torch

    from manibo.loop import BayesianOptimizer
    from manibo.problems import make_problem

    problem = make_problem("ackley-sphere2")
    results = {}
    for acquisition in ("logei", "qlognei"):
        opt = BayesianOptimizer(
            problem.space, acquisition=acquisition, initial_design=observations, seed=0
        )
        x = opt.ask(observations)
        opt.tell(x, problem.evaluate_true(x))
        seconds = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            candidate = opt.ask()
            seconds.append(time.perf_counter() - t0)
            opt._pending.clear()
        problem.space.check(candidate)
        results[acquisition] = {"seconds": seconds, "median": sorted(seconds)[len(seconds) // 2]}
    data = {
        "observations": observations,
        "space": "Sphere(2)",
        "threads": torch.get_num_threads(),
        "results": results,
        "target_seconds": 5.0,
        "environment": environment("cpu"),
    }
    write_json(out / "bo_iteration_time.json", data)
    return data


def seed_list(text: str) -> list[int]:
    """``"20"`` → seeds 0..19; ``"5-9"`` → seeds 5..9."""
    first, dash, last = text.partition("-")
    try:
        seeds = list(range(int(first), int(last) + 1)) if dash else list(range(int(text)))
    except ValueError:
        seeds = []
    if not seeds:
        raise argparse.ArgumentTypeError(f"expected a count N or a range a-b, got {text!r}")
    return seeds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--problem", action="append", help="problem name (repeatable); default ackley-sphere5"
    )
    parser.add_argument("--problems", help="comma-separated problem names (with --problem)")
    parser.add_argument("--methods", default="matern,euclidean,random")
    parser.add_argument(
        "--seeds", type=seed_list, default="10", help="a count N (seeds 0..N-1) or a range a-b"
    )
    parser.add_argument("--device", default="cpu", help="where the surrogates are fitted")
    parser.add_argument(
        "--stop-after",
        type=float,
        help="seconds: runs unfinished by then stop and are left out; the summary is written",
    )
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--initial", type=int, default=5)
    parser.add_argument("--acquisition", default="logei")
    parser.add_argument("--checkpoints", default="25,50,100")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--timing", action="store_true", help="only time one iteration at 100 points on S²"
    )
    parser.add_argument("--smoke", action="store_true", help="tiny budget for the test suite")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="summarise and plot the runs already stored under --out, running nothing",
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.timing:
        data = timing(args.out)
        print(json.dumps(data["results"], indent=2))
        return 0
    load_at_start = load_average()
    problems = (args.problem or []) + (args.problems.split(",") if args.problems else [])
    problems = problems or ["ackley-sphere5"]
    methods = args.methods.split(",")
    if args.smoke:  # two BO iterations after the initial design: the loop proposes, is told, again
        args.seeds, args.budget, args.initial, args.workers = [0, 1], 5, 3, 1
        checkpoints = [4, 5]
    else:
        checkpoints = [int(c) for c in args.checkpoints.split(",")]
    beyond = [c for c in checkpoints if c > args.budget]
    if beyond:
        print(f"checkpoints {beyond} are beyond --budget {args.budget}: left out of the table")
        checkpoints = [c for c in checkpoints if c <= args.budget]
    pairs = _applicable(problems, methods)
    deadline = None if args.stop_after is None else time.time() + args.stop_after
    jobs = [  # seed-major, so that an interrupted campaign leaves every method with equal seeds
        (p, m, s, args.budget, args.initial, args.acquisition, str(args.out), args.smoke)
        + (args.device, deadline)
        for s in args.seeds
        for p, m in pairs
    ]
    if args.report_only:
        records = list(map(_stored_record, jobs))
    elif args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            records = list(pool.map(run_one, *zip(*jobs, strict=True)))
    else:
        records = [run_one(*job) for job in jobs]
    missing = sum(r is None for r in records)
    records = [r for r in records if r is not None]
    if missing:
        print(f"{missing} of {len(jobs)} runs are missing (not run, or stopped by --stop-after)")
    summary = {
        "environment": environment("cpu"),
        "load_average_start": load_at_start,
        "checkpoints": checkpoints,
        "problems": {},
    }
    if records:  # the runs' own times, loads and machines (stored runs may be older than this one)
        summary.update(_runs_provenance(records))
    for p in problems:
        mine = [r for r in records if r["problem"] == p]
        if not mine:
            continue
        summary["problems"][p] = {"table": summarise(mine, checkpoints), "runs": mine}
        plot(
            mine,
            args.out / f"regret_{p}.png",
            f"{p}: simple regret, median and IQR over seeds ({args.acquisition})",
        )
        print(
            f"\n{p} (acquisition {args.acquisition}): median [IQR] simple regret (seeds per method)"
        )
        for method, row in summary["problems"][p]["table"].items():
            cells = "  ".join(
                f"t={t}: {v['median']:.3g} [{v['q25']:.3g}, {v['q75']:.3g}]"
                for t, v in row["regret"].items()
            )
            secs = row["seconds_per_iteration"]
            print(
                f"  {method:10s} ({row['seeds']}) {cells}"
                + (f"  ({secs:.2f} s/iteration)" if secs else "")
            )
    write_json(args.out / "regret_summary.json", summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
