"""The search-planner benchmark runs at smoke size and writes its JSON and PNG."""

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


def test_scenarios_can_be_restricted_to_high_latitudes(monkeypatch):
    benchmark = _load(monkeypatch)
    from manibo.geo import unit_to_latlon
    from manibo.search.ocean import ocean_mask
    from manibo.search.scenarios import random_scenario

    assert benchmark.scenario_seeds(10_000, 5) == list(range(10_000, 10_005))
    seeds = benchmark.scenario_seeds(10_000, 4, min_abs_latitude=50.0)
    assert len(seeds) == 4 and seeds == sorted(seeds)
    latitude = [
        abs(float(unit_to_latlon(random_scenario(s, mask=ocean_mask()).lkp)[0]))
        for s in range(seeds[0], seeds[-1] + 1)
    ]
    kept = [s - seeds[0] for s in seeds]
    assert all(latitude[i] >= 50.0 for i in kept)
    assert all(lat < 50.0 for i, lat in enumerate(latitude) if i not in kept)  # none skipped
    with pytest.raises(ValueError, match="min-abs-latitude"):
        benchmark.scenario_seeds(10_000, 1, min_abs_latitude=90.0)
