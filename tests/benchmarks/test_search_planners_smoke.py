"""The search-planner benchmark runs at smoke size and writes its JSON and PNG."""

import importlib.util
import json
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "search_planners.py"


def test_search_planners_smoke(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # the script imports benchmarks/_common.py
    spec = importlib.util.spec_from_file_location("search_planners_benchmark", SCRIPT)
    benchmark = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, benchmark)
    spec.loader.exec_module(benchmark)
    assert benchmark.main(["--smoke", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "search_planners.png").stat().st_size > 10_000
    data = json.loads((tmp_path / "search_planners.json").read_text())
    assert data["config"]["smoke"] is True and "versions" in data["environment"]
    planners = data["config"]["planners"]
    assert len(data["runs"]) == 2 * len(planners)
    for run in data["runs"]:
        for curve in (run["expected_found"], run["found_given_object"]):
            assert len(curve) == 13 and curve[0] == 0.0 and 0 <= curve[-1] <= 1
            assert all(b >= a for a, b in zip(curve[:-1], curve[1:], strict=True))
    assert any(run["searches"] >= 1 for run in data["runs"])  # 6.25 h transit + 4 h fit in 12 h
    summary = data["summary"]["planners"]
    assert set(summary) == set(planners)
    for s in summary.values():
        assert s["scenarios"] == 2 and len(s["mean_expected_found"]) == 13
        assert len(s["mean_found_given_object"]) == 13
    assert set(data["summary"]["paired_manibo_minus"]) == set(planners) - {"manibo GP (S²)"}
