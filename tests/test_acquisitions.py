"""Acquisitions by name: the built-ins against closed forms, registration, analytic restrictions."""

import math

import pytest
import torch
from botorch.acquisition import PosteriorMean
from scipy.stats import norm

from manibo.acquisitions import (
    ACQUISITIONS,
    UCB_BETA,
    AcquisitionData,
    available_acquisitions,
    build_acquisition,
    check_acquisition,
    register_acquisition,
)
from manibo.exceptions import ConfigurationError
from manibo.loop import BayesianOptimizer
from manibo.models import build_surrogate
from manibo.spaces import Sphere

BUILTINS = ["logei", "posterior-mean", "qkg", "qlogei", "qlognei", "qsr", "qucb", "ucb"]


@pytest.fixture(scope="module")
def fitted():
    space = Sphere(2)
    X = space.random(12, generator=torch.Generator().manual_seed(3))
    Y = torch.sin(3 * X[:, :1]) + X[:, 1:2]
    model = build_surrogate("matern", space, X, Y)
    test = space.random(7, generator=torch.Generator().manual_seed(4))
    return model, X, Y, test


def test_builtins_are_listed_and_build_finite_values(fitted):
    model, X, Y, _ = fitted
    assert set(BUILTINS) <= set(available_acquisitions())
    generator = torch.Generator().manual_seed(5)
    for name in BUILTINS:
        acqf = build_acquisition(name, model, X, Y, None, seed=0)
        # one-shot knowledge gradient: the q-batch carries its fantasy points
        q = acqf.get_augmented_q_batch_size(1) if hasattr(acqf, "num_fantasies") else 1
        batches = Sphere(2).random(4 * q, generator=generator).reshape(4, q, 3)
        with torch.no_grad():
            values = acqf(batches)
        assert values.shape == (4,) and torch.isfinite(values).all(), name


def test_analytic_builtins_match_closed_forms(fitted):
    model, X, Y, test = fitted
    with torch.no_grad():
        posterior = model.posterior(test)
        mean, sd = posterior.mean.squeeze(-1), posterior.variance.squeeze(-1).sqrt()
        ucb = build_acquisition("ucb", model, X, Y, None, 0)(test.unsqueeze(1))
        logei = build_acquisition("logei", model, X, Y, None, 0)(test.unsqueeze(1))
        pm = build_acquisition("posterior-mean", model, X, Y, None, 0)(test.unsqueeze(1))
    torch.testing.assert_close(ucb, mean + math.sqrt(UCB_BETA) * sd)
    torch.testing.assert_close(pm, mean)
    z = ((mean - Y.max()) / sd).numpy()
    expected_ei = sd.numpy() * (norm.pdf(z) + z * norm.cdf(z))
    torch.testing.assert_close(logei.exp(), torch.as_tensor(expected_ei), rtol=1e-6, atol=1e-12)


def test_analytic_acquisitions_refuse_batches_and_pending_points(fitted):
    model, X, Y, _ = fitted
    check_acquisition("ucb", 1)
    check_acquisition("qlognei", 4)
    with pytest.raises(
        ConfigurationError, match=r"analytic acquisition 'ucb' needs q = 1, got q = 2"
    ):
        check_acquisition("ucb", 2)
    with pytest.raises(ConfigurationError, match="needs q = 1"):
        BayesianOptimizer(Sphere(2), acquisition="logei", q=3)
    with pytest.raises(ConfigurationError, match="cannot account for pending points"):
        build_acquisition("logei", model, X, Y, X[:1], seed=0)


def test_unknown_names_list_the_known_ones_and_say_how_to_add_one():
    with pytest.raises(
        ConfigurationError,
        match=r"unknown acquisition 'nope'; choose one of .*qlognei.*register_acquisition",
    ):
        check_acquisition("nope", 1)


@pytest.fixture
def private_registry(monkeypatch):
    """Registrations made by a test stay in it."""
    monkeypatch.setattr(ACQUISITIONS, "_objects", dict(ACQUISITIONS._objects))


@pytest.mark.usefixtures("private_registry")
def test_a_registered_builder_gets_the_loop_data_and_drives_the_loop():
    calls = []

    @register_acquisition("test-recording-mean", analytic=True)
    def recording_mean(model, data):
        calls.append(data)
        return PosteriorMean(model)

    assert "test-recording-mean" in available_acquisitions()
    space = Sphere(2)
    opt = BayesianOptimizer(
        space,
        acquisition="test-recording-mean",
        initial_design=3,
        seed=0,
        num_restarts=2,
        raw_samples=32,
    )
    assert len(calls) == 1  # the constructor's trial build validates the builder
    opt.run(lambda x: float(x[0]), budget=5, progress=False)
    assert len(calls) == 3  # then one build per proposal after the initial design
    data = calls[-1]
    assert isinstance(data, AcquisitionData)
    assert data.train_X.shape == (4, 3) and data.train_Y.shape == (4, 1)
    assert data.X_pending is None
    # minimising x[0]: the builder sees values oriented for maximisation
    torch.testing.assert_close(data.train_Y[:, 0], -data.train_X[:, 0])
    assert float(data.best_f) == float(data.train_Y.max())
    with pytest.raises(ConfigurationError, match="needs q = 1"):
        BayesianOptimizer(space, acquisition="test-recording-mean", q=2)


@pytest.mark.usefixtures("private_registry")
def test_registration_refuses_a_taken_name_and_allows_the_same_registration_again():
    def builder(model, data):
        return PosteriorMean(model)

    register_acquisition("test-twice")(builder)
    register_acquisition("test-twice")(builder)  # the same registration: a no-op
    with pytest.raises(
        ConfigurationError, match=r"'test-twice' is already registered \(.*builder\)"
    ):
        register_acquisition("test-twice", analytic=True)(builder)
    with pytest.raises(ConfigurationError, match="'qlognei' is already registered"):
        register_acquisition("qlognei")(builder)


def test_the_sampler_draws_the_same_samples_for_the_same_seed(fitted):
    model, X, Y, test = fitted
    with torch.no_grad():
        posterior = model.posterior(test)
        draws = [AcquisitionData(X, Y, None, seed).sampler()(posterior) for seed in (7, 7, 8)]
    assert draws[0].shape == (128, 7, 1)
    assert torch.equal(draws[0], draws[1]) and not torch.equal(draws[0], draws[2])
