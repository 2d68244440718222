"""The regret benchmark runs at smoke size and writes its JSON and PNG."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "regret.py"
sys.path.insert(0, str(SCRIPT.parent))

import regret  # noqa: E402

SMOKE = ["--smoke", "--problem", "ackley-sphere2"]


def test_regret_smoke(tmp_path):
    # the script itself once, in a fresh process; its reruns below call main() in this one
    command = [sys.executable, str(SCRIPT), *SMOKE, "--out", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((tmp_path / "regret_summary.json").read_text())
    table = summary["problems"]["ackley-sphere2"]["table"]
    assert set(table) == {"matern", "euclidean", "random"}
    for row in table.values():
        assert set(row["regret"]) == {"4", "5"} and row["regret"]["5"]["median"] >= 0
    runs = summary["problems"]["ackley-sphere2"]["runs"]
    firsts = {r["method"]: r["values"][:3] for r in runs if r["seed"] == 0}
    assert firsts["matern"] == firsts["euclidean"] == firsts["random"]  # shared initial design
    assert (tmp_path / "regret_ackley-sphere2.png").stat().st_size > 5000
    assert "torch" in summary["environment"]["versions"]

    # a second run reuses the per-seed records on disk instead of running them again
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").glob("*.json")}
    assert regret.main([*SMOKE, "--out", str(tmp_path)]) == 0
    assert stamps and all(p.stat().st_mtime_ns == t for p, t in stamps.items())

    # --report-only summarises the stored runs with their own times and loads, running nothing
    assert regret.main([*SMOKE, "--report-only", "--out", str(tmp_path)]) == 0
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())
    report = json.loads((tmp_path / "regret_summary.json").read_text())
    finished = sorted(r["finished_utc"] for r in report["problems"]["ackley-sphere2"]["runs"])
    assert report["measured_utc"] == [finished[0], finished[-1]]
    assert len(report["load_average_runs_1_min"]) == 2
    assert report["load_average_runs_recorded"] == [len(finished), len(finished)]
    assert report["problems"]["ackley-sphere2"]["table"] == table
    # every record names the CPU it ran on, and the summary counts the runs per CPU
    models = [r["cpu_model"] for r in report["problems"]["ackley-sphere2"]["runs"]]
    assert all(models) and sum(report["cpu_models_runs"].values()) == len(finished)
    assert report["cpu_models_runs"] == {m: models.count(m) for m in set(models)}
    # each run's own cores, threads and versions, which a merged campaign cannot take from the
    # process that merges it
    setups = [r["setup"] for r in report["problems"]["ackley-sphere2"]["runs"]]
    assert all(" cores, " in s and "torch thread" in s and "torch 2." in s for s in setups)
    assert report["setups_runs"] == {s: setups.count(s) for s in set(setups)}


def test_cholesky_baseline_and_seed_ranges(tmp_path, capsys):
    options = ["--smoke", "--problems", "ackley-spd2,ackley-sphere2"]
    options += ["--methods", "cholesky,random", "--out", str(tmp_path)]
    assert regret.main(options) == 0
    assert "skipped cholesky on ackley-sphere2: the Cholesky baseline needs an SPD problem" in (
        capsys.readouterr().out
    )
    runs = json.loads((tmp_path / "regret_summary.json").read_text())["problems"]["ackley-spd2"]
    firsts = {r["method"]: r for r in runs["runs"] if r["seed"] == 1}
    assert set(firsts) == {"cholesky", "random"}
    # the Cholesky runs are scored on the SPD problem: regret from the same optimum 0 at 2I
    assert firsts["cholesky"]["optimal_value"] == 0.0
    assert min(firsts["cholesky"]["values"]) >= 0.0
    # the same initial design as the methods on the SPD space (up to the rounding of L Lᵀ)
    first, other = firsts["cholesky"]["values"][:3], firsts["random"]["values"][:3]
    assert first == pytest.approx(other, rel=1e-9, abs=1e-12)
    assert len(firsts["cholesky"]["simple_regret"]) == 5
    # the records name the space, with the benchmark's sampling of the initial design
    assert "sampling='eigenvalues'" in firsts["cholesky"]["space"]

    # a record of the same problem on a differently sampled space is run again, the others not
    records = sorted((tmp_path / "runs").glob("ackley-spd2_*.json"))
    stale = tmp_path / "runs" / "ackley-spd2_random_seed1.json"
    record = json.loads(stale.read_text())
    record["space"] = "SymmetricPositiveDefinite(2, eigenvalue_bounds=(0.001, 5.0))"
    stale.write_text(json.dumps(record))
    stamps = {p: p.stat().st_mtime_ns for p in records}
    assert regret.main(options) == 0
    changed = [p.name for p in records if p.stat().st_mtime_ns != stamps[p]]
    assert changed == [stale.name]
    assert json.loads(stale.read_text())["space"] == firsts["random"]["space"]


def test_seed_list():
    assert regret.seed_list("3") == [0, 1, 2]
    assert regret.seed_list("0-19") == list(range(20))
    with pytest.raises(argparse.ArgumentTypeError, match="a count N or a range"):
        regret.seed_list("5-2")


def test_stop_after_leaves_unfinished_runs_out(tmp_path, capsys):
    options = [*SMOKE, "--methods", "matern,random", "--stop-after", "0", "--out", str(tmp_path)]
    assert regret.main(options) == 0
    out = capsys.readouterr().out
    assert "2 of 4 runs are missing" in out  # the GP runs; random search has no loop
    runs = json.loads((tmp_path / "regret_summary.json").read_text())["problems"]
    assert {r["method"] for r in runs["ackley-sphere2"]["runs"]} == {"random"}
    assert sorted(p.name for p in (tmp_path / "runs").glob("*.json")) == [
        "ackley-sphere2_random_seed0.json",
        "ackley-sphere2_random_seed1.json",
    ]


@pytest.mark.parametrize("name", ["bumps-graph", "ackley-sphere2"])
def test_random_search_starts_from_the_loops_design_and_repeats_no_point_of_a_finite_space(name):
    import torch

    from manibo.loop import BayesianOptimizer
    from manibo.problems import make_problem

    space = make_problem(name).space
    points = regret._random_search(space, 5, 60, seed=3)
    design = BayesianOptimizer(space, initial_design=5, seed=3).ask(5)
    assert points.shape == (60, *space.point_shape)
    assert torch.equal(points[:5].reshape(design.shape), design)  # shared with the GP methods
    if space.is_discrete:  # 60 draws of 225 nodes: about 8 repeats with replacement
        assert len({tuple(x.reshape(-1).tolist()) for x in points}) == 60
