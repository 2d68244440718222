"""The kernel-speed benchmark runs at smoke size and writes a complete JSON record and a PNG."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "kernel_speed.py"


def test_kernel_speed_smoke(tmp_path):
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "kernel_speed.png").stat().st_size > 0
    data = json.loads((tmp_path / "kernel_speed.json").read_text())

    assert data["config"]["smoke"] is True and data["config"]["device"] == "cpu"
    env = data["environment"]
    for key in ("versions", "cpu_model", "cpu_cores", "torch_threads", "gpu", "python"):
        assert key in env
    assert set(env["versions"]) >= {"manibo", "torch", "gpytorch", "botorch", "numpy"}

    sizes = data["config"]["sizes"]
    for name in ("manibo", "naive_torch"):
        runs = data["results"][name]
        assert [run["n"] for run in runs] == sizes
        for run in runs:
            assert "error" not in run, run
            assert run["time_s"] > 0 and run["peak_memory_bytes"] >= 0
            assert run["max_abs_diagonal_minus_one"] < 1e-10
    assert data["results"]["geometric_kernels"] == []

    for row in data["comparisons"]:
        assert row["naive_over_manibo_time"] > 0
        assert row["naive_max_abs_diff"] < 1e-10  # the textbook sum agrees with manibo
        assert row["gk_over_manibo_time"] is None

    for target in ("time", "memory"):
        assert data["targets"][target]["n"] == 5000
        assert data["targets"][target]["pass"] is None  # N = 5000 is not run in a smoke test
