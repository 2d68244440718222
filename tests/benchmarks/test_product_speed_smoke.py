"""The products-against-the-sphere benchmark at smoke size: paired ratios, JSON and PNG."""

import json
from pathlib import Path

from benchmark_runs import run_smoke_here

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "product_speed.py"


def test_product_speed_smoke(tmp_path):
    run_smoke_here(SCRIPT.name, tmp_path, "--with-series")  # main() in this process
    assert (tmp_path / "product_speed.png").stat().st_size > 10_000
    data = json.loads((tmp_path / "product_speed.json").read_text())
    assert data["config"]["smoke"] is True and data["config"]["n_points"] == 200
    for key in ("kernel", "kernel_series", "iteration_logei"):
        block = data[key]
        assert block["ratio"]["target"] == 2.0
        for times in block["times"].values():
            assert len(times["wall_s"]) == data["config"]["rounds"] and times["median_cpu_s"] > 0
        ratios = block["ratio"]["ratios_wall"]
        assert len(ratios) == data["config"]["rounds"] and all(r > 0 for r in ratios)
    assert len(data["load_average_start_end"]) == 2
