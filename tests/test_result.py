"""OptimizationResult: best and recommended points, history tensors, model, summary, JSON."""

import json
import math
import warnings

import pytest
import torch
from joint_sizes import record_joint_sizes

import manibo
from manibo.journal import Journal
from manibo.loop import BayesianOptimizer
from manibo.result import OptimizationResult
from manibo.spaces import Circle, Sphere

SUN = torch.tensor([0.0, 0.6, 0.8], dtype=torch.float64)


def _misalignment(x):
    return float(1 - x @ SUN.to(x))


def _noisy(noise_std, seed):
    generator = torch.Generator().manual_seed(seed)

    def objective(x):
        return _misalignment(x) + noise_std * float(torch.randn(1, generator=generator))

    return objective


def test_on_a_noisy_objective_the_recommended_point_beats_the_best_observed_one_over_10_seeds():
    # 40 random evaluations with noise of std 0.3 on a function of range [0, 2]: the lowest
    # observed value is mostly a lucky draw, the model's mean averages the noise out
    sphere = Sphere(2)
    recommended, observed = [], []
    for seed in range(10):
        result = manibo.minimize(
            _noisy(0.3, 100 + seed), sphere, budget=40, initial_design=40, seed=seed, progress=False
        )
        assert isinstance(result, OptimizationResult) and result.num_evaluations == 40
        recommended.append(float(sphere.distance(result.recommended_x, SUN)))
        observed.append(float(sphere.distance(result.best_x, SUN)))
    # measured: 0.22 rad against 0.62 rad on average, closer in 8 of the 10 seeds
    assert sum(recommended) / 10 < 0.6 * sum(observed) / 10
    assert sum(r < o for r, o in zip(recommended, observed, strict=True)) >= 6


@pytest.mark.parametrize("scale", [1.0, 1e120])
def test_best_recommended_and_history_agree_with_the_evaluations(scale):
    values = []

    def objective(x):
        values.append(scale * _misalignment(x))
        return values[-1]

    result = manibo.minimize(objective, Sphere(2), budget=25, initial_design=25, progress=False)
    # the history in evaluation order, the best by a plain search over what was returned
    assert result.Y.tolist() == values and result.X.shape == (25, 3)
    assert result.best_y == min(values) and result.best_index == values.index(min(values))
    assert torch.equal(result.best_x, result.X[result.best_index])
    assert [_misalignment(x) * scale for x in result.X] == values
    # noise-free: the posterior mean at the recommended point is the objective there (in the
    # objective's units, whatever the scale the surrogate saw), and it is one of the best points
    recommended = scale * _misalignment(result.recommended_x)
    assert result.recommended_value == pytest.approx(recommended, rel=0.05, abs=0.02 * scale)
    assert recommended <= sorted(values)[2]
    assert any(torch.equal(result.recommended_x, x) for x in result.X)
    assert (result.evaluation_seconds >= 0).all() and not result.failed.any()
    x, y = result  # unpacking gives the best point and value
    assert torch.equal(x, result.best_x) and y == result.best_y


def test_maximize_orients_best_and_recommendation_upwards():
    result = manibo.maximize(
        _misalignment, Sphere(2), budget=20, initial_design=20, seed=3, progress=False
    )
    assert result.best_y == max(result.Y.tolist()) and not result.minimize
    assert result.recommended_value == pytest.approx(_misalignment(result.recommended_x), abs=0.05)
    assert _misalignment(result.recommended_x) >= sorted(result.Y.tolist())[-3]
    # the model is that of the loop: its mean is the objective's, with the sign the loop fits
    with torch.no_grad():
        mean = result.model.posterior(result.recommended_x[None]).mean
    assert float(mean) == pytest.approx(result.recommended_value)


def test_the_model_is_fitted_once_on_first_access_and_is_seeded():
    opt = BayesianOptimizer(Sphere(2), initial_design=10, seed=0)
    opt.run(_misalignment, budget=10, progress=False)
    first, second = opt.result(), opt.result()
    assert first.model is first.model  # built once
    assert torch.equal(first.recommended_x, second.recommended_x)
    assert first.recommended_value == second.recommended_value  # same data, same seed


def test_fewer_than_two_successes_give_no_model_and_no_recommendation():
    opt = BayesianOptimizer(Circle(), initial_design=3, seed=0)
    opt.tell(torch.tensor([[1.0]], dtype=torch.float64), [2.0])
    result = opt.result()
    assert result.best_y == 2.0 and result.model is None and result.recommended_x is None
    assert result.stop_reason is None and "recommended" not in result.summary()


def test_summary_and_as_dict_for_people_and_standard_json(tmp_path):
    journal = tmp_path / "run.jsonl"

    def objective(x):
        if x[0] > 4.0:
            raise manibo.EvaluationFailed("out of range")
        return math.cos(float(x[0]))

    result = manibo.minimize(
        objective, Circle(), budget=12, initial_design=12, seed=1, journal=journal, progress=False
    )
    failed = int(result.failed.sum())
    assert failed == sum(float(x) > 4.0 for x in result.X) >= 1
    text = result.summary()
    for line in (
        "minimised on Circle() with surrogate 'matern' and acquisition 'qlognei' (seed 1)",
        # counted from 1, as the progress bar and the figure count (best_index counts from 0)
        f"best observed value: {result.best_y!r} (evaluation {result.best_index + 1} of 12; "
        # and the index the journal and the JSON give it: a user of the CLI looked up
        # "evaluation 9" as "index": 9 in the journal and found another point
        f"index {result.best_index} counted from 0, as the journal and best_index count)",
        f"evaluations: 12, failed: {failed}",
        "stopped: the budget of evaluations was reached",
        f"journal: {journal}",
    ):
        assert line in text
    assert "recommended point" in text and "time: " in text

    def refuse(token):
        raise ValueError(token)

    record = json.loads(json.dumps(result.as_dict()), parse_constant=refuse)
    assert record["observed"] == [
        None if f else y for f, y in zip(result.failed, result.Y.tolist(), strict=True)
    ]
    assert record["best_y"] == result.best_y and record["stop_reason"] == "budget"
    assert record["recommended_x"] == result.recommended_x.tolist()
    assert record["evaluations"] == 12 and record["failed"] == failed
    # the evaluated points, failed ones included: json.dump(result.as_dict()) kept only the best
    # and the recommended point of a run
    assert record["points"] == result.X.tolist() == [e.x for e in Journal(journal).read()[1]]
    assert repr(result).startswith(f"OptimizationResult(best {result.best_y!r} at [")


def test_an_ask_tell_run_says_its_evaluations_were_not_timed_instead_of_nan():
    optimizer = BayesianOptimizer(Circle(), initial_design=3, seed=0)
    for _ in range(3):  # within the initial design: no model is fitted
        x = optimizer.ask(1)
        optimizer.tell(x, torch.cos(x[..., 0]).reshape(-1))
    result = optimizer.result()
    optimizer.close()
    (line,) = [line for line in result.summary().splitlines() if line.startswith("time: ")]
    assert "nan" not in line and "evaluations not timed" in line
    proposals = float(result.proposal_seconds.sum())
    assert line == (
        f"time: {float(result.elapsed.max()):.3g} s in all; evaluations not timed, "
        f"proposals {proposals:.3g} s"
    )


@pytest.mark.parametrize(
    ("seconds", "elapsed", "expected"),
    [
        ([None, None], [None, None], "time: not measured"),
        (
            [0.5, None],
            [None, None],
            "time: total not measured; evaluations 0.5 s (1 of 2 timed), proposals not timed",
        ),
        ([0.5, 0.25], [1.0, 2.0], "time: 2 s in all; evaluations 0.75 s, proposals not timed"),
        (  # measured elsewhere and told with their seconds: nothing ran together in this run
            [3600.0, 3600.0],
            [0.1, 0.2],
            "time: 0.2 s in all; evaluations 7.2e+03 s, proposals not timed",
        ),
        (  # back to back, the second told 0.5 ms after its start: none ran at the same time
            [1.0, 1.0],
            [1.0, 2.0005],
            "time: 2 s in all; evaluations 2 s, proposals not timed",
        ),
        (  # two evaluations of 1.5 s that ran together: 3 s of evaluations in 1.6 s
            [1.5, 1.5],
            [1.5, 1.6],
            "time: 1.6 s in all; evaluations 3 s (summed over evaluations that ran at the same "
            "time), proposals not timed",
        ),
    ],
)
def test_the_time_line_reports_only_what_was_measured(seconds, elapsed, expected):
    from manibo.journal import Evaluation
    from manibo.result import result_from_history

    history = [
        Evaluation(x=[0.1 * i], y=float(i), index=i, seconds=s, elapsed=t)
        for i, (s, t) in enumerate(zip(seconds, elapsed, strict=True))
    ]
    config = {"minimize": True, "surrogate": "matern", "acquisition": "qlognei", "seed": 0}
    result = result_from_history(
        history, Circle(), config, torch.device("cpu"), None, "budget", lambda: None, 1.0
    )
    (line,) = [line for line in result.summary().splitlines() if line.startswith("time: ")]
    assert line == expected


def test_the_recommendation_asks_the_model_for_marginals_never_a_joint_posterior_of_every_point():
    # the joint posterior of n evaluated points is an n x n covariance: 80 GB at 100,000 points
    # (a VISH run); the recommendation needs only each point's mean
    import dataclasses

    from botorch.models import SingleTaskGP

    opt = BayesianOptimizer(Circle(), initial_design=3, seed=0)
    X = torch.linspace(0.0, 6.2, 1100, dtype=torch.float64).unsqueeze(-1)
    opt.tell(X, (X.squeeze(-1) - 1.0).square().tolist())
    model = SingleTaskGP(X, -(X - 1.0).square()).eval()
    asked = record_joint_sizes(model)
    result = dataclasses.replace(opt.result(), _fit=lambda: model)
    assert abs(float(result.recommended_x) - 1.0) < 0.01
    assert sum(asked) == 1100 and max(asked) <= 1000


def _repeated_measurements(scale, noise_std=0.5, points=12, repeats=4, seed=0):
    """An ask/tell result of ``points`` random points of S^2 each measured ``repeats`` times,
    ``scale * (misalignment + noise)``: repeats let the model tell noise from function."""
    generator = torch.Generator().manual_seed(seed)
    X = Sphere(2).random(points, generator=seed).repeat(repeats, 1)
    f = torch.stack([torch.tensor(_misalignment(x)) for x in X])
    Y = scale * (f + noise_std * torch.randn(len(X), generator=generator, dtype=torch.float64))
    opt = BayesianOptimizer(Sphere(2), initial_design=2, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "told before": the repeats are on purpose
        opt.tell(X, Y)
    return opt.result()


def test_the_fitted_noise_is_read_in_the_objectives_units():
    result = _repeated_measurements(1.0)
    model = result.model
    # another route to the same number: the likelihood's variance of standardised outcomes
    # times the outcome transform's variance (the loop minimises: the model sees -f, same noise)
    standardised = float(model.likelihood.noise.detach().reshape(-1)[0])
    expected = math.sqrt(standardised) * float(model.outcome_transform.stdvs.reshape(-1)[0])
    assert result.noise_std == pytest.approx(expected, rel=1e-9)
    # the noise drawn had standard deviation 0.5: 48 measurements pin it within a factor 1.5
    assert 0.5 / 1.5 < result.noise_std < 0.5 * 1.5
    assert "fitted noise: standard deviation" in result.summary()
    assert result.as_dict()["noise_std"] == result.noise_std


def test_the_fitted_noise_follows_the_objectives_scale_through_the_loops_rescaling():
    # values of 1e-8 are rescaled by a power of two before modelling, 1e120 too
    plain = _repeated_measurements(1.0).noise_std
    for scale in (1e-8, 1e120):
        assert _repeated_measurements(scale).noise_std == pytest.approx(scale * plain, rel=1e-4)


def test_a_constant_objective_has_no_fitted_noise_to_report():
    # every value 1e-6: the noise has no scale but the prior's (it read 0.0302, whatever the
    # constant, 30,000 times the value itself)
    result = manibo.minimize(lambda x: 1e-6, Sphere(2), budget=3, initial_design=3, progress=False)
    assert result.model is not None and result.noise_std is None
    assert "fitted noise" not in result.summary() and result.as_dict()["noise_std"] is None
