r"""Product spaces against a sphere, side by side in one process: kernel matrices and BO iterations.

Two ratios, each measured in alternating rounds in one process so that both sides see the same
load from other processes (the ratio of each round is taken, then the median over rounds):

* **kernel**: K(X, X) of the Matérn kernel (ν = 3/2, lengthscale 1, float64) at N points on the
  torus T³ (10 levels, eigenvalues up to 10, as in ``kernel_speed.py``) against S² (25 levels);
  with ``--with-series`` also T³ by the level-by-level product series that the matrix product of
  eigenfunctions replaced (at ``--series-n`` points, as it is slow).
* **iteration**: one ``BayesianOptimizer.ask()`` (fit of the Matérn-5/2 GP and acquisition
  optimisation with the loop's defaults) with n observations on ``arm-torus3`` against
  ``ackley-sphere2``, for LogEI and qLogNEI; each timed call is a fresh optimiser told the same
  seeded points, with another seed.

Writes ``product_speed.json`` (times, ratios, versions, hardware, load average around every round)
and ``product_speed.png`` to ``--out``.

    python benchmarks/product_speed.py                     # N = 5000, n = 100, 5 rounds
    python benchmarks/product_speed.py --with-series --series-n 2000
    python benchmarks/product_speed.py --smoke --out /tmp/bench
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from pathlib import Path

import _common as common
from _kernel_cases import CASES, manibo_compute

HERE = Path(__file__).resolve().parent
TARGET_RATIO = 2.0
PROBLEMS = ("ackley-sphere2", "arm-torus3")
ACQUISITIONS = ("logei", "qlognei")


def kernel_work(name: str, n: int, seed: int, series: bool = False):
    """A call that computes K(X, X) on the kernel case ``name`` at ``n`` seeded points."""
    import torch

    from manibo.spaces import product

    case = CASES[name]
    settings = case.prepare(None, False)
    points = torch.from_numpy(case.sample(n, seed, settings))
    compute = manibo_compute(case, settings, points)
    if not series:
        return compute

    def by_series():
        saved = product.FEATURES_PER_TUPLE
        product.FEATURES_PER_TUPLE = 0  # the level series of every tuple of circle levels
        try:
            return compute()
        finally:
            product.FEATURES_PER_TUPLE = saved

    return by_series


def iteration_work(problem_name: str, n: int, acquisition: str, seed: int, options: dict):
    """A call that runs one ``ask()`` of a fresh optimiser told ``n`` seeded observations."""
    import torch

    from manibo.loop import BayesianOptimizer
    from manibo.problems import make_problem

    problem = make_problem(problem_name)
    X = problem.space.random(n, generator=torch.Generator().manual_seed(seed))
    Y = problem.evaluate_true(X)
    calls = iter(range(1, 10**6))

    def ask():
        optimizer = BayesianOptimizer(
            problem.space, seed=next(calls), acquisition=acquisition, **options
        )
        optimizer.tell(X, Y)
        candidate = optimizer.ask()
        problem.space.check(candidate)
        return candidate

    return ask


def alternate(works: dict, rounds: int) -> dict:
    """Time every work once per round, in turn, after one warm-up call each.

    Returns:
        Per work: wall and CPU times of the rounds; and the load average before every round.
    """
    for work in works.values():
        work()
    times = {name: {"wall_s": [], "cpu_s": []} for name in works}
    loads = []
    for _ in range(rounds):
        loads.append(common.load_average())
        for name, work in works.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            work()
            times[name]["wall_s"].append(time.perf_counter() - start)
            times[name]["cpu_s"].append(time.process_time() - start_cpu)
    loads.append(common.load_average())
    for record in times.values():
        record["median_wall_s"] = statistics.median(record["wall_s"])
        record["median_cpu_s"] = statistics.median(record["cpu_s"])
    return {"times": times, "load_average_before_rounds": loads}


def paired_ratio(times: dict, numerator: str, denominator: str) -> dict:
    """Median over rounds of numerator / denominator, in wall and CPU time."""
    out = {}
    for kind in ("wall_s", "cpu_s"):
        ratios = [
            a / b for a, b in zip(times[numerator][kind], times[denominator][kind], strict=True)
        ]
        out[f"median_ratio_{kind[:-2]}"] = statistics.median(ratios)
        out[f"ratios_{kind[:-2]}"] = ratios
    out["target"] = TARGET_RATIO
    out["pass_wall"] = out["median_ratio_wall"] <= TARGET_RATIO
    return out


def plot(data: dict, path: Path) -> None:
    """Bars of the median times (wall; CPU hatched) and the ratios against the target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("kernel", "K(X, X), N = {n}".format(n=data["config"]["n_points"]))]
    panels += [
        (f"iteration_{a}", f"BO iteration with {a}, n = {data['config']['n_observations']}")
        for a in data["config"]["acquisitions"]
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.6), layout="constrained")
    for ax, (key, title) in zip(axes, panels, strict=True):
        block = data[key]
        names = list(block["times"])
        wall = [block["times"][n]["median_wall_s"] for n in names]
        cpu = [block["times"][n]["median_cpu_s"] for n in names]
        positions = range(len(names))
        ax.bar(positions, wall, color=[f"C{i}" for i in positions], label="wall")
        ax.bar(positions, cpu, fill=False, hatch="//", label="CPU")
        ax.set_xticks(list(positions), names, rotation=15)
        ax.set_ylabel("median time per call [s]")
        ratio = block["ratio"]["median_ratio_wall"]
        ax.set_title(f"{title}\nratio {ratio:.2f} (target ≤ {TARGET_RATIO:g})")
        ax.legend(fontsize=8)
    loads = [x[0] for block in panels for x in data[block[0]]["load_average_before_rounds"] if x]
    title = common.run_title(data["environment"], ["cpu"], (None, None), data["config"]["smoke"])
    if loads:
        title += f"; load average {min(loads):g} to {max(loads):g} during the rounds"
    fig.suptitle(f"Products against the sphere, measured in alternating rounds\n{title}")
    common.save_figure(fig, path)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE / "results", help="output directory")
    parser.add_argument("--n", type=int, default=5000, help="points of the kernel matrices")
    parser.add_argument("--observations", type=int, default=100, help="observations of the BO")
    parser.add_argument("--rounds", type=int, default=5, help="alternating timed rounds")
    parser.add_argument("--with-series", action="store_true", help="also T³ by the level series")
    parser.add_argument("--series-n", type=int, default=2000, help="points for the series run")
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one round")
    args = parser.parse_args(argv)
    if args.smoke:
        args.n, args.observations, args.rounds, args.series_n = 200, 12, 1, 100
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")  # fitting warnings of trial hyperparameters are not timed
    env = common.environment("cpu")
    print(f"product_speed; {common.hardware_label(env, 'cpu')}", flush=True)
    kernels = {
        "S² (25 levels)": kernel_work("sphere2", args.n, args.seed),
        "T³ (10 levels)": kernel_work("torus3", args.n, args.seed),
    }
    kernel = alternate(kernels, args.rounds)
    kernel["ratio"] = paired_ratio(kernel["times"], "T³ (10 levels)", "S² (25 levels)")
    print(
        f"  kernel N={args.n}: ratio T³/S² {kernel['ratio']['median_ratio_wall']:.2f}", flush=True
    )
    data = {
        "benchmark": "product_speed",
        "description": "product spaces against a sphere, in alternating rounds in one process",
        "config": {
            "n_points": args.n,
            "n_observations": args.observations,
            "rounds": args.rounds,
            "acquisitions": ["logei"] if args.smoke else list(ACQUISITIONS),
            "kernel": "Matérn ν=3/2, lengthscale 1, float64 (kernel_speed.py's cases)",
            "surrogate": "matern (geometric Matérn-5/2 GP, hyperparameters fitted)",
            "optimizer": "the loop's defaults (8 restarts from 256 raw samples)",
            "smoke": args.smoke,
            "seed": args.seed,
            "threads": args.threads,
        },
        "environment": env,
        "kernel": kernel,
    }
    if args.with_series:
        series = {
            "T³ series": kernel_work("torus3", args.series_n, args.seed, series=True),
            "T³ features": kernel_work("torus3", args.series_n, args.seed),
            "S²": kernel_work("sphere2", args.series_n, args.seed),
        }
        block = alternate(series, max(1, args.rounds // 2))
        block["ratio"] = paired_ratio(block["times"], "T³ series", "T³ features")
        block["n_points"] = args.series_n
        data["kernel_series"] = block
        print(f"  series/features at N={args.series_n}: {block['ratio']['median_ratio_wall']:.1f}")
    options = (
        {"num_restarts": 2, "raw_samples": 16, "optimizer_options": {"maxiter": 5}}
        if args.smoke
        else {}
    )
    for acquisition in data["config"]["acquisitions"]:
        works = {
            problem: iteration_work(problem, args.observations, acquisition, args.seed, options)
            for problem in PROBLEMS
        }
        block = alternate(works, args.rounds)
        block["ratio"] = paired_ratio(block["times"], "arm-torus3", "ackley-sphere2")
        data[f"iteration_{acquisition}"] = block
        print(
            f"  iteration {acquisition} n={args.observations}: ratio "
            f"{block['ratio']['median_ratio_wall']:.2f}",
            flush=True,
        )
    data["load_average_start_end"] = [env["load_average_1_5_15_min"], common.load_average()]
    common.write_json(args.out / "product_speed.json", data)
    plot(data, args.out / "product_speed.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
