"""Seed 001's recipe beside vanilla and dropout networks: dropout and a smoke run."""

import json
import sys
from pathlib import Path

import torch
from benchmark_runs import run_smoke_here

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

import adgp_paper  # noqa: E402

from manibo.models.adgp import ActivatedDeepGP  # noqa: E402


def test_dropout_at_rate_zero_is_the_network_and_is_unbiased_in_the_last_layer():
    model = ActivatedDeepGP(3, num_layers=1, num_units=64, seed=0)
    x = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.equal(adgp_paper.dropout_forward(model, x, 0.0), model.network(x))
        torch.manual_seed(0)
        passes = torch.stack([adgp_paper.dropout_forward(model, x, 0.1) for _ in range(4000)])
    # one layer: the output is linear in the dropped units, so its average is the network's
    assert torch.allclose(passes.mean(0), model.network(x), atol=0.02)
    assert bool((passes.std(0) > 0).all())


def test_smoke_run_writes_json_and_png(tmp_path):
    run_smoke_here("adgp_paper.py", tmp_path)
    data = json.loads((tmp_path / "adgp_paper.json").read_text())
    row = data["table"]["diabetes"]
    assert row["splits"] == 1
    for method in ("network", "dropout", "adgp"):
        assert row[f"{method}_rmse_mean"] > 0
    run = data["runs"][0]
    assert run["settings"]["rate"] == 0.1 and run["dgp"]["rmse"] > 0  # the committed DGP
    assert (tmp_path / "adgp_paper.png").stat().st_size > 5000
