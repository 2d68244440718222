"""The search-planner benchmark at smoke size: JSON and PNG, paired leads, planners by id."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "search_planners.py"


PLANNERS = "manibo,greedy,parallel-sweep"


def _load(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # the script imports benchmarks/_common.py
    spec = importlib.util.spec_from_file_location("search_planners_benchmark", SCRIPT)
    benchmark = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, benchmark)
    spec.loader.exec_module(benchmark)
    return benchmark


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """One smoke run (seeds 10000 and 10001), shared: its missions are the costly part."""
    out = tmp_path_factory.mktemp("search_planners")
    with pytest.MonkeyPatch.context() as monkeypatch:
        benchmark = _load(monkeypatch)
        assert benchmark.main(["--smoke", "--planners", PLANNERS, "--out", str(out)]) == 0
    return out


def test_search_planners_smoke(smoke, tmp_path, monkeypatch):
    benchmark = _load(monkeypatch)
    planners = PLANNERS
    assert (smoke / "search_planners.png").stat().st_size > 10_000
    data = json.loads((smoke / "search_planners.json").read_text())
    assert data["config"]["smoke"] is True and "versions" in data["environment"]
    assert data["config"]["first_seed"] == 10_000
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

    # An interrupted run: its finished missions are on disk; the summary keeps the longest prefix
    # of scenarios that every planner finished (the second scenario lacks one mission here).
    lines = (smoke / "search_planners_runs.jsonl").read_text().splitlines()
    assert sorted(lines) == sorted(json.dumps(r) for r in data["runs"])
    second = min(r["seed"] for r in data["runs"]) + 1
    cut = tmp_path / "cut.jsonl"
    cut.write_text(
        "\n".join(x for x in lines if json.loads(x)["seed"] != second or "greedy" not in x)
    )
    out = tmp_path / "prefix"
    args = ["--smoke", "--planners", planners, "--out", str(out), "--from-runs", str(cut)]
    assert benchmark.main(args) == 0
    prefix = json.loads((out / "search_planners.json").read_text())
    assert prefix["config"]["scenarios"] == 1 and prefix["config"]["from_runs"] == str(cut)
    assert {r["seed"] for r in prefix["runs"]} == {second - 1} and len(prefix["runs"]) == 3


def test_runs_on_disjoint_seeds_merge_into_one_report(smoke, tmp_path, monkeypatch, capsys):
    benchmark = _load(monkeypatch)
    planners = PLANNERS
    paths = [str(smoke / "search_planners.json")]  # seeds 10000 and 10001
    out = tmp_path / "10002"
    args = ["--smoke", "--planners", planners, "--first-seed", "10002", "--out", str(out)]
    assert benchmark.main(args) == 0
    paths.append(str(out / "search_planners.json"))
    # a part from seed 10003 (an arc, then a route), for the refusal below: the second part's
    # missions one seed on (the refusal reads the seeds and families, not the missions)
    shifted = json.loads(Path(paths[1]).read_text())
    shifted["config"]["first_seed"] = 10003
    for run in shifted["runs"]:
        run["seed"] += 1
    assert [r["family"] for r in shifted["runs"] if r["planner"] == "manibo"] == ["arc", "route"]
    paths.append(str(tmp_path / "10003.json"))
    Path(paths[2]).write_text(json.dumps(shifted))
    parts = [json.loads(Path(p).read_text()) for p in paths]
    out = tmp_path / "merged"
    assert benchmark.main(["--merge", *paths[:2], "--out", str(out)]) == 0
    merged = json.loads((out / "search_planners.json").read_text())
    assert merged["config"]["scenarios"] == 4 and merged["config"]["first_seed"] == 10000
    assert [p["path"] for p in merged["parts"]] == paths[:2] and "workers" not in merged["config"]
    assert merged["parts"][1]["environment"] == parts[1]["environment"]
    assert sorted((r["seed"], r["planner"]) for r in merged["runs"]) == sorted(
        (r["seed"], r["planner"]) for part in parts[:2] for r in part["runs"]
    )
    for name in planners.split(","):  # two scenarios in each part: the mean of the two means
        both = [part["summary"]["planners"][name]["expected_found_at"] for part in parts[:2]]
        for t, value in merged["summary"]["planners"][name]["expected_found_at"].items():
            assert value == pytest.approx((both[0][t] + both[1][t]) / 2, abs=1e-12)
    for bad, message in (
        ([paths[0], paths[0]], "occurs in two parts"),
        ([paths[0], paths[2]], "start at even indices"),  # index 3 of a run from 10000 is a route
    ):
        with pytest.raises(SystemExit):
            benchmark.main(["--merge", *bad, "--out", str(tmp_path / "bad")])
        assert message in capsys.readouterr().err


def test_unknown_planner_ids_are_refused(monkeypatch, capsys):
    benchmark = _load(monkeypatch)
    with pytest.raises(SystemExit):
        benchmark.main(["--smoke", "--planners", "manibo GP (S²)"])
    assert "unknown planner ids" in capsys.readouterr().err
    assert [benchmark.scenario_family(i) for i in range(4)] == ["arc", "route", "arc", "route"]
