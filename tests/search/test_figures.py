"""The search's figures render offline from a short mission (no network, matplotlib only)."""

import matplotlib

matplotlib.use("Agg")

import torch  # noqa: E402

from manibo.search import figures, make_planner, simulate  # noqa: E402
from manibo.search.evaluation import evaluate, scenario_objects  # noqa: E402
from manibo.search.scenarios import MissionSettings, af447_scenario  # noqa: E402


def test_every_figure_renders(tmp_path):
    scenario = af447_scenario(0, MissionSettings(duration_h=8.0))
    hours = torch.arange(0.0, 8.01, 0.5, dtype=torch.float64)
    objects = scenario_objects(scenario, 40)
    records = {p: simulate(scenario, make_planner(p), 100) for p in ("manibo", "parallel-sweep")}
    results = {p: evaluate(r.legs, objects, hours) for p, r in records.items()}
    expected = {
        p: torch.stack([e.expected_found, e.expected_found * 0.9]) for p, e in results.items()
    }
    realised = {p: e.time_to_detection_h for p, e in results.items()}
    index = int(torch.argmin(results["manibo"].time_to_detection_h))
    paths = [
        figures.expected_found_figure(tmp_path / "a.png", hours, expected, realised),
        figures.time_to_detection_figure(tmp_path / "b.png", realised, 8.0),
        figures.mission_figure(
            tmp_path / "c.png", scenario, records["manibo"], results["manibo"], objects, index, 200
        ),
        figures.paths_figure(
            tmp_path / "d.png",
            scenario,
            records,
            {p: e.expected_found for p, e in results.items()},
            hours,
            200,
        ),
    ]
    for path in paths:
        assert path.stat().st_size > 20_000
    assert figures.label("greedy") == "greedy Bayes" and figures.color("manibo").startswith("#")
