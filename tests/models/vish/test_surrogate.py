"""The "vish" surrogate: built by name, used by the loop, and run from the command line."""

import json

import pytest
import torch

from manibo.cli import main
from manibo.exceptions import ConfigurationError
from manibo.loop import BayesianOptimizer
from manibo.models import available_surrogates, build_surrogate
from manibo.models.vish import VISHModel
from manibo.spaces import Sphere, Torus


def test_registry_builds_vish():
    assert "vish" in available_surrogates()
    X = Sphere(2).random(300, generator=torch.Generator().manual_seed(0))
    Y = (X[:, :1] ** 2 + 0.05 * torch.randn(300, 1, dtype=torch.float64)).double()
    model = build_surrogate("vish", Sphere(2), X, Y, num_features=49, maxiter=30)
    assert isinstance(model, VISHModel) and model.prior.levels == tuple(range(7))
    with torch.no_grad():
        error = (model.posterior(X[:50]).mean - X[:50, :1] ** 2).abs().max()
    assert float(error) < 0.1
    with pytest.raises(ConfigurationError, match="Sphere"):
        build_surrogate("vish", Torus(2), torch.rand(5, 2).double() * 6, torch.rand(5, 1).double())


def test_loop_and_cli_with_many_noisy_observations(tmp_path):
    opt = BayesianOptimizer(
        Sphere(2),
        surrogate="vish",
        initial_design=250,
        seed=0,
        num_restarts=2,
        raw_samples=32,
        surrogate_options={"num_features": 36, "maxiter": 20},
        optimizer_options={"maxiter": 10},
    )
    opt.run(lambda x: float(x[2] + 0.1 * torch.randn(1)), budget=252, progress=False)
    assert len(opt.history) == 252
    code = main(
        [
            "run",
            "--problem",
            "ackley-sphere2",
            "--surrogate",
            "vish",
            "--budget",
            "202",
            "--initial-design",
            "200",
            "--noise",
            "0.1",
            "--surrogate-option",
            "num_features=36",
            "--surrogate-option",
            "maxiter=20",
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    assert code == 0
    summary = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert summary["config"]["surrogate"] == "vish" and len(summary["observed"]) == 202


def test_features_whose_matrices_cannot_fit_in_memory_are_refused_before_any_allocation(
    monkeypatch,
):
    """num_features = 10**5 filled a 23 GB machine and was killed; now the size is refused with
    the largest that fits, and the loop refuses it when it checks its settings."""
    import manibo.models.vish.prior as prior

    monkeypatch.setattr(prior, "physical_memory_bytes", lambda: 10**9)

    def never(*args, **kwargs):  # a check that let it through would build 10,000 features
        raise AssertionError("features built past the memory check")

    monkeypatch.setattr(prior, "VISHFeatures", never)
    X = Sphere(2).random(20, generator=0)
    Y = X[:, :1].clone()
    # 10,000 features on S^2 are levels 0..99: 4 matrices of 10,000^2 float64 = 3.2 GB
    message = r"buys 10,000 harmonics.*need 3.0 GiB.*half of this .* 0.9 GiB of memory.*about 3,952"
    with pytest.raises(ConfigurationError, match=message):
        build_surrogate("vish", Sphere(2), X, Y, num_features=10_000)
    with pytest.raises(ConfigurationError, match="at most about 3,952"):
        BayesianOptimizer(Sphere(2), surrogate="vish", surrogate_options={"num_features": 10_000})
    monkeypatch.setattr(prior, "physical_memory_bytes", lambda: 6 * 10**9)  # 3.2 GB: over half
    with pytest.raises(ConfigurationError, match="more than half of this machine's 5.6 GiB"):
        build_surrogate("vish", Sphere(2), X, Y, num_features=10_000)
    monkeypatch.undo()
    assert build_surrogate("vish", Sphere(2), X, Y, num_features=400, maxiter=2).num_outputs == 1
    monkeypatch.setattr(prior, "physical_memory_bytes", lambda: None)  # unknown: not checked
    assert prior.VISHPrior(build_surrogate("vish", Sphere(2), X, Y).prior.covar_module, 900)
