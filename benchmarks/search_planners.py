"""Search planners compared without luck: the expected fraction found over time, on many scenarios.

Every planner of ``manibo.search.planners.COMPARED`` (looked up by id in the planner registry) flies
each scenario to its end; the plan is then played against hidden objects drawn from the scenario's
prior (``manibo.search.evaluation``). A plan's expected fraction found at t, averaged over the
scenarios, is free of the luck of objects and detection dice; the realised times to detection
(every scenario against each of its objects) are reported beside it. Planners are compared
scenario by scenario (paired: the same objects, currents and assets).

Scenario ``i`` has the seed ``--first-seed + i`` and alternates between satellite arcs (even ``i``)
and lost flights on ocean routes (odd ``i``), the families of ``manibo.search.scenarios``; the
default demo uses seeds 1 to 99 and the AF447-style scenario, so nothing measured here is tuned on
the demo's scenarios.

    python benchmarks/search_planners.py --scenarios 200 --first-seed 10000   # first judged run
    python benchmarks/search_planners.py --scenarios 200 --first-seed 30000   # second judged run
    python benchmarks/search_planners.py --smoke                              # seconds; tests
    python benchmarks/search_planners.py --merge a/search_planners.json b/search_planners.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _common import environment, load_average, write_json  # noqa: E402

DEFAULT_OUT = Path(__file__).parent / "results"
FAMILY_CYCLE = ("arc", "route")
HEADLINE = "manibo"


def scenario_family(index: int) -> str:
    """The family of the benchmark's scenario ``index``."""
    return FAMILY_CYCLE[index % len(FAMILY_CYCLE)]


def run_one(
    index: int,
    seed: int,
    planner: str,
    duration_h: float,
    num_particles: int,
    num_objects: int,
    device: str,
) -> dict:
    """One mission to its end, played against the scenario's hidden objects: its hourly expected
    fraction found and each object's realised time to detection."""
    import torch

    torch.set_num_threads(1)
    from manibo.search import MissionSettings, make_planner, ocean_mask, scenario, simulate
    from manibo.search.evaluation import evaluate, scenario_objects

    settings = MissionSettings(duration_h=duration_h)
    case = scenario(scenario_family(index), seed, settings, ocean_mask(), device)
    start = time.process_time()
    record = simulate(case, make_planner(planner), num_particles)
    cpu = time.process_time() - start
    hours = torch.arange(0, int(duration_h) + 1, dtype=torch.float64)
    result = evaluate(record.legs, scenario_objects(case, num_objects), hours)
    ttd = result.time_to_detection_h
    return {
        "seed": seed,
        "family": case.family,
        "planner": planner,
        "scenario": case.name,
        "expected_found": [round(v, 6) for v in result.expected_found.tolist()],
        "time_to_detection_h": [None if math.isinf(t) else round(t, 3) for t in ttd.tolist()],
        "legs": len(record.legs),
        "cpu_s": cpu,
    }


def summarise(runs: list[dict], planners: list[str], duration_h: float) -> dict:
    """Per planner: mean expected fraction found, hours to half, realised detections; the
    headline planner's paired lead over each other planner at the checkpoints."""
    import torch

    from manibo.search.metrics import hours_to_fraction, median, paired_difference

    hours = list(range(int(duration_h) + 1))
    checkpoints = [round(duration_h * k / 6) for k in range(1, 7)]
    by = {
        p: sorted((r for r in runs if r["planner"] == p), key=lambda r: r["seed"]) for p in planners
    }
    out = {"hours": hours, "checkpoints_h": checkpoints, "planners": {}}
    curves = {
        p: torch.tensor([r["expected_found"] for r in rs], dtype=torch.float64)
        for p, rs in by.items()
    }
    for name, rs in by.items():
        mean = curves[name].mean(0)
        ttd = [math.inf if t is None else t for r in rs for t in r["time_to_detection_h"]]
        realised = [sum(t <= h for t in ttd) / len(ttd) for h in hours]
        half = hours_to_fraction(torch.tensor(hours, dtype=torch.float64), mean)
        middle = median(ttd)
        out["planners"][name] = {
            "scenarios": len(rs),
            "mean_expected_found": mean.tolist(),
            "realised_found": realised,
            "expected_found_at": {str(t): float(mean[t]) for t in checkpoints},
            "realised_found_at": {str(t): realised[t] for t in checkpoints},
            "hours_to_expected_half": half,
            "realised_median_ttd_h": middle if math.isfinite(middle) else None,
            "mean_legs": sum(r["legs"] for r in rs) / len(rs),
            "mean_cpu_s": sum(r["cpu_s"] for r in rs) / len(rs),
        }
    if HEADLINE in by and len(by[HEADLINE]) > 1:
        out["paired_manibo_minus"] = {}
        for name in by:
            if name == HEADLINE:
                continue
            gap, se = paired_difference(
                curves[HEADLINE][:, checkpoints], curves[name][:, checkpoints]
            )
            out["paired_manibo_minus"][name] = {
                str(t): {"mean": float(g), "standard_error": float(s)}
                for t, g, s in zip(checkpoints, gap, se, strict=True)
            }
    return out


def plot(runs: list[dict], planners: list[str], duration_h: float, path: Path) -> None:
    """The search's own figure of expected and realised fraction found and paired leads."""
    import matplotlib

    matplotlib.use("Agg")
    import torch

    from manibo.search.figures import expected_found_figure

    hours = torch.arange(0, int(duration_h) + 1, dtype=torch.float64)
    by = {
        p: sorted((r for r in runs if r["planner"] == p), key=lambda r: r["seed"]) for p in planners
    }
    expected = {
        p: torch.tensor([r["expected_found"] for r in rs], dtype=torch.float64)
        for p, rs in by.items()
    }
    realised = {
        p: torch.tensor(
            [[math.inf if t is None else t for t in r["time_to_detection_h"]] for r in rs]
        )
        for p, rs in by.items()
    }
    expected_found_figure(path, hours, expected, realised, HEADLINE)


def main(argv: list[str] | None = None) -> int:
    from manibo.search.planners import COMPARED, PLANNERS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=200)
    parser.add_argument("--first-seed", type=int, default=10_000)
    parser.add_argument("--budget", type=float, default=72.0, help="mission hours")
    parser.add_argument("--planners", default=",".join(COMPARED), help="planner ids")
    parser.add_argument("--particles", type=int, default=1500)
    parser.add_argument("--objects", type=int, default=300, help="hidden objects per scenario")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--smoke", action="store_true", help="2 scenarios, 14 h, 200 particles")
    parser.add_argument(
        "--from-runs",
        type=Path,
        help="summarise the missions of an interrupted run (its search_planners_runs.jsonl): the "
        "longest prefix of scenarios whose missions have all finished",
    )
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        help="combine finished runs on disjoint seeds (their search_planners.json, e.g. parts of "
        "one protocol run on different machines) into one report; each part's configuration, "
        "environment, load and wall time are kept under 'parts'",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.scenarios, args.budget, args.particles, args.objects, args.workers = (
            2,
            14.0,
            200,
            40,
            1,
        )
    planners = args.planners.split(",")
    unknown = [p for p in planners if p not in PLANNERS]
    if unknown:
        parser.error(f"unknown planner ids {unknown}; choose from {PLANNERS.names()}")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.merge:
        parts = [json.loads(path.read_text()) for path in args.merge]
        runs = merged_runs(parts, parser.error)
        for key in ("budget", "particles", "objects"):
            setattr(args, key, parts[0]["config"][key])
        args.first_seed = min(r["seed"] for r in runs)
        planners = parts[0]["config"]["planners"]
        runs = complete_prefix(runs, args.first_seed, planners)
        kept = ("config", "environment", "load_average_start_end", "wall_s")
        sources = [
            {**{k: part.get(k) for k in kept}, "path": str(path)}
            for part, path in zip(parts, args.merge, strict=True)
        ]
        report(args, planners, runs, [None, load_average()], None, sources)
        return 0
    if args.from_runs is not None:
        lines = args.from_runs.read_text().splitlines()
        runs = complete_prefix([json.loads(x) for x in lines if x], args.first_seed, planners)
        if not runs:
            parser.error(f"--from-runs {args.from_runs}: no scenario has all of {planners}")
        report(args, planners, runs, [None, load_average()], None)
        return 0
    load_start, wall = load_average(), time.perf_counter()
    tasks = [
        (i, args.first_seed + i, p, args.budget, args.particles, args.objects, args.device)
        for i in range(args.scenarios)
        for p in planners
    ]
    progress = args.out / "search_planners_runs.jsonl"
    progress.write_text("")
    runs = []

    def keep(run: dict) -> None:
        """Keep a finished mission, also on disk, so that an interrupted run leaves its data."""
        runs.append(run)
        with progress.open("a") as f:
            f.write(json.dumps(run) + "\n")
        print(f"{len(runs)}/{len(tasks)} missions", flush=True)

    if args.workers <= 1:
        for task in tasks:
            keep(run_one(*task))
    else:
        with ProcessPoolExecutor(args.workers, mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(run_one, *task) for task in tasks]
            for future in as_completed(futures):
                keep(future.result())
    report(args, planners, runs, [load_start, load_average()], time.perf_counter() - wall)
    return 0


def merged_runs(parts: list[dict], fail) -> list[dict]:
    """The missions of several benchmark JSONs; ``fail(message)`` when their settings differ or a
    scenario and planner occurs twice."""
    for key in ("budget", "particles", "objects", "planners"):
        values = {json.dumps(part["config"][key]) for part in parts}
        if len(values) > 1:
            fail(f"--merge: the parts differ in {key}: {sorted(values)}; merge one protocol's runs")
    runs = [run for part in parts for run in part["runs"]]
    first, seen = min(run["seed"] for run in runs), set()
    for run in runs:
        key = (run["seed"], run["planner"])
        if key in seen:
            fail(f"--merge: scenario {key[0]} of planner {key[1]!r} occurs in two parts")
        seen.add(key)
        if run["family"] != scenario_family(run["seed"] - first):
            fail(
                f"--merge: scenario {run['seed']} is a {run['family']} scenario, but index "
                f"{run['seed'] - first} of a run from seed {first} is a "
                f"{scenario_family(run['seed'] - first)}; merge parts that start at even indices"
            )
    return runs


def complete_prefix(runs: list[dict], first_seed: int, planners: list[str]) -> list[dict]:
    """The runs of the longest prefix of scenarios (seeds ``first_seed``, ``first_seed + 1``, ...)
    whose missions have all finished, for every planner."""
    done = {(r["seed"], r["planner"]) for r in runs}
    count = 0
    while all((first_seed + count, p) in done for p in planners):
        count += 1
    return [r for r in runs if first_seed <= r["seed"] < first_seed + count]


def report(
    args: argparse.Namespace,
    planners: list[str],
    runs: list[dict],
    load: list,
    wall_s: float | None,
    parts: list[dict] | None = None,
) -> None:
    """Write the JSON and the figure of ``runs`` and print their table (``parts``: the runs a
    merge combined, each with its configuration, environment, load and wall time)."""
    summary = summarise(runs, planners, args.budget)
    config = {k: v for k, v in vars(args).items() if k not in ("out", "merge", "from_runs")}
    data = {
        "config": {**config, "planners": planners},
        "environment": environment(args.device),
        "load_average_start_end": load,
        "wall_s": wall_s,
        "summary": summary,
        "runs": runs,
    }
    if args.from_runs is not None or parts is not None:
        data["config"]["scenarios"] = len(runs) // len(planners)
    if args.from_runs is not None:
        data["config"]["from_runs"] = str(args.from_runs)
    if parts is not None:
        data["config"].pop("workers")  # each part's own is under "parts"
        data["parts"] = parts
    write_json(args.out / "search_planners.json", data)
    plot(runs, planners, args.budget, args.out / "search_planners.png")
    print(f"{'planner':18s} " + " ".join(f"{'E@' + str(t):>7s}" for t in summary["checkpoints_h"]))
    for name, s in summary["planners"].items():
        values = " ".join(f"{v:7.3f}" for v in s["expected_found_at"].values())
        print(
            f"{name:18s} {values}  half at {s['hours_to_expected_half']}  "
            f"realised median TTD {s['realised_median_ttd_h']}"
        )
    for name, gaps in summary.get("paired_manibo_minus", {}).items():
        print(
            f"manibo minus {name:16s} "
            + " ".join(f"{g['mean']:+.3f}±{g['standard_error']:.3f}" for g in gaps.values())
        )


if __name__ == "__main__":
    raise SystemExit(main())
