"""``initial_points``: chosen points evaluated first, journaled, resumed and validated."""

import json

import numpy as np
import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.loop import BayesianOptimizer, maximize, minimize
from manibo.spaces import Graph, Sphere

FAST = {"num_restarts": 2, "raw_samples": 32, "optimizer_options": {"maxiter": 10}}
POINTS = torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], dtype=torch.float64)


class _Recorder:
    """An objective on S^2 (the height of the point) that records the points it is given."""

    def __init__(self):
        self.calls: list[list[float]] = []

    def __call__(self, x):
        self.calls.append(x.tolist())
        return float(x[2])


def test_minimize_evaluates_the_initial_points_first_and_fills_the_design_with_random_points():
    objective = _Recorder()
    result = minimize(
        objective, Sphere(2), budget=7, seed=3, progress=False, initial_points=POINTS, **FAST
    )
    assert objective.calls[:2] == POINTS.tolist()
    assert len(objective.calls) == 7 and result.X.shape == (7, 3)
    # the random points that fill the design up to its 5 points are those of the same seed
    # without initial points, from the third on: the given points count toward the design
    plain = _Recorder()
    minimize(plain, Sphere(2), budget=5, seed=3, progress=False, **FAST)
    assert objective.calls[2:5] == plain.calls[2:5]


def test_maximize_takes_initial_points_given_as_a_numpy_array_and_one_point_alone():
    objective = _Recorder()
    maximize(
        objective, Sphere(2), budget=5, progress=False, initial_points=np.array([0.0, 1.0, 0.0])
    )
    assert objective.calls[0] == [0.0, 1.0, 0.0]


def test_ask_hands_out_the_waiting_initial_points_before_proposing():
    opt = BayesianOptimizer(Sphere(2), q=3, initial_design=2, initial_points=POINTS, **FAST)
    first = opt.ask()
    assert first.tolist() == POINTS.tolist()  # at most the two that wait, not a batch of 3
    opt.tell(first, first[:, 2])
    second = opt.ask()
    assert second.shape == (3, 3)
    assert not any(torch.allclose(x, p) for x in second for p in POINTS)


def test_the_journal_records_the_initial_points_and_a_resumed_run_evaluates_only_the_untold(
    tmp_path,
):
    journal = tmp_path / "run.jsonl"
    three = torch.cat([POINTS, torch.tensor([[0.0, 1.0, 0.0]], dtype=torch.float64)])
    opt = BayesianOptimizer(Sphere(2), q=3, initial_points=three, journal=journal, **FAST)
    batch = opt.ask()
    opt.tell(batch[:1], batch[:1, 2])  # the run stops after the first of the three
    opt.close()
    header = json.loads(journal.read_text().splitlines()[0])
    assert header["config"]["initial_points"] == three.tolist()
    resumed = BayesianOptimizer.resume(journal)
    assert resumed.config["initial_points"] == three.tolist()
    assert resumed.pending.tolist() == three[1:].tolist()
    assert resumed.ask().tolist() == three[1:].tolist()
    resumed.close()


def test_a_resume_with_other_initial_points_is_refused_naming_both(tmp_path):
    journal = tmp_path / "run.jsonl"
    minimize(
        _Recorder(), Sphere(2), budget=5, initial_points=POINTS, journal=journal, progress=False,
        **FAST,
    )  # fmt: skip
    with pytest.raises(
        ConfigurationError,
        match=r"initial_points: 2 points .* in the journal, "
        r"1 point \[\[0\.0, 0\.0, 1\.0\]\] now",
    ):
        minimize(
            _Recorder(), Sphere(2), budget=6, initial_points=POINTS[:1], journal=journal,
            resume=True, progress=False,
        )  # fmt: skip
    objective = _Recorder()
    minimize(
        objective, Sphere(2), budget=6, initial_points=POINTS, journal=journal, resume=True,
        progress=False, **FAST,
    )  # fmt: skip
    assert len(objective.calls) == 1  # the initial points are not evaluated a second time


def test_a_journal_without_initial_points_in_its_header_resumes_as_a_run_without_them(tmp_path):
    journal = tmp_path / "run.jsonl"
    minimize(_Recorder(), Sphere(2), budget=5, journal=journal, progress=False)
    lines = journal.read_text().splitlines()
    header = json.loads(lines[0])
    del header["config"]["initial_points"]  # as an earlier version of manibo wrote it
    journal.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    resumed = BayesianOptimizer.resume(journal)
    assert resumed.config["initial_points"] is None and len(resumed.history) == 5
    resumed.close()


@pytest.mark.parametrize(
    ("points", "expected"),
    [
        ([[0.0, 0.0, 1.0]], r"must be a torch.Tensor or a NumPy array, got list"),
        (torch.tensor([[0.0, 0.0, 2.0]]), r"points off Sphere\(2\)"),
        (torch.zeros(0, 3), r"shape \(k, 3\) with k >= 1, got \(0, 3\)"),
        (torch.tensor([[0, 0, 1]]), r"floating dtype, got torch.int64"),
        (torch.ones(2, 4), r"shape \(\*batch, 3\) for points of Sphere\(2\), got \(2, 4\)"),
        (np.array([["a", "b", "c"]]), r"floating-point numbers, got a NumPy array of dtype <U1"),
    ],
    ids=["list", "off-the-space", "empty", "integer", "shape", "strings"],
)
def test_malformed_initial_points_are_refused_at_construction(points, expected):
    with pytest.raises(ConfigurationError, match=expected):
        BayesianOptimizer(Sphere(2), initial_points=points)


def test_a_budget_below_the_number_of_initial_points_is_refused_before_any_evaluation(tmp_path):
    objective = _Recorder()
    six = Sphere(2).random(6, generator=0)
    journal = tmp_path / "run.jsonl"
    with pytest.raises(
        ConfigurationError,
        match=r"`budget` \(5\) must be at least the number "
        r"of `initial_points` \(6\)",
    ):
        minimize(objective, Sphere(2), budget=5, initial_points=six, journal=journal)  # fmt: skip
    assert objective.calls == [] and not journal.exists()
    # said first, before the initial design's own check (whose advice would not be enough)
    with pytest.raises(ConfigurationError, match=r"number of `initial_points` \(3\)"):
        minimize(objective, Sphere(2), budget=2, initial_points=six[:3])
    opt = BayesianOptimizer(Sphere(2), initial_points=six[:3])
    with pytest.raises(ConfigurationError, match=r"number of `initial_points` \(3\)"):
        opt.run(objective, budget=2)


def test_repeated_initial_points_of_a_finite_space_are_refused_unless_repeats_are_allowed():
    graph = Graph(torch.ones(6, 6) - torch.eye(6))
    repeated = torch.tensor([[1.0], [2.0], [1.0]], dtype=torch.float64)
    with pytest.raises(ConfigurationError, match=r"rows \[2\] repeat earlier rows"):
        BayesianOptimizer(graph, initial_points=repeated)
    opt = BayesianOptimizer(graph, initial_points=repeated, exclude_evaluated=False)
    assert opt.ask(3).tolist() == repeated.tolist()


def test_on_a_finite_space_the_random_design_skips_the_initial_points():
    path = Graph.from_edges(np.array([[i, i + 1] for i in range(5)]), 6)
    seen = []

    def node(x):
        seen.append(int(x.item()))
        return float(x.item())

    given = torch.tensor([[0.0], [1.0], [2.0]], dtype=torch.float64)
    minimize(node, path, budget=6, seed=0, initial_design=6, initial_points=given, progress=False)
    assert sorted(seen) == list(range(6))  # the seed's design repeated nodes 1 and 0


def test_told_points_of_a_finite_space_are_skipped_by_the_random_design():
    path = Graph.from_edges(np.array([[i, i + 1] for i in range(5)]), 6)
    opt = BayesianOptimizer(path, seed=0, initial_design=6)
    told = torch.tensor([[0.0], [1.0], [2.0]], dtype=torch.float64)
    opt.tell(told, told[:, 0])
    assert sorted(opt.ask(3).flatten().tolist()) == [3.0, 4.0, 5.0]


def test_telling_the_initial_points_back_costs_no_distance_to_every_pending_point(monkeypatch):
    import manibo.loop

    calls = []
    nearest = manibo.loop._nearest
    monkeypatch.setattr(manibo.loop, "_nearest", lambda *a: calls.append(1) or nearest(*a))
    points = Sphere(2).random(50, generator=0)
    opt = BayesianOptimizer(Sphere(2), initial_points=points)
    for _ in range(50):
        x = opt.ask()
        opt.tell(x, x[:, 2])
    assert calls == []  # each told point equals its pending point: found by its coordinates
    x = opt.ask()
    opt.tell(Sphere(2).project(x + 1e-9), x[:, 2])  # rounded by the caller: by distance
    assert len(calls) == 1 and opt.pending is None


def test_a_resume_before_any_tell_hands_out_each_initial_point_once(tmp_path):
    journal = tmp_path / "run.jsonl"
    opt = BayesianOptimizer(Sphere(2), q=2, initial_points=POINTS, journal=journal, **FAST)
    assert opt.ask().tolist() == POINTS.tolist()  # asked, never told: then the run stops
    opt.close()
    resumed = BayesianOptimizer.resume(journal)
    assert resumed.pending.tolist() == POINTS.tolist()  # once each, not the journal's and ours
    resumed.close()


def test_asked_initial_points_of_a_finite_space_are_skipped_by_the_random_design():
    path = Graph.from_edges(np.array([[i, i + 1] for i in range(5)]), 6)
    given = torch.tensor([[0.0], [1.0], [2.0]], dtype=torch.float64)
    for seed in range(4):
        opt = BayesianOptimizer(path, q=3, seed=seed, initial_design=6, initial_points=given)
        opt.ask()  # the initial points, handed out and not told yet
        assert sorted(opt.ask().flatten().tolist()) == [3.0, 4.0, 5.0]
