"""The wall-time benchmark: regret at a wall time from a run's iterations, and a smoke run."""

import json
import sys
from pathlib import Path

from benchmark_runs import run_smoke_here

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

import surrogate_wall_time  # noqa: E402


def test_regret_at_a_time_is_the_last_iteration_finished_by_then():
    record = {
        "initial_regret": 5.0,
        "iterations": [
            {"wall_seconds": 10.0, "cpu_seconds": 2.0, "regret": 3.0},
            {"wall_seconds": 25.0, "cpu_seconds": 4.0, "regret": 1.0},
        ],
    }
    assert surrogate_wall_time.regret_at(record, 3.0, "cpu") == 3.0
    assert surrogate_wall_time.regret_at(record, 4.5, "cpu") is None
    assert surrogate_wall_time.regret_at(record, 5.0) == 5.0  # the initial design only
    assert surrogate_wall_time.regret_at(record, 10.0) == 3.0
    assert surrogate_wall_time.regret_at(record, 24.9) == 3.0
    assert surrogate_wall_time.regret_at(record, 25.0) == 1.0
    assert surrogate_wall_time.regret_at(record, 25.1) is None  # past the end of the run


def test_smoke_run_writes_json_and_png(tmp_path):
    run_smoke_here("surrogate_wall_time.py", tmp_path)
    data = json.loads((tmp_path / "surrogate_wall_time.json").read_text())
    rows = data["table"]["ackley-sphere2"]
    assert set(rows) == {"matern", "vish"}
    for run in data["runs"]:
        assert [it["n"] for it in run["iterations"]] == [30, 35]  # 30 initial, batches of 5
        assert all(it["fit_seconds"] > 0 and it["cpu_seconds"] > 0 for it in run["iterations"])
        regrets = [run["initial_regret"]] + [it["regret"] for it in run["iterations"]]
        assert all(a >= b >= 0 for a, b in zip(regrets, regrets[1:], strict=False))
    assert "torch" in data["environment"]["versions"]
    assert (tmp_path / "surrogate_wall_time.png").stat().st_size > 5000
