"""The non-compact kernel benchmark runs at smoke size and writes complete JSON and a PNG."""

import json
from pathlib import Path

from benchmark_runs import run_smoke_here

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "noncompact_kernels.py"


def test_noncompact_kernels_smoke(tmp_path):
    run_smoke_here(SCRIPT.name, tmp_path)  # main() in this process: torch imported once
    assert (tmp_path / "noncompact_kernels.png").stat().st_size > 10_000
    data = json.loads((tmp_path / "noncompact_kernels.json").read_text())
    assert data["config"]["smoke"] is True and "torch" in data["environment"]["versions"]
    assert data["load_average_start_end"][0] is not None
    assert {(r["space"], r["n"]) for r in data["timing"]} == {
        ("H3 (R=2)", 40),
        ("SPD(2) [1e-3, 5]", 40),
    }
    for record in data["timing"]:
        assert record["time_s"] > 0 and record["cpu_time_s"] >= 0
    for record in data["errors"]:
        # a handful of phases: a large error, but within a few of its standard errors
        assert 0 < record["max_abs_error"] < 5 * record["max_standard_error"] + 1e-9
