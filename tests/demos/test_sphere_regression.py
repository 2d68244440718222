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


def test_predictions_in_chunks_are_the_whole_posterior_marginals():
    from botorch.models import SingleTaskGP

    from manibo.demos.sphere_regression import _predict

    gen = torch.Generator().manual_seed(3)
    x = torch.randn(20, 2, generator=gen, dtype=torch.float64)
    model = SingleTaskGP(x, x.sin().sum(-1, keepdim=True)).eval()
    test = torch.randn(25, 2, generator=gen, dtype=torch.float64)
    mean, variance = _predict(model, test, observation_noise=True, chunk=7)
    with torch.no_grad():
        whole = model.posterior(test, observation_noise=True)
    assert mean.shape == variance.shape == (25,)
    assert torch.allclose(mean, whole.mean.squeeze(-1), atol=1e-10)
    assert torch.allclose(variance, whole.variance.squeeze(-1), atol=1e-10)
