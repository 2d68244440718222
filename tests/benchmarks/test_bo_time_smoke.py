"""The BO-iteration-time benchmark runs at smoke size and writes complete JSON and a PNG."""

import json
import subprocess
import sys
from pathlib import Path

import torch

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "bo_time.py"
sys.path.insert(0, str(SCRIPT.parent))

import bo_time  # noqa: E402


def _run(out):
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--device", "auto", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_bo_time_smoke(tmp_path):
    _run(tmp_path)
    assert (tmp_path / "bo_time.png").stat().st_size > 10_000
    data = json.loads((tmp_path / "bo_time.json").read_text())
    config = data["config"]
    assert config["smoke"] is True and config["observations"] == [8]
    assert config["devices"] == (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    assert "botorch" in data["environment"]["versions"]

    for device in config["devices"]:
        records = data["results"][device]
        tasks = {(r["problem"], r["n"], r["task"]) for r in records}
        assert tasks == {("ackley-sphere2", 8, t) for t in ("fit", "logei", "qlognei")}
        for record in records:
            assert "error" not in record, record
            assert record["time_s"] > 0 and record["repeats_run"] == 1
            assert record["space"] == "Sphere(2)" and record["device"] == device
            if record["task"] != "fit":  # an iteration proposes a point on the space
                assert record["candidate_on_space"] is True
                assert record["candidate_device"].startswith(device)
    assert len(data["device_ratios"]) == (3 if torch.cuda.is_available() else 0)

    # a second run with the same options reuses the cases kept on disk instead of measuring again
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "cases").glob("*.json")}
    assert len(stamps) == 3 * len(config["devices"])
    assert bo_time.main(["--smoke", "--device", "auto", "--out", str(tmp_path)]) == 0
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())
    again = json.loads((tmp_path / "bo_time.json").read_text())
    assert [r["time_s"] for r in again["results"]["cpu"]] == [
        r["time_s"] for r in data["results"]["cpu"]
    ]


def test_report_only_measures_nothing_and_lists_what_is_missing(tmp_path):
    options = ["--smoke", "--report-only", "--device", "cpu", "--out", str(tmp_path)]
    assert bo_time.main(options) == 0
    data = json.loads((tmp_path / "bo_time.json").read_text())
    assert data["results"]["cpu"] == [] and data["load_average_cases_1_min"] is None
    assert {(m["n"], m["task"]) for m in data["not_measured"]} == {
        (8, t) for t in ("fit", "logei", "qlognei")
    }
    assert not (tmp_path / "cases").exists()
