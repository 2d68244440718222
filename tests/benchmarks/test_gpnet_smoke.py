"""The GPNet benchmark runs at smoke size and writes its four JSON records and two PNGs."""

import json

from benchmark_runs import run_smoke_here


def test_gpnet_benchmark_smoke(tmp_path):
    run_smoke_here("gpnet.py", tmp_path)
    for name in ("gpnet_toy.png", "gpnet_regression.png"):
        assert (tmp_path / name).stat().st_size > 5000
    toy = json.loads((tmp_path / "gpnet_toy.json").read_text())
    assert set(toy["methods"]) == {f"{m}_M{M}" for m in ("svgp", "gpnet") for M in (2, 5, 20)}
    for row in toy["methods"].values():
        assert row["mean_kl_to_exact"] >= 0 and row["rmse"] > 0 and row["seconds"] > 0
    assert isinstance(toy["target"]["gpnet_closer_than_svgp_at_M5"], bool)
    sphere = json.loads((tmp_path / "gpnet_sphere.json").read_text())
    assert "rmse" in sphere["exact"] and len(sphere["methods"]) == 4
    large = json.loads((tmp_path / "gpnet_large.json").read_text())
    assert "skipped" in large["exact"] and "rmse" in large["exact_subset"]
    assert [r["n"] for r in large["scaling"]["runs"]] == [20_000, 50_000]
    bo = json.loads((tmp_path / "gpnet_bo.json").read_text())
    assert {r["problem"] for r in bo["runs"]} == {"ackley-sphere2", "ackley-sphere5"}
    for run in bo["runs"]:
        assert run["gpnet"]["build_s"] > 0 and run["matern"]["acquisition_s"] > 0
    for record in (toy, sphere, large, bo):
        assert record["config"]["smoke"] is True
        assert "torch" in record["environment"]["versions"]
        assert record["load_average_start"] is not None and record["load_average_end"] is not None
