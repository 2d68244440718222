"""Are the BO surrogates' posteriors calibrated away from their data? Coverage on a whole space.

For each problem (``--problem``, repeatable; default Ackley on S² and S⁵ and Styblinski–Tang on S²)
and seed, ``--n`` points are evaluated (noise-free) and every surrogate
(``--methods``; default the geometric Matérn GP, VISH, GPNet and the activated deep GP) is built
on them exactly as the loop builds it (``build_surrogate`` with its defaults, under
``torch.manual_seed(seed)``). Its latent posterior is then compared with the true objective at
``--test-points`` fresh uniform points of the space. The ``--design`` of the training points is
``uniform`` (seeded uniform points) or ``bo:<surrogate>``: the first ``n`` evaluations of the loop
with that surrogate (LogEI, 5 uniform initial points, the loop's defaults, the seed), which cluster
where that run searched, as a surrogate's data do in Bayesian optimisation.


* **coverage**: the fraction of test points whose true value lies in the central 95% interval
  of the posterior, ``|f - mean| <= 1.96 sd`` (0.95 for a calibrated Gaussian posterior);
* **sd / error**: the median posterior standard deviation over the median absolute error (about
  1.48 for a calibrated Gaussian; far below 1 means overconfident);
* **NLPD**: the mean Gaussian negative log density of the true values, in the units of the
  objective standardised by the training values' standard deviation;
* **RMSE** of the posterior mean, in the same units.

An acquisition such as LogEI trusts the posterior's standard deviation to decide where to
explore, so an overconfident surrogate stops exploring. Writes ``surrogate_calibration.json`` and
``surrogate_calibration.png`` to ``--out``; every method's record of every problem and seed (and
the design's training points) is kept under ``--out/runs`` and reused, so an interrupted run
resumes where it stopped.

    python benchmarks/surrogate_calibration.py
    python benchmarks/surrogate_calibration.py --design bo:adgp --out results/calibration_bo
    python benchmarks/surrogate_calibration.py --smoke --out /tmp/bench   # seconds; the tests
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import _common as common

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "surrogate_calibration"
PROBLEMS = ("ackley-sphere2", "styblinski-tang-sphere2", "ackley-sphere5")
METHODS = ("matern", "vish", "gpnet", "adgp")
Z_95 = 1.959963984540054
METRICS = ("coverage", "sd_over_error", "nlpd", "rmse")


def calibration(mean, sd, truth, scale: float) -> dict:
    """The four metrics of the module docstring.

    Args:
        mean: posterior means, shape ``(T,)``.
        sd: posterior standard deviations, shape ``(T,)``, positive.
        truth: true values, shape ``(T,)``.
        scale: the standard deviation of the training values (the unit of NLPD and RMSE).

    Returns:
        ``{"coverage", "sd_over_error", "nlpd", "rmse"}`` as floats.
    """
    error = truth - mean
    z = error / sd
    nlpd = 0.5 * math.log(2 * math.pi) + (sd / scale).log() + 0.5 * z.pow(2)
    return {
        "coverage": float((z.abs() <= Z_95).double().mean()),
        "sd_over_error": float(sd.median() / error.abs().median()),
        "nlpd": float(nlpd.mean()),
        "rmse": float(error.pow(2).mean().sqrt() / scale),
    }


def training_points(problem, design: str, n: int, seed: int):
    """``n`` training inputs ``(n, *point)`` of the ``design`` (see the module docstring)."""
    import torch

    from manibo.loop import BayesianOptimizer

    if design == "uniform":
        return problem.space.random(n, generator=torch.Generator().manual_seed(seed))
    surrogate = design.removeprefix("bo:")
    opt = BayesianOptimizer(problem.space, surrogate=surrogate, initial_design=5, seed=seed)
    opt.run(lambda x: float(problem.evaluate_true(x)), n, progress=False)
    return torch.tensor([e.x for e in opt.history], dtype=torch.float64)


def run_case(
    problem_name: str,
    seed: int,
    methods,
    n: int,
    test_points: int,
    design: str,
    out: Path | None = None,
    stored_only: bool = False,
) -> list[dict]:
    """Every method on one problem and seed; one record per method.

    With ``out``, each method's record is stored under ``out/runs`` (and the design's training
    points beside them) and reused by a later call with the same problem, seed, design, ``n`` and
    test points, so an interrupted run resumes and a method can be added without rerunning the
    design's Bayesian optimisation. ``stored_only``: return the stored records, run nothing.
    """
    import torch

    from manibo.models import build_surrogate
    from manibo.problems import make_problem

    torch.set_num_threads(1)
    problem = make_problem(problem_name)
    space = problem.space
    tag = f"{problem_name}_{design.replace(':', '-')}_n{n}_t{test_points}_seed{seed}"
    runs = None if out is None else out / "runs"
    stored = {}
    if runs is not None:
        for method in methods:
            path = runs / f"{tag}_{method}.json"
            if path.exists():
                stored[method] = json.loads(path.read_text())
    if stored_only or len(stored) == len(methods):
        return [stored[m] for m in methods if m in stored]
    design_path = None if runs is None else runs / f"{tag}_design.json"
    if design_path is not None and design_path.exists():
        X = torch.tensor(json.loads(design_path.read_text())["X"], dtype=torch.float64)
    else:
        X = training_points(problem, design, n, seed)
        if design_path is not None:
            common.write_json(design_path, {"X": X.tolist()})
    Y = problem.evaluate_true(X).reshape(-1, 1)
    test = space.random(test_points, generator=torch.Generator().manual_seed(1_000_003 + seed))
    truth = problem.evaluate_true(test)
    scale = float(Y.std())
    records = []
    for method in methods:
        if method in stored:
            records.append(stored[method])
            continue
        torch.manual_seed(seed)
        start = time.perf_counter()
        model = build_surrogate(method, space, X, Y)
        with torch.no_grad():
            posterior = model.posterior(test.unsqueeze(-2))
            mean = posterior.mean.reshape(-1)
            sd = posterior.variance.reshape(-1).clamp_min(1e-300).sqrt()
        records.append(
            {
                "problem": problem_name,
                "seed": seed,
                "method": method,
                "n": n,
                "design": design,
                "test_points": test_points,
                **calibration(mean, sd, truth, scale),
                "seconds": time.perf_counter() - start,
                "load_average_end": common.load_average(),
            }
        )
        if runs is not None:
            common.write_json(runs / f"{tag}_{method}.json", records[-1])
        print(
            f"{problem_name} seed {seed} {method:7s} coverage {records[-1]['coverage']:.3f} "
            f"sd/error {records[-1]['sd_over_error']:.3g} NLPD {records[-1]['nlpd']:.3g}",
            flush=True,
        )
    return records


def summarise(records: list[dict], problems, methods) -> dict:
    """Per problem and method: the median of each metric over the seeds, and the seed count."""
    table = {}
    for problem in problems:
        table[problem] = {}
        for method in methods:
            mine = [r for r in records if r["problem"] == problem and r["method"] == method]
            if mine:
                row = {m: statistics.median(r[m] for r in mine) for m in METRICS}
                table[problem][method] = {**row, "seeds": len(mine)}
    return table


def plot(table: dict, title: str, path: Path) -> None:
    """Coverage of the central 95% interval per problem and method, the calibrated 0.95 marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problems = list(table)
    methods = sorted({m for row in table.values() for m in row})
    fig, ax = plt.subplots(figsize=(8, 4.2))
    width = 0.8 / len(methods)
    for i, method in enumerate(methods):
        xs = [p + (i - (len(methods) - 1) / 2) * width for p in range(len(problems))]
        values = [table[p].get(method, {}).get("coverage", float("nan")) for p in problems]
        ax.bar(xs, values, width, label=method)
    ax.axhline(0.95, color="black", linestyle="--", linewidth=1, label="calibrated (0.95)")
    ax.set_xticks(range(len(problems)), problems)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("true values inside the 95% interval")
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    common.save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problem", action="append", help="repeatable (default: three spheres)")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--n", type=int, default=30, help="training points per seed")
    parser.add_argument("--test-points", type=int, default=2000)
    parser.add_argument(
        "--design", default="uniform", help="'uniform' or 'bo:<surrogate>' (training points)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes for the test suite")
    parser.add_argument(
        "--report-only", action="store_true", help="summarise the stored records, running nothing"
    )
    args = parser.parse_args(argv)
    problems = tuple(args.problem or PROBLEMS)
    methods = tuple(args.methods.split(","))
    if not (args.design == "uniform" or args.design.startswith("bo:")):
        raise SystemExit(f"--design must be 'uniform' or 'bo:<surrogate>', got {args.design!r}.")
    if args.smoke:  # a BO design: its 5 initial points and one BO step
        problems, methods = ("ackley-sphere2",), ("matern", "adgp")
        args.seeds, args.n, args.test_points = 1, 6, 200
    args.out.mkdir(parents=True, exist_ok=True)
    env = common.environment("cpu")
    load_start = common.load_average()
    records = [
        record
        for seed in range(args.seeds)  # seed-major: a partial run covers every problem
        for problem in problems
        for record in run_case(
            problem,
            seed,
            methods,
            args.n,
            args.test_points,
            args.design,
            args.out,
            args.report_only,
        )
    ]
    table = summarise(records, problems, methods)
    load_end = common.load_average()
    seeds = sorted({r["seed"] for r in records})
    loads = [r["load_average_end"][0] for r in records if r.get("load_average_end")]
    summary = {
        "environment": env,
        "config": {
            "problems": list(problems),
            "methods": list(methods),
            "seeds": args.seeds,
            "n": args.n,
            "design": args.design,
            "test_points": args.test_points,
            "smoke": args.smoke,
        },
        "load_average_start": load_start,
        "load_average_end": load_end,
        "load_average_records_1_min": [min(loads), max(loads)] if loads else None,
        "seeds_measured": seeds,
        "table": table,
        "records": records,
    }
    common.write_json(args.out / "surrogate_calibration.json", summary)
    measured = f"{len(seeds)} seeds" + (
        f" (seeds {', '.join(map(str, seeds))} of {args.seeds})" if len(seeds) < args.seeds else ""
    )
    load = f"cases ended at load average {min(loads):g}-{max(loads):g}; " if loads else ""
    title = (
        f"{args.n} training points ({args.design}), median over {measured}, "
        f"{args.test_points} test points\n{load}"
        + common.run_title(env, ["cpu"], (load_start, load_end), args.smoke)
    )
    plot(table, title, args.out / "surrogate_calibration.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
