"""The search demo at smoke size: the table leads with the expected fraction found, the told
mission is the median one, the figures and the JSON are written; the CLI passes its options."""

import json

import pytest
import torch

from manibo.cli import main
from manibo.demos import search_mission
from manibo.exceptions import ConfigurationError
from manibo.search.planners import COMPARED, PLANNERS


def test_demo_runs_at_smoke_size_and_writes_its_figures(tmp_path, capsys):
    # 6 h missions: every planner flies legs and finds some of the objects by each checkpoint
    summary = search_mission.run(
        tmp_path, num_scenarios=2, duration_h=6.0, workers=1, num_particles=100, num_objects=30
    )
    out = capsys.readouterr().out
    assert out.index("Expected fraction found") < out.index("median TTD")
    assert "The representative mission" in out
    for planner in COMPARED:
        assert PLANNERS.get(planner).label in out
        at = summary["planners"][planner]["expected_found_at"]
        assert list(at) == ["1", "2", "3", "4", "5", "6"]
        values = list(at.values())
        assert all(b >= a for a, b in zip(values[:-1], values[1:], strict=True))
        assert values[-1] > 0
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
    assert told["scenario"] in (0, 1) and 0 <= told["object"] < 30
    # the plans depend on the machine's rounding: the record names versions and CPU
    environment = saved["environment"]
    assert environment["versions"]["torch"] == torch.__version__ and environment["cpu_model"]


def test_the_told_mission_is_at_the_median_of_the_headline_planners_detections():
    class _Result:
        def __init__(self, ttd):
            self.time_to_detection_h = torch.tensor(ttd)

    config = search_mission.DemoConfig(num_scenarios=2, num_objects=3)
    evaluations = {
        (0, "manibo"): _Result([5.0, 40.0, float("inf")]),
        (1, "manibo"): _Result([9.0, 1.0, 30.0]),
    }
    assert search_mission.representative(evaluations, config) == (1, 0)  # 1, 5, [9], 30, 40, inf


def test_demo_rejects_bad_sizes(tmp_path):
    with pytest.raises(ConfigurationError, match="num_scenarios"):
        search_mission.run(tmp_path, num_scenarios=0)


def test_the_cli_passes_the_search_options_and_keeps_the_regression_demo(monkeypatch, tmp_path):
    import inspect

    defaults = inspect.signature(search_mission.run).parameters
    calls = []
    monkeypatch.setattr(search_mission, "run", lambda out, **kw: calls.append(("search", out, kw)))
    import manibo.demos.sphere_regression as regression

    monkeypatch.setattr(regression, "run", lambda out, **kw: calls.append(("regression", out, kw)))
    assert main(["demo", "--out", str(tmp_path), "--scenarios", "3", "--budget", "50"]) == 0
    assert main(["demo", "sphere-regression", "--out", str(tmp_path)]) == 0
    assert main(["demo", "--out", str(tmp_path)]) == 0
    assert calls[0][0] == "search" and calls[0][2]["num_scenarios"] == 3
    assert calls[0][2]["duration_h"] == 50.0 and "workers" not in calls[0][2]  # run's default
    assert calls[1][0] == "regression"
    assert calls[2][2] == {"seed": 0, "device": "cpu"}  # the demo's own defaults for the rest
    assert defaults["duration_h"].default == search_mission.DemoConfig().duration_h


def test_the_told_distances_stop_at_the_detection():
    """The printout counted every leg begun before the detection in full: the ship's last leg ran
    47.5-55.6 h for a detection at 52.0 h, and aircraft 1 showed 11,866 km where its 26 h in the
    air at 450 km/h allow 11,700."""
    from manibo.geo import destination, latlon
    from manibo.search import Asset, Leg, SweepLaw

    aircraft = Asset.aircraft("P-8", latlon(0.0, 0.0), SweepLaw(20.0))
    start = latlon(0.0, 0.0)
    leg = Leg(0, start, destination(start, 90.0, 450.0), 10.0, 11.5, SweepLaw(20.0))  # 0.5 h loiter
    flown = [search_mission.flown_km(aircraft, leg, t) for t in (9.0, 10.0, 10.5, 11.0, 12.0)]
    assert flown == pytest.approx([0.0, 0.0, 225.0, 450.0, 450.0], abs=1e-6)
