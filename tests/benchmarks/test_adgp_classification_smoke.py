"""The activated deep GP classification benchmark runs at smoke size and writes its JSON and PNG."""

import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "adgp_classification.py"
sys.path.insert(0, str(SCRIPT.parent))

import adgp_classification  # noqa: E402


def test_adgp_classification_smoke(tmp_path):
    pytest.importorskip("sklearn", reason="benchmark data: pip install -e '.[bench]'")
    # in this process: torch and scikit-learn are imported once
    assert adgp_classification.main(["--smoke", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "adgp_classification.json").read_text())
    assert set(summary["table"]) == {"breast_cancer", "wine", "digits"}
    for run in summary["runs"]:
        assert run["n_train"] + run["n_validation"] + run["n_test"] in (569, 178, 1797)
        assert run["classes"] in (2, 3, 10)
        for method in ("network", "adgp_start", "adgp"):
            assert 0 <= run[method]["accuracy"] <= 1 and 0 <= run[method]["ece"] <= 1
            assert run[method]["nlpd"] > 0
    assert "torch" in summary["environment"]["versions"]
    assert (tmp_path / "adgp_classification.png").stat().st_size > 5000


def test_metrics_against_a_hand_computed_case():
    import torch
    from adgp_classification import classification_metrics

    probabilities = torch.tensor([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.55, 0.45]])
    labels = torch.tensor([0, 1, 1, 0])
    metrics = classification_metrics(probabilities, labels, 1.0)
    assert metrics["accuracy"] == pytest.approx(0.75)
    expected_nlpd = -(
        torch.tensor([0.9, 0.4, 0.7, 0.55]).log().mean()
    )  # the true class's probability
    assert metrics["nlpd"] == pytest.approx(float(expected_nlpd))
    # bins: 0.9 (correct) -> 9; 0.6 (wrong) -> 6; 0.7 (correct) -> 7; 0.55 (correct) -> 5
    assert metrics["ece"] == pytest.approx((0.1 + 0.6 + 0.3 + 0.45) / 4)
