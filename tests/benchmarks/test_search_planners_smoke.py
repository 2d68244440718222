"""The search-planner benchmark runs at smoke size and writes its JSON and PNG."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "search_planners.py"


def test_search_planners_smoke(tmp_path):
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "search_planners.png").stat().st_size > 10_000
    data = json.loads((tmp_path / "search_planners.json").read_text())
    assert data["config"]["smoke"] is True and "versions" in data["environment"]
    planners = data["config"]["planners"]
    assert len(data["runs"]) == 2 * len(planners)
    for run in data["runs"]:
        curve = run["expected_found"]
        assert len(curve) == 13 and curve[0] == 0.0 and 0 <= curve[-1] <= 1
        assert all(b >= a for a, b in zip(curve[:-1], curve[1:], strict=True))
    assert any(run["searches"] >= 1 for run in data["runs"])  # 6.25 h transit + 4 h fit in 12 h
    summary = data["summary"]["planners"]
    assert set(summary) == set(planners)
    for s in summary.values():
        assert s["scenarios"] == 2 and len(s["mean_expected_found"]) == 13
    assert set(data["summary"]["paired_manibo_minus"]) == set(planners) - {"manibo GP (S²)"}
