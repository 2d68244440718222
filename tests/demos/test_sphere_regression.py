"""The sphere demo: the geometric GP beats the latitude/longitude GP and the figure is written."""

import json

import torch

from manibo.demos.sphere_regression import lonlat_to_xyz, run, xyz_to_lonlat


def test_demo_runs_and_geometry_wins(tmp_path, capsys):
    summary = run(tmp_path, num_train=100, seed=0)
    rmse = {r["model"]: r["rmse"] for r in summary["reports"]}
    geometric = next(v for k, v in rmse.items() if "geometric" in k)
    euclidean = next(v for k, v in rmse.items() if "lat, lon" in k)
    assert geometric < euclidean
    assert (tmp_path / "sphere_fit.png").stat().st_size > 10_000
    assert json.loads((tmp_path / "sphere_fit.json").read_text())["seed"] == 0
    assert "RMSE" in capsys.readouterr().out


def test_lonlat_round_trip():
    lat = torch.tensor([0.0, 45.0, -80.0], dtype=torch.float64)
    lon = torch.tensor([10.0, -170.0, 179.0], dtype=torch.float64)
    back = xyz_to_lonlat(lonlat_to_xyz(lat, lon))
    assert torch.allclose(back, torch.stack([lat, lon], -1), atol=1e-10)
