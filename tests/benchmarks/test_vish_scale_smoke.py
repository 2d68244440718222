"""The VISH scaling benchmark runs at smoke size and writes complete records, JSON and PNG."""

import json
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "vish_scale.py"
sys.path.insert(0, str(SCRIPT.parent))

import vish_scale  # noqa: E402


def test_vish_scale_smoke(tmp_path, capsys):
    # the driver in this process; each configuration runs the script in a fresh one (--worker)
    options = ["--smoke", "--out", str(tmp_path)]
    options += ["--methods", "vish210", "svgp500", "--sizes", "900", "--datasets", "airline"]
    assert vish_scale.main(options) == 0
    assert "FAILED" not in capsys.readouterr().out
    assert (tmp_path / "vish_scale_smoke.png").stat().st_size > 0
    data = json.loads((tmp_path / "vish_scale_smoke.json").read_text())
    assert data["config"]["smoke"] is True
    assert set(data["environment"]["versions"]) >= {"manibo", "torch", "gpytorch", "botorch"}
    airline = {r["method"]: r for r in data["records"] if r["dataset"] == "airline"}
    assert set(airline) == {"vish210", "svgp500"}
    for record in airline.values():
        assert record["n"] == 900 and record["n_train"] == 600 and record["n_test"] == 300
        assert record["time_s"] > 0 and record["peak_rss_bytes"] > 0
        assert 0 < record["cpu_s"] < 2 * record["time_s"] * record["torch_threads"]
        assert 0.3 < record["mse"] < 2.0 and 0.5 < record["nlpd"] < 2.5
        assert len(record["load_average_before_after"]) == 2
    assert airline["vish210"]["hyperparameters"]["num_features"] == 210
    assert airline["svgp500"]["stopped"]
    assert data["targets"]["gpu_time"]["pass"] is None
    for m in ("vish210", "vish660"):  # the N = 10^6 targets are not run in a smoke test
        assert data["targets"][f"speedup_over_svgp_{m}"]["pass"] is None
        assert data["targets"][f"nlpd_gap_{m}"]["pass"] is None
    # a second run reuses the records instead of recomputing them
    assert vish_scale.main(options) == 0
    assert capsys.readouterr().out.count("reusing") == 2
