"""The calibration benchmark: its metrics against the closed forms of a standard normal, and a
smoke run that writes complete JSON and a PNG for both training designs."""

import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "benchmarks" / "surrogate_calibration.py"
sys.path.insert(0, str(ROOT / "benchmarks"))

import surrogate_calibration  # noqa: E402


def test_metrics_of_a_calibrated_posterior_equal_the_normal_closed_forms():
    """Truth at the quantiles of N(mean, sd^2): coverage 0.95, median |error| / median sd =
    1 / Phi^-1(0.75), NLPD = log(sd / scale) + (1 + log 2 pi) / 2, RMSE = sd / scale."""
    count, sd, scale = 200_000, 3.0, 2.0
    quantiles = (torch.arange(count, dtype=torch.float64) + 0.5) / count
    z = torch.distributions.Normal(0.0, 1.0).icdf(quantiles)
    mean = torch.linspace(-5, 5, count, dtype=torch.float64)
    metrics = surrogate_calibration.calibration(
        mean, torch.full_like(mean, sd), mean + sd * z, scale
    )
    assert metrics["coverage"] == pytest.approx(0.95, abs=1e-4)
    assert metrics["sd_over_error"] == pytest.approx(
        1 / statistics.NormalDist().inv_cdf(0.75), rel=1e-4
    )
    assert metrics["nlpd"] == pytest.approx(
        math.log(sd / scale) + 0.5 * (1 + math.log(2 * math.pi)), abs=1e-3
    )
    assert metrics["rmse"] == pytest.approx(sd / scale, rel=1e-3)
    doubled = surrogate_calibration.calibration(
        mean, torch.full_like(mean, sd / 2), mean + sd * z, scale
    )
    assert doubled["coverage"] == pytest.approx(
        2 * statistics.NormalDist().cdf(1.96 / 2) - 1, abs=1e-3
    )


@pytest.mark.parametrize("design", ["uniform", "bo:adgp"])
def test_smoke_run_writes_json_and_png(tmp_path, design):
    # main() in this process (the script itself runs in the next test)
    assert surrogate_calibration.main(["--smoke", "--design", design, "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "surrogate_calibration.json").read_text())
    assert data["config"]["design"] == design and data["config"]["smoke"] is True
    assert {(r["method"], r["n"]) for r in data["records"]} == {("matern", 6), ("adgp", 6)}
    for row in data["table"]["ackley-sphere2"].values():
        assert 0 <= row["coverage"] <= 1 and row["sd_over_error"] > 0 and math.isfinite(row["nlpd"])
    assert "torch" in data["environment"]["versions"]
    assert (tmp_path / "surrogate_calibration.png").stat().st_size > 5000


def test_an_unknown_design_is_a_clear_error(tmp_path):
    command = [sys.executable, str(SCRIPT), "--smoke", "--design", "grid", "--out", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert (
        result.returncode != 0 and "--design must be 'uniform' or 'bo:<surrogate>'" in result.stderr
    )
