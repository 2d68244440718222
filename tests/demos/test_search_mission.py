"""The search demo at smoke size: tells a mission, compares every planner, writes figures, JSON."""

import json

import pytest

from manibo.cli import main
from manibo.demos import search_mission
from manibo.exceptions import ConfigurationError


def test_demo_runs_at_smoke_size_and_writes_its_figures(tmp_path, capsys):
    # smallest mission that still searches: a 250 km transit (6.25 h) and one 4 h search
    summary = search_mission.run(
        tmp_path, num_scenarios=2, budget_h=12.0, workers=1, num_particles=200
    )
    out = capsys.readouterr().out
    assert "Step by step" in out and "median TTD" in out
    for name in search_mission.PLANNERS:
        assert name in out and summary["planners"][name]["missions"] == 2
    for figure in (
        "search_mission",
        "search_paths",
        "search_pos_curves",
        "search_time_to_detection",
    ):
        assert (tmp_path / f"{figure}.png").stat().st_size > 20_000
    saved = json.loads((tmp_path / "search_summary.json").read_text())
    assert saved["config"]["num_scenarios"] == 2 and len(saved["scenario_names"]) == 2
    told = saved["told_mission"]
    assert told["planner"] == search_mission.MANIBO and told["steps"]
    curves = saved["curves"]["planners"][search_mission.MANIBO]["cumulative_pos_vs_time"]
    assert all(
        b >= a for a, b in zip(curves[0][:-1], curves[0][1:], strict=True)
    )  # never decreases


def test_demo_rejects_bad_sizes(tmp_path):
    with pytest.raises(ConfigurationError, match="num_scenarios"):
        search_mission.run(tmp_path, num_scenarios=0)


def test_cli_runs_the_search_demo_by_default_and_keeps_the_regression_demo(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(search_mission, "run", lambda out, **kw: calls.append(("search", out, kw)))
    import manibo.demos.sphere_regression as regression

    monkeypatch.setattr(regression, "run", lambda out, **kw: calls.append(("regression", out, kw)))
    assert main(["demo", "--out", str(tmp_path), "--scenarios", "3", "--budget", "50"]) == 0
    assert main(["demo", "sphere-regression", "--out", str(tmp_path)]) == 0
    assert calls[0][0] == "search" and calls[0][2]["num_scenarios"] == 3
    assert calls[0][2]["budget_h"] == 50.0 and calls[0][2]["workers"] == 2
    assert calls[1][0] == "regression"


def test_the_cli_defaults_are_the_demos_and_the_missions(monkeypatch, tmp_path):
    import inspect

    from manibo.search.scenarios import DEFAULT_ENDURANCE_H, MissionSettings

    run_default = inspect.signature(search_mission.run).parameters["num_scenarios"].default
    calls = []
    monkeypatch.setattr(search_mission, "run", lambda out, **kw: calls.append(kw))
    assert main(["demo", "--out", str(tmp_path)]) == 0
    assert calls[0]["budget_h"] == DEFAULT_ENDURANCE_H == search_mission.DemoConfig().budget_h
    assert calls[0]["num_scenarios"] == search_mission.DemoConfig().num_scenarios == run_default
    assert MissionSettings().asset.endurance_hours == DEFAULT_ENDURANCE_H
