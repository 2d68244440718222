"""Acquisition optimisation on spaces: candidates on the space, q > 1, discrete spaces."""

import math
import warnings

import pytest
import torch
from botorch.acquisition import (
    AcquisitionFunction,
    LogExpectedImprovement,
    PosteriorMean,
    UpperConfidenceBound,
    qKnowledgeGradient,
    qLogExpectedImprovement,
    qLogNoisyExpectedImprovement,
    qSimpleRegret,
    qUpperConfidenceBound,
)
from botorch.acquisition.max_value_entropy_search import (
    qLowerBoundMaxValueEntropy,
    qMaxValueEntropy,
)
from botorch.models.model import Model
from botorch.posteriors import GPyTorchPosterior
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.distributions import MultivariateNormal
from registry import SPACES

from manibo.exceptions import ConfigurationError, InputDataError, NonFiniteGradientWarning
from manibo.models import build_surrogate
from manibo.optim import LBFGSOptions, optimize_acqf_on_space
from manibo.optim.initial_conditions import initial_conditions_on_space

CONTINUOUS = [n for n in sorted(SPACES) if n not in ("graph", "mesh")]
FAST = LBFGSOptions(maxiter=8)
# every kind of step of the solver within three iterations: a scaled gradient step first, then
# L-BFGS steps from the stored pairs carried to the new point, each with its retracted line search
SHORT = LBFGSOptions(maxiter=3)


def _model(space, n=10, seed=0):
    gen = torch.Generator().manual_seed(seed)
    X = space.random(n, generator=gen)
    Y = -space.distance(X, X[:1]).unsqueeze(-1)
    return build_surrogate("matern", space, X, Y), X, Y


def _acquisitions(model, X, Y):
    sampler = SobolQMCNormalSampler(torch.Size([16]), seed=0)
    return {
        "logei": (LogExpectedImprovement(model, best_f=Y.max()), 1),
        "ucb": (UpperConfidenceBound(model, beta=2.0), 1),
        "posterior_mean": (PosteriorMean(model), 1),
        "qlogei": (qLogExpectedImprovement(model, best_f=Y.max(), sampler=sampler), 2),
        "qlognei": (
            qLogNoisyExpectedImprovement(model, X_baseline=X, sampler=sampler, cache_root=False),
            2,
        ),
        "qucb": (qUpperConfidenceBound(model, beta=2.0, sampler=sampler), 2),
        "qsr": (qSimpleRegret(model, sampler=sampler), 1),
        "qkg": (qKnowledgeGradient(model, num_fantasies=3), 1),
    }


@pytest.mark.parametrize("name", CONTINUOUS)
def test_candidates_lie_on_space_for_every_acquisition(name):
    space = SPACES[name]()
    model, X, Y = _model(space)
    calls = []
    original = model.posterior

    def watched(*args, **kwargs):  # every point the optimiser shows the model lies on the space
        X = args[0] if args else kwargs["X"]
        space.check(X.detach().reshape(-1, *space.point_shape), "model input")
        calls.append(1)
        return original(*args, **kwargs)

    model.posterior = watched
    for label, (acqf, q) in _acquisitions(model, X, Y).items():
        candidates, value = optimize_acqf_on_space(
            acqf, space, q=q, num_restarts=2, raw_samples=16, options=SHORT, seed=0
        )
        assert candidates.shape == (q, *space.point_shape), label
        space.check(candidates, f"{label} candidates")
        assert torch.isfinite(value).all(), label
    assert calls


def test_candidates_on_sphere_to_1e10_and_beat_dense_search():
    space = SPACES["sphere2"]()
    model, X, Y = _model(space, n=15)
    acqf = LogExpectedImprovement(model, best_f=Y.max())
    candidate, value = optimize_acqf_on_space(acqf, space, seed=0)
    assert float((candidate.norm(dim=-1) - 1).abs().max()) < 1e-10
    dense = space.random(20000, generator=torch.Generator().manual_seed(5)).unsqueeze(1)
    with torch.no_grad():
        best_dense = max(float(acqf(chunk).max()) for chunk in dense.split(4000))
    assert float(value) >= best_dense - 1e-6


@pytest.mark.parametrize("sequential", [False, True])
def test_q_batch_returns_distinct_points(sequential):
    space = SPACES["sphere2"]()
    model, X, Y = _model(space, n=12)
    acqf = qLogExpectedImprovement(
        model, best_f=Y.max(), sampler=SobolQMCNormalSampler(torch.Size([64]), seed=0)
    )
    candidates, values = optimize_acqf_on_space(acqf, space, q=3, sequential=sequential, seed=0)
    assert candidates.shape == (3, 3)
    gaps = space.distance(candidates.unsqueeze(1), candidates.unsqueeze(0))
    assert float(gaps[~torch.eye(3, dtype=torch.bool)].min()) > 1e-3
    assert acqf.X_pending is None  # sequential mode restores the caller's pending points


class _TabulatedAcquisition(AcquisitionFunction):
    """A known function of the node/vertex index: the discrete optimiser must find its argmax."""

    def __init__(self, model, values):
        super().__init__(model)
        self.values = values
        self.X_pending = None

    def forward(self, X):
        return self.values[X[..., 0].round().long()].sum(-1)


@pytest.mark.parametrize("name", ["graph", "mesh"])
def test_discrete_optimiser_finds_exact_maximiser(name):
    space = SPACES[name]()
    model, _, _ = _model(space)
    points = space.all_points()
    values = torch.sin(3.0 * points[:, 0]) + 0.01 * points[:, 0]
    acqf = _TabulatedAcquisition(model, values)
    best, _ = optimize_acqf_on_space(acqf, space, q=1, max_batch_size=5)
    assert int(best[0, 0]) == int(torch.argmax(values))
    excluded, _ = optimize_acqf_on_space(acqf, space, q=1, exclude=best)
    second = values.clone()
    second[int(best[0, 0])] = -float("inf")
    assert int(excluded[0, 0]) == int(torch.argmax(second))
    pair, _ = optimize_acqf_on_space(acqf, space, q=2)
    assert len(set(pair[:, 0].tolist())) == 2


def test_bad_configuration():
    space = SPACES["sphere2"]()
    model, X, Y = _model(space)
    acqf = PosteriorMean(model)
    with pytest.raises(ConfigurationError, match="q"):
        optimize_acqf_on_space(acqf, space, q=0)
    with pytest.raises(ConfigurationError, match="raw_samples"):
        optimize_acqf_on_space(acqf, space, num_restarts=10, raw_samples=5)
    with pytest.raises(ConfigurationError, match="discrete"):
        optimize_acqf_on_space(acqf, space, exclude=X[:1])


def test_given_starts_replace_raw_samples_and_are_validated():
    from manibo.spaces import Sphere

    space = Sphere(2)
    model, _, _ = _model(space, n=8)
    acqf = UpperConfidenceBound(model, beta=0.1)
    starts = space.random(3, generator=torch.Generator().manual_seed(5)).unsqueeze(1)
    candidate, value = optimize_acqf_on_space(
        acqf, space, batch_initial_conditions=starts, options=FAST
    )
    space.check(candidate)
    with torch.no_grad():
        assert float(value) >= float(acqf(starts).max()) - 1e-9  # ascent ends above its starts
    with pytest.raises(InputDataError, match="batch_initial_conditions"):
        optimize_acqf_on_space(acqf, space, batch_initial_conditions=starts[:, 0])
    with pytest.raises(InputDataError, match="off Sphere"):
        optimize_acqf_on_space(acqf, space, batch_initial_conditions=2 * starts)
    with pytest.raises(ConfigurationError, match="joint"):
        optimize_acqf_on_space(acqf, space, q=2, sequential=True, batch_initial_conditions=starts)


class _CloseTo(AcquisitionFunction):
    """An acquisition without a model: the mean cosine of q points to a target (most at it)."""

    def __init__(self, target):
        super().__init__(model=None)
        self.target = target

    def forward(self, X):
        return (X @ self.target).mean(-1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_an_acquisition_without_a_model_takes_its_dtype_from_the_starts(dtype):
    from manibo.spaces import Sphere

    space = Sphere(2)
    target = torch.tensor([0.0, 0.6, 0.8], dtype=dtype)
    starts = space.random(2 * 3, generator=torch.Generator().manual_seed(1)).reshape(2, 3, 3)
    candidate, _ = optimize_acqf_on_space(
        _CloseTo(target),
        space,
        q=3,
        batch_initial_conditions=starts.to(dtype),
        options=LBFGSOptions(maxiter=30),
    )
    assert candidate.dtype == dtype and candidate.shape == (3, 3)
    assert torch.allclose(candidate, target.expand(3, 3), atol=1e-2)
    with pytest.raises(ConfigurationError, match="batch_initial_conditions"):
        optimize_acqf_on_space(_CloseTo(target), space)  # no model, no starts: no dtype to take


class _NanAtThePole(AcquisitionFunction):
    """The first coordinate, but NaN within 0.1 of the north pole."""

    def __init__(self):
        super().__init__(model=None)

    def forward(self, X):
        value = X[..., 0].mean(-1)
        return torch.where(X[..., 2].amax(-1) > 0.995, torch.nan, value)


def test_a_restart_stuck_at_a_nan_value_is_never_the_answer():
    # argmax treats NaN as the largest value: the restart frozen at the NaN once won
    from manibo.spaces import Sphere

    starts = torch.tensor([[[0.0, 0.0, 1.0]], [[0.6, 0.0, 0.8]]], dtype=torch.float64)
    with pytest.warns(NonFiniteGradientWarning, match=r"1 of 2 restart\(s\)"):
        candidate, value = optimize_acqf_on_space(
            _NanAtThePole(), Sphere(2), batch_initial_conditions=starts, options=FAST
        )
    assert bool(torch.isfinite(value)) and float(value) > 0.6
    assert float(candidate[0, 2]) < 0.995


class _InfiniteSlopeAtThePole(AcquisitionFunction):
    """The first coordinate plus 0.01 sqrt(1 - z): finite values, a gradient that is not finite at
    the north pole."""

    def __init__(self):
        super().__init__(model=None)

    def forward(self, X):
        return (X[..., 0] + 0.01 * (1 - X[..., 2]).clamp_min(0).sqrt()).sum(-1)


def test_restarts_with_gradients_that_are_not_finite_are_reported_and_the_others_answer():
    # Before, such restarts stayed at their starts without a word; when every start was one, the
    # answer was a start (the chart GP at a pole of S² gave NaN gradients, and its UCB ascent
    # returned its start [0, 0, 1]).
    from manibo.spaces import Sphere

    pole, other = [0.0, 0.0, 1.0], [0.6, 0.0, 0.8]
    starts = torch.tensor([[pole], [other], [pole]], dtype=torch.float64)
    acquisition = _InfiniteSlopeAtThePole()
    message = r"2 of 3 restart\(s\) .* not finite .* 2 of them at their start"
    with pytest.warns(NonFiniteGradientWarning, match=message):
        candidate, value = optimize_acqf_on_space(
            acquisition, Sphere(2), batch_initial_conditions=starts, options=FAST
        )
    assert float(value) > 0.99 and float(candidate[0, 0]) > 0.99
    with pytest.warns(NonFiniteGradientWarning, match=r"1 of 1 restart\(s\)"):
        candidate, value = optimize_acqf_on_space(
            acquisition, Sphere(2), batch_initial_conditions=starts[:1], options=FAST
        )
    assert candidate.tolist() == [pole] and float(value) == 0.0


class _LinearAcquisition(AcquisitionFunction):
    """d·u + slope·h on S² x [0, 1]: maximised at u = d and at the upper bound of the height."""

    def __init__(self, model, direction, slope):
        super().__init__(model)
        self.direction, self.slope = direction, slope
        self.X_pending = None

    def forward(self, X):
        return (X[..., :3] @ self.direction + self.slope * X[..., 3]).sum(-1)


def test_a_box_factor_is_respected_and_its_bound_reached():
    from manibo.spaces import Box, ProductSpace, Sphere

    space = ProductSpace(Sphere(2), Box([0.0], [1.0]))
    model, _, _ = _model(space)
    direction = torch.tensor([0.6, 0.0, 0.8], dtype=torch.float64)
    for slope, height in ((2.0, 1.0), (-2.0, 0.0)):
        acqf = _LinearAcquisition(model, direction, slope)
        calls = []
        original = acqf.forward

        def watched(X, original=original, calls=calls):
            space.check(X.detach().reshape(-1, 4), "acquisition input")
            calls.append(1)
            return original(X)

        acqf.forward = watched
        candidate, value = optimize_acqf_on_space(acqf, space, num_restarts=4, seed=0)
        assert float(candidate[0, 3]) == height  # exactly on the face, not past it
        assert torch.allclose(candidate[0, :3], direction, atol=1e-5)
        assert abs(float(value) - (1.0 + max(slope, 0.0))) < 1e-8 and calls


def test_a_seed_fixes_the_starts_whatever_the_global_generator_and_leaves_it_alone():
    """BoTorch's Boltzmann selection draws from torch's global generator: with a seed, the starts
    (and so the candidates) are the same after any global seeding, and the global state after the
    call is the one before it."""
    space = SPACES["sphere2"]()
    model, _, _ = _model(space)
    acqf = UpperConfidenceBound(model, beta=4.0)
    args = (acqf, space, 1, 4, 32, torch.float64, torch.device("cpu"))
    starts, candidates = [], []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        state = torch.get_rng_state()
        starts.append(initial_conditions_on_space(*args, seed=0))
        candidates.append(optimize_acqf_on_space(acqf, space, 1, 4, 32, options=FAST, seed=0)[0])
        assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(starts[0], starts[1]) and torch.equal(candidates[0], candidates[1])
    # the selection is random: another seed keeps other starts (the best raw sample aside)
    assert not torch.equal(initial_conditions_on_space(*args, seed=1), starts[0])


def test_acquisitions_of_one_point_are_refused_for_q_above_1_before_optimising():
    """Whatever BoTorch refuses at q = 2 (its forward asserts q = 1) is refused up front with what
    to do: sequential=True where pending points are taken (qMES), q = 1 or a Monte Carlo
    acquisition where they are not (analytic); acquisitions that take q = 2 are not refused."""
    space = SPACES["sphere2"]()
    model, X, Y = _model(space)
    cands = space.random(50, generator=torch.Generator().manual_seed(2))
    acquisitions = {name: acqf for name, (acqf, _) in _acquisitions(model, X, Y).items()}
    acquisitions["qmes"] = qMaxValueEntropy(model, cands)
    acquisitions["qlbmes"] = qLowerBoundMaxValueEntropy(model, cands)
    pair = space.random(2, generator=torch.Generator().manual_seed(3)).unsqueeze(0)
    refused = set()
    for name, acqf in acquisitions.items():
        try:
            acqf(pair if name != "qkg" else torch.cat([pair] * 2, dim=1))
            one_point = False
        except AssertionError as error:
            assert "q=1" in str(error)
            one_point = True
        if not one_point:
            continue
        advice = "sequential=True" if name in ("qmes", "qlbmes") else "use q=1"
        with pytest.raises(ConfigurationError, match=f"q = 2 points were asked.*{advice}"):
            optimize_acqf_on_space(acqf, space, q=2, num_restarts=2, raw_samples=4)
        refused.add(name)
    assert refused == {"logei", "ucb", "posterior_mean", "qmes", "qlbmes"}
    for name in ("qmes", "qlbmes"):  # sequential works for them
        sequential = optimize_acqf_on_space(
            acquisitions[name], space, 2, 2, 8, sequential=True, options=FAST, seed=0
        )[0]
        space.check(sequential)
    with pytest.raises(ConfigurationError, match="takes no pending points"):
        optimize_acqf_on_space(acquisitions["logei"], space, q=2, sequential=True)


class _PlainTensorModel(Model):
    """A BoTorch model keeping its tensors as plain attributes: no ``train_inputs``, parameters
    or buffers. Posterior: mean ``X @ w``, independent unit variances."""

    def __init__(self, w):
        super().__init__()
        self.w = w

    @property
    def num_outputs(self):
        return 1

    @property
    def batch_shape(self):
        return torch.Size([])

    def posterior(self, X, output_indices=None, observation_noise=False, **kwargs):
        mean = X @ self.w
        cov = torch.eye(X.shape[-2], dtype=X.dtype, device=X.device).expand(*mean.shape, -1)
        return GPyTorchPosterior(MultivariateNormal(mean, cov))


def test_a_model_without_tensors_of_its_own_takes_the_reference_or_says_what_to_pass():
    from manibo.optim.projection import optimize_acqf_by_projection
    from manibo.spaces import Sphere

    space = Sphere(2)
    target = torch.tensor([0.0, 0.6, 0.8], dtype=torch.float64)
    acqf = PosteriorMean(_PlainTensorModel(target))
    with pytest.raises(ConfigurationError, match="has no `train_inputs`.*Pass `reference=`"):
        optimize_acqf_on_space(acqf, space)
    with pytest.raises(ConfigurationError, match="Pass `reference=`"):
        optimize_acqf_by_projection(acqf, space)
    reference = torch.zeros(1, 3, dtype=torch.float64)
    candidate, _ = optimize_acqf_on_space(acqf, space, reference=reference, seed=0)
    assert candidate.dtype == torch.float64
    assert torch.allclose(candidate[0], target, atol=1e-4)  # the maximiser of X @ w on S²
    candidate, _ = optimize_acqf_by_projection(acqf, space, reference=reference, seed=0)
    assert candidate.dtype == torch.float64 and candidate.shape == (1, 3)
    assert float(candidate[0] @ target) > 0.95  # a corner of the ambient box, projected


def test_the_candidates_of_a_botorch_model_list_take_its_training_inputs_dtype():
    from botorch.acquisition.objective import GenericMCObjective
    from botorch.models import ModelListGP, SingleTaskGP

    from manibo.optim.projection import optimize_acqf_by_projection
    from manibo.spaces import Sphere

    space = Sphere(2)
    X = space.random(6, generator=torch.Generator().manual_seed(2))
    Y = X[:, :1] + X[:, 1:2]
    models = ModelListGP(SingleTaskGP(X, Y), SingleTaskGP(X, -Y))  # train_inputs: [(X,), (X,)]
    acqf = qLogExpectedImprovement(
        models, best_f=0.5, objective=GenericMCObjective(lambda Z, X=None: Z.sum(-1))
    )
    for optimize in (optimize_acqf_on_space, optimize_acqf_by_projection):
        candidate, _ = optimize(acqf, space, q=1, num_restarts=2, raw_samples=16, seed=0)
        assert candidate.dtype == torch.float64 and candidate.shape == (1, 3)


def test_fixed_features_through_botorchs_wrapper_optimise_the_free_factor():
    # FixedFeatureAcquisitionFunction keeps its model on the acquisition it wraps: reading
    # `acq_function.model` raised a bare AttributeError before the designed advice
    from botorch.acquisition.fixed_feature import FixedFeatureAcquisitionFunction

    from manibo.spaces import Box, ProductSpace, Sphere

    space = ProductSpace(Sphere(2), Box([0.5], [3.0]))
    X = space.random(12, generator=torch.Generator().manual_seed(0))
    model = build_surrogate("matern", space, X, (X[:, :1] * X[:, 3:]).sin())
    inner = qLogNoisyExpectedImprovement(
        model, X, sampler=SobolQMCNormalSampler(torch.Size([16]), seed=0)
    )
    acqf = FixedFeatureAcquisitionFunction(inner, d=4, columns=[3], values=[2.0])
    candidates, value = optimize_acqf_on_space(
        acqf, Sphere(2), q=2, num_restarts=2, raw_samples=16, seed=0
    )
    Sphere(2).check(candidates)
    full = torch.cat([candidates, torch.full((2, 1), 2.0, dtype=torch.float64)], dim=-1)
    with torch.no_grad():
        assert torch.allclose(value, inner(full.unsqueeze(0))[0], atol=1e-10)
    # with pending points, sequential steps crashed inside the wrapper ("Sizes of tensors must
    # match"): it hands them out with 4 coordinates and takes back 3
    inner.set_X_pending(X[:2])
    with pytest.raises(ConfigurationError, match="sequential=False"):
        optimize_acqf_on_space(acqf, Sphere(2), q=2, sequential=True, num_restarts=2, seed=0)


def test_sequential_steps_keep_the_pending_points_of_an_incremental_qlognei():
    # incremental qLogNEI folds X_pending into its baseline and keeps X_pending None: the
    # sequential optimiser replaced them by its own choices at step 2 and, at the end, left the
    # acquisition without them (baseline of 3 rows down to 1), as BoTorch's optimize_acqf does
    from manibo.spaces import Sphere

    space = Sphere(2)
    generator = torch.Generator().manual_seed(0)
    X = space.random(10, generator=generator)
    pending = space.random(2, generator=generator)
    model = build_surrogate("matern", space, X, X[:, :1])
    acqf = qLogNoisyExpectedImprovement(
        model, X, sampler=SobolQMCNormalSampler(torch.Size([16]), seed=0), X_pending=pending
    )
    baseline = acqf.X_baseline.clone()
    assert torch.equal(baseline[-2:], pending)
    seen = []
    set_pending = acqf.set_X_pending
    acqf.set_X_pending = lambda X_pending=None: (seen.append(X_pending), set_pending(X_pending))
    candidates, _ = optimize_acqf_on_space(
        acqf, space, q=2, sequential=True, num_restarts=2, raw_samples=16, seed=0
    )
    assert torch.equal(seen[0][:2], pending) and torch.equal(seen[0][2:], candidates[:1])
    assert torch.equal(acqf.X_baseline, baseline)


class _ZWhere(AcquisitionFunction):
    """The height z of a point of S², replaced by ``fill`` where ``where(z)`` holds."""

    def __init__(self, where, fill):
        super().__init__(model=None)
        self.where, self.fill = where, fill

    def forward(self, X):
        z = X[..., 2]
        return torch.where(self.where(z), torch.full_like(z, self.fill), z).sum(-1)


_REF = torch.zeros(1, dtype=torch.float64)


@pytest.mark.parametrize(
    ("where", "fill", "low", "high"),
    [
        (lambda z: z < 0, float("nan"), 0.999, 1.0),  # NaN on the lower hemisphere
        (lambda z: z > 0.9, float("nan"), 0.85, 0.9),  # the maximum on the NaN region's edge
        (lambda z: z < 0.98, float("nan"), 0.999, 1.0),  # finite on 1% of the sphere only
        (lambda z: z < 0.5, -float("inf"), 0.999, 1.0),
    ],
)
def test_raw_samples_that_are_nan_or_minus_inf_are_never_starts(where, fill, low, high):
    """BoTorch's Boltzmann selection drew from weights with NaN and stopped with torch's bare
    'probability tensor contains either inf, nan or element < 0'; the starts are now chosen among
    the finite raw samples, and the answer is where the finite acquisition is largest."""
    from manibo.spaces import Sphere

    acqf = _ZWhere(where, fill)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        starts = initial_conditions_on_space(
            acqf, Sphere(2), 1, 8, 256, torch.float64, "cpu", seed=0
        )
        candidate, value = optimize_acqf_on_space(acqf, Sphere(2), reference=_REF, seed=0)
    said = [str(w.message) for w in caught if w.category is NonFiniteGradientWarning]
    # NaN raw samples are reported (twice: one per call), -inf ones, the worst value, are not
    assert len(said) == (2 if math.isnan(fill) else 0) and all("raw samples" in m for m in said)
    assert starts.shape[0] == 8
    assert bool(torch.isfinite(acqf(starts.reshape(-1, 1, 3))).all())
    z = float(candidate[0, 2])
    assert low <= z <= high and abs(float(value) - z) < 1e-12


def test_plus_inf_raw_samples_are_the_best_starts():
    from manibo.spaces import Sphere

    acqf = _ZWhere(lambda z: z > 0.99, float("inf"))
    starts = initial_conditions_on_space(acqf, Sphere(2), 1, 8, 1024, torch.float64, "cpu", seed=0)
    values = acqf(starts.reshape(-1, 1, 3))
    # 1024 raw samples, 0.5% of the sphere at +inf: about 5 starts there, all of them kept
    assert bool((values == float("inf")).any()) and not bool(values.isnan().any())
    candidate, value = optimize_acqf_on_space(acqf, Sphere(2), reference=_REF, seed=0)
    assert float(value) == float("inf") and float(candidate[0, 2]) > 0.99


@pytest.mark.parametrize("fill", [float("nan"), -float("inf")])
def test_an_acquisition_with_no_finite_raw_sample_is_refused_with_what_to_do(fill):
    from manibo.exceptions import NonFiniteAcquisitionError
    from manibo.spaces import Sphere

    acqf = _ZWhere(lambda z: z > -2, fill)
    with pytest.raises(NonFiniteAcquisitionError, match=r"raw samples.*batch_initial_conditions"):
        optimize_acqf_on_space(acqf, Sphere(2), reference=_REF, seed=0, raw_samples=16)


@pytest.mark.parametrize("name", ["graph", "mesh"])
def test_finite_spaces_refuse_what_continuous_ones_refuse_for_one_point_acquisitions(name):
    """On graph nodes and mesh vertices, PosteriorMean at q = 3 ran into BoTorch's greedy loop and
    stopped with AttributeError: 'PosteriorMean' object has no attribute 'X_pending'."""
    space = SPACES[name]()
    model, _, _ = _model(space)
    with pytest.raises(ConfigurationError, match="scores one point at a time"):
        optimize_acqf_on_space(PosteriorMean(model), space, q=3)
    with pytest.raises(ConfigurationError, match="takes no pending points"):
        optimize_acqf_on_space(PosteriorMean(model), space, q=3, sequential=True)


@pytest.mark.parametrize("name", ["graph", "mesh"])
def test_finite_spaces_return_the_documented_value_shapes(name):
    """The value is a scalar, the acquisition of the whole batch, unless ``sequential``: then one
    per greedy step. On finite spaces it was (q,) whatever ``sequential``."""
    space = SPACES[name]()
    model, X, _ = _model(space)
    points = space.all_points()
    table = torch.sin(3.0 * points[:, 0]) + 0.01 * points[:, 0]
    acqf = _TabulatedAcquisition(model, table)
    best, value = optimize_acqf_on_space(acqf, space, q=1)
    assert value.shape == () and float(value) == float(table.max())
    sampler = SobolQMCNormalSampler(torch.Size([64]), seed=0)
    acqf = qUpperConfidenceBound(model, beta=2.0, sampler=sampler)
    batch, value = optimize_acqf_on_space(acqf, space, q=2)
    assert value.shape == ()
    with torch.no_grad():
        joint = acqf(batch.reshape(1, 2, -1))
    assert torch.allclose(value, joint.reshape(()), rtol=1e-9, atol=1e-12)
    batch, values = optimize_acqf_on_space(acqf, space, q=2, sequential=True)
    assert values.shape == (2,)


@pytest.mark.parametrize(
    ("name", "value"),
    [("q", 2.5), ("q", True), ("num_restarts", 2.5), ("raw_samples", 32.5), ("q", "2")],
)
def test_counts_that_are_not_integers_are_refused(name, value):
    """num_restarts=2.5 passed the checks and stopped in torch.multinomial with a TypeError."""
    from manibo.optim.projection import optimize_acqf_by_projection
    from manibo.spaces import Sphere

    acqf = _ZWhere(lambda z: z > 2, 0.0)
    kwargs = {"q": 1, "num_restarts": 2, "raw_samples": 32, name: value}
    with pytest.raises(ConfigurationError, match=f"`{name}` must be an integer"):
        optimize_acqf_on_space(acqf, Sphere(2), reference=_REF, seed=0, **kwargs)
    with pytest.raises(ConfigurationError, match=f"`{name}` must be an integer"):
        optimize_acqf_by_projection(acqf, Sphere(2), reference=_REF, seed=0, **kwargs)


def test_integral_floats_count_as_integers():
    from manibo.spaces import Sphere

    acqf = qSimpleRegret(_model(Sphere(2))[0])
    candidates, _ = optimize_acqf_on_space(
        acqf, Sphere(2), q=2.0, num_restarts=2.0, raw_samples=16.0, seed=0, options=FAST
    )
    assert candidates.shape == (2, 3)


def test_options_as_a_dict_of_fields_as_botorch_takes_them():
    # options={"maxiter": 5} stopped inside the solver: 'dict' object has no attribute 'maxiter'
    space = SPACES["sphere2"]()
    model, X, Y = _model(space, n=15)
    acqf = LogExpectedImprovement(model, best_f=Y.max())
    as_dict = optimize_acqf_on_space(acqf, space, seed=0, options={"maxiter": 5})
    as_fields = optimize_acqf_on_space(acqf, space, seed=0, options=LBFGSOptions(maxiter=5))
    assert torch.equal(as_dict[0], as_fields[0]) and torch.equal(as_dict[1], as_fields[1])
    with pytest.raises(ConfigurationError, match="unknown optimizer option.*'maxiterr'"):
        optimize_acqf_on_space(acqf, space, seed=0, options={"maxiterr": 5})
    with pytest.raises(ConfigurationError, match="LBFGSOptions or a dict"):
        optimize_acqf_on_space(acqf, space, seed=0, options=[("maxiter", 5)])
