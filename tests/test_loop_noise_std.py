"""``noise_std``: a known measurement noise, taken by the surrogate instead of a fitted one."""

import json
import warnings

import numpy as np
import pytest
import torch

from manibo.exceptions import ConfigurationError, ManiboWarning
from manibo.loop import BayesianOptimizer, minimize
from manibo.spaces import Box, Sphere

FAST = {"num_restarts": 2, "raw_samples": 32, "optimizer_options": {"maxiter": 10}}


def _model_noise_in_objective_units(result) -> float:
    """The noise standard deviation of the fitted model, read from the gap between its noisy
    and latent predictive variances at an evaluated point, mapped to the objective's units."""
    x = result.X[:1]
    with torch.no_grad():
        noisy = result.model.posterior(x, observation_noise=True).variance.reshape(-1)[0]
        latent = result.model.posterior(x).variance.reshape(-1)[0]
    factor, _ = result._to_objective
    return abs(factor) * float(noisy - latent) ** 0.5


@pytest.mark.parametrize(
    ("offset", "scale", "noise_std"),
    [(0.0, 1.0, 0.3), (0.0, 1e40, 3e39), (1.0, 1e-12, 3e-13)],
    ids=["plain", "huge values", "tiny spread"],
)
def test_the_model_takes_the_known_noise_in_the_objectives_units(offset, scale, noise_std):
    # the loop rescales values of 1e40 and spreads of 1e-12 before the surrogate sees them; the
    # known variance must be rescaled with them
    opt = BayesianOptimizer(Sphere(2), seed=0, noise_std=noise_std, **FAST)
    generator = torch.Generator().manual_seed(0)
    for _ in range(8):
        x = opt.ask()[0]
        value = float(x[2]) + 0.3 * float(torch.randn((), generator=generator, dtype=torch.float64))
        opt.tell(x, offset + scale * value)
    result = opt.result()
    assert result.noise_std == noise_std  # the given float, not its rounding
    assert _model_noise_in_objective_units(result) == pytest.approx(noise_std, rel=1e-6)
    assert f"known noise: standard deviation {noise_std:.3g} (given)" in result.summary()


def test_a_known_noise_is_reported_as_given_where_flat_values_measure_none():
    # three equal values leave the model no spread to measure the noise by: the known one was
    # reported as None
    opt = BayesianOptimizer(Sphere(2), seed=0, noise_std=0.1, initial_design=3, **FAST)
    for _ in range(3):
        opt.tell(opt.ask()[0], 1.0)
    assert opt.result().noise_std == 0.1


def test_a_known_noise_the_model_takes_is_reported_as_the_given_float():
    # the model's noise, read back through two variances, differs from 0.1 in its last bits:
    # the given float is reported, not that rounding
    opt = BayesianOptimizer(Sphere(2), seed=0, noise_std=0.1, initial_design=4, **FAST)
    generator = torch.Generator().manual_seed(1)
    for _ in range(6):
        x = opt.ask()[0]
        opt.tell(x, 1.0 + float(x[0]) + 0.1 * float(torch.randn((), generator=generator)))
    result = opt.result()
    assert _model_noise_in_objective_units(result) != 0.1  # what the model gives back
    assert result.noise_std == 0.1


def test_without_noise_std_the_noise_is_fitted():
    generator = torch.Generator().manual_seed(0)

    def noisy_height(x):
        return float(x[2]) + 0.3 * float(torch.randn((), generator=generator, dtype=torch.float64))

    fitted = minimize(noisy_height, Sphere(2), budget=8, seed=0, progress=False, **FAST)
    assert fitted.config["noise_std"] is None
    assert _model_noise_in_objective_units(fitted) != pytest.approx(0.3, rel=1e-3)
    assert "fitted noise" in fitted.summary()


@pytest.mark.parametrize(
    "value", [0.0, -0.1, float("nan"), float("inf"), "0.1", True, torch.ones(2), 1e160, 1e-170]
)
def test_noise_std_must_be_a_positive_number(value):
    # 1e160 passed, and its square overflowed after the initial design was paid for
    with pytest.raises(ConfigurationError, match="`noise_std` must be a number above 0 whose"):
        BayesianOptimizer(Sphere(2), noise_std=value)


def test_numpy_and_tensor_numbers_are_read_as_floats():
    for value in (np.float32(0.25), torch.tensor(0.25), 1):
        assert BayesianOptimizer(Sphere(2), noise_std=value).config["noise_std"] == float(value)


def test_a_surrogate_that_fits_its_own_noise_refuses_a_known_one():
    with pytest.raises(ConfigurationError, match="known noise variances"):
        BayesianOptimizer(Sphere(2), surrogate="vish", noise_std=0.1)


def test_noise_std_is_journaled_and_a_resume_with_another_is_refused(tmp_path):
    journal = tmp_path / "run.jsonl"
    minimize(
        lambda x: float(x[2]), Sphere(2), budget=5, journal=journal, progress=False,
        noise_std=0.1,
    )  # fmt: skip
    resumed = BayesianOptimizer.resume(journal)
    assert resumed.config["noise_std"] == 0.1
    resumed.close()
    with pytest.raises(ConfigurationError, match="noise_std"):
        BayesianOptimizer.resume(journal, noise_std=0.2)


def test_a_journal_without_noise_std_in_its_header_resumes_as_a_run_that_fits_it(tmp_path):
    journal = tmp_path / "run.jsonl"
    minimize(lambda x: float(x[2]), Sphere(2), budget=5, journal=journal, progress=False)
    header, *records = journal.read_text().splitlines(keepends=True)
    config = json.loads(header)
    del config["config"]["noise_std"]  # as an earlier version of manibo wrote it
    journal.write_text(json.dumps(config) + "\n" + "".join(records))
    resumed = BayesianOptimizer.resume(journal)
    assert resumed.config["noise_std"] is None and len(resumed.history) == 5
    resumed.close()


def test_a_known_noise_below_gpytorchs_floor_is_said_and_reported_as_the_model_takes_it():
    # noise_std = 1e-4 on values of spread ~1 was raised to 7.6e-4 by GPyTorch's floor while
    # result.noise_std and the summary said 1e-4
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = minimize(
            lambda x: float(torch.sin(3 * x).sum()), Box([0.0, 0.0], [1.0, 1.0]), 8, seed=1,
            noise_std=1e-4, progress=False, **FAST,
        )  # fmt: skip
        noise_std, summary = result.noise_std, result.summary()  # the model is fitted here
    said = [str(w.message) for w in caught if issubclass(w.category, ManiboWarning)]
    assert sum("lies below what the surrogate takes as known noise" in m for m in said) == 1
    assert noise_std == pytest.approx(_model_noise_in_objective_units(result), rel=1e-9)
    assert noise_std > 2e-4
    assert f"; the model takes {noise_std:.3g}, GPyTorch's floor" in summary


@pytest.mark.parametrize(("noise_std", "scale"), [(1e140, 1e-20), (1e-140, 1e200)])
def test_a_known_noise_far_from_the_values_scale_is_taken_without_overflow(noise_std, scale):
    # noise 1e140 on values of spread 1e-20 overflowed (its variance in the rescaled units) after
    # the initial design was paid for, and 1e-140 on values of 1e200 divided by zero
    opt = BayesianOptimizer(
        Box([0.0], [1.0]), seed=0, initial_design=3, noise_std=noise_std, **FAST
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the floor's warnings, here expected
        for _ in range(5):
            x = opt.ask()[0]
            opt.tell(x, scale * float(x[0]))
    assert len(opt.history) == 5
