"""Table 3.1's protocol for VISH: random subsets and splits, and a smoke run."""

import json
import sys
from pathlib import Path

import numpy as np
from benchmark_runs import run_smoke_here

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

import vish_airline_splits  # noqa: E402


def test_a_split_is_a_seeded_subset_scaled_by_its_training_part():
    data = np.random.default_rng(0).normal(size=(500, 9))
    Xtr, ytr, Xte, yte = vish_airline_splits.split(data, 300, 4)
    assert (len(Xtr), len(Xte)) == (200, 100)
    assert float(Xtr.min()) == -1.0 and float(Xtr.max()) == 1.0
    assert abs(float(ytr.mean())) < 1e-12 and abs(float(ytr.std()) - 1) < 1e-12
    again = vish_airline_splits.split(data, 300, 4)
    assert all(bool((a == b).all()) for a, b in zip(again, (Xtr, ytr, Xte, yte), strict=True))
    assert not bool((vish_airline_splits.split(data, 300, 5)[1] == ytr).all())


def test_smoke_run_writes_json_and_png(tmp_path):
    run_smoke_here("vish_airline_splits.py", tmp_path)
    data = json.loads((tmp_path / "vish_airline_splits.json").read_text())
    row = data["table"]["vish210"]["1200"]
    assert row["splits"] == 2 and row["mse"]["sd"] > 0 and row["nlpd"]["mean"] > 0
    assert data["published"]["vish660"]["5929413"][1][0] == 1.27
    assert (tmp_path / "vish_airline_splits.png").stat().st_size > 5000
