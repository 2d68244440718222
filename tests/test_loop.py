"""The loop: ask/tell, failures, pending, executors, reproducibility, journal, resume, bad input."""

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError, ManiboError
from manibo.loop import BayesianOptimizer, maximize, minimize
from manibo.models import build_surrogate, register_surrogate
from manibo.spaces import Sphere

FAST = {"num_restarts": 2, "raw_samples": 32, "optimizer_options": {"maxiter": 10}}


def _objective(x):
    return float(((x - torch.tensor([0.0, 0.0, 1.0], dtype=x.dtype)) ** 2).sum())


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
    assert len((tmp_path / "run.jsonl").read_text().splitlines()) == 1 + 5


def test_failed_evaluations_are_recorded_and_kept_out_of_the_model():
    calls = []

    def flaky(x):
        calls.append(x)
        if len(calls) in (2, 6):
            raise RuntimeError("simulator crashed")
        if len(calls) == 4:
            return float("nan")
        return _objective(x)

    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, **FAST)
    opt.run(flaky, budget=8, progress=False)
    statuses = [e.status for e in opt.history]
    assert len(statuses) == 8 and statuses.count("failed") == 3
    assert "simulator crashed" in opt.history[1].error and "nan" in opt.history[3].error
    X, _ = opt._training_data()
    assert X.shape[0] == 5


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


def test_q_batches_and_minimize_maximize_helpers():
    opt = BayesianOptimizer(Sphere(2), q=2, initial_design=2, seed=0, acquisition="qlogei", **FAST)
    opt.run(_objective, budget=6, progress=False)
    assert len(opt.history) == 6
    _, low = minimize(_objective, Sphere(2), budget=4, initial_design=3, progress=False, **FAST)
    _, high = maximize(_objective, Sphere(2), budget=4, initial_design=3, progress=False, **FAST)
    assert low < high


def test_bad_input_gets_clear_errors(tmp_path):
    space = Sphere(2)
    opt = BayesianOptimizer(space, initial_design=2, **FAST)
    x = opt.ask()
    with pytest.raises(InputDataError, match="tell_failure"):
        opt.tell(x, [float("nan")])
    with pytest.raises(InputDataError, match="norms must be 1"):
        opt.tell(2 * x, [1.0])
    with pytest.raises(InputDataError, match="one value per point"):
        opt.tell(x, [1.0, 2.0])
    with pytest.raises(InputDataError, match=r"\(\*batch, 3\)"):
        opt.tell(torch.ones(1, 4, dtype=torch.float64), [1.0])
    with pytest.raises(ConfigurationError, match="initial design"):
        opt.run(_objective, budget=1)
    with pytest.raises(ConfigurationError, match="unknown surrogate"):
        BayesianOptimizer(space, surrogate="nope")
    with pytest.raises(ConfigurationError, match="unknown acquisition"):
        BayesianOptimizer(space, acquisition="nope")
    BayesianOptimizer(space, journal=tmp_path / "j.jsonl")
    with pytest.raises(ManiboError, match="already exists"):
        BayesianOptimizer(space, journal=tmp_path / "j.jsonl")


SCRIPT = textwrap.dedent(
    """
    import json, os, signal, sys, torch
    from manibo.loop import BayesianOptimizer
    from manibo.spaces import Sphere
    journal, asked_log = sys.argv[1], sys.argv[2]
    calls = []
    def objective(x):
        calls.append(1)
        with open(asked_log, "a") as f:
            f.write(json.dumps(x.tolist()) + "\\n")
        if len(calls) == 7:
            os.kill(os.getpid(), signal.SIGKILL)
        return float(x[2])
    opt = BayesianOptimizer(Sphere(2), initial_design=4, seed=3, journal=journal,
                            num_restarts=2, raw_samples=32, optimizer_options={"maxiter": 10})
    opt.run(objective, budget=20, progress=False)
    """
)


def test_sigkill_loses_nothing_and_resume_gives_the_same_next_candidate(tmp_path):
    journal, asked = tmp_path / "run.jsonl", tmp_path / "asked.jsonl"
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(journal), str(asked)], timeout=300)
    assert result.returncode == -signal.SIGKILL
    asked_points = [json.loads(line) for line in asked.read_text().splitlines()]
    resumed = BayesianOptimizer.resume(journal)
    assert len(resumed.history) == 6  # every told evaluation survived the kill
    assert [e.x for e in resumed.history] == asked_points[:6]
    next_point = resumed.ask()[0]
    assert torch.allclose(
        next_point, torch.tensor(asked_points[6], dtype=torch.float64), atol=1e-10
    )


def test_truncated_last_journal_line_is_reported_and_skipped(tmp_path):
    path = tmp_path / "run.jsonl"
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, journal=path, **FAST)
    opt.run(_objective, budget=3, progress=False)
    with open(path, "a") as f:
        f.write('{"type": "evaluation", "x": [0.0, 0.')  # a crash in the middle of a write
    from manibo.journal import JournalWarning

    with pytest.warns(JournalWarning, match="truncated"):
        resumed = BayesianOptimizer.resume(path)
    assert len(resumed.history) == 3
    assert (tmp_path / "run.jsonl.corrupt").exists()
    resumed.run(_objective, budget=4, progress=False)  # appending after the repair works
    assert len(BayesianOptimizer.resume(path).history) == 4
    lines = path.read_text().splitlines()
    lines[2] = "{not json"
    path.write_text("\n".join(lines) + "\n")
    from manibo.journal import JournalError

    with pytest.raises(JournalError, match="line 3"):
        BayesianOptimizer.resume(path)
    assert os.path.exists(path)
