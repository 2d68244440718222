"""The products-against-the-sphere benchmark at smoke size: paired ratios, JSON and PNG."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "product_speed.py"


def test_product_speed_smoke(tmp_path):
    command = [sys.executable, str(SCRIPT), "--smoke", "--with-series", "--out", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
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
