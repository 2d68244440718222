"""The search-planner benchmark at smoke size: JSON and PNG, paired leads, planners by id."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "search_planners.py"


def _load(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # the script imports benchmarks/_common.py
    spec = importlib.util.spec_from_file_location("search_planners_benchmark", SCRIPT)
    benchmark = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, benchmark)
    spec.loader.exec_module(benchmark)
    return benchmark


def test_search_planners_smoke(tmp_path, monkeypatch):
    benchmark = _load(monkeypatch)
    planners = "manibo,greedy,parallel-sweep"
    assert benchmark.main(["--smoke", "--planners", planners, "--out", str(tmp_path)]) == 0
    assert (tmp_path / "search_planners.png").stat().st_size > 10_000
    data = json.loads((tmp_path / "search_planners.json").read_text())
    assert data["config"]["smoke"] is True and "versions" in data["environment"]
    assert len(data["runs"]) == 2 * 3
    assert {r["family"] for r in data["runs"]} == {"arc", "route"}
    for run in data["runs"]:
        curve = run["expected_found"]
        assert len(curve) == 15 and curve[0] == 0.0 and 0 <= curve[-1] <= 1
        assert all(b >= a for a, b in zip(curve[:-1], curve[1:], strict=True))
        assert len(run["time_to_detection_h"]) == 40
    summary = data["summary"]
    assert set(summary["planners"]) == set(planners.split(","))
    assert summary["checkpoints_h"] == [2, 5, 7, 9, 12, 14]
    assert set(summary["paired_manibo_minus"]) == {"greedy", "parallel-sweep"}


def test_unknown_planner_ids_are_refused(monkeypatch, capsys):
    benchmark = _load(monkeypatch)
    with pytest.raises(SystemExit):
        benchmark.main(["--smoke", "--planners", "manibo GP (S²)"])
    assert "unknown planner ids" in capsys.readouterr().err
    assert [benchmark.scenario_family(i) for i in range(4)] == ["arc", "route", "arc", "route"]
