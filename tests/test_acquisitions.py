"""Acquisitions by name: the built-ins against closed forms, registration, analytic restrictions."""

import math

import pytest
import torch
from botorch.acquisition import PosteriorMean
from botorch.acquisition.utils import prune_inferior_points
from botorch.models import SingleTaskGP
from joint_sizes import record_joint_sizes
from scipy.stats import norm

import manibo
from manibo.acquisitions import (
    ACQUISITIONS,
    BASELINE_SIZE,
    MES_CANDIDATES,
    NIPV_POINTS,
    UCB_BETA,
    AcquisitionData,
    available_acquisitions,
    build_acquisition,
    check_acquisition,
    chooses_one_at_a_time,
    register_acquisition,
    screen_baseline,
)
from manibo.exceptions import ConfigurationError
from manibo.loop import BayesianOptimizer
from manibo.models import build_surrogate
from manibo.spaces import Sphere

BUILTINS = [
    "logei",
    "posterior-mean",
    "qkg",
    "qlogei",
    "qlognei",
    "qmes",
    "qnipv",
    "qsr",
    "qucb",
    "ucb",
]


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
        acqf = build_acquisition(name, model, X, Y, None, seed=0, space=Sphere(2))
        # one-shot knowledge gradient: the q-batch carries its fantasy points
        q = acqf.get_augmented_q_batch_size(1) if hasattr(acqf, "get_augmented_q_batch_size") else 1
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
    with pytest.raises(
        ConfigurationError,
        match=r"cannot account for pending points, and 1 point\(s\) are asked and not yet told; "
        "tell them before asking again",
    ):
        build_acquisition("logei", model, X, Y, X[:1], seed=0)


def test_entropy_search_and_variance_reduction_draw_their_points_on_the_space_by_seed(fitted):
    model, X, Y, _ = fitted
    space = Sphere(2)
    mes = [build_acquisition("qmes", model, X, Y, None, seed=s, space=space) for s in (0, 0, 1)]
    candidates = [acqf.candidate_set for acqf in mes]
    assert candidates[0].shape == (12 + MES_CANDIDATES, 3)
    torch.testing.assert_close(candidates[0][-12:], X)  # the evaluated points among them
    torch.testing.assert_close(
        candidates[0].norm(dim=-1), torch.ones(12 + MES_CANDIDATES, dtype=X.dtype)
    )
    assert torch.equal(candidates[0], candidates[1]) and not torch.equal(
        candidates[0], candidates[2]
    )
    nipv = build_acquisition("qnipv", model, X, Y, None, seed=0, space=space)
    assert nipv.mc_points.shape == (NIPV_POINTS, 3)
    torch.testing.assert_close(nipv.mc_points.norm(dim=-1), torch.ones(NIPV_POINTS, dtype=X.dtype))
    assert chooses_one_at_a_time("qmes") and not chooses_one_at_a_time("qnipv")
    with pytest.raises(ConfigurationError, match="called without `space=`; pass the space"):
        build_acquisition("qnipv", model, X, Y, None, seed=0)


def test_entropy_search_draws_maxima_over_the_evaluated_points_of_a_network_surrogate_too():
    """GPNet holds no ``train_inputs``, from which BoTorch would add the evaluated points."""
    space = Sphere(2)
    X = space.random(12, generator=3)
    model = build_surrogate("gpnet", space, X, X[:, :1], num_iterations=1)
    acqf = build_acquisition("qmes", model, X, X[:, :1], None, seed=0, space=space)
    assert acqf.candidate_set.shape == (MES_CANDIDATES + 12, 3)
    torch.testing.assert_close(acqf.candidate_set[-12:], X)


def test_entropy_search_draws_maxima_over_the_evaluated_points_that_can_be_the_best():
    # every evaluated point joined the candidate set, whose joint posterior VISH refused from
    # about 9,400 evaluations (1000 + 9,500 points need 4.1 GiB while they are built)
    space = Sphere(2)
    X = space.random(1200, generator=5)
    Y = X[:, :1] + 0.05 * torch.randn(1200, 1, generator=torch.Generator().manual_seed(5))
    model = build_surrogate("vish", space, X, Y.double())
    acqf = build_acquisition("qmes", model, X, Y.double(), None, seed=0, space=space)
    kept = screen_baseline(model, X)
    assert kept.shape[0] <= BASELINE_SIZE < 1200
    assert acqf.candidate_set.shape == (MES_CANDIDATES + kept.shape[0], 3)
    torch.testing.assert_close(acqf.candidate_set[MES_CANDIDATES:], kept)


def test_the_loop_chooses_a_max_value_entropy_batch_one_point_at_a_time():
    space = Sphere(2)
    north = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    result = manibo.minimize(
        lambda x: float((x - north).square().sum()), space, budget=11, acquisition="qmes",
        q=3, initial_design=5, seed=0, progress=False,
    )  # fmt: skip
    assert result.num_evaluations == 11 and result.best_y < 0.05  # 1 - cos(0.22 rad)
    with pytest.raises(ConfigurationError, match="chooses q = 2 points one at a time"):
        BayesianOptimizer(space, acquisition="qmes", q=2, optimizer="projection")


@pytest.mark.parametrize("seed", [0, 1])
def test_integrated_variance_reduction_spreads_its_batch_away_from_the_data(seed):
    """Five points and three proposals on S²: eight points can be 1.31 rad apart (Tammes), the
    proposals keep at least 0.9 rad from every other point (uniform points: 0.25-0.8 rad)."""
    space = Sphere(2)
    opt = BayesianOptimizer(space, acquisition="qnipv", q=3, initial_design=5, seed=seed)
    X = space.random(5, generator=seed)
    opt.tell(X, X[:, 0])
    points = torch.cat([X, opt.ask()])
    angles = torch.arccos((points @ points.T).clamp(-1, 1)).fill_diagonal_(math.pi)
    assert angles[5:].min() > 0.9


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
def test_a_builder_that_returns_no_acquisition_function_is_refused_at_construction():
    @register_acquisition("test-returns-none")
    def returns_none(model, data):
        return None

    with pytest.raises(
        ConfigurationError,
        match=r"the builder of the acquisition 'test-returns-none' \(.*returns_none\) returned "
        r"NoneType, not a BoTorch AcquisitionFunction",
    ):
        BayesianOptimizer(Sphere(2), acquisition="test-returns-none")


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


def _many_noisy_points(n: int):
    """A GP with fixed hyperparameters (no fit) on ``n`` noisy points of a function in R^2."""
    X = torch.rand(n, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    noise = 0.1 * torch.randn(n, 1, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    Y = torch.sin(3 * X[:, :1]) * torch.cos(2 * X[:, 1:]) + noise
    model = SingleTaskGP(X, Y)
    model.likelihood.noise = 0.01
    model.covar_module.lengthscale = 0.3
    return model.eval(), X, Y


def test_qlognei_never_asks_for_the_joint_posterior_of_more_than_the_baseline_size():
    # BoTorch prunes qLogNEI's baseline with the joint posterior of every point: n x n (3.2 GB at
    # 20,000 points); the loop's builder screens them by their marginals first
    model, X, Y = _many_noisy_points(BASELINE_SIZE + 200)
    joint_sizes = record_joint_sizes(model)
    acqf = build_acquisition("qlognei", model, X, Y, None, seed=0)
    assert max(joint_sizes) <= BASELINE_SIZE
    assert 0 < acqf.X_baseline.shape[0] <= BASELINE_SIZE


def test_the_screen_keeps_every_point_that_pruning_the_whole_set_keeps():
    model, X, Y = _many_noisy_points(600)
    screened = screen_baseline(model, X, max_points=100)
    assert screened.shape[0] < 600
    with torch.no_grad():
        mean = model.posterior(X).mean.squeeze(-1)
        sd = model.posterior(X).variance.squeeze(-1).sqrt()
    # what the screen left out: upper bound below the best lower bound (closed-form rule)
    kept = (X.unsqueeze(1) == screened.unsqueeze(0)).all(-1).any(-1)
    assert bool(((mean + 4 * sd)[~kept] < (mean - 4 * sd).max()).all())
    assert bool(((mean + 4 * sd)[kept] >= (mean - 4 * sd).max()).all())
    # BoTorch's pruning of all 600 points (joint draws) keeps nothing the screen left out
    torch.manual_seed(0)
    pruned = prune_inferior_points(model, X)
    assert bool((pruned.unsqueeze(1) == screened.unsqueeze(0)).all(-1).any(-1).all())


def test_the_screen_keeps_small_sets_whole_and_caps_large_ones_by_upper_bound():
    model, X, Y = _many_noisy_points(300)
    assert screen_baseline(model, X, max_points=300) is X
    # with sds so wide that every point passes, the cap keeps the highest upper bounds
    capped = screen_baseline(model, X, max_points=20, sds=1e6)
    with torch.no_grad():
        posterior = model.posterior(X)
        upper = posterior.mean.squeeze(-1) + 1e6 * posterior.variance.squeeze(-1).sqrt()
    expected = X[torch.isin(torch.arange(300), upper.topk(20).indices)]
    assert torch.equal(capped, expected)


@pytest.mark.usefixtures("private_registry")
def test_a_misspelt_required_feature_is_refused_when_the_acquisition_is_registered():
    with pytest.raises(
        ConfigurationError,
        match=r"unknown feature\(s\) \['fantasise'\] in `required_features` of the acquisition "
        r"'test-misspelt'; the features are fantasize, ",
    ):
        register_acquisition("test-misspelt", required_features=("fantasise",))
    assert "test-misspelt" not in ACQUISITIONS._objects


@pytest.mark.usefixtures("private_registry")
def test_a_name_taken_twice_says_an_acquisition_not_a_acquisition():
    with pytest.raises(ConfigurationError, match=r"^an acquisition named 'qlognei' is already"):
        register_acquisition("qlognei")(lambda model, data: None)


@pytest.mark.usefixtures("private_registry")
def test_a_one_point_acquisition_registered_without_analytic_says_so_at_q_2():
    @register_acquisition("test-forgot-analytic")
    def forgot(model, data):
        return PosteriorMean(model)

    with pytest.raises(
        ConfigurationError,
        match=r"^the acquisition 'test-forgot-analytic' cannot be built on the surrogate 'matern' "
        r"on Sphere\(2\): AssertionError: .*registered without analytic=True, so q = 2 reached "
        r"it: register it with register_acquisition\(\.\.\., analytic=True\)",
    ):
        BayesianOptimizer(Sphere(2), acquisition="test-forgot-analytic", q=2)
