"""The loop: ask/tell, failures and errors, settings, pending points, executors, journal, resume."""

import errno
import functools
import json
import math
import multiprocessing
import os
import pickle
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
from botorch.exceptions.warnings import OptimizationWarning
from linear_operator.utils.warnings import NumericalWarning
from loop_processes import shared_fork_server

import manibo
import manibo.journal
from manibo._proposal_warnings import ProposalWarnings
from manibo.acquisitions import build_acquisition
from manibo.exceptions import (
    ConfigurationError,
    InputDataError,
    ManiboError,
    ManiboWarning,
    NonFiniteAcquisitionError,
    ObjectiveError,
    ProposalWarningSummary,
    TruncationWarning,
)
from manibo.journal import (
    Journal,
    JournalError,
    JournalLockedError,
    JournalWarning,
    JournalWriteError,
)
from manibo.loop import BayesianOptimizer, maximize, minimize
from manibo.models import build_surrogate, register_surrogate
from manibo.spaces import (
    Box,
    Graph,
    Grassmann,
    Mesh,
    ProductSpace,
    SpecialOrthogonal,
    Sphere,
    SymmetricPositiveDefinite,
    Torus,
)
from manibo.spaces.base import Space

FAST = {"num_restarts": 2, "raw_samples": 32, "optimizer_options": {"maxiter": 10}}
RIEMANNIAN_ONLY = {"surrogate": "euclidean", "optimizer_options": {"gtol": 1e-6}}


def _objective(x):
    return float(((x - torch.tensor([0.0, 0.0, 1.0], dtype=x.dtype)) ** 2).sum())


def _complete_graph(n=6):
    return Graph(torch.ones(n, n, dtype=torch.float64) - torch.eye(n, dtype=torch.float64))


def test_ask_tell_and_best(tmp_path):
    opt = BayesianOptimizer(
        Sphere(2), initial_design=3, seed=1, journal=tmp_path / "run.jsonl", **FAST
    )
    for _ in range(5):
        x = opt.ask()
        assert x.shape == (1, 3) and opt.pending.shape == (1, 3)
        opt.tell(x, [_objective(x[0])])
        assert opt.pending is None
    x_best, y_best = opt.best
    assert y_best == min(e.y for e in opt.history)
    kinds = [json.loads(line)["type"] for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    assert kinds == ["header"] + ["asked", "evaluation"] * 5


@pytest.mark.parametrize("context", [torch.no_grad, torch.inference_mode])
def test_ask_and_the_results_model_work_inside_a_callers_no_grad(context):
    # a caller's torch.no_grad() or inference_mode() (around a whole script's evaluation code,
    # say) stopped the construction, the fit of the surrogate and the acquisition's ascent:
    # "element 0 of tensors does not require grad"
    with context():
        first = BayesianOptimizer(Sphere(2), initial_design=3, seed=1, **FAST)
        for _ in range(4):
            x = first.ask()
            first.tell(x, [_objective(x[0])])
        assert torch.isfinite(first.result().model.posterior(x).mean).all()
    second = BayesianOptimizer(Sphere(2), initial_design=3, seed=1, **FAST)
    for _ in range(4):
        y = second.ask()
        second.tell(y, [_objective(y[0])])
    assert torch.equal(x, y)  # the same proposals as without no_grad


# ---------------------------------------------------------------- failures and programming errors
class SimulatorDiverged(Exception):
    pass


def test_declared_failures_are_recorded_and_the_run_goes_on():
    calls = []

    def flaky(x):
        calls.append(x)
        if len(calls) == 2:
            raise manibo.EvaluationFailed("mesh too coarse")
        if len(calls) == 4:
            return float("nan")  # NaN (and ±inf) counts as a failed evaluation
        if len(calls) == 6:
            raise SimulatorDiverged("residual blew up")
        return _objective(x)

    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, **FAST)
    opt.run(flaky, budget=8, progress=False, on_error=SimulatorDiverged)
    assert [e.status for e in opt.history].count("failed") == 3 and len(opt.history) == 8
    errors = [e.error for e in opt.history if e.status == "failed"]
    assert errors == [
        "EvaluationFailed: mesh too coarse",
        "objective returned nan",
        "SimulatorDiverged: residual blew up",
    ]
    X, _, _ = opt._training_data()
    assert X.shape[0] == 5


def test_a_point_that_failed_is_not_proposed_again():
    """A simulator that crashes in an 18-degree cap around the optimum: left out of the model,
    each failed point stayed as attractive as before, and 18 of 25 evaluations failed at
    (nearly) one point, 1.3e-4 rad apart; the best value found was 0.072 (0.05 is the best
    outside the cap)."""
    target = torch.tensor([0.0, 0.6, 0.8], dtype=torch.float64)
    opt = BayesianOptimizer(Sphere(2), initial_design=5, seed=0, **FAST)
    failed = []
    for _ in range(25):
        x = opt.ask()[0]
        if x @ target > 0.95:
            opt.tell_failure(x, "crash")
            failed.append(x)
        else:
            opt.tell(x, [float(1 - x @ target)])
    F = torch.stack(failed)
    gaps = torch.arccos((F @ F.T).clamp(-1, 1)) + 9 * torch.eye(len(F), dtype=F.dtype)
    assert gaps.min() > 0.02  # measured 0.056
    assert len(failed) <= 15 and opt.best[1] < 0.075  # measured 13 and 0.0722


def test_points_told_in_float32_clear_their_asked_points_at_the_edge_of_a_wide_spd_domain(
    tmp_path, monkeypatch
):
    """An SPD(2) point with eigenvalues 1e-3 and 1e3, told as float32 (as robot software often
    has it), was 0.003-0.007 away from the point asked (the tolerance is 1e-4): it stayed
    pending, with a warning, and a resumed run evaluated it again."""
    space = SymmetricPositiveDefinite(2, (1e-3, 1e3), sampling="log-eigenvalues")
    corners = []
    for angle in (0.3, 0.7, 1.1):
        c, s = math.cos(angle), math.sin(angle)
        q = torch.tensor([[c, -s], [s, c]], dtype=torch.float64)
        corners.append(q @ torch.diag(torch.tensor([1e-3, 1e3], dtype=torch.float64)) @ q.T)
    corners = torch.stack([(m + m.T) / 2 for m in corners]).reshape(3, 4)
    assert (space.scaled_distance(corners, corners.float().double()) > 3e-3).all()
    monkeypatch.setattr(BayesianOptimizer, "_random_points", lambda self, start, n: corners[:n])
    path = tmp_path / "j.jsonl"
    opt = BayesianOptimizer(space, initial_design=3, seed=0, journal=path, **FAST)
    X = opt.ask(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ManiboWarning)
        opt.tell(X.float(), torch.tensor([1.0, 2.0, 3.0]))
    assert opt.pending is None
    opt.close()
    assert BayesianOptimizer.resume(path, space=space).pending is None


def test_evaluations_through_an_executor_are_timed_where_they_run():
    """An evaluation's time ran from its submission to its collection, which waits while the
    loop proposes the next point: 0.2-1.0 s evaluations in four processes summed to 30.3 s
    against the workers' own 7.8 s."""
    own = {}

    def objective(x):
        start = time.perf_counter()
        time.sleep(0.05)
        first = not own
        own[tuple(x.tolist())] = time.perf_counter() - start
        if first:
            raise manibo.EvaluationFailed("the first one fails")  # timed all the same
        return _objective(x)

    opt = BayesianOptimizer(Sphere(2), initial_design=2, seed=0, **FAST)
    with ThreadPoolExecutor(2) as pool:
        opt.run(objective, budget=6, executor=pool, max_parallel=2, progress=False)
    told = {tuple(e.x): e.seconds for e in opt.history}
    assert len(told) == 6 and told.keys() == own.keys()
    assert [e.status for e in opt.history].count("failed") == 1
    assert max(abs(told[x] - own[x]) for x in own) < 0.01  # it was up to the proposal time


def test_a_point_told_twice_without_being_asked_again_warns(tmp_path):
    """A result told twice (a retried task, a callback run twice), even with another value, was
    kept twice without a word."""
    path = tmp_path / "j.jsonl"
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, journal=path, **FAST)
    X = opt.ask(3)
    opt.tell(X, torch.tensor([1.0, 2.0, 3.0]))
    with pytest.warns(
        ManiboWarning,
        match=r"evaluation 3 \(y = 5\.0\) was told before, as evaluation 1 \(y = 2\.0\), and was "
        "not asked again",
    ):
        opt.tell(X[1:2], [5.0])
    assert len(opt.history) == 4  # kept: a deliberate second measurement is allowed
    opt.close()
    resumed = BayesianOptimizer.resume(path)
    with pytest.warns(
        ManiboWarning, match=r"evaluation 4 \(failed\) was told before, as evaluation 0"
    ):
        resumed.tell_failure(X[0], "again")


def test_a_point_told_again_in_other_coordinates_of_the_same_point_warns():
    # on RP^2, x then -x (distance 0), and on Gr(2, 4), a frame then the same plane with its
    # columns swapped, were kept as two points without a word
    from manibo.spaces import Grassmann, ProductSpace, RealProjectiveSpace

    rotation = torch.tensor([[0.6, -0.8], [0.8, 0.6]], dtype=torch.float64)
    for space, other in (
        (RealProjectiveSpace(2), lambda x: -x),
        (Grassmann(2, 4), lambda x: x.reshape(4, 2).flip(-1).reshape(8)),
        (Grassmann(2, 4), lambda x: (x.reshape(4, 2) @ rotation).reshape(8)),
        (ProductSpace(RealProjectiveSpace(2), Sphere(2)), lambda x: torch.cat([-x[:3], x[3:]])),
    ):
        opt = BayesianOptimizer(space, initial_design=3, seed=0, **FAST)
        X = opt.ask(3)
        opt.tell(X, torch.tensor([1.0, 2.0, 3.0]))
        assert float(space.distance(X[1], other(X[1]))) < 1e-7
        with pytest.warns(ManiboWarning, match=r"told before, as evaluation 1"):
            opt.tell(other(X[1]), 2.5)
    north = torch.tensor([0.6, 0.0, 0.8], dtype=torch.float64)
    assert Sphere(2).point_key(-north) != Sphere(2).point_key(north)  # on a sphere: another


def test_a_value_far_beyond_the_range_of_the_others_warns_once(tmp_path):
    """One reading of 1e6 among values in [0, 2] (a glitch, a failure code) made the model's noise
    3e8 and the search worse than random points, without a word."""
    space = Sphere(2)
    X = space.random(9, generator=torch.Generator().manual_seed(0))
    opt = BayesianOptimizer(space, seed=0, journal=tmp_path / "j.jsonl", **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.tell(X[:5], [0.1, 1.9, 0.7, 1.2, 0.4])
        opt.tell(X[5], -150.0)  # 84 ranges better: what a search is for (and under 100)
        opt.tell_failure(X[6], "crashed")  # failures have no value
    with pytest.warns(
        ManiboWarning,
        match=r"evaluation 7 has the value 1e\+06, 6\.5\d+e\+03 times the range of the 6 "
        r"successful values before it \(\[-150, 1\.9\]\)",
    ) as caught:
        opt.tell(X[7], 1e6)
    assert len(caught) == 1 and "tell_failure" in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.tell(X[8], -1e9)  # shown once per optimiser
    assert len(opt.history) == 9  # recorded all the same
    # quiet: a needle found (far better than all), a plateau seen to rounding then left (flat
    # at the new value's scale); warned: a glitch far below the rest when maximising
    cases = [
        ({}, [-2.6e-6, -1e-33, -1e-12, -1e-9, -1e-7], -1.0, False),
        ({}, [0.0, 1e-12, 2e-12, 5e-13, 1.5e-12], 1.0, False),
        ({"minimize": False}, [0.1, 1.9, 0.7, 1.2, 0.4], -999.0, True),
    ]
    for settings, before, value, warned in cases:
        opt = BayesianOptimizer(space, seed=0, **settings, **FAST)
        opt.tell(X[:5], before)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            opt.tell(X[5], value)
        assert [str(w.message)[:13] for w in caught] == (["evaluation 5 "] if warned else [])


def test_an_analytic_acquisition_does_not_propose_a_failed_point_again():
    """logei and ucb cannot take failed points as pending points: each proposal after a failure
    was the failed point itself (distance 0.0, eight times in a row, without a word), and 22 of
    30 evaluations failed at one point."""
    space = Sphere(2)
    target = torch.tensor([0.6, 0.0, 0.8], dtype=torch.float64)
    P = space.random(2000, generator=torch.Generator().manual_seed(0))
    ok = P[(P @ target) < math.cos(math.radians(40))][:20]
    for acquisition in ("logei", "ucb"):
        opt = BayesianOptimizer(space, acquisition=acquisition, initial_design=5, seed=0, **FAST)
        opt.tell(ok, (1 - ok @ target).tolist())
        failed = []
        with pytest.warns(ManiboWarning, match=rf"'{acquisition}' proposed the point of failed"):
            for _ in range(4):
                x = opt.ask()
                failed.append(x[0])
                opt.tell_failure(x, "crash")
        F = torch.stack(failed)
        gaps = torch.arccos((F @ F.T).clamp(-1, 1)) + 9 * torch.eye(len(F), dtype=F.dtype)
        assert gaps.min() > 1e-3  # was 0.0


def test_the_acquisition_takes_the_distinct_failed_points_up_to_a_cap(monkeypatch):
    """Every failed point was a pending point: with 200 of them a proposal took 5.0 s instead of
    0.5 s (500: 147 s and 3 GB), and one point failed 18 times (a journal of an older version)
    was 18 pending points."""
    import manibo.loop as loop

    seen = []

    def spy(name, model, X, Y, X_pending, *args, **kwargs):
        seen.append(X_pending)
        return build_acquisition(name, model, X, Y, X_pending, *args, **kwargs)

    monkeypatch.setattr(loop, "build_acquisition", spy)
    space = Sphere(2)
    X = space.random(240, generator=torch.Generator().manual_seed(1))
    opt = BayesianOptimizer(space, initial_design=5, seed=0, **FAST)
    opt.tell(X[:20], X[:20, 2].tolist())
    with pytest.warns(
        ManiboWarning,
        match=r"as evaluation 20 \(failed\), and was not asked again; both are kept\. If",
    ):
        opt.tell_failure(X[20:21].expand(18, 3), "crash")
    x = opt.ask()
    assert seen[-1].shape == (1, 3)
    opt.tell(x, x[:, 2].tolist())
    opt.tell_failure(X[40:], "crash")
    opt.ask()
    pending = seen[-1]
    assert pending.shape == (32, 3) and len({tuple(p.tolist()) for p in pending}) == 32
    # the most attractive ones: y = x_3 is minimised, so the failed points lowest on the sphere
    z = torch.sort(X[40:, 2]).values
    assert pending[:, 2].max() <= z[59]  # all among the 60 lowest of the 200


def test_a_programming_error_stops_the_run_at_its_first_evaluation(tmp_path):
    calls = []

    def objective(x):
        calls.append(x)
        return float(undefined_variable * x[0])  # noqa: F821  (the user's bug)

    opt = BayesianOptimizer(
        Sphere(2), initial_design=3, seed=0, journal=tmp_path / "j.jsonl", **FAST
    )
    with pytest.raises(NameError, match="undefined_variable") as info:
        opt.run(objective, budget=6, progress=False)
    assert len(calls) == 1 and opt.history == []  # not recorded, no budget burnt
    assert info.traceback[-1].name == "objective"  # the user's own frame is shown
    assert "EvaluationFailed" in "\n".join(info.value.__notes__)
    # handed back: a rerun with the bug fixed evaluates that design point first
    assert torch.equal(opt.pending, calls[0][None])
    opt.run(_objective, budget=3, progress=False)
    assert opt.history[0].x == calls[0].tolist() and opt.pending is None
    calls.clear()
    with pytest.raises(NameError):
        minimize(objective, Sphere(2), budget=4, initial_design=3, progress=False, **FAST)
    assert len(calls) == 1


@pytest.mark.parametrize(
    "returned",
    [(1.0, 2.0), None, "0.5", torch.ones(2), True, np.bool_(True), torch.tensor(True), 10**400],
    ids=["tuple", "None", "str", "tensor", "bool", "np.bool_", "bool tensor", "10**400"],
)
def test_an_objective_returning_something_else_than_a_number_stops_the_run(returned):
    calls = []

    def objective(x):
        calls.append(x)
        return returned

    opt = BayesianOptimizer(Sphere(2), initial_design=2, seed=0, **FAST)
    with pytest.raises(TypeError, match="must return one real number") as info:
        opt.run(objective, budget=3, progress=False)
    assert isinstance(info.value, ObjectiveError)
    assert len(calls) == 1 and opt.history == []
    assert not hasattr(info.value, "__notes__")  # manibo refused the value: the objective ran fine
    if type(returned) is int:
        assert "too large for a float" in str(info.value)


@pytest.mark.parametrize(
    "returns",
    [
        lambda x: torch.tensor(0.5, requires_grad=True) * x[0],
        lambda x: np.array([0.5]),  # NumPy's "Conversion of an array with ndim > 0" warned
        lambda x: np.array([[0.5]], dtype=np.float32),
        lambda x: x[:1],
    ],
    ids=["requires grad", "array (1,)", "array (1, 1)", "tensor (1,)"],
)
def test_an_objective_value_of_one_element_is_taken_quietly(returns):
    opt = BayesianOptimizer(Sphere(2), initial_design=2, seed=0, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", "the budget .* does not exceed", ManiboWarning)
        opt.run(returns, budget=2, progress=False)
    assert [type(e.y) for e in opt.history] == [float, float]


def test_progress_off_a_terminal_is_a_line_per_step_of_the_bar(capsys):
    # stderr captured is not a terminal, as in a log file: the bar redrawn with a carriage return
    # per evaluation wrote one 60-character update per evaluation into one endless line
    opt = BayesianOptimizer(Sphere(2), initial_design=90, seed=0, **FAST)
    opt.run(lambda x: float(x[0]), budget=90)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "\r" not in err and err.endswith("\n")
    assert len(lines) == 31  # 0/30, 1/30, ..., 30/30 of the bar
    assert lines[0].startswith("[" + "." * 30 + "] 1/90") and lines[-1].startswith("[" + "#" * 30)
    assert "90/90" in lines[-1]


def test_a_run_in_which_every_evaluation_failed_warns_and_still_returns_its_result(tmp_path):
    message = r"no evaluation succeeded \(6 of 6 failed; the last: objective returned nan\)"
    for optimise in (minimize, maximize):
        with pytest.warns(ManiboWarning, match=message) as record:
            result = optimise(
                lambda x: float("nan"), Torus(2), budget=6, seed=0, progress=False, **FAST
            )
        assert result.best_y is None and result.recommended_x is None and result.num_failed == 6
        (warning,) = [w for w in record if issubclass(w.category, ManiboWarning)]
        assert warning.category is manibo.exceptions.NoEvaluationSucceededWarning
        assert warning.filename == __file__  # the user's call, not manibo's code
        assert "Check the objective" in str(warning.message)
    opt = BayesianOptimizer(Torus(2), seed=0, journal=tmp_path / "j.jsonl", **FAST)
    with pytest.warns(ManiboWarning, match=message) as record:
        opt.run(lambda x: float("nan"), budget=6, progress=False)
    assert [w.filename for w in record] == [__file__]
    assert [e.status for e in Journal(tmp_path / "j.jsonl").read()[1]] == ["failed"] * 6
    with warnings.catch_warnings():
        warnings.simplefilter("error", ManiboWarning)
        flaky = iter([float("nan")] + [1.0] * 5)
        minimize(lambda x: next(flaky), Torus(2), budget=6, seed=0, progress=False, **FAST)


def test_the_progress_bar_shows_the_last_failure(capsys):
    calls = []

    def objective(x):
        calls.append(x)
        if len(calls) == 2:
            raise manibo.EvaluationFailed("solver diverged")
        return _objective(x)

    BayesianOptimizer(Sphere(2), initial_design=3, seed=0, **FAST).run(objective, budget=3)
    err = capsys.readouterr().err
    assert "3/3" in err and "last failure: EvaluationFailed: solver diverged" in err


def test_an_unpicklable_objective_for_a_process_pool_is_refused_before_any_evaluation():
    opt = BayesianOptimizer(Sphere(2), initial_design=2, seed=0, **FAST)
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
        with pytest.raises(ConfigurationError, match="cannot be pickled"):
            opt.run(lambda x: float(x[0]), budget=3, executor=pool, progress=False)
    assert opt.history == []


def test_an_error_in_flight_is_raised_after_the_other_evaluations_are_told():
    lock, calls = threading.Lock(), []

    def objective(x):
        with lock:
            calls.append(x)
            number = len(calls)
        if number == 4:
            time.sleep(0.05)
            raise NameError("a bug that shows on the fourth call")
        time.sleep(0.3)
        return _objective(x)

    opt = BayesianOptimizer(Sphere(2), initial_design=6, seed=0, **FAST)
    with ThreadPoolExecutor(max_workers=3) as pool:
        with pytest.raises(NameError, match="fourth call"):
            opt.run(objective, budget=6, executor=pool, max_parallel=3, progress=False)
    assert len(calls) >= 4
    assert len(opt.history) == len(calls) - 1  # every other evaluation that ran was told
    assert all(e.status == "ok" for e in opt.history)
    assert torch.equal(opt.pending, calls[3][None])  # handed back: the next run evaluates it


def _second_call_raises(gate: threading.Event, calls: list):
    """An objective whose second call raises a TypeError (the user's bug) and whose other calls
    wait for ``gate``."""
    lock = threading.Lock()

    def objective(x):
        with lock:
            calls.append(x.tolist())
            number = len(calls)
        if number == 2:
            raise TypeError("a bug in the objective")
        assert gate.wait(30)
        return _objective(x)

    return objective


def test_an_error_waiting_for_the_evaluations_in_flight_says_so_at_once(tmp_path, capfd):
    # the user's TypeError surfaced only after every other evaluation in flight had returned
    # (31 s with 30 s evaluations), and nothing said why the run seemed to hang
    gate, calls = threading.Event(), []
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, journal=tmp_path / "j", **FAST)
    said = []
    threading.Timer(1.0, lambda: (said.append(capfd.readouterr().err), gate.set())).start()
    with ThreadPoolExecutor(3) as pool, pytest.raises(TypeError, match="a bug in the objective"):
        opt.run(_second_call_raises(gate, calls), 6, executor=pool, max_parallel=3, progress=False)
    assert "the run stops on TypeError: a bug in the objective; waiting for the 2 other" in said[0]
    assert len(opt.history) == 2  # the two in flight were recorded before it was raised
    opt.close()


def test_ctrl_c_while_waiting_keeps_the_error_and_records_the_evaluations_in_flight(tmp_path):
    gate, calls = threading.Event(), []
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, journal=tmp_path / "j", **FAST)
    ctrl_c = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))  # during the wait
    ctrl_c.start()
    with ThreadPoolExecutor(3) as pool:
        with pytest.raises(KeyboardInterrupt) as info:
            opt.run(_second_call_raises(gate, calls), 6, executor=pool, max_parallel=3)
        assert isinstance(info.value.manibo_pending_error, TypeError)
        gate.set()
    assert len(opt.history) == 2  # told when they returned, after the interrupt
    opt.close()


def _held_after_the_first(gate: threading.Event, calls: list):
    """An objective that records each point in ``calls`` and, after its first call, returns only
    once ``gate`` is set (evaluations still in flight when the run is interrupted)."""
    lock = threading.Lock()

    def objective(x):
        with lock:
            calls.append(x.tolist())
            first = len(calls) == 1
        if not first:
            assert gate.wait(30)
        return _objective(x)

    return objective


def _ctrl_c_when_running(calls: list, count: int):
    """A callback that raises ``KeyboardInterrupt`` (Ctrl-C) at the first told evaluation, once
    ``count`` evaluations have begun."""

    def ctrl_c_once(optimizer, evaluation):
        if evaluation.index == 0:
            deadline = time.monotonic() + 30
            while len(calls) < count and time.monotonic() < deadline:
                time.sleep(0.01)
            raise KeyboardInterrupt

    return ctrl_c_once


def _three_in_flight_at_ctrl_c(tmp_path):
    """The set-up of a journaled run of 6 on S^2 interrupted by Ctrl-C once 3 evaluations have
    begun, the first told and the other two held by ``gate``: ``(gate, calls, objective,
    ctrl_c_once, journal path, minimize options)``."""
    gate, calls = threading.Event(), []
    objective, ctrl_c_once = _held_after_the_first(gate, calls), _ctrl_c_when_running(calls, 3)
    path = tmp_path / "j.jsonl"
    options = {"initial_design": 6, "seed": 0, "progress": False, "journal": path, **FAST}
    return gate, calls, objective, ctrl_c_once, path, options


def _interrupted_minimize(objective, ctrl_c_once, pool, options) -> None:
    """``minimize`` on S^2 with a budget of 6, three evaluations at a time in ``pool``, stopped by
    the ``KeyboardInterrupt`` of ``ctrl_c_once``."""
    with pytest.raises(KeyboardInterrupt):
        minimize(
            objective, Sphere(2), 6, executor=pool, max_parallel=3, callback=ctrl_c_once,
            **options,
        )  # fmt: skip


def test_evaluations_in_flight_at_ctrl_c_are_told_when_they_return(tmp_path):
    """Ctrl-C in run(executor=ThreadPoolExecutor(3), max_parallel=3) handed back the two
    evaluations still running: the pool's shutdown waited for them, they returned, and their
    results were dropped, so the resumed run paid for them again (8 calls for a budget of 6)."""
    gate, calls, objective, ctrl_c_once, path, options = _three_in_flight_at_ctrl_c(tmp_path)
    with ThreadPoolExecutor(max_workers=3) as pool:
        _interrupted_minimize(objective, ctrl_c_once, pool, options)
        assert len(calls) == 3
        gate.set()  # the two in flight return after minimize closed its optimiser
    evaluations = Journal(path).read()[1]
    assert sorted(e.x for e in evaluations) == sorted(calls)  # all three told and written
    result = minimize(objective, Sphere(2), 6, resume=True, **options)  # the lock was released
    assert len(calls) == 6 and result.num_evaluations == 6  # none evaluated twice
    # the same with an optimiser kept open: its next run counts them, and ask never hands
    # them out again meanwhile
    gate.clear()
    calls.clear()
    opt = BayesianOptimizer(Sphere(2), initial_design=6, seed=0, **FAST)
    with ThreadPoolExecutor(max_workers=3) as pool:
        with pytest.raises(KeyboardInterrupt):
            opt.run(objective, 6, executor=pool, max_parallel=3, callback=ctrl_c_once)
        assert len(opt.history) == 1 and opt.ask().tolist()[0] not in calls
        gate.set()
        opt.run(objective, 6, executor=pool, max_parallel=3, progress=False)
    assert len(calls) == 6 and len(opt.history) == 6
    assert sorted(e.x for e in opt.history) == sorted(calls)


def test_late_evaluations_that_cannot_be_written_are_printed_when_the_journal_is_released(
    tmp_path, monkeypatch, capfd
):
    # Ctrl-C in minimize(executor=...), then a full disk before the two evaluations in flight
    # returned: they were told, not written, and the deferred close dropped them silently
    gate, calls, objective, ctrl_c_once, path, options = _three_in_flight_at_ctrl_c(tmp_path)
    with ThreadPoolExecutor(max_workers=3) as pool:
        _interrupted_minimize(objective, ctrl_c_once, pool, options)
        assert (
            "stays open until the 2 evaluation(s) of the interrupted run" in capfd.readouterr().err
        )
        # a resume meanwhile was told to close() the optimiser that minimize had closed
        with pytest.raises(JournalLockedError, match="closed while 2 evaluation"):
            BayesianOptimizer.resume(path)
        monkeypatch.setattr(manibo.journal.os, "fsync", _fail_fsync)  # the disk is full
        gate.set()
    err = capfd.readouterr().err
    assert "append the 2 line(s) below" in err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith('{"type"')]
    assert sorted(line["x"] for line in lines) == sorted(calls[1:])
    monkeypatch.undo()
    with open(path, "a") as journal:  # as the message says
        journal.writelines(json.dumps(line) + "\n" for line in lines)
    assert len(BayesianOptimizer.resume(path).history) == 3


def test_a_run_that_waits_for_an_interrupted_runs_evaluations_says_so(tmp_path, capfd):
    gate, calls = threading.Event(), []
    objective, ctrl_c_once = _held_after_the_first(gate, calls), _ctrl_c_when_running(calls, 2)
    opt = BayesianOptimizer(Sphere(2), initial_design=4, seed=0, **FAST)
    with ThreadPoolExecutor(2) as pool:
        with pytest.raises(KeyboardInterrupt):
            opt.run(objective, 4, executor=pool, max_parallel=2, callback=ctrl_c_once)
        threading.Timer(0.5, gate.set).start()
        opt.run(objective, 4, executor=pool, max_parallel=2, progress=False)
    assert "waiting for the 1 evaluation(s) of the interrupted run" in capfd.readouterr().err
    assert len(opt.history) == 4


def test_a_run_after_an_interrupted_one_tells_its_late_evaluations_before_evaluating(tmp_path):
    # a second run() started new evaluations while one of the interrupted run's was still in
    # flight: the late value was told after points proposed without it
    gate, calls = threading.Event(), []
    held = _held_after_the_first(gate, calls)
    opt = BayesianOptimizer(Sphere(2), initial_design=4, seed=0, **FAST)
    late_told_at_start = []

    def objective(x):
        if len(calls) >= 2:  # a call of the second run: the late one must be told by now
            late_told_at_start.append(calls[1] in [e.x for e in opt.history])
        return held(x)

    with ThreadPoolExecutor(2) as pool:
        with pytest.raises(KeyboardInterrupt):
            opt.run(
                objective, 4, executor=pool, max_parallel=2,
                callback=_ctrl_c_when_running(calls, 2),
            )  # fmt: skip
        threading.Timer(0.5, gate.set).start()
        opt.run(objective, 4, executor=pool, max_parallel=2, progress=False)
    assert len(opt.history) == 4
    assert late_told_at_start and all(late_told_at_start)


def test_an_error_from_ask_is_raised_after_the_evaluations_in_flight_are_told():
    opt = BayesianOptimizer(Sphere(2), initial_design=2, seed=0, **FAST)

    def broken_proposal(n, seed):
        raise RuntimeError("the surrogate could not be fitted")

    opt._propose = broken_proposal

    sleeps = iter([0.1, 0.4, 0.4])  # the first design point returns first

    def objective(x):
        time.sleep(next(sleeps))
        return _objective(x)

    with ThreadPoolExecutor(max_workers=2) as pool:
        with pytest.raises(RuntimeError, match="could not be fitted"):
            opt.run(objective, budget=5, executor=pool, max_parallel=2, progress=False)
    # the two design points and the random point drawn while one of them was in flight
    assert len(opt.history) == 3 and opt.pending is None


def test_an_analytic_acquisition_with_parallel_evaluations_is_refused_before_any_evaluation():
    calls = []
    opt = BayesianOptimizer(Sphere(2), acquisition="logei", initial_design=2, seed=0, **FAST)
    with ThreadPoolExecutor(max_workers=2) as pool:
        with pytest.raises(ConfigurationError, match="analytic"):
            opt.run(lambda x: calls.append(x) or 1.0, budget=4, executor=pool, max_parallel=2)
    assert calls == []


@pytest.mark.parametrize("max_parallel", [0, -1, 1.5])
def test_max_parallel_is_checked_before_any_evaluation(max_parallel):
    calls = []
    opt = BayesianOptimizer(Sphere(2), initial_design=2, seed=0, **FAST)
    with ThreadPoolExecutor(max_workers=2) as pool:
        with pytest.raises(ConfigurationError, match="max_parallel"):
            opt.run(
                lambda x: calls.append(x) or 1.0,
                budget=4,
                executor=pool,
                max_parallel=max_parallel,
                progress=False,
            )
    assert calls == []


class _Concurrency:
    """An objective that sleeps ``seconds`` and counts the evaluations under way together."""

    def __init__(self, seconds: float):
        self.seconds, self.running, self.most, self.lock = seconds, 0, 0, threading.Lock()

    def __call__(self, x):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.seconds)
        with self.lock:
            self.running -= 1
        return _objective(x)


def test_an_executor_alone_runs_as_many_evaluations_as_it_has_workers(tmp_path):
    # executor=ThreadPoolExecutor(4) without max_parallel evaluated one point at a time
    objective = _Concurrency(0.3)
    with ThreadPoolExecutor(4) as pool:
        minimize(objective, Sphere(2), 6, seed=0, progress=False, executor=pool, **FAST)
    assert objective.most == 4
    objective = _Concurrency(0.05)  # an analytic acquisition takes no points in flight: one
    with ThreadPoolExecutor(4) as pool:
        minimize(
            objective, Sphere(2), 6, acquisition="logei", progress=False, executor=pool, **FAST
        )
    assert objective.most == 1


def test_the_first_model_of_a_parallel_run_sees_the_whole_initial_design(tmp_path):
    # with 4 workers the first model-based point was proposed from 2 told design values, the 3
    # others pending
    path = tmp_path / "j.jsonl"
    with ThreadPoolExecutor(4) as pool:
        minimize(
            _Concurrency(0.2), Sphere(2), 8, seed=0, progress=False, executor=pool,
            max_parallel=4, journal=path, **FAST,
        )  # fmt: skip
    asked = Journal(path).read_all().asked
    first_model = next(record for record in asked if record.step == 5)
    assert first_model.evaluations == 5


class _InFlightAfter(_Concurrency):
    """A :class:`_Concurrency` that also records, from its call ``first`` on, how many
    evaluations were under way as each began."""

    def __init__(self, seconds: float, first: int):
        super().__init__(seconds)
        self.first, self.calls, self.counts = first, 0, []

    def __call__(self, x):
        with self.lock:
            if self.calls >= self.first:
                self.counts.append(self.running + 1)
            self.calls += 1
        return super().__call__(x)


def test_after_the_initial_design_an_executor_keeps_its_workers_busy():
    # the wait for the initial design held on after it: each model-based point of a run with
    # three workers was evaluated alone
    objective = _InFlightAfter(1.0, first=5)
    with ThreadPoolExecutor(3) as pool:
        minimize(
            objective, Sphere(2), 10, initial_design=4, seed=0, progress=False, executor=pool,
            **FAST,
        )  # fmt: skip
    assert len(objective.counts) == 5 and max(objective.counts) >= 2


def test_resumed_asked_points_not_yet_told_are_evaluated_together(tmp_path):
    # three asked-not-told design points of a killed run, resumed with three workers, were
    # evaluated one at a time
    path = tmp_path / "j.jsonl"
    opt = BayesianOptimizer(Sphere(2), initial_design=5, seed=0, journal=path, **FAST)
    asked = [opt.ask()[0] for _ in range(5)]
    for x in asked[:2]:
        opt.tell(x, _objective(x))
    opt.close()
    resumed = BayesianOptimizer.resume(path)
    assert resumed.pending.shape == (3, 3)
    objective = _Concurrency(0.5)
    with ThreadPoolExecutor(3) as pool:
        resumed.run(objective, budget=5, executor=pool, progress=False)
    resumed.close()
    assert len(resumed.history) == 5 and objective.most >= 2


# ---------------------------------------------------------------- settings checked up front
@pytest.mark.parametrize(
    ("space", "settings", "message"),
    [
        (Sphere(2), {"q": 0}, "`q` must be an integer >= 1"),
        (Sphere(2), {"surrogate_options": {"nu": -1}}, "`nu` must be a real number > 0"),
        (Sphere(2), {"surrogate_options": {"colour": "red"}}, "unexpected keyword.*colour"),
        # the options it does take, and where the rest are described
        (
            Sphere(2),
            {"surrogate_options": {"colour": "red"}},
            r"takes nu, truncation_tol, max_levels, per_factor and passes other options on; "
            r"help\(manibo.models.exact_gp.geometric_matern_gp\)",
        ),
        (
            Sphere(2),
            {"surrogate": "vish", "surrogate_options": {"colour": "red"}},
            r"vish_surrogate, takes num_features, nu, maxiter, chunk_size, outcome_transform, "
            r"input_transform; help",
        ),
        (Sphere(2), {"surrogate_options": {"train_Yvar": [0.1]}}, "cannot hold `train_Yvar`.*b"),
        (Sphere(2), {"optimizer": "projection"}, "projection.*defined only on"),
        (_complete_graph(), {"surrogate": "chart"}, "'chart' surrogate.*but Graph.* has none"),
        (_complete_graph(), {"optimizer": "projection"}, "projection.*has none"),
        (Grassmann(8, 16), {}, "surrogate 'matern' cannot be built.*rank"),  # not the acquisition
        (Sphere(2), {"optimizer": "projection", **RIEMANNIAN_ONLY}, "takes maxiter"),
        (_complete_graph(), {"initial_design": 7}, "exceeds the 6 points"),
        (Sphere(2), {"num_restarts": 0}, "`num_restarts` must be an integer >= 1"),
        (Sphere(2), {"num_restarts": 8, "raw_samples": 4}, "at least `num_restarts`"),
        (Sphere(2), {"seed": 2**70}, "`seed` must be an integer >= 0 and <= 4294967295"),
        (Sphere(2), {"seed": -1}, "`seed`"),
        (Sphere(2), {"optimizer_options": {"maxiters": 5}}, "unknown optimizer option.*maxiters"),
        (Sphere(2), {"optimizer_options": {"maxiter": 0}}, "`maxiter` must be an integer >= 1"),
        (Sphere(2), {"minimize": "no"}, "`minimize` must be True or False"),
        (Sphere(2), {"surrogate_options": {"nu": {1, 2}}}, "JSON values"),
    ],
)
def test_settings_are_checked_before_the_journal_or_any_evaluation(
    tmp_path, space, settings, message
):
    journal = tmp_path / "j.jsonl"
    options = {"initial_design": 3, **FAST, **settings}
    with pytest.raises(ConfigurationError, match=message):
        BayesianOptimizer(space, journal=journal, **options)
    assert not journal.exists()


@pytest.mark.parametrize(
    "options",
    [
        {"budget": 3},
        {"max_seconds": -1},
        {"max_seconds": math.inf},
        {"progress": "no"},
        {"callback": "stop"},
        {"on_error": "oops"},
        {"executor": "pool"},
        {"max_parallel": 2},
    ],
)
def test_a_minimize_refused_for_its_run_options_leaves_nothing_on_disk(tmp_path, options):
    path = tmp_path / "run" / "j.jsonl"
    run = {"budget": 5, "initial_design": 5, "progress": False, **FAST}
    with pytest.raises(ConfigurationError):
        minimize(_objective, Sphere(2), journal=path, **{**run, **options})
    assert list(tmp_path.iterdir()) == []  # the corrected call finds no run there
    assert minimize(_objective, Sphere(2), journal=path, **run).num_evaluations == 5


def test_a_folder_given_as_the_journal_is_refused_without_a_stray_lock_file(tmp_path):
    (tmp_path / "runs").mkdir()
    with pytest.raises(JournalError, match="is a folder"):
        BayesianOptimizer(Sphere(2), journal=tmp_path / "runs", **FAST)
    assert [p.name for p in tmp_path.iterdir()] == ["runs"]


@pytest.mark.parametrize("content", [b"just some notes without newline", b"a,b\n1,2\n3,4"])
def test_a_file_that_is_not_a_journal_is_refused_untouched_with_or_without_resume(
    tmp_path, content
):
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    for resume in (False, True):
        with pytest.raises(JournalError, match="notes.txt is not a manibo journal"):
            minimize(_objective, Sphere(2), budget=6, journal=path, resume=resume, **FAST)
    with pytest.raises(JournalError, match="is not a manibo journal"):
        BayesianOptimizer.resume(path)
    assert path.read_bytes() == content
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]  # no lock, nothing moved aside


def _no_design_drawn(*args):
    raise AssertionError("the initial design was drawn")


def test_a_budget_below_the_initial_design_is_refused_before_the_design_is_drawn(monkeypatch):
    """minimize(budget=6, initial_design=10**9) drew 10**9 points (24 GB) before run() refused
    the budget: killed for memory, without a message."""
    monkeypatch.setattr(manibo.loop, "seeded_design", _no_design_drawn)
    for optimise in (minimize, maximize):
        with pytest.raises(ConfigurationError, match=r"`budget` \(6\).*\(1000000000\)"):
            optimise(_objective, Sphere(2), budget=6, initial_design=10**9, progress=False)


def test_a_budget_below_the_default_design_on_a_small_graph_says_how_to_run():
    """On 3 nodes, budget=3 was refused for the default design of 5, and budget=5 then for 5
    points of a 3-node graph: the first message now names the way out."""
    graph = _complete_graph(3)
    with pytest.raises(ConfigurationError, match=r"pass `initial_design=3` or fewer") as info:
        minimize(lambda x: float(x[0]), graph, budget=3, progress=False)
    assert "raise `budget`" in str(info.value)
    result = minimize(lambda x: float(x[0]), graph, budget=3, initial_design=3, progress=False)
    assert sorted(result.X[:, 0].tolist()) == [0.0, 1.0, 2.0]
    with pytest.raises(ConfigurationError, match=r"`budget` must be an integer >= 1, got 0"):
        minimize(lambda x: float(x[0]), graph, budget=0, initial_design=1, progress=False)


def test_a_batch_larger_than_the_budget_is_refused_before_any_evaluation(monkeypatch):
    """minimize(budget=8, q=20) evaluated 8 random points and returned without a word, and
    q=99999999999 ran out of memory building the acquisition."""
    monkeypatch.setattr(manibo.loop, "seeded_design", _no_design_drawn)
    for q in (20, 99999999999):
        refused = rf"`q` \({q}\) must be at most `budget` \(8\)"
        with pytest.raises(ConfigurationError, match=refused):
            minimize(_objective, Sphere(2), budget=8, q=q, progress=False)
    monkeypatch.undo()  # BayesianOptimizer draws its design when it is made
    opt = BayesianOptimizer(Sphere(2), q=20, initial_design=2, **FAST)
    with pytest.raises(ConfigurationError, match=r"pass `q` of 8 or fewer, or raise `budget`"):
        opt.run(_objective, budget=8, progress=False)
    assert not opt.history


def test_a_budget_that_ends_with_the_initial_design_warns_once_that_no_model_is_used():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        minimize(_objective, Sphere(2), budget=3, initial_design=3, progress=False, **FAST)
    said = [w for w in caught if "no surrogate model proposes points" in str(w.message)]
    assert len(said) == 1 and issubclass(said[0].category, manibo.exceptions.ManiboWarning)
    assert "the budget (3) does not exceed the initial design (3 random points)" in str(
        said[0].message
    )
    assert said[0].filename == __file__  # points at the call of minimize
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        minimize(_objective, Sphere(2), budget=4, initial_design=3, progress=False, **FAST)
    assert not [w for w in caught if "no surrogate model" in str(w.message)]


@pytest.mark.parametrize(
    "points",
    [
        Sphere(2).random(3, generator=0),
        Sphere(2).random(3, generator=0).numpy(),
        Sphere(2).random(3, generator=0).tolist(),
    ],
    ids=["tensor", "array", "list"],
)
def test_points_given_as_the_initial_design_say_how_to_tell_known_points(points):
    calls = [
        lambda: minimize(_objective, Sphere(2), budget=4, initial_design=points, progress=False),
        lambda: BayesianOptimizer(Sphere(2), initial_design=points),
    ]
    for call in calls:
        with pytest.raises(
            ConfigurationError, match=r"`initial_design` must be an integer"
        ) as info:
            call()
        message = str(info.value)
        assert re.search(
            r"got a (tensor|NumPy array) of shape \(3, 3\)|got a list of 3 entries", message
        )
        assert "opt.tell(X, Y)" in message and "before its first ask()" in message
        assert "pass them as `initial_points=X`" in message
        assert "tensor([[" not in message


def test_an_initial_design_too_large_for_memory_is_refused_naming_its_size(monkeypatch):
    monkeypatch.setattr(manibo.loop, "seeded_design", _no_design_drawn)
    monkeypatch.setattr(manibo.loop, "physical_memory_bytes", lambda: 16 * 10**9)
    message = r"`initial_design` \(1000000000\).*24,000,000,000 bytes.*lower `initial_design`"
    with pytest.raises(ConfigurationError, match=message):
        BayesianOptimizer(Sphere(2), initial_design=10**9)

    def out_of_memory(*args):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate")

    monkeypatch.setattr(manibo.loop, "physical_memory_bytes", lambda: None)  # no size known: try it
    monkeypatch.setattr(manibo.loop, "seeded_design", out_of_memory)
    with pytest.raises(ConfigurationError, match=r"`initial_design` \(10000\).*not be allocated"):
        BayesianOptimizer(Sphere(2), initial_design=10_000)


def test_on_error_base_exception_is_refused_instead_of_swallowing_ctrl_c(tmp_path):
    """on_error=BaseException recorded a KeyboardInterrupt of the objective as a failed
    evaluation, and the run went on."""
    calls = []

    def objective(x):
        calls.append(x)
        if len(calls) in (2, 3):
            raise KeyboardInterrupt
        return _objective(x)

    journal = tmp_path / "j.jsonl"
    with pytest.raises(ConfigurationError, match="BaseException.*Ctrl-C.*must stop the run"):
        minimize(objective, Sphere(2), budget=6, journal=journal, on_error=BaseException, **FAST)
    assert calls == [] and not journal.exists()


@pytest.mark.parametrize(
    "on_error", [KeyboardInterrupt, SystemExit, GeneratorExit, (ValueError, KeyboardInterrupt)]
)
def test_on_error_takes_only_subclasses_of_exception(on_error):
    def objective(x):
        raise RuntimeError("evaluated")

    opt = BayesianOptimizer(Sphere(2), **FAST)
    with pytest.raises(ConfigurationError, match="subclasses of Exception"):
        opt.run(objective, budget=6, on_error=on_error, progress=False)
    assert opt.history == []


def test_a_tilde_in_the_journal_path_is_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    with BayesianOptimizer(Sphere(2), journal="~/runs/j.jsonl", **FAST) as opt:
        opt.tell(opt.ask(), 1.0)
        assert opt.journal == tmp_path / "home" / "runs" / "j.jsonl"
    with BayesianOptimizer.resume("~/runs/j.jsonl") as opt:
        assert len(opt.history) == 1 and opt.result().journal == opt.journal
    assert list((tmp_path / "cwd").iterdir()) == []  # no folder named "~"


def test_minimize_and_maximize_refuse_the_other_direction_and_unknown_options():
    with pytest.raises(ConfigurationError, match=r"manibo\.maximize"):
        minimize(_objective, Sphere(2), budget=4, minimize=False)
    with pytest.raises(ConfigurationError, match=r"manibo\.minimize"):
        maximize(_objective, Sphere(2), budget=4, minimize=True)
    with pytest.raises(ConfigurationError, match="unknown option.*num_restart") as info:
        minimize(_objective, Sphere(2), budget=4, num_restart=2)
    assert "Did you mean `num_restarts`" in str(info.value)
    assert "initial_design" in str(info.value)  # the settings it takes are listed
    with pytest.raises(ConfigurationError, match=r"surrogate_options=\{\.\.\.\}"):
        minimize(_objective, Sphere(2), budget=4, nu=1.5)  # a surrogate's option, misplaced
    with pytest.raises(ConfigurationError) as info:
        minimize(_objective, Sphere(2), budget=4, max_levels=3)
    assert "Did you mean" not in str(info.value)  # not max_parallel: a surrogate's option


# ---------------------------------------------------------------- design and pending points
def test_a_budget_beyond_the_points_of_a_finite_space_is_refused_before_any_evaluation():
    calls = []
    opt = BayesianOptimizer(_complete_graph(6), initial_design=3, seed=0, **FAST)
    with pytest.raises(ConfigurationError, match=r"`budget` \(7\) exceeds the 6 points"):
        opt.run(lambda x: calls.append(x) or 1.0, budget=7, progress=False)
    assert calls == []


def test_a_first_batch_larger_than_the_design_on_a_finite_space_repeats_no_point():
    # 8 nodes, q = 4, 3 design points: the fourth point was drawn with repeats ([7, 0, 5, 7])
    for seed in range(6):
        opt = BayesianOptimizer(_complete_graph(8), initial_design=3, q=4, seed=seed, **FAST)
        nodes = [int(v) for v in opt.ask()[:, 0]]
        assert len(set(nodes)) == 4, nodes


def test_the_design_on_a_finite_space_has_no_repeated_point():
    for space, n in [(_complete_graph(6), 6), (Mesh.icosphere(0), 12)]:
        opt = BayesianOptimizer(space, initial_design=n, seed=0, **FAST)
        nodes = [int(opt.ask()[0, 0]) for _ in range(n)]
        assert sorted(nodes) == list(range(n))


def test_asked_points_not_yet_told_are_taken_on_a_finite_space_in_both_phases():
    # 6 asks before any tell handed out node 0 twice ([5, 4, 2, 3, 1, 0, 0, 3] in 8 asks), while
    # the model phase refused with "only 0 points ... are left to choose from, but q = 1"
    left = r"only 0 of its 6 points are left: {} are evaluated and {} asked and not yet told"
    advice = r"Tell the pending points .* or pass `exclude_evaluated=False`"
    design = BayesianOptimizer(_complete_graph(6), initial_design=5, seed=0, **FAST)
    nodes = [int(design.ask()[0, 0]) for _ in range(6)]
    assert sorted(nodes) == list(range(6))
    with pytest.raises(ConfigurationError, match=left.format(0, 6) + ".*" + advice):
        design.ask()
    model = BayesianOptimizer(_complete_graph(6), initial_design=2, seed=0, **FAST)
    for _ in range(2):
        x = model.ask()
        model.tell(x, [float(x[0, 0])])
    nodes = [int(model.ask()[0, 0]) for _ in range(4)]
    assert len(set(nodes)) == 4
    with pytest.raises(ConfigurationError, match=left.format(2, 4) + ".*" + advice):
        model.ask()
    repeats = BayesianOptimizer(_complete_graph(6), initial_design=5, exclude_evaluated=False)
    assert [repeats.ask().shape for _ in range(7)] == [(1, 1)] * 7
    # with every point told there is nothing pending to tell: the advice says so
    done = BayesianOptimizer(_complete_graph(4), initial_design=4, seed=0, **FAST)
    for _ in range(4):
        x = done.ask()
        done.tell(x, [float(x[0, 0])])
    with pytest.raises(ConfigurationError) as info:
        done.ask()
    message = str(info.value)
    assert "Every point is evaluated; pass `exclude_evaluated=False`" in message
    assert "Tell the pending points" not in message


def test_a_batch_that_straddles_the_end_of_the_initial_design_evaluates_all_of_it():
    # q = 3 and 4 design points: the second batch once went to the surrogate whole, and the
    # fourth design point was never evaluated
    serial = BayesianOptimizer(Sphere(2), initial_design=4, seed=3, **FAST)
    design = torch.cat([serial.ask() for _ in range(4)])
    batched = BayesianOptimizer(Sphere(2), initial_design=4, q=3, seed=3, **FAST)
    told = []
    for _ in range(2):
        batch = batched.ask()
        assert batch.shape == (3, 3)
        batched.tell(batch, [_objective(x) for x in batch])
        told.append(batch)
    told = torch.cat(told)
    assert torch.equal(told[:4], design)
    assert float(Sphere(2).distance(told[4:], design[3:4]).min()) > 1e-6  # then the surrogate


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "threads"])
def test_an_objective_that_changes_its_input_in_place_changes_only_its_own_copy(parallel):
    def scaling(x):
        value = _objective(x)
        x.mul_(2.0)  # in place: off the sphere if it were the loop's own tensor
        return value

    options = {"executor": ThreadPoolExecutor(2), "max_parallel": 2} if parallel else {}
    result = manibo.minimize(
        scaling, Sphere(2), budget=6, initial_design=3, seed=0, progress=False, **FAST, **options
    )
    assert result.X.shape == (6, 3)
    assert float((result.X.norm(dim=-1) - 1).abs().max()) < 1e-12
    expected = torch.tensor([_objective(x) for x in result.X], dtype=torch.float64)
    assert torch.allclose(result.Y.reshape(-1), expected)


def test_changing_an_asked_point_in_place_leaves_the_pending_point_alone():
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, **FAST)
    x = opt.ask()
    asked = x.clone()
    x.mul_(2.0)  # the caller's tensor, not the loop's
    assert torch.equal(opt.pending, asked)
    opt.tell(asked, [_objective(asked[0])])
    assert opt.pending is None


def test_a_told_point_rounded_by_the_user_clears_its_pending_entry():
    opt = BayesianOptimizer(Sphere(2), initial_design=4, seed=2, **FAST)
    design = [opt.ask() for _ in range(2)]
    rounded = design[0].round(decimals=6)
    assert not torch.equal(rounded, design[0])
    opt.tell(rounded, [_objective(rounded[0])])
    assert opt.pending.shape == (1, 3) and torch.equal(opt.pending, design[1])
    opt.tell(design[1], [1.0])
    assert opt.pending is None
    reference = BayesianOptimizer(Sphere(2), initial_design=4, seed=2, **FAST)
    expected = [reference.ask() for _ in range(3)][2]
    assert torch.equal(opt.ask(), expected)  # no design point skipped


def test_a_told_point_matches_its_asked_point_relative_to_the_width_of_a_box():
    # the tolerance was 1e-4 in raw units: on a box 1000 wide a point rounded to 0.01 (1e-5 of
    # the width) never cleared its entry; on a box 1e-4 wide a point never asked cleared one
    wide = BayesianOptimizer(Box([0.0], [1000.0]), initial_design=3, seed=0, **FAST)
    asked = wide.ask()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wide.tell(asked.round(decimals=2), [1.0])
    assert wide.pending is None
    narrow = BayesianOptimizer(Box([0.0], [1e-4]), initial_design=3, seed=0, **FAST)
    held = torch.cat([narrow.ask(), narrow.ask()])
    with pytest.warns(ManiboWarning, match=r"none of the 2 point\(s\) asked"):
        narrow.tell(torch.tensor([[0.0]], dtype=torch.float64), [1.0])  # never asked
    assert torch.equal(narrow.pending, held)
    space = ProductSpace(Sphere(2), Box([0.0], [1e-4]))  # a box factor of a product too
    product = BayesianOptimizer(space, initial_design=3, seed=0, **FAST)
    held = torch.cat([product.ask(), product.ask()])
    moved = held[1].clone()
    moved[3] = 0.0 if moved[3] > 5e-5 else 1e-4  # half the box's width away along the box
    with pytest.warns(ManiboWarning, match=r"none of the 2 point\(s\) asked"):
        product.tell(moved, [1.0])
    assert torch.equal(product.pending, held)


# ---------------------------------------------------------------- bad values told
def test_tell_refuses_what_is_not_a_finite_number(tmp_path):
    space = Sphere(2)
    opt = BayesianOptimizer(space, initial_design=2, **FAST)
    x = opt.ask()
    for bad in ("abc", None, {"y": 1.0}):
        with pytest.raises(InputDataError, match="real numbers"):
            opt.tell(x, bad)
    for bad, what in ((True, "booleans"), (1 + 2j, "complex"), (torch.tensor([1 + 0j]), "complex")):
        with pytest.raises(InputDataError, match=f"real numbers.*{what}"):  # once 1.0 and 1.0
            opt.tell(x, bad)
    with pytest.raises(InputDataError, match="tell_failure"):
        opt.tell(x, [float("nan")])
    with pytest.raises(InputDataError, match="norms must be 1"):
        opt.tell(2 * x, [1.0])
    with pytest.raises(InputDataError, match="one value per point") as refused:
        opt.tell(x, [1.0, 2.0])
    # two values for one point: the message says what to use for several outcomes
    message = str(refused.value)
    assert "build_surrogate" in message and "optimize_acqf_on_space" in message
    with pytest.raises(InputDataError, match=r"\(\*batch, 3\)"):
        opt.tell(torch.ones(1, 4, dtype=torch.float64), [1.0])
    assert opt.history == []
    with pytest.raises(ConfigurationError, match="initial design"):
        opt.run(_objective, budget=1)
    with pytest.raises(ConfigurationError, match="unknown surrogate"):
        BayesianOptimizer(space, surrogate="nope")
    with pytest.raises(ConfigurationError, match="unknown acquisition"):
        BayesianOptimizer(space, acquisition="nope")
    opt.tell(x, 10**20)  # an integer beyond int64 is a real number
    assert opt.history[-1].y == 1e20


def test_tell_failure_takes_one_message_per_point_or_none(tmp_path):
    """tell_failure(X[:2], ["a", "b"]) recorded "list: ['a', 'b']" for both points, and
    tell_failure(x, None) recorded "NoneType: None"."""
    path = tmp_path / "j.jsonl"
    opt = BayesianOptimizer(Sphere(2), initial_design=6, seed=0, journal=path, **FAST)
    X = opt.ask(5)
    opt.tell_failure(X[:2], ["a", ValueError("b")])
    opt.tell_failure(X[2], None)
    assert [e.error for e in opt.history] == ["a", "ValueError: b", "failed (no message given)"]
    opt.tell_failure(X[3:4])  # no message at all
    opt.tell_failure(X[4], ("only one",))
    messages = ["a", "ValueError: b", *["failed (no message given)"] * 2, "only one"]
    assert [e.error for e in opt.history] == messages
    for bad, message in (
        (["a"], "1 messages for 2 points"),
        (["a", "b", "c"], "3 messages for 2 points"),
        (42, "`error` must be a message.*int 42"),
        (["a", 3.5], "`error` must be a message.*float 3.5"),
    ):
        with pytest.raises(InputDataError, match=message):
            opt.tell_failure(X[:2], bad)
    assert len(opt.history) == 5
    opt.close()
    assert [e.error for e in Journal(path).read()[1]] == messages


def test_tell_records_a_float32_point_as_its_float64_value():
    """The loop works in float64 (as its journal): a told float32 point is converted, as one on
    another device is, and clears the pending point it rounds."""
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, **FAST)
    x = opt.ask()
    opt.tell(x.to(torch.float32), 1.0)
    assert opt.pending is None
    assert opt.history[0].x == x.to(torch.float32).double().reshape(-1).tolist()
    assert opt.result().X.dtype == torch.float64


def test_tell_and_tell_failure_take_numpy_points_as_they_take_numpy_values():
    # a NumPy X was refused ("X must be a torch.Tensor, got ndarray") while a NumPy Y was taken
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, **FAST)
    asked = opt.ask()
    numpy_point = asked.numpy()[0]
    numpy_point.setflags(write=False)  # read-only arrays too, without a warning from torch
    opt.tell(numpy_point, np.float64(0.3))
    failed = opt.ask()
    opt.tell_failure(failed.numpy().astype(np.float32), "crashed")
    assert [e.x for e in opt.history] == [asked[0].tolist(), failed.float().double()[0].tolist()]
    assert opt.pending is None  # both cleared their asked points
    for bad, message in (
        (np.array([["a", "b", "c"]]), "NumPy array of dtype <U1"),
        (np.array([[1, 0, 0]]), "NumPy array of dtype int64. Convert it with X.astype"),
        ([[0.0, 0.0, 1.0]], "torch.Tensor or a NumPy array, got list"),
    ):
        with pytest.raises(InputDataError, match=re.escape(message)):
            opt.tell(bad, 1.0)
        with pytest.raises(InputDataError, match=re.escape(message)):
            opt.tell_failure(bad)
    assert len(opt.history) == 2


def test_telling_a_matrix_point_says_how_to_flatten_it():
    # the advice was "Stack points along the leading dimensions", which a (2, 2) matrix of
    # SPD(2) already is not: its points are flattened row-major
    opt = BayesianOptimizer(SymmetricPositiveDefinite(2), initial_design=3, seed=0, **FAST)
    matrix = torch.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=torch.float64)
    with pytest.raises(InputDataError, match=re.escape("`X.reshape(*X.shape[:-2], 4)`")):
        opt.tell(matrix, 1.0)
    opt.tell(matrix.reshape(4), 1.0)  # as the message says, for one matrix
    assert opt.history[0].x == [2.0, 0.5, 0.5, 1.0]
    # on a space whose points are not matrices the advice stays general: reshaping two points
    # of a plane into one (2, 2) would be wrong
    box = BayesianOptimizer(Box([0.0] * 4, [1.0] * 4), initial_design=3, seed=0, **FAST)
    with pytest.raises(InputDataError, match="Stack points along the leading dimensions"):
        box.tell(torch.rand(2, 2, dtype=torch.float64), 1.0)


def test_asking_more_points_than_q_is_refused_where_the_batch_cannot_be_proposed():
    """``ask(n)`` with ``n > q``: 'qmes' with the projection optimiser reached BoTorch's bare
    AssertionError ("Expected X to be batch_shape x q=1 x d")."""
    opt = BayesianOptimizer(
        Sphere(2), surrogate="euclidean", acquisition="qmes", optimizer="projection",
        initial_design=3, seed=0, **FAST,
    )  # fmt: skip
    with pytest.raises(ConfigurationError, match="'qmes' chooses q = 2 points one at a time"):
        opt.ask(2)
    with pytest.raises(ConfigurationError, match="analytic acquisition 'logei' needs q = 1"):
        BayesianOptimizer(Sphere(2), acquisition="logei", initial_design=3, **FAST).ask(2)


def test_tell_checks_seconds_before_recording_and_takes_numpy_and_torch_scalars(tmp_path):
    path = tmp_path / "j.jsonl"
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, journal=path, **FAST)
    x = opt.ask()
    for bad in ("a", -5.0, 1j, math.inf, True, torch.ones(2)):
        with pytest.raises(InputDataError, match="`seconds` must be a finite number"):
            opt.tell(x, 0.3, seconds=bad)
        with pytest.raises(InputDataError, match="`seconds` must be a finite number"):
            opt.tell_failure(x, "boom", seconds=bad)
    assert opt.history == []
    # a NumPy scalar or a 0-d tensor is a number of seconds (once a TypeError of the JSON writer
    # that every later write repeated: the evaluation never reached the journal)
    opt.tell(x, 0.3, seconds=np.float32(0.5))
    opt.tell(opt.ask(), 0.4, seconds=torch.tensor(0.25, requires_grad=True))
    opt.tell_failure(opt.ask(), "boom", seconds=np.array(2))
    assert [e.seconds for e in opt.history] == [0.5, 0.25, 2.0]
    assert all(type(e.seconds) is float for e in opt.history)
    opt.close()
    with BayesianOptimizer.resume(path) as resumed:
        assert [e.seconds for e in resumed.history] == [0.5, 0.25, 2.0]


@functools.cache
def _proposal_after_scaled_outcomes(factor):
    opt = BayesianOptimizer(Sphere(2), initial_design=4, seed=0, **FAST)
    for _ in range(6):
        x = opt.ask()
        opt.tell(x, [factor * _objective(x[0])])
    return opt.ask()[0]


@pytest.mark.parametrize("scale", [1e300, 1e-300, 2.0**-40])
def test_huge_and_tiny_outcomes_give_the_proposals_of_ordinary_ones(scale):
    """At ``2**-40`` the outcomes are of ordinary magnitude for float64 but their spread (about
    1e-12) is below what BoTorch's ``Standardize`` rescales (1e-8)."""
    ordinary = _proposal_after_scaled_outcomes(1.0)  # computed once for both scales
    assert torch.allclose(ordinary, _proposal_after_scaled_outcomes(scale), atol=1e-8)


def test_values_equal_to_their_last_bits_are_modelled_about_their_own_level():
    """sin(|x|^2) on the sphere is sin(1) up to its last bits: scaled by a power of two alone,
    the model's outcomes were 1.9e15 +- 0.5, and qMES at q = 2 stopped with BoTorch's
    "probability tensor contains either inf, nan or element < 0"."""

    def nearly_constant(x):
        return float((x**2).sum().sin())

    result = minimize(
        nearly_constant, Sphere(2), budget=8, q=2, acquisition="qmes", seed=0, progress=False
    )
    assert result.num_evaluations == 8 and result.num_failed == 0
    assert abs(result.recommended_value - math.sin(1.0)) < 1e-15
    outcomes = result.model.outcome_transform.untransform(result.model.train_targets[:, None])[0]
    assert outcomes.abs().max() < 64  # a few units of the last place, brought near 1


# ---------------------------------------------------------------- warnings
def test_warnings_of_the_proposals_come_once_at_the_end_as_one_summary(capsys, isolated_surrogates):
    @register_surrogate("test-loop-warns")
    def _warning_surrogate(space, train_X, train_Y, **options):
        """The exact GP, after the warnings BoTorch and GPyTorch give on a hard fit."""
        for _ in range(3):
            warnings.warn("A not p.d., added jitter of 1.0e-05", NumericalWarning, stacklevel=2)
        # small jitter, drawn near an optimum by the default qLogNEI, is not summarised: the
        # quickstart example ended on a warning against the default (71 of them in 35 proposals)
        warnings.warn("A not p.d., added jitter of 1.0e-08", NumericalWarning, stacklevel=2)
        warnings.warn("`scipy_minimize` terminated with FAILURE", OptimizationWarning, stacklevel=2)
        return build_surrogate("matern", space, train_X, train_Y, **options)

    opt = BayesianOptimizer(
        Sphere(2), surrogate="test-loop-warns", initial_design=3, seed=0, **FAST
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt.run(_objective, budget=5)
    assert [w.category for w in caught] == [ProposalWarningSummary]
    summary = str(caught[0].message)
    assert summary.startswith("while proposing 2 point(s), BoTorch and GPyTorch warned 8 time")
    assert "6 × added jitter" in summary and "2 × OptimizationWarning" in summary
    advice = [line for line in summary.splitlines() if line.startswith("    ")]
    named = set(re.findall(r"`(\w+)`", "\n".join(advice)))
    assert named == {"num_restarts", "raw_samples", "acquisition"}  # the advice names options
    BayesianOptimizer(Sphere(2), num_restarts=4, raw_samples=64, acquisition="qlogei")
    err = capsys.readouterr().err
    assert "5/5" in err and "jitter" not in err  # nothing printed into the progress bar

    def buggy(x):
        if len(opt.history) == 6:
            raise NameError("bug after a proposal")
        return _objective(x)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the summary becomes an error: it must not hide the bug
        with pytest.raises(NameError, match="bug after a proposal"):
            opt.run(buggy, budget=8, progress=False)


def test_the_jitter_advice_holds_for_evaluations_clustered_near_an_optimum():
    """The summary's advice on added jitter says why and what to do: on a noise-free objective,
    evaluations clustered near the optimum make qLogNEI's joint draws of their values singular to
    rounding, and qLogEI, which the advice names, needs no jitter there."""
    space, centre = Sphere(2), torch.tensor([[0.0, 0.6, 0.8]], dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)

    def near(n: int, radius: float) -> torch.Tensor:
        steps = torch.randn(n, 3, generator=gen, dtype=torch.float64)
        return space.retract(centre.expand(n, 3), radius * space.to_tangent(centre, steps))

    X = torch.cat([space.random(10, generator=1), near(14, 0.02)])  # 14 within ~0.04 rad
    Y = -((X - centre) ** 2).sum(-1, keepdim=True)  # noise-free, maximised at the centre
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizationWarning)
        model = build_surrogate("matern", space, X, Y)
    candidates = near(20, 0.01).unsqueeze(1)
    jitter = {}
    for name in ("qlognei", "qlogei"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            acquisition = build_acquisition(name, model, X, Y, None, 0)
            for x in candidates:
                acquisition(x[None])
        jitter[name] = sum("added jitter" in str(w.message) for w in caught)
    assert jitter["qlognei"] >= 10 and jitter["qlogei"] == 0, jitter
    summary = ProposalWarnings()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("A not p.d., added jitter of 1.0e-05", NumericalWarning, stacklevel=1)
    summary.add(caught)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary.report(stacklevel=1)
    (advice,) = [line for line in str(caught[0].message).splitlines() if line.startswith("    ")]
    assert "near an optimum" in advice and "`acquisition`='qlogei'" in advice
    # once per optimiser: ask/tell reported it after nearly every proposal (175 of 200)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            warnings.warn("A not p.d., added jitter of 1.0e-04", NumericalWarning, stacklevel=1)
        warnings.warn("the line search failed", OptimizationWarning, stacklevel=1)
    summary.add(caught)
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        summary.report(stacklevel=1)
    (line,) = str(again[0].message).splitlines()[:1]
    assert "warned 1 time(s): 1 × OptimizationWarning (warnings of" in line, line
    assert "not summarised again" in line


def test_a_second_run_at_once_on_one_optimiser_is_refused_before_it_evaluates():
    # two threads calling run(budget=8) on one optimiser made 9 evaluations: each counted only
    # its own evaluation in flight (3 of 3 seeds)
    opt = BayesianOptimizer(Sphere(2), initial_design=2, seed=0, **FAST)
    started, release = threading.Event(), threading.Event()
    calls = []

    def slow(x):
        calls.append(threading.current_thread().name)
        started.set()
        release.wait(30)
        return float(x[0])

    def first():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ManiboWarning)  # a budget within the initial design
            opt.run(slow, budget=2, progress=False)

    thread = threading.Thread(target=first, name="first")
    thread.start()
    try:
        assert started.wait(30)
        with pytest.raises(ConfigurationError, match="already running on this optimiser"):
            opt.run(slow, budget=2, progress=False)
    finally:
        release.set()
        thread.join(30)
    assert calls == ["first", "first"] and len(opt.history) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ManiboWarning)
        opt.run(slow, budget=3, progress=False)  # one after the other: fine
    assert len(opt.history) == 3
    # a copy taken in a callback (a checkpoint) is not running: it may run (it was refused)
    copies = []
    opt.run(slow, budget=4, progress=False, callback=lambda o, e: copies.append(pickle.dumps(o)))
    copy = pickle.loads(copies[-1])
    assert len(copy.run(slow, budget=5, progress=False).X) == 5

    def again(o, e):  # from its own callback: refused before anything is evaluated
        o.run(slow, budget=9, progress=False)

    with pytest.raises(ConfigurationError, match="called from the running one's objective"):
        opt.run(slow, budget=5, progress=False, callback=again)
    assert len(opt.history) == 5


def test_a_truncation_is_reported_at_the_third_truncated_proposal_or_at_the_end_of_a_run():
    # the tutorial's `manibo run ... --space 'sphere2*circle'` warned that 1003 levels were
    # needed, from the fit on the 5 points of the initial design (lengthscale 0.37); from the
    # 7th point on the fitted lengthscale was 1.7 to 3.1 and no fit was truncated
    from manibo._proposal_warnings import TRUNCATED_PROPOSALS, ProposalWarnings

    assert TRUNCATED_PROPOSALS == 3

    def proposal(*messages):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for message in messages:
                warnings.warn(message, TruncationWarning, stacklevel=1)
        return caught

    def reported(gathered, final):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gathered.report(stacklevel=1, final=final)
        return [str(w.message) for w in caught]

    transient = ProposalWarnings()
    for caught in (proposal("at 0.37"), proposal("at 0.84"), proposal()):
        transient.add(caught)
        assert reported(transient, final=False) == []
    assert reported(transient, final=True) == []  # the run ended untruncated: nothing to say
    lasting = ProposalWarnings()
    for caught in (proposal("at 0.3"), proposal("at 0.2")):
        lasting.add(caught)
        assert reported(lasting, final=False) == []
    lasting.add(proposal("at 0.25", "at 0.1"))
    assert reported(lasting, final=False) == ["at 0.1"]  # the latest, once per optimiser
    lasting.add(proposal("at 0.05"))
    assert reported(lasting, final=True) == []
    ending = ProposalWarnings()
    ending.add(proposal("at 0.3"))
    assert reported(ending, final=True) == ["at 0.3"]  # the last proposal of a run, or one fit
    flickering = ProposalWarnings()  # a lengthscale at the threshold: not in a row, still said
    for caught in (proposal("at 0.3"), proposal(), proposal("at 0.31"), proposal()):
        flickering.add(caught)
        assert reported(flickering, final=False) == []
    flickering.add(proposal("at 0.29"))
    assert reported(flickering, final=False) == ["at 0.29"]
    # ask/tell: at the third truncated proposal
    opt = BayesianOptimizer(
        Sphere(2), initial_design=3, seed=0, surrogate_options={"max_levels": 3}, **FAST
    )
    seen = []
    for _ in range(6):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x = opt.ask()
        seen.append(sum(issubclass(w.category, TruncationWarning) for w in caught))
        opt.tell(x, float(torch.cos(3 * x).sum()))
    assert seen == [0, 0, 0, 0, 0, 1]  # 3 points of the design, then proposals 1-3


def test_the_truncation_warning_names_options_that_the_surrogate_takes():
    # a sphere: on a torus the kernel sums periodic images where the level cap would bind
    opt = BayesianOptimizer(
        Sphere(2), initial_design=3, seed=0, surrogate_options={"max_levels": 3}, **FAST
    )
    with pytest.warns(TruncationWarning) as caught:
        opt.run(lambda x: float(torch.cos(3 * x).sum()), budget=5, progress=False)
    assert len(caught) == 1  # once per run, not once per proposal
    assert caught[0].filename == __file__  # where the user called, not inside manibo
    with pytest.warns(TruncationWarning) as caught:
        minimize(
            lambda x: float(torch.cos(3 * x).sum()),
            Sphere(2),
            budget=4,
            initial_design=3,
            surrogate_options={"max_levels": 3},
            progress=False,
            **FAST,
        )
    assert [w.filename for w in caught] == [__file__]
    named = set(re.findall(r"`(\w+)`", str(caught[0].message))) - {"max_levels"}
    assert named == {"nu"}
    for option, value in (("max_levels", 50), ("nu", 1.5)):
        BayesianOptimizer(Torus(2), surrogate_options={option: value}, **FAST)


# ---------------------------------------------------------------- other behaviours
def test_the_previous_surrogate_is_offered_to_factories_that_take_it(isolated_surrogates):
    """Each proposal's factory gets the surrogate built for the proposal before (None first);
    the built-in factories, which do not take the argument, run as before (the other tests)."""
    _OFFERED, _BUILT = [], []

    @register_surrogate("test-loop-previous")
    def _recording_surrogate(space, train_X, train_Y, previous_model=None, **options):
        """A surrogate factory that takes ``previous_model``: records what the loop offered."""
        _OFFERED.append(previous_model)
        _BUILT.append(build_surrogate("matern", space, train_X, train_Y, **options))
        return _BUILT[-1]

    opt = BayesianOptimizer(
        Sphere(2), surrogate="test-loop-previous", initial_design=3, seed=0, **FAST
    )
    _OFFERED.clear()  # the constructor's trial build is not a proposal
    _BUILT.clear()
    opt.run(_objective, budget=6, progress=False)
    assert len(_BUILT) == 3 and _OFFERED[0] is None
    assert all(offered is built for offered, built in zip(_OFFERED[1:], _BUILT, strict=False))


def test_seeded_runs_are_reproducible():
    runs = [BayesianOptimizer(Sphere(2), initial_design=3, seed=7, **FAST) for _ in range(2)]
    for opt in runs:
        opt.run(_objective, budget=6, progress=False)
    assert [e.x for e in runs[0].history] == [e.x for e in runs[1].history]


def test_parallel_run_with_an_executor_keeps_pending_points(tmp_path):
    opt = BayesianOptimizer(
        Sphere(2), initial_design=2, seed=0, journal=tmp_path / "p.jsonl", **FAST
    )
    with ThreadPoolExecutor(max_workers=2) as pool:
        opt.run(_objective, budget=6, executor=pool, max_parallel=2, progress=False)
    assert len(opt.history) == 6 and opt.pending is None
    xs = torch.tensor([e.x for e in opt.history])
    assert torch.cdist(xs, xs).add(torch.eye(6)).min() > 1e-6  # pending points were not re-proposed


def test_process_pool_and_dask_executors_evaluate_in_parallel(tmp_path):
    from manibo.problems import make_problem

    problem = make_problem("ackley-sphere2")  # picklable: evaluated in other processes
    spawn = multiprocessing.get_context("spawn")
    opt = BayesianOptimizer(problem.space, initial_design=3, seed=0, **FAST)
    with ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
        opt.run(problem, budget=5, executor=pool, max_parallel=2, progress=False)
    assert [e.status for e in opt.history] == ["ok"] * 5
    for e in opt.history:  # the values came back from the workers intact
        x = torch.tensor(e.x, dtype=torch.float64)
        assert e.y == pytest.approx(float(problem.evaluate_true(x)), abs=1e-12)

    distributed = pytest.importorskip("distributed")
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2) as client:
        opt = BayesianOptimizer(problem.space, initial_design=2, seed=1, **FAST)
        opt.run(problem, budget=4, executor=client.get_executor(), max_parallel=2, progress=False)
    assert len(opt.history) == 4 and opt.pending is None


def test_device_option():
    opt = BayesianOptimizer(Sphere(2), initial_design=2, device="cpu", **FAST)
    assert opt.ask().device.type == "cpu"
    with pytest.raises(ConfigurationError, match="torch device"):
        BayesianOptimizer(Sphere(2), device="gpu-please")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigurationError, match="no CUDA device"):
            BayesianOptimizer(Sphere(2), device="cuda")
        with pytest.raises(ConfigurationError, match=r"`device` is 'cuda:7' but torch sees no"):
            BayesianOptimizer(Sphere(2), device="cuda:7")  # the index was dropped


def test_q_batches_and_minimize_maximize_helpers():
    opt = BayesianOptimizer(Sphere(2), q=2, initial_design=2, seed=0, acquisition="qlogei", **FAST)
    opt.run(_objective, budget=6, progress=False)
    assert len(opt.history) == 6
    _, low = minimize(_objective, Sphere(2), budget=4, initial_design=3, progress=False, **FAST)
    _, high = maximize(_objective, Sphere(2), budget=4, initial_design=3, progress=False, **FAST)
    assert low < high


def test_minimize_passes_executor_callback_and_wall_time_budget_to_the_run():
    told = []

    def count(optimizer, evaluation):
        told.append(evaluation.index)
        return len(told) == 4

    with ThreadPoolExecutor(max_workers=2) as pool:
        result = minimize(
            _sleepy(0.01), Sphere(2), budget=12, initial_design=12, executor=pool,
            max_parallel=2, callback=count, max_seconds=600, progress=False,
        )  # fmt: skip
    # the fourth told evaluation stops new submissions; the one still in flight is told
    assert result.stop_reason == "callback" and result.num_evaluations == len(told) in (4, 5)
    result = maximize(
        _sleepy(0.05), Sphere(2), budget=12, initial_design=12, max_seconds=0.12, progress=False
    )
    assert result.stop_reason == "max_seconds" and result.num_evaluations < 12


# ---------------------------------------------------------------- the journal under faults
def test_telling_a_closed_optimiser_says_to_resume_its_journal(tmp_path):
    """The message said "Nothing is lost: they are in memory and are written by the next `ask`,
    `tell`, `run` or `flush()`", but a closed optimiser never writes again."""
    path = tmp_path / "j.jsonl"
    with BayesianOptimizer(Sphere(2), initial_design=3, seed=0, journal=path, **FAST) as opt:
        x = opt.ask()
    with pytest.raises(JournalWriteError) as info:
        opt.tell(x, [0.25])
    message = str(info.value)
    assert "this optimiser was closed" in message and "BayesianOptimizer.resume" in message
    assert "Nothing is lost" not in message and "y = 0.25" in message
    assert [e.y for e in info.value.evaluations] == [0.25]


def _fail_fsync(fd):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_journal_write_loses_nothing_and_says_what_was_not_written(tmp_path, monkeypatch):
    path = tmp_path / "j.jsonl"
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, journal=path, **FAST)
    x = opt.ask()
    monkeypatch.setattr(manibo.journal.os, "fsync", _fail_fsync)  # the disk is full
    with pytest.raises(Exception) as info:  # noqa: B017  (its type is checked below)
        opt.tell(x, [0.25])
    assert [e.y for e in opt.history] == [0.25] and opt.pending is None  # kept in memory
    assert isinstance(info.value, JournalWriteError)
    assert [e.y for e in info.value.evaluations] == [0.25]
    message = str(info.value)
    assert "No space left" in message and "y = 0.25" in message and repr(float(x[0, 0])) in message
    with pytest.raises(JournalWriteError, match="1 evaluation.* and 1 asked point") as info:
        opt.ask()  # a batch is handed out only once it is in the journal
    assert [e.y for e in info.value.evaluations] == [0.25]
    waiting = opt.pending  # its point waits in memory
    assert waiting.shape == (1, 3)
    with pytest.raises(JournalWriteError, match="1 evaluation"):  # run writes them first
        opt.run(_objective, budget=3, progress=False)
    assert [e.y for e in opt.history] == [0.25]
    monkeypatch.undo()  # room again: the next write catches up, in order
    assert torch.equal(opt.ask(), waiting)
    opt.run(_objective, budget=4, progress=False)  # the handed-out point is evaluated elsewhere
    opt.tell(waiting, [0.5])
    contents = Journal(path).read_all()
    assert [e.index for e in contents.evaluations] == [0, 1, 2, 3, 4]
    assert [e.x for e in contents.evaluations] == [e.x for e in opt.history]
    # each batch follows the evaluations told before it was asked
    assert [a.evaluations for a in contents.asked] == [0, 1, 1, 2, 3]
    assert sorted(a.points[0] for a in contents.asked) == sorted(e.x for e in opt.history)


def test_a_full_disk_in_minimize_says_how_to_keep_what_the_closed_optimiser_held(
    tmp_path, monkeypatch
):
    """minimize closes its optimiser on the way out, yet the error said "Nothing is lost: they
    are in memory and are written by the next ask, tell, run or flush()" with the point cut
    short ("…"): the script ended there, and the resumed call evaluated index 2 again."""
    path = tmp_path / "j.jsonl"
    calls = []

    def fills_the_disk(x):
        calls.append(x)
        if len(calls) == 3:
            monkeypatch.setattr(manibo.journal.os, "write", _full)
        return _objective(x)

    with pytest.raises(JournalWriteError) as info:
        minimize(fills_the_disk, Sphere(2), budget=6, initial_design=6, seed=0, journal=path)
    message = str(info.value)
    assert "Nothing is lost" not in message and "No space left" in message
    assert "call minimize(..., resume=True) with the same arguments" in message
    assert [e.index for e in info.value.evaluations] == [2]
    assert message.splitlines()[1:] == info.value.lines  # each line in full, nothing cut
    assert json.loads(info.value.lines[0])["x"] == info.value.evaluations[0].x
    assert len(Journal(path).read()[1]) == 2
    monkeypatch.undo()  # room again: the user appends the lines and resumes
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in info.value.lines))
    result = minimize(
        fills_the_disk, Sphere(2), budget=6, initial_design=6, seed=0, journal=path, resume=True
    )
    assert len(calls) == 6 and result.num_evaluations == 6  # index 2 was not evaluated again


def _full(fd, data):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_an_unwritable_journal_is_refused_before_any_evaluation(tmp_path, monkeypatch):
    real_open = manibo.journal.os.open

    def read_only(path, flags, *args):
        if str(path).endswith("j.jsonl"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(manibo.journal.os, "open", read_only)
    with pytest.raises(ManiboError, match="Permission denied.*writable path"):
        BayesianOptimizer(Sphere(2), journal=tmp_path / "j.jsonl", **FAST)


def test_a_relative_journal_path_holds_when_the_objective_changes_folder(tmp_path, monkeypatch):
    # the writer checked `os.stat("res/j.jsonl")` in the objective's new folder: "deleted or
    # replaced", and the CLI's default --out is relative
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def wanders(x):
        os.chdir(elsewhere)
        return float(x[0])

    with BayesianOptimizer(Sphere(2), initial_design=3, journal="res/j.jsonl", **FAST) as opt:
        opt.run(wanders, budget=3, progress=False)
    assert len(Journal(tmp_path / "res" / "j.jsonl").read()[1]) == 3


def test_a_journal_deleted_during_the_run_is_not_recreated_without_its_header(tmp_path):
    path = tmp_path / "j.jsonl"
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, journal=path, **FAST)
    opt.run(_objective, budget=3, progress=False)
    path.unlink()
    with pytest.raises(JournalWriteError, match="1 asked point.*deleted or replaced") as refused:
        opt.ask()  # the batch is not handed out: it waits in memory
    assert "handed out by the next" not in str(refused.value)  # no later ask can write it
    # the advice was to wait until the journal "can be written", which it never can again
    with pytest.raises(JournalWriteError, match="deleted or replaced.*new optimiser with a new"):
        opt.tell(opt.pending, [1.0])
    assert not path.exists() and len(opt.history) == 4


def _journal_of_a_run(path, budget=3):
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, journal=path, **FAST)
    opt.run(_objective, budget=budget, progress=False)
    del opt  # releases the journal
    return path


def test_resume_checks_the_format_version_and_the_indices(tmp_path):
    path = _journal_of_a_run(tmp_path / "j.jsonl")
    lines = [line for line in path.read_text().splitlines() if '"asked"' not in line]
    header = json.loads(lines[0])
    path.write_text("\n".join([json.dumps({**header, "version": 99}), *lines[1:]]) + "\n")
    with pytest.raises(JournalError, match="format version 99"):
        BayesianOptimizer.resume(path)
    path.write_text("\n".join([lines[0], lines[1], lines[2], lines[2]]) + "\n")
    with pytest.raises(JournalError, match="line 4 is malformed: index 1 appears a second time"):
        BayesianOptimizer.resume(path)
    broken = json.loads(lines[2])
    del broken["x"]
    path.write_text("\n".join([lines[0], lines[1], json.dumps(broken)]) + "\n")
    with pytest.raises(JournalError, match="line 3 is malformed: missing field 'x'"):
        BayesianOptimizer.resume(path)


def test_a_stop_that_cannot_be_journaled_warns_in_whole_sentences(tmp_path, monkeypatch):
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, journal=tmp_path / "j", **FAST)

    def refuse(stop):
        raise JournalError("journal j is already being written under another name.")

    monkeypatch.setattr(opt._writer, "append_stop", refuse)
    with pytest.warns(JournalWarning, match=r"another name\. Every evaluation is in it\.$"):
        opt.run(_objective, budget=3, progress=False)


def test_a_cut_off_last_line_is_moved_aside_by_the_writer_never_over_an_earlier_one(tmp_path):
    path = _journal_of_a_run(tmp_path / "j.jsonl")
    tails = ['{"type": "evaluation", "x": [0.0, 0.', '{"type": "evaluation", "x": [1']
    for count, tail in enumerate(tails, start=4):
        with open(path, "a") as f:
            f.write(tail)  # a crash in the middle of a write
        with pytest.warns(JournalWarning):
            resumed = BayesianOptimizer.resume(path)
        assert len(resumed.history) == count - 1
        resumed.run(_objective, budget=count, progress=False)  # appending after the repair
        del resumed
    assert (tmp_path / "j.jsonl.corrupt").read_text() == tails[0]
    assert (tmp_path / "j.jsonl.corrupt.1").read_text() == tails[1]
    assert len(BayesianOptimizer.resume(path).history) == 5


class _Anonymous(Sphere):
    """A space without its own ``repr`` (the default one holds a memory address)."""

    __repr__ = object.__repr__


def test_resume_recognises_the_space_by_its_content(tmp_path):
    cycle = torch.zeros(6, 6, dtype=torch.float64)
    for i in range(6):
        cycle[i, (i + 1) % 6] = cycle[(i + 1) % 6, i] = 1.0
    two_triangles = torch.zeros(6, 6, dtype=torch.float64)
    for a, b in [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)]:
        two_triangles[a, b] = two_triangles[b, a] = 1.0
    assert repr(Graph(cycle)) == repr(Graph(two_triangles))  # same counts
    path = tmp_path / "g.jsonl"
    opt = BayesianOptimizer(Graph(cycle), initial_design=3, seed=0, journal=path, **FAST)
    opt.run(lambda x: float(x[0]), budget=3, progress=False)
    del opt
    with pytest.raises(ConfigurationError, match="space: .*same description, other content"):
        BayesianOptimizer.resume(path, space=Graph(two_triangles))
    assert len(BayesianOptimizer.resume(path, space=Graph(cycle.clone())).history) == 3

    path = tmp_path / "anonymous.jsonl"
    opt = BayesianOptimizer(_Anonymous(2), initial_design=3, seed=0, journal=path, **FAST)
    opt.run(_objective, budget=3, progress=False)
    del opt
    assert len(BayesianOptimizer.resume(path, space=_Anonymous(2)).history) == 3


def test_a_resume_with_other_settings_is_refused_with_the_differences(tmp_path):
    path = _journal_of_a_run(tmp_path / "j.jsonl")
    with pytest.raises(ConfigurationError, match=r"q: 1 in the journal, 2 now; seed: 0 .*, 4 now"):
        BayesianOptimizer.resume(path, q=2, seed=4)
    with pytest.raises(ConfigurationError, match=r"surrogate_options\.nu: \(not set\).*1\.5 now"):
        BayesianOptimizer(
            Sphere(2), initial_design=3, journal=path, resume=True, surrogate_options={"nu": 1.5}
        )
    with pytest.raises(JournalError, match="already holds a run"):
        BayesianOptimizer(Sphere(2), initial_design=3, journal=path, **FAST)
    same = BayesianOptimizer(Sphere(2), initial_design=3, journal=path, resume=True, **FAST)
    assert len(same.history) == 3
    with pytest.raises(JournalLockedError, match="this process"):
        BayesianOptimizer.resume(path)
    same.close()
    assert len(BayesianOptimizer.resume(path).history) == 3


# ---------------------------------------------------------------- real processes
RUN = """
import json, os, time, torch
from pathlib import Path
from manibo.loop import BayesianOptimizer
from manibo.spaces import Sphere
path, told_log, budget, options, hold = args[:5]  # hold: None, or a file to wait for
opt = BayesianOptimizer(Sphere(2), journal=path, resume=True, **options)
log = os.open(told_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
while len(opt.history) < budget:
    x = opt.ask()
    opt.tell(x, [float(x[0, 2] + 0.3 * x[0, 0] ** 2)])
    os.write(log, (json.dumps(len(opt.history) - 1) + "\\n").encode())
    waited = time.monotonic()
    while hold is not None and not os.path.exists(hold):  # the test says when to go on
        assert time.monotonic() < waited + 300, "never told to go on"
        time.sleep(0.01)
"""

#: Run before RUN: the process SIGKILLs itself the ``occurrence``-th time it reaches ``phase``
#: (``args[5] = [phase, occurrence]``), exactly as a kill from outside at that moment would.
KILLED_AT = """
import os, signal
import manibo.journal, manibo.loop, manibo.models.exact_gp
phase, occurrence = args[5]
reached, proposing = 0, False


def reach(moment):
    global reached
    if moment == phase:
        reached += 1
        if reached == occurrence:
            os.kill(os.getpid(), signal.SIGKILL)


def wrap(owner, name, before=None, after=None):
    original = getattr(owner, name)

    def wrapped(*a, **k):
        if before:
            reach(before)
        result = original(*a, **k)
        if after:
            reach(after)
        return result

    setattr(owner, name, wrapped)


def write(fd, data, write=os.write):
    kinds = [k for k in ("asked", "evaluation") if data.startswith(b'{"type": "' + k.encode())]
    if not kinds:
        return write(fd, data)
    kind = kinds[0]
    if phase == f"writing an {kind} line" and reached + 1 == occurrence:
        write(fd, data[: len(data) // 2])  # half the line is on disk when the process dies
    reach(f"writing an {kind} line")
    written = write(fd, data)
    reach(f"after writing an {kind} line")  # before its fsync, and before tell returns
    return written


def build_surrogate(*a, build=manibo.loop.build_surrogate, **k):
    global proposing
    proposing = True  # the constructor's trial build fits too: it is not a proposal
    try:
        return build(*a, **k)
    finally:
        proposing = False


def fit(*a, fit=manibo.models.exact_gp.fit_gpytorch_mll, **k):
    if proposing:
        reach("fitting")
    return fit(*a, **k)


wrap(manibo.journal.JournalWriter, "load", after="opened")  # read under the lock, while starting
wrap(manibo.loop.BayesianOptimizer, "tell", before="evaluating")  # asked and evaluated, not told
wrap(manibo.loop, "optimize_acqf_on_space", before="optimising")  # after the fit, before asked
manibo.journal.os.write = write
manibo.loop.build_surrogate = build_surrogate
manibo.models.exact_gp.fit_gpytorch_mll = fit
"""

#: ``(phase, occurrence)`` of each process killed at a chosen moment, in the order of a run (a
#: process resumes with one point asked and not told, which the test's own resume leaves):
#: the 3rd evaluation line of the design cut off; killed while starting; with a point evaluated
#: and not told; in the first proposal's fit; with the asked line of a proposal cut off; while
#: maximising the acquisition; after writing an evaluation line, before tell returned (so the
#: told log misses an evaluation the journal holds).
PHASES = [
    ("writing an evaluation line", 3),
    ("opened", 1),
    ("evaluating", 2),
    ("fitting", 1),
    ("writing an asked line", 1),
    ("optimising", 1),
    ("after writing an evaluation line", 1),
]


CHEAP = {"initial_design": 4, "seed": 3, "num_restarts": 2, "raw_samples": 16}
CHEAP["optimizer_options"] = {"maxiter": 5}


def _told(log):
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_two_processes_on_one_journal_the_second_is_refused(tmp_path):
    path, log, go = tmp_path / "j.jsonl", tmp_path / "told.jsonl", tmp_path / "go"
    server = shared_fork_server(tmp_path / "children")
    first = server.start(RUN, str(path), str(log), 6, CHEAP, str(go))  # waits after each tell
    deadline = time.monotonic() + 60
    while not _told(log) and time.monotonic() < deadline:
        time.sleep(0.01)
    second = server.start(RUN, str(path), str(log), 6, CHEAP, None)
    assert server.wait(second) == 1
    go.touch()  # the first holds the journal until the second was refused, then finishes
    assert server.wait(first) == 0
    refusal = server.stderr()
    assert "JournalLockedError" in refusal and f"process {first} on host" in refusal
    _, evaluations = Journal(path).read()  # the reader checks the indices are 0 .. n-1
    assert len(evaluations) == 6 and _told(log) == list(range(6))


def _reference_points(budget):
    """The uninterrupted run's points, and the median seconds of its proposals."""
    opt, seconds = BayesianOptimizer(Sphere(2), **CHEAP), []
    while len(opt.history) < budget:
        start = time.perf_counter()
        x = opt.ask()
        seconds.append(time.perf_counter() - start)
        opt.tell(x, [float(x[0, 2] + 0.3 * x[0, 0] ** 2)])
    points = torch.tensor([e.x for e in opt.history], dtype=torch.float64)
    return points, statistics.median(seconds[CHEAP["initial_design"] :])


@pytest.mark.slow
def test_sigkill_at_each_phase_loses_nothing_and_resume_proposes_what_was_coming(tmp_path):
    """Processes killed at each phase of a run (while starting, evaluating, fitting, maximising
    the acquisition, in the middle of a journal write and after one; :data:`PHASES`), then at
    random moments; after each kill every told evaluation is in the journal, the journal's points
    are the uninterrupted run's, and a resumed optimiser proposes the point that run proposed
    next."""
    budget, random_kills = 12, 3
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the children: the same arithmetic, the same points
    try:
        reference, step = _reference_points(budget)  # step: seconds per proposal, on this load
        path, log = tmp_path / "j.jsonl", tmp_path / "told.jsonl"
        delays, lengths = random.Random(0), set()
        server = shared_fork_server(tmp_path / "children")
        for phase in [*PHASES, *[None] * random_kills]:
            if phase is None:
                child = server.start(RUN, str(path), str(log), budget, CHEAP, None)
                time.sleep(delays.uniform(0.0, 2 * step))  # a start takes about half a step
                assert server.kill(child) in (-9, 0), server.stderr()
            else:
                arguments = (str(path), str(log), budget, CHEAP, None, phase)
                child = server.start(KILLED_AT + RUN, *arguments)
                assert server.wait(child) == -9, (phase, server.stderr())
            told = _told(log)
            if not path.exists() or not told:
                continue
            _, evaluations = Journal(path).read()
            assert set(told) <= {e.index for e in evaluations}  # nothing told was lost
            points = torch.tensor([e.x for e in evaluations], dtype=torch.float64)
            assert torch.allclose(points, reference[: len(points)], atol=1e-9, rtol=0)
            lengths.add(len(evaluations))
            if len(evaluations) < budget:
                cut_off = not path.read_bytes().endswith(b"\n")
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", JournalWarning)
                    with BayesianOptimizer.resume(path) as resumed:
                        proposal = resumed.ask()[0]
                assert [w.category for w in caught] == [JournalWarning] * cut_off, phase
                assert torch.allclose(proposal, reference[len(evaluations)], atol=1e-9, rtol=0)
        assert len(lengths) >= 5  # the kills landed all along the run
        with BayesianOptimizer(Sphere(2), journal=path, resume=True, **CHEAP) as resumed:
            while len(resumed.history) < budget:
                x = resumed.ask()
                resumed.tell(x, [float(x[0, 2] + 0.3 * x[0, 0] ** 2)])
            final = torch.tensor([e.x for e in resumed.history], dtype=torch.float64)
        assert torch.allclose(final, reference, atol=1e-9, rtol=0)
    finally:
        torch.set_num_threads(threads)


# ---------------------------------------------------------------- a run killed in a batch
def _cycle(n=12):
    ring = torch.zeros(n, n, dtype=torch.float64)
    for i in range(n):
        ring[i, (i + 1) % n] = ring[(i + 1) % n, i] = 1.0
    return Graph(ring)


BATCH_SPACES = {
    "sphere": lambda: Sphere(2),
    "graph": _cycle,
    "sphere*box": lambda: ProductSpace(Sphere(2), Box([0.0], [3.0])),
}


def _batch_objective(x):
    return float(torch.cos(1.7 * x).sum() + 0.1 * x[0] ** 2)


def _batch_run(space, path=None, resume=False):
    options = {"q": 3, "initial_design": 3, "seed": 2, **FAST}
    return BayesianOptimizer(space, journal=path, resume=resume, **options)


@functools.cache
def _uninterrupted(name, budget=9):
    with _batch_run(BATCH_SPACES[name]()) as opt:
        opt.run(_batch_objective, budget=budget, progress=False)
        return [(e.x, e.y) for e in opt.history], opt.best


@pytest.mark.parametrize("told", [1, 2])
@pytest.mark.parametrize("name", list(BATCH_SPACES))
def test_a_run_killed_in_a_batch_and_resumed_evaluates_what_the_uninterrupted_run_did(
    tmp_path, name, told
):
    """q = 3; the process dies after ``told`` of the 3 points of the second batch."""
    space, path = BATCH_SPACES[name](), tmp_path / "run.jsonl"
    opt = _batch_run(space, path)
    for count in (3, told):
        for x in opt.ask()[:count]:
            opt.tell(x, [_batch_objective(x)])
    del opt  # dropped without closing: what is on disk is all a resume sees
    resumed = BayesianOptimizer.resume(path, space=space)
    assert resumed.pending.shape[0] == 3 - told
    result = resumed.run(_batch_objective, budget=9, progress=False)
    resumed.close()
    history, (best_x, best_y) = _uninterrupted(name)
    assert [(e.x, e.y) for e in resumed.history] == history  # bit for bit
    assert torch.equal(result.best_x, best_x.reshape(result.best_x.shape))
    assert result.best_y == best_y and result.num_evaluations == 9
    contents = Journal(path).read_all()
    assert [(e.x, e.y) for e in contents.evaluations] == history
    assert [a.step for a in contents.asked] == [0, 3, 6]  # the second batch was asked once
    again = BayesianOptimizer.resume(path, space=space)  # every asked point told: none waits
    assert again.pending is None
    again.close()


def test_minimize_and_an_executor_evaluate_the_rest_of_the_batch_first(tmp_path):
    path = tmp_path / "run.jsonl"
    opt = _batch_run(Sphere(2), path)
    for count in (3, 1):
        batch = opt.ask()[:count]
        opt.tell(batch, [_batch_objective(x) for x in batch])
    assert opt.pending.shape == (2, 3)
    del opt
    options = {"q": 3, "initial_design": 3, "seed": 2, "progress": False, **FAST}
    result = minimize(_batch_objective, Sphere(2), 9, journal=path, resume=True, **options)
    history, _ = _uninterrupted("sphere")
    assert [[float(v) for v in x] for x in result.X] == [x for x, _ in history]
    # the same, killed again after the first point of the last batch, resumed with an executor
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-2]))  # the stop line and the last evaluation: the kill
    resumed = BayesianOptimizer.resume(path)
    assert resumed.pending.shape == (1, 3)
    with ThreadPoolExecutor(max_workers=3) as pool:
        resumed.run(_batch_objective, budget=9, executor=pool, max_parallel=3, progress=False)
    assert resumed.history[-1].x == history[-1][0] and resumed.pending is None
    resumed.close()


def test_a_cut_off_asked_line_is_moved_aside_and_the_batch_is_asked_again(tmp_path):
    path = tmp_path / "run.jsonl"
    opt = _batch_run(Sphere(2), path)
    design = opt.ask()
    opt.tell(design, [_batch_objective(x) for x in design])
    opt.ask()
    del opt
    lines = path.read_text().splitlines(keepends=True)
    assert json.loads(lines[-1])["type"] == "asked"
    path.write_text("".join(lines[:-1]) + lines[-1][:40])  # killed while writing it
    with pytest.warns(JournalWarning, match="moved to"):
        resumed = BayesianOptimizer.resume(path)
    assert resumed.pending is None  # never handed out: asked again, the same points
    assert (tmp_path / "run.jsonl.corrupt").read_text() == lines[-1][:40]
    result = resumed.run(_batch_objective, budget=9, progress=False)
    resumed.close()
    assert [[float(v) for v in x] for x in result.X] == [x for x, _ in _uninterrupted("sphere")[0]]


def test_a_stop_in_a_batch_leaves_its_rest_to_the_next_run(tmp_path, monkeypatch):
    """``max_seconds`` crossed at the second point of the second batch; the next run (in this
    process, or resumed from the journal) evaluates the third point first."""
    clock, real = [0.0], time.perf_counter
    monkeypatch.setattr(manibo.loop.time, "perf_counter", lambda: real() + clock[0])

    def slow_fifth(x):
        clock[0] += 1000.0 if len(calls) == 4 else 0.0
        calls.append(x)
        return _batch_objective(x)

    calls, path = [], tmp_path / "run.jsonl"
    opt = _batch_run(Sphere(2), path)
    result = opt.run(slow_fifth, budget=9, max_seconds=500, progress=False)
    assert result.stop_reason == "max_seconds" and len(opt.history) == 5
    assert opt.pending.shape == (1, 3)
    opt.close()
    resumed = BayesianOptimizer.resume(path)
    assert resumed.result().stop_reason == "max_seconds"
    resumed.run(slow_fifth, budget=9, progress=False)
    resumed.close()
    assert [(e.x, e.y) for e in resumed.history] == _uninterrupted("sphere")[0]


def test_a_point_told_without_ask_after_a_resume_leaves_the_waiting_points_alone(tmp_path):
    path = tmp_path / "run.jsonl"
    opt = _batch_run(Sphere(2), path)
    opt.tell(opt.ask()[:1], [0.5])
    del opt
    resumed = BayesianOptimizer.resume(path)
    waiting = resumed.pending
    resumed.tell(torch.tensor([0.0, 0.0, 1.0]), [0.25])  # never asked: as before, no proposal time
    assert resumed.history[-1].proposal_seconds is None and torch.equal(resumed.pending, waiting)
    resumed.tell(waiting[1], [0.75])  # told without asking it again: it no longer waits
    assert resumed.history[-1].proposal_seconds is not None
    assert torch.equal(resumed.pending, waiting[:1]) and torch.equal(resumed.ask(), waiting[:1])
    resumed.close()


FORMAT_3 = Path(__file__).parent / "data" / "format3_sphere2_q2.jsonl"


def test_a_format_3_journal_resumes_and_is_appended_to_in_format_3(tmp_path):
    """Written by the version before asked records (q = 2, 3 design points), killed after the
    first point of its second batch: it resumes, and the next batch is what this version
    proposes from the same data (nothing recorded the rest of the old batch)."""
    path = tmp_path / "run.jsonl"
    shutil.copy(FORMAT_3, path)
    resumed = BayesianOptimizer.resume(path)
    assert len(resumed.history) == 3 and resumed.pending is None
    fresh = BayesianOptimizer(Sphere(2), q=2, initial_design=3, seed=0, **FAST)
    design = torch.cat([fresh.ask(), fresh.ask()[:1]])  # the seeded design, drawn by this version
    assert [e.x for e in resumed.history] == design.tolist()
    same_data = BayesianOptimizer(Sphere(2), q=2, initial_design=3, seed=0, **FAST)
    same_data.tell(design, [e.y for e in resumed.history])
    batch = resumed.ask()
    assert torch.equal(batch, same_data.ask())
    resumed.tell(batch, [float(x[2]) for x in batch])
    resumed.close()
    contents = Journal(path).read_all()
    assert contents.version == 3 and contents.asked == [] and len(contents.evaluations) == 5
    assert json.loads(path.read_text().splitlines()[0])["version"] == 3


# ---------------------------------------------------------------- stopping early, timings
def _sleepy(seconds):
    def objective(x):
        time.sleep(seconds)
        return _objective(x)

    return objective


def test_a_callback_that_returns_true_stops_the_run_and_the_journal_says_why(tmp_path):
    path = tmp_path / "run.jsonl"
    seen = []

    def stop_at_four(optimizer, evaluation):
        seen.append((optimizer, evaluation.index, len(optimizer.history)))
        return evaluation.index == 3 or None

    opt = BayesianOptimizer(Sphere(2), q=3, initial_design=3, seed=0, journal=path, **FAST)
    result = opt.run(_objective, budget=9, callback=stop_at_four, progress=False)
    # called once per told evaluation, after it is in the history, with the optimiser itself
    assert [(o is opt, i, n) for o, i, n in seen] == [(True, i, i + 1) for i in range(4)]
    assert len(opt.history) == 4 and result.stop_reason == "callback"
    untold = opt.pending  # the two untold points of the second batch wait to be handed out
    assert untold.shape == (2, 3)
    contents = Journal(path).read_all()
    assert [(s.reason, s.evaluations) for s in contents.stops] == [("callback", 4)]
    opt.close()
    resumed = BayesianOptimizer.resume(path)
    assert torch.equal(resumed.pending, untold)
    assert resumed.result().stop_reason == "callback"  # read back from the journal
    resumed.run(_objective, budget=5, progress=False)
    assert resumed.history[-1].x == untold[0].tolist()
    assert resumed.result().stop_reason == "budget"
    resumed.tell(resumed.ask(1), [1.0])
    assert resumed.result().stop_reason is None  # evaluations after the last run's end
    resumed.close()
    stops = Journal(path).read_all().stops
    assert [(s.reason, s.evaluations) for s in stops] == [("callback", 4), ("budget", 5)]


def test_a_callback_that_cannot_take_two_arguments_is_refused_before_any_evaluation(tmp_path):
    """`callback=lambda: True` was found out by a TypeError after the first evaluation."""
    calls = []

    def objective(x):
        calls.append(x)
        return _objective(x)

    for wrong in (lambda: True, lambda opt: True, lambda a, b, c: True):
        with pytest.raises(ConfigurationError, match=r"callback\(optimizer, evaluation\), but "):
            minimize(objective, Sphere(2), budget=3, initial_design=3, callback=wrong)
        with BayesianOptimizer(Sphere(2), initial_design=3, **FAST) as opt:
            with pytest.raises(ConfigurationError, match="must accept two arguments"):
                opt.run(objective, budget=3, progress=False, callback=wrong)
    assert calls == []

    class Stopper:
        def __call__(self, optimizer, evaluation, verbose=False):
            return True

    for callback in [lambda *args: None, lambda o, e, extra=1: None, Stopper()]:
        with BayesianOptimizer(Sphere(2), initial_design=3, **FAST) as opt:
            opt.run(objective, budget=3, progress=False, callback=callback)
    manibo.loop._check_callback_signature(max)  # no signature Python can read: it passes


def test_a_callback_that_raises_or_returns_something_else_stops_the_run_with_the_error():
    def buggy(optimizer, evaluation):
        return undefined_name  # noqa: F821

    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, **FAST)
    with pytest.raises(NameError) as info:
        opt.run(_objective, budget=4, callback=buggy, progress=False)
    assert "callback raised this after evaluation 0" in "".join(info.value.__notes__)
    assert len(opt.history) == 1 and opt.pending is None  # its evaluation is recorded
    with pytest.raises(ConfigurationError, match=r"callback returned str 'stop'.*True to stop"):
        opt.run(_objective, budget=4, callback=lambda o, e: "stop", progress=False)
    with pytest.raises(ConfigurationError, match=r"returned int 0 .* A number is not taken as"):
        opt.run(_objective, budget=4, callback=lambda o, e: 0, progress=False)
    with pytest.raises(ConfigurationError, match="`callback` must be callable"):
        opt.run(_objective, budget=4, callback="stop", progress=False)
    assert len(opt.history) == 3


@pytest.mark.parametrize("answer", [np.bool_, lambda b: torch.tensor(b), lambda b: np.array(b)])
def test_a_callback_may_answer_with_a_numpy_or_torch_boolean(answer):
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, **FAST)
    result = opt.run(_objective, budget=3, callback=lambda o, e: answer(False), progress=False)
    assert result.stop_reason == "budget"
    result = opt.run(_objective, budget=5, callback=lambda o, e: answer(True), progress=False)
    assert result.stop_reason == "callback" and result.num_evaluations == 4


@pytest.mark.parametrize("max_seconds", [0, -1.0, math.nan, math.inf, "10", True])
def test_a_bad_wall_time_budget_is_refused_before_any_evaluation(max_seconds):
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, **FAST)
    with pytest.raises(ConfigurationError, match="`max_seconds` must be a positive number"):
        opt.run(_objective, budget=4, max_seconds=max_seconds, progress=False)
    assert opt.history == []


def test_the_wall_time_budget_stops_after_the_evaluation_that_crosses_it(tmp_path):
    # the initial design covers the budget: no model is fitted, each evaluation takes 50 ms
    path = tmp_path / "run.jsonl"
    opt = BayesianOptimizer(Sphere(2), initial_design=20, seed=0, journal=path, **FAST)
    result = opt.run(_sleepy(0.05), budget=20, max_seconds=0.12, progress=False)
    assert result.stop_reason == "max_seconds" and 2 <= result.num_evaluations < 20
    # the run's clock starts with the call: the last evaluation was told after 0.12 s, the one
    # before it was not
    assert result.elapsed[-1] >= 0.12 > result.elapsed[-2]
    assert Journal(path).read_all().stops[-1].reason == "max_seconds"


def test_with_an_executor_a_stop_lets_the_evaluations_in_flight_finish_and_be_told():
    opt = BayesianOptimizer(Sphere(2), initial_design=20, seed=0, **FAST)
    with ThreadPoolExecutor(max_workers=3) as pool:
        result = opt.run(
            _sleepy(0.05),
            budget=20,
            executor=pool,
            max_parallel=3,
            callback=lambda o, e: e.index == 0,
            progress=False,
        )
    # the first one told stops new submissions; the two others in flight are told
    assert result.stop_reason == "callback" and result.num_evaluations == 3
    assert opt.pending is None and not result.failed.any()


def test_timings_of_evaluations_and_proposals_are_recorded_and_continue_after_a_resume(tmp_path):
    path = tmp_path / "run.jsonl"
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, journal=path, **FAST)
    result = opt.run(_sleepy(0.02), budget=5, progress=False)
    assert (result.evaluation_seconds >= 0.02).all()
    # the random design costs next to nothing; a proposal fits a GP and optimises
    assert (result.proposal_seconds[:3] < 0.01).all() and (result.proposal_seconds[3:] > 0).all()
    assert (result.elapsed.diff() > 0).all()
    told = result.elapsed.tolist()
    opt.close()
    time.sleep(0.3)  # a gap between the stop and the resume does not count
    begin = time.perf_counter()
    resumed = BayesianOptimizer.resume(path)
    again = resumed.run(_sleepy(0.02), budget=6, progress=False)
    assert again.elapsed[:5].tolist() == told  # read back from the journal
    # the clock continues from the journal's stop record, written a moment after told[-1]
    # (0.004 s under load 2); far less than the 0.3 s gap, which must not count
    assert 0.02 < again.elapsed[5] - told[-1] <= time.perf_counter() - begin + 0.1
    resumed.close()
    x = torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64)
    plain = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, **FAST)
    plain.tell(x, [1.0])  # told without ask: no proposal time
    assert math.isnan(plain.result().proposal_seconds[0])


def test_a_failed_evaluation_keeps_its_time():
    def fails(x):
        time.sleep(0.02)
        raise manibo.EvaluationFailed("no")

    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, **FAST)
    with pytest.warns(manibo.exceptions.NoEvaluationSucceededWarning):
        result = opt.run(fails, budget=3, progress=False)
    assert result.failed.all() and (result.evaluation_seconds >= 0.02).all()
    assert result.best_x is None and result.model is None and result.recommended_x is None
    with pytest.raises(ConfigurationError, match="no successful evaluation among the 3"):
        x, y = result


def test_infinite_settings_round_trip_through_the_journal(tmp_path):
    path = tmp_path / "run.jsonl"
    options = {"nu": math.inf}
    opt = BayesianOptimizer(
        Sphere(2), initial_design=3, seed=0, journal=path, surrogate_options=options, **FAST
    )
    opt.run(_objective, budget=3, progress=False)
    opt.close()
    header = path.read_text().splitlines()[0]
    json.loads(header, parse_constant=_refuse)  # standard JSON: no Infinity token
    resumed = BayesianOptimizer.resume(path, surrogate_options=options)  # equal settings
    assert resumed.config["surrogate_options"] == options
    resumed.close()


def _refuse(token):
    raise ValueError(f"non-standard JSON token {token}")


def test_bayesian_optimisation_of_a_direction_and_a_height_with_qlognei():
    """A solar panel: direction on S² times mounting height in a box; the yield is largest facing
    the sun at 2.2 m (shading below, wind loads above)."""
    from manibo.spaces import Box, ProductSpace

    space = ProductSpace(Sphere(2), Box([0.5], [3.0]))
    sun = torch.tensor([0.3, 0.2, 0.93], dtype=torch.float64)
    sun = sun / sun.norm()

    def panel_yield(x):
        return float((x[:3] @ sun).clamp_min(0) * torch.exp(-((x[3] - 2.2) ** 2)))

    opt = BayesianOptimizer(
        space, acquisition="qlognei", q=2, initial_design=6, seed=0, minimize=False, **FAST
    )
    opt.run(panel_yield, budget=20, progress=False)
    x_best, y_best = opt.best
    space.check(x_best.unsqueeze(0))
    assert y_best > 0.9, y_best  # the optimum is 1
    assert space.distance(x_best, torch.cat([sun, torch.tensor([2.2])])) < 0.5


@pytest.mark.parametrize(
    "kind, size", [("SpecialOrthogonal", 4), ("SpecialUnitary", 3), ("RealProjectiveSpace", 2)]
)
def test_journals_of_the_group_and_projective_spaces_resume_without_the_space(tmp_path, kind, size):
    from manibo import spaces

    space = getattr(spaces, kind)(size)
    journal = tmp_path / "run.jsonl"
    opt = BayesianOptimizer(space, initial_design=2, seed=0, journal=journal, **FAST)
    for _ in range(2):
        x = opt.ask()
        opt.tell(x, [float(x[0, 0])])
    opt.close()  # one writer per journal
    resumed = BayesianOptimizer.resume(journal)
    assert repr(resumed.space) == f"{kind}({size})" and len(resumed.history) == 2


def test_a_journal_whose_metadata_records_a_space_spec_resumes_without_the_space(tmp_path):
    # "cannot rebuild the space ... from its name" although the header recorded "sphere2*box1"
    from manibo.spaces import make_space

    journals = {}
    for name, metadata in [
        ("spec", {"space": "sphere2*box1"}),
        ("other", {"space": "sphere2*box2"}),  # another fingerprint than the journal's space
        ("none", {}),
    ]:
        journals[name] = tmp_path / f"{name}.jsonl"
        opt = BayesianOptimizer(
            make_space("sphere2*box1"), initial_design=2, journal=journals[name], metadata=metadata
        )
        x = opt.ask()
        opt.tell(x, [1.0])
        opt.close()
    resumed = BayesianOptimizer.resume(journals["spec"])
    assert resumed.space.fingerprint() == make_space("sphere2*box1").fingerprint()
    assert len(resumed.history) == 1
    resumed.close()
    advice = re.escape('pass `space=make_space("sphere2*box2")` to resume()')
    with pytest.raises(ConfigurationError, match="another content fingerprint; " + advice):
        BayesianOptimizer.resume(journals["other"])
    with pytest.raises(ConfigurationError, match=r"from its name; pass `space=` to resume\(\)\.$"):
        BayesianOptimizer.resume(journals["none"])


def test_a_surrogate_whose_posterior_drops_the_batch_dimensions_is_refused_at_construction(
    isolated_surrogates,
):
    @register_surrogate("test-loop-flat-posterior")
    def flat(space, train_X, train_Y, **options):
        model = build_surrogate("matern", space, train_X, train_Y, **options)

        class Flat(type(model)):
            def posterior(self, X, *args, **kwargs):
                return super().posterior(X.reshape(-1, X.shape[-1]), *args, **kwargs)

        model.__class__ = Flat
        return model

    with pytest.raises(
        ConfigurationError,
        match=r"surrogate 'test-loop-flat-posterior' cannot be built .* its posterior at points "
        r"of shape \(3, 2, 3\) has a mean of shape \(6, 1\), but BoTorch's acquisitions need "
        r"\(3, 2, 1\)",
    ):
        BayesianOptimizer(Sphere(2), surrogate="test-loop-flat-posterior")


def test_a_surrogate_that_turns_nan_after_the_design_is_named_by_the_proposal_error(
    isolated_surrogates,
):
    @register_surrogate("test-loop-late-nan")
    def late_nan(space, train_X, train_Y, **options):
        model = build_surrogate("matern", space, train_X, train_Y, **options)
        if train_X.shape[0] > 4:  # the construction's check fits 4 points: it passes
            model.mean_module.constant.data.fill_(math.nan)
        return model

    with pytest.raises(
        NonFiniteAcquisitionError,
        match=r"^the surrogate 'test-loop-late-nan', fitted to 5 evaluations, and the "
        r"acquisition 'qlognei': the acquisition \(qLogNoisyExpectedImprovement\) was not "
        r"finite at any of the 320 raw samples drawn on Sphere\(2\) in 4 rounds of "
        r"raw_samples = 32 times 1 to 4 \(320 NaN",
    ):
        minimize(
            _objective, Sphere(2), budget=6, surrogate="test-loop-late-nan", progress=False,
            **FAST,
        )  # fmt: skip


def test_a_space_given_as_its_spec_says_how_to_build_it():
    with pytest.raises(
        ConfigurationError,
        match=r"got str; build it from its spec with "
        r"manibo.spaces.make_space\('sphere2'\)\.$",
    ):
        minimize(_objective, "sphere2", budget=6)  # fmt: skip


def test_a_constructor_never_run_leaves_no_error_behind(monkeypatch):
    # a misspelt keyword stops Python before __init__ runs; __del__ must not raise then
    import gc

    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    with pytest.raises(TypeError, match="num_initial"):
        BayesianOptimizer(Sphere(2), num_initial=3)
    gc.collect()
    assert unraisable == []


def test_a_proposal_that_fails_leaves_no_part_of_its_batch_pending(tmp_path, monkeypatch):
    def first_batch_and_next(path, fail):
        opt = BayesianOptimizer(Sphere(2), q=3, initial_design=4, seed=0, journal=path, **FAST)
        X = opt.ask()
        opt.tell(X, [_objective(x) for x in X])
        if fail:  # the design's last point is drawn, then the surrogate's proposal fails
            with monkeypatch.context() as patch:
                patch.setattr(opt, "_propose", _raise_memory_error)
                with pytest.raises(MemoryError):
                    opt.ask()
            assert opt.pending is None
        batch = opt.ask()
        opt.close()
        return batch, [line for line in path.read_text().splitlines() if '"asked"' in line]

    expected, expected_lines = first_batch_and_next(tmp_path / "a.jsonl", fail=False)
    batch, lines = first_batch_and_next(tmp_path / "b.jsonl", fail=True)
    assert batch.shape == (3, 3) and torch.equal(batch, expected)
    assert len(lines) == len(expected_lines) == 2  # the failed batch was never handed out


def _raise_memory_error(n, seed):
    raise MemoryError("out of memory (simulated)")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: {**r, "points": [[1.0, 0.0]] * 2}, "points of shape \\(2,\\), not the space's"),
        (lambda r: {**r, "points": [[5.0, 5.0, 5.0]] * 2}, "the recorded points"),
        (lambda r: {**r, "x": [0.0, 1.0]}, "evaluation 0 holds points"),
    ],
)
def test_a_journal_point_that_is_not_a_point_of_the_space_is_refused_on_resume(
    tmp_path, edit, message
):
    path = tmp_path / "j.jsonl"
    opt = BayesianOptimizer(Sphere(2), q=2, initial_design=2, seed=0, journal=path, **FAST)
    X = opt.ask()
    opt.tell(X[:1], [_objective(X[0])])
    opt.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    kind = "evaluation" if "x" in edit({}) else "asked"
    target = next(i for i, r in enumerate(lines) if r["type"] == kind)
    lines[target] = edit(lines[target])
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    with pytest.raises(JournalError, match="not points of Sphere\\(2\\)") as err:
        BayesianOptimizer.resume(path)
    assert re.search(message, str(err.value))


def test_telling_a_point_that_matches_no_held_asked_point_warns_once_at_the_users_line():
    opt = BayesianOptimizer(Sphere(2), q=2, initial_design=4, seed=0, **FAST)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            X = opt.ask()
            moved = torch.nn.functional.normalize(X + 1e-3, dim=-1)  # beyond PENDING_TOL
            opt.tell(moved, [_objective(x) for x in moved])
    unmatched = [w for w in caught if "none of the 2 point(s) asked" in str(w.message)]
    assert len(unmatched) == 1 and unmatched[0].filename == __file__
    assert opt.pending.shape == (4, 3)  # they stay pending, as the warning says


def test_proposal_warnings_of_ask_point_at_the_users_line(isolated_surrogates):
    @register_surrogate("test-loop-warns-ask")
    def _warning_surrogate(space, train_X, train_Y, **options):
        warnings.warn("`scipy_minimize` terminated with FAILURE", OptimizationWarning, stacklevel=2)
        return build_surrogate("matern", space, train_X, train_Y, **options)

    opt = BayesianOptimizer(Sphere(2), surrogate="test-loop-warns-ask", initial_design=2, **FAST)
    opt.tell(opt.ask(2), [0.5, 1.5])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt.ask()
    assert [w.filename for w in caught] == [__file__]


def test_a_journal_that_cannot_be_appended_to_is_refused_on_resume(tmp_path, monkeypatch):
    path = _journal_of_a_run(tmp_path / "j.jsonl")
    real_open = manibo.journal.os.open

    def read_only_file_system(name, flags, *args):
        if str(name) == str(path) and flags & os.O_WRONLY:
            raise OSError(errno.EROFS, "Read-only file system", str(name))
        return real_open(name, flags, *args)

    monkeypatch.setattr(manibo.journal.os, "open", read_only_file_system)
    with pytest.raises(JournalError, match="Read-only file system.*writable path"):
        BayesianOptimizer.resume(path)


def test_a_tensor_given_for_a_number_is_named_in_a_short_message():
    # the message printed every entry of the tensor (55 numbers here, millions for a big one)
    with pytest.raises(ConfigurationError, match=r"`initial_design` must be an integer") as info:
        minimize(lambda x: 0.0, Sphere(2), budget=6, initial_design=torch.rand(50, 11))
    assert len(str(info.value)) < 600 and "a tensor of shape (50, 11)" in str(info.value)


@pytest.mark.parametrize("optimizer", ["riemannian", "projection"])
def test_a_surrogate_keeping_its_tensors_as_plain_attributes_runs_in_the_loop(
    isolated_surrogates, optimizer
):
    """A BoTorch model with no train_inputs, parameters or buffers (Bayesian linear regression
    on the embedding, written by a user) proposes points in the loop's dtype and device."""
    from botorch.models.model import Model
    from botorch.posteriors import GPyTorchPosterior
    from gpytorch.distributions import MultivariateNormal

    class LinearRegression(Model):
        def __init__(self, train_X, train_Y):
            super().__init__()
            features = torch.cat([train_X, torch.ones_like(train_X[:, :1])], -1)
            self.weights = torch.linalg.lstsq(features, train_Y).solution[:, 0]

        num_outputs = 1
        batch_shape = torch.Size([])

        def posterior(self, X, output_indices=None, observation_noise=False, **kwargs):
            mean = X @ self.weights[:-1] + self.weights[-1]
            eye = torch.eye(X.shape[-2], dtype=X.dtype, device=X.device)
            return GPyTorchPosterior(MultivariateNormal(mean, eye.expand(*mean.shape, -1)))

    @register_surrogate("test-plain-tensors")
    def plain(space, train_X, train_Y, **options):
        return LinearRegression(train_X, train_Y)

    target = torch.tensor([0.0, 0.6, 0.8], dtype=torch.float64)
    result = minimize(
        lambda x: float(-(x @ target)),
        Sphere(2),
        budget=7,
        initial_design=4,
        seed=0,
        surrogate="test-plain-tensors",
        acquisition="ucb",
        optimizer=optimizer,
    )
    assert len(result.Y) == 7
    assert result.X[4:].dtype == torch.float64
    assert float((result.X[4:] @ target).max()) > 0.9  # linear in x: its optimum is near `target`


class _ChartlessSphere(Sphere):
    """A user's own space (defined outside manibo) without a global chart."""

    def chart(self, X):
        return Space.chart(self, X)  # refuses


def test_a_surrogate_refusing_a_space_of_the_users_own_gets_advice_that_fits_it():
    with pytest.raises(ConfigurationError, match="has no global chart") as caught:
        BayesianOptimizer(_ChartlessSphere(2), surrogate="chart", **FAST)
    assert "models every space of manibo.spaces" not in str(caught.value)
    assert "@manibo.kernels.matern_kernel.register" in str(caught.value)
    with pytest.raises(ConfigurationError, match="models every space of manibo.spaces"):
        BayesianOptimizer(SpecialOrthogonal(4), surrogate="chart", **FAST)


def test_a_surrogate_with_a_posterior_that_is_not_finite_is_refused_before_any_evaluation(
    isolated_surrogates,
):
    @register_surrogate("test-nan-posterior")
    def nan_posterior(space, train_X, train_Y, **options):
        model = build_surrogate("matern", space, train_X, train_Y)
        model.mean_module.constant.data.fill_(math.nan)
        return model

    calls = []
    with pytest.raises(ConfigurationError, match="posterior mean at 2 of the design points is not"):
        minimize(
            lambda x: calls.append(x) or 0.0, Sphere(2), budget=6, surrogate="test-nan-posterior"
        )
    assert calls == []


def test_a_surrogate_whose_fantasies_raise_is_refused_with_qkg_before_any_evaluation(
    isolated_surrogates,
):
    """Undeclared missing fantasies: the construction check evaluates the acquisition once."""
    from manibo.models.exact_gp import ExactGPModel

    class NoFantasies(ExactGPModel):
        def fantasize(self, *args, **kwargs):
            raise NotImplementedError("no fantasies here")

    @register_surrogate("test-no-fantasies")
    def factory(space, train_X, train_Y, **options):
        model = build_surrogate("matern", space, train_X, train_Y)
        model.__class__ = NoFantasies
        return model

    calls = []
    with pytest.raises(ConfigurationError, match="no fantasies here.*unsupported_features="):
        minimize(
            lambda x: calls.append(x) or 0.0,
            Sphere(2),
            budget=7,
            surrogate="test-no-fantasies",
            acquisition="qkg",
        )
    assert calls == []


def test_an_acquisition_nan_on_part_of_the_space_still_gives_a_proposal(monkeypatch):
    """BoTorch's Boltzmann selection of the starts stopped the loop with torch's 'probability
    tensor contains either inf, nan or element < 0' where the acquisition was NaN at a raw sample;
    the starts are now chosen where it is finite, and the loop reports the NaN raw samples."""

    class NanBelowTheEquator(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner
            self.model = inner.model
            self.X_pending = None

        def forward(self, X):
            value = self.inner(X)
            return torch.where(X[..., 2].amin(-1) < 0, torch.nan, value)

    def nan_below(*args, **kwargs):
        return NanBelowTheEquator(build_acquisition(*args, **kwargs))

    monkeypatch.setattr(manibo.loop, "build_acquisition", nan_below)
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, **FAST)
    opt.tell(opt.ask(3), torch.tensor([0.1, 0.2, 0.3]))
    with pytest.warns(manibo.exceptions.NonFiniteGradientWarning, match="raw samples"):
        x = opt.ask()
    assert x.shape == (1, 3) and float(x[0, 2]) >= 0


def test_ask_and_tell_from_several_threads_lose_nothing(tmp_path):
    # Optuna's habit of one optimiser shared by worker threads: the journal's write position was
    # read and advanced without a lock, so 58 of 400 evaluations were written twice and 58 never,
    # the journal could not be resumed, and ask/tell pairs crashed in flush with an IndexError
    space = Sphere(2)
    X = space.random(1200, generator=torch.Generator().manual_seed(0))
    opt = BayesianOptimizer(space, initial_design=40, seed=0, journal=tmp_path / "told.jsonl")
    switches = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        with ThreadPoolExecutor(8) as pool:
            told = [
                pool.submit(
                    lambda k: [opt.tell(X[i], float(X[i, 0])) for i in range(k, 1200, 8)], k
                )  # fmt: skip
                for k in range(8)
            ]
            counts = []  # read while they tell: result() read the history twice and crashed
            while not all(future.done() for future in told):
                counts.append(opt.result().num_evaluations)
            [future.result() for future in told]
    finally:
        sys.setswitchinterval(switches)
    assert counts == sorted(counts) and counts[-1] <= 1200
    opt.close()
    resumed = BayesianOptimizer.resume(tmp_path / "told.jsonl")
    assert len(resumed.history) == 1200
    assert sorted(e.index for e in resumed.history) == list(range(1200))
    resumed.close()

    opt = BayesianOptimizer(space, initial_design=40, seed=0, journal=tmp_path / "asked.jsonl")

    def ask_and_tell(_):
        x = opt.ask()
        opt.tell(x, float(x[0, 0]))
        return x

    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(4) as pool:
            points = torch.cat(list(pool.map(ask_and_tell, range(40))))
    finally:
        sys.setswitchinterval(switches)
    opt.close()
    assert len({tuple(p.tolist()) for p in points}) == 40  # each design point handed out once
    resumed = BayesianOptimizer.resume(tmp_path / "asked.jsonl")
    assert len(resumed.history) == 40 and resumed.pending is None
    resumed.close()


def test_the_stop_record_says_when_the_run_stopped(tmp_path):
    # its documented "YYYY-MM-DD HH:MM:SS UTC" was written as "" in every journal
    path = tmp_path / "run.jsonl"
    with BayesianOptimizer(Sphere(2), initial_design=3, journal=path, **FAST) as opt:
        before = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        opt.run(lambda x: float(x[0]), budget=3, progress=False)
        after = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    records = [json.loads(line) for line in path.read_text().splitlines()]
    (stop,) = [r for r in records if r["type"] == "stop"]
    assert before <= stop["time"] <= after, stop


def test_values_in_read_only_arrays_are_told_without_torch_s_warning():
    # pandas' DataFrame.values can be read-only; torch then warned of undefined behaviour, from
    # inside manibo, at a user who had done nothing wrong. torch warns once per process, so the
    # check runs in a fresh one
    script = """
import warnings
import numpy as np
import torch
from manibo.loop import BayesianOptimizer
from manibo.spaces import Sphere
X = Sphere(2).random(3, generator=torch.Generator().manual_seed(0)).numpy()
Y = np.array([0.5, 0.25])
X.flags.writeable = Y.flags.writeable = False
opt = BayesianOptimizer(Sphere(2), initial_design=3, num_restarts=2, raw_samples=16)
with warnings.catch_warnings():
    warnings.simplefilter("error")
    opt.tell(X[:2], Y)
    opt.tell_failure(X[2:], "diverged")
print([e.y for e in opt.history])
"""
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout.strip() == "[0.5, 0.25, None]", ran.stderr[-1500:]


def _inside_itself() -> dict:
    looped = {"a": 1}
    looped["self"] = looped
    return looped


def test_a_run_whose_metadata_holds_nan_resumes(tmp_path):
    # the settings were compared with `!=`, and nan != nan: "metadata.noise: nan in the journal,
    # nan now", a run that could never be resumed
    path = tmp_path / "run.jsonl"
    metadata = {"noise": math.nan, "grid": [1.0, math.nan]}
    with BayesianOptimizer(
        Sphere(2), initial_design=3, journal=path, metadata=metadata, **FAST
    ) as opt:
        opt.tell(opt.ask(), 0.5)
    with BayesianOptimizer.resume(path) as resumed:
        assert len(resumed.history) == 1
    with BayesianOptimizer(
        Sphere(2), initial_design=3, journal=path, metadata=metadata, resume=True, **FAST
    ) as again:
        assert len(again.history) == 1
    with pytest.raises(ConfigurationError, match=r"metadata.noise: nan in the journal, 1.0 now"):
        BayesianOptimizer(
            Sphere(2),
            initial_design=3,
            journal=path,
            metadata={**metadata, "noise": 1.0},
            resume=True,
            **FAST,
        )


def test_extra_values_told_with_an_evaluation_are_journaled_and_resumed(tmp_path):
    # Evaluation.extra was documented as "JSON values the caller attaches", with no way to
    path = tmp_path / "run.jsonl"
    X = Sphere(2).random(3, generator=torch.Generator().manual_seed(0))
    with BayesianOptimizer(Sphere(2), initial_design=3, journal=path, **FAST) as opt:
        opt.tell(X[:2], [0.1, 0.2], extra={"solver": "fine", "mesh": [4, 4]})
        opt.tell_failure(X[2], "diverged", extra=[{"attempt": 2}])
        for bad, why in (
            ({"x": object()}, "must hold JSON values"),
            ({1: 2}, "string keys"),
            (_inside_itself(), "must hold JSON values"),  # was a RecursionError
            ([{}, {}], "2 records for 1 points"),
        ):
            with pytest.raises(InputDataError, match=why):
                opt.tell(X[0], 0.3, extra=bad)
    resumed = BayesianOptimizer.resume(path)
    assert [e.extra for e in resumed.history] == [
        {"solver": "fine", "mesh": [4, 4]},
        {"solver": "fine", "mesh": [4, 4]},
        {"attempt": 2},
    ]
    resumed.close()


def test_an_optimiser_without_a_journal_pickles_and_copies_with_a_lock_of_its_own(tmp_path):
    import copy
    import pickle

    journal = tmp_path / "j.jsonl"
    with BayesianOptimizer(Sphere(2), initial_design=3, journal=journal, **FAST) as held:
        for duplicate in (pickle.dumps, copy.deepcopy, copy.copy):
            with pytest.raises(TypeError, match="holds journal .* without its lock; close"):
                duplicate(held)  # a copy would write to the journal's file without its lock
    opt = BayesianOptimizer(Sphere(2), initial_design=3, **FAST)
    opt.tell(Sphere(2).random(1, generator=torch.Generator().manual_seed(0)), 0.5)
    for twin in (pickle.loads(pickle.dumps(opt)), copy.deepcopy(opt)):
        assert twin._lock is not opt._lock and [e.y for e in twin.history] == [0.5]
        twin.tell(Sphere(2).random(1, generator=torch.Generator().manual_seed(1)), 0.25)
    assert len(opt.history) == 1
