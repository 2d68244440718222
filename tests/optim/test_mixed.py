"""Products with finite factors: the ascent alternates with enumeration of the finite
coordinates, which the ascent alone cannot move."""

import torch
from botorch.acquisition import PosteriorMean, qKnowledgeGradient

import manibo.optim.optimize as optimize_module
from manibo.models import build_surrogate
from manibo.optim import LBFGSOptions, optimize_acqf_on_space
from manibo.optim.mixed import alternate
from manibo.spaces import Box, Categorical, Circle, Graph, Integers, ProductSpace, Sphere
from manibo.spaces.product import setting_coordinates

TARGET = torch.tensor([0.0, 0.6, 0.8], dtype=torch.float64)


def mixed_space():
    return ProductSpace(Sphere(2), Integers(0, 20), Categorical(3))


def closed_form_objective(x):
    """Batches (b, q, 5) of sphere × integers × choices to values (b,): each point scores
    -|s - TARGET|^2 - (n - 13)^2 / 50 + [c = 2], maximal at (TARGET, 13, 2)."""
    s, n, c = x[..., :3], x[..., 3], x[..., 4]
    score = -((s - TARGET) ** 2).sum(-1) - (n - 13) ** 2 / 50 + (c.round() == 2).to(x)
    return score.sum(-1)


def test_setting_coordinates_of_nested_products():
    space = ProductSpace(Sphere(2), ProductSpace(Circle(), Integers(0, 3)), Categorical(3))
    found = setting_coordinates(space)
    assert [(part.start, part.stop, type(f)) for part, f in found] == [
        (4, 5, Integers),
        (5, 6, Categorical),
    ]
    assert setting_coordinates(Sphere(2)) == []
    nodes = Graph(torch.ones(3, 3, dtype=torch.float64) - torch.eye(3, dtype=torch.float64))
    assert setting_coordinates(ProductSpace(Sphere(2), nodes)) == []  # a domain, not settings
    all_finite = setting_coordinates(ProductSpace(Integers(0, 3), Categorical(2)))
    assert [(part.start, part.stop, type(f)) for part, f in all_finite] == [
        (0, 1, Integers),
        (1, 2, Categorical),
    ]


def test_alternation_reaches_the_closed_form_optimum_of_every_point():
    space = mixed_space()
    start = torch.tensor([[1.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, -1.0, 20.0, 1.0]])
    start = start.to(torch.float64)
    value = closed_form_objective(start[None])[0]
    batch, best = alternate(closed_form_objective, space, start, value, LBFGSOptions(maxiter=50))
    assert batch[:, 3].tolist() == [13.0, 13.0] and batch[:, 4].tolist() == [2.0, 2.0]
    assert (batch[:, :3] - TARGET).abs().max() < 1e-5
    assert best == closed_form_objective(batch[None])[0] and best > value


def test_only_the_first_rows_are_enumerated_and_a_nan_start_value_counts_as_the_worst():
    """qKnowledgeGradient's fantasy points follow its candidates in the one-shot batch: only the
    candidates are enumerated (the 16 fantasies of each made a proposal on 10,000 integers run
    for minutes). A batch whose value is NaN is improved rather than kept."""
    space = mixed_space()
    start = torch.tensor([[1.0, 0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 20.0, 1.0]]).double()
    batch, _ = alternate(
        closed_form_objective, space, start, torch.tensor(float("nan")), LBFGSOptions(maxiter=50), 1
    )
    assert batch[0, 3:].tolist() == [13.0, 2.0] and batch[1, 3:].tolist() == [20.0, 1.0]


def _box_and_integers():
    return ProductSpace(Box([0.0], [10.0]), Integers(0, 10))


def test_a_nan_candidate_does_not_stop_the_enumeration():
    """-(i - 7)^2, NaN at i = 2: argmax picked the NaN, and nothing moved."""

    def objective(x):
        i = x[..., 1]
        return torch.where(i == 2, torch.nan, -((i - 7) ** 2)).sum(-1)

    start = torch.tensor([[5.0, 0.0]], dtype=torch.float64)
    batch, value = alternate(objective, _box_and_integers(), start, objective(start[None])[0])
    assert batch[0, 1] == 7 and value == 0


def test_rounds_alternate_until_neither_step_gains():
    """-(x - i)^2 - (i - 7)^2 from (0, 0): the integer and the box coordinate pull each other up
    to (7, 7) over several rounds; one round stopped at (3, 3)."""

    def objective(x):
        return (-((x[..., 0] - x[..., 1]) ** 2) - (x[..., 1] - 7) ** 2).sum(-1)

    start = torch.zeros(1, 2, dtype=torch.float64)
    batch, value = alternate(objective, _box_and_integers(), start, objective(start[None])[0])
    assert batch[0, 1] >= 6 and value >= -1


def test_a_batch_at_the_optimum_costs_no_ascent(monkeypatch):
    import manibo.optim.mixed as mixed

    ascents = []
    ascend = mixed.riemannian_lbfgs_ascent
    monkeypatch.setattr(
        mixed, "riemannian_lbfgs_ascent", lambda *a, **k: ascents.append(1) or ascend(*a, **k)
    )
    optimum = torch.cat([TARGET, torch.tensor([13.0, 2.0], dtype=torch.float64)])[None]
    alternate(
        closed_form_objective, mixed_space(), optimum, closed_form_objective(optimum[None])[0]
    )
    assert ascents == []


def test_one_shot_knowledge_gradient_enumerates_its_candidates_only(monkeypatch):
    space = mixed_space()
    X = space.random(12, generator=torch.Generator().manual_seed(1))
    model = build_surrogate("matern", space, X, closed_form_objective(X[:, None])[:, None])
    calls = []

    def spy(objective, space, batch, value, options=None, rows=None):
        calls.append((batch.shape[0], rows))
        return alternate(objective, space, batch, value, options, rows)

    monkeypatch.setattr(optimize_module, "alternate", spy)
    acquisition = qKnowledgeGradient(model, num_fantasies=4)
    x, _ = optimize_acqf_on_space(
        acquisition, space, q=2, num_restarts=2, raw_samples=8, options=LBFGSOptions(maxiter=5)
    )
    assert calls == [(6, 2)] and x.shape == (2, 5)


def test_the_optimiser_moves_the_setting_coordinates_of_its_starts():
    """From a start at the wrong integer and choice, the candidate's finite coordinates are each
    the best for the surrogate's mean with the other coordinates held (checked by enumerating
    them here), and near the truth's optimum (13, 2)."""
    space = mixed_space()
    X = space.random(80, generator=torch.Generator().manual_seed(0))
    Y = closed_form_objective(X[:, None])[:, None]
    model = build_surrogate("matern", space, X, Y)
    acquisition = PosteriorMean(model)
    start = torch.tensor([[[0.0, 0.6, 0.8, 0.0, 0.0]]], dtype=torch.float64)
    x, value = optimize_acqf_on_space(acquisition, space, batch_initial_conditions=start)
    with torch.no_grad():  # the value returned is the candidate's, after the enumeration
        assert torch.allclose(value, acquisition(x[None]).squeeze(), rtol=1e-6)
    for column, factor in ((3, space.factors[1]), (4, space.factors[2])):
        candidates = x.repeat(factor.all_points().shape[0], 1)
        candidates[:, column] = factor.all_points()[:, 0]
        with torch.no_grad():
            means = acquisition(candidates[:, None])
        assert x[0, column] == candidates[int(means.argmax()), column]
    assert abs(float(x[0, 3]) - 13) <= 1 and x[0, 4] == 2
