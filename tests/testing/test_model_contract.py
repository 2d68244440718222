"""The surrogate contract suite itself: it catches the faults it is meant to catch (conditioning
that drops the gradient, fantasies that ignore their noise), verifies declared limits through the
loop's refusal, and reports what is not covered."""

import pytest
import torch
from botorch.models import SingleTaskGP
from botorch.models.model import Model
from botorch.posteriors import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import MaternKernel, ScaleKernel

from manibo.exceptions import ConfigurationError
from manibo.kernels import GeometricMaternKernel
from manibo.loop import BayesianOptimizer
from manibo.models import available_surrogates, build_surrogate, register_surrogate
from manibo.models.exact_gp import exact_gp
from manibo.models.vish import VISHModel
from manibo.spaces import Box, Circle, Sphere
from manibo.testing import SurrogateCase, covered, run_acquisition_check, run_model_check

VISH = {"num_features": 40, "maxiter": 15}


class _DetachedVISH(VISHModel):
    """VISH whose conditioning drops the graph, as VISH's did before it was differentiable."""

    def condition_on_observations(self, X, Y, noise=None, **kwargs):
        return super().condition_on_observations(X.detach(), Y.detach(), noise, **kwargs)


def _detached_vish(space, train_X, train_Y, **options):
    model = build_surrogate("vish", space, train_X, train_Y, **options)
    model.__class__ = _DetachedVISH
    return model


def _plain_single_task_gp(space, train_X, train_Y, **options):
    """BoTorch's SingleTaskGP with the geometric kernel and fixed hyperparameters."""
    kernel = ScaleKernel(GeometricMaternKernel(space, nu=2.5, num_levels=12))
    return SingleTaskGP(train_X, train_Y, covar_module=kernel).to(train_X).eval()


def test_conditioning_without_gradients_fails_the_suite(isolated_surrogates):
    register_surrogate("test-detached-vish")(_detached_vish)
    case = SurrogateCase("test-detached-vish", Sphere(2), options=VISH)
    with pytest.raises(AssertionError, match="gradient of the conditioned variance"):
        run_model_check(case, "condition_on_observations")
    with pytest.raises(AssertionError, match="no gradient in X"):
        run_model_check(case, "fantasize")
    with pytest.raises(AssertionError, match="actual candidates disagrees"):
        run_acquisition_check(case, "qKnowledgeGradient", 1)
    run_model_check(SurrogateCase("vish", Sphere(2), options=VISH), "condition_on_observations")


def _with_gradient_times(factor):
    """The exact GP with a posterior of the same value whose gradient in X is ``factor`` times
    the true one."""

    def factory(space, train_X, train_Y, **options):
        model = build_surrogate("matern", space, train_X, train_Y, **options)
        base = type(model)

        class Scaled(base):
            def posterior(self, X, *args, **kwargs):
                return base.posterior(self, (1 - factor) * X.detach() + factor * X, *args, **kwargs)

        model.__class__ = Scaled
        return model

    return factory


@pytest.mark.parametrize("factor", [-1.0, 0.15])
def test_a_candidate_gradient_of_the_wrong_sign_or_size_fails_the_suite(
    isolated_surrogates, factor
):
    register_surrogate("test-scaled-gradient")(_with_gradient_times(factor))
    case = SurrogateCase("test-scaled-gradient", Sphere(2))
    for name, q in (("qUCB", 1), ("UCB", 1), ("qLogEI", 2)):
        with pytest.raises(AssertionError, match="actual candidates disagrees"):
            run_acquisition_check(case, name, q)


def test_fantasies_that_ignore_their_noise_fail_the_suite(isolated_surrogates):
    """BoTorch's SingleTaskGP with a fitted noise conditions fantasies with that noise, whatever
    noise they are given; manibo's exact GP honours it (the 'matern' case passes)."""
    register_surrogate("test-plain-gp")(_plain_single_task_gp)
    with pytest.raises(AssertionError, match="ignores the `noise`"):
        run_model_check(SurrogateCase("test-plain-gp", Sphere(2)), "fantasize")
    run_model_check(SurrogateCase("matern", Sphere(2)), "fantasize")


def test_a_declared_limit_is_checked_as_a_refusal_by_the_loop(isolated_surrogates):
    reason = "it keeps no posterior to condition; use 'matern' for knowledge gradient."
    register_surrogate("test-no-fantasies", unsupported_features={"fantasize": reason})(
        _plain_single_task_gp
    )
    case = SurrogateCase("test-no-fantasies", Sphere(2))
    run_model_check(case, "fantasize")  # checks the refusal instead of fantasizing
    run_acquisition_check(case, "qKnowledgeGradient", 1)
    run_acquisition_check(case, "qMaxValueEntropy", 3)
    with pytest.raises(ConfigurationError, match="no posterior to condition"):
        BayesianOptimizer(Sphere(2), surrogate="test-no-fantasies", acquisition="qkg")
    BayesianOptimizer(Sphere(2), surrogate="test-no-fantasies", acquisition="qlognei")


def test_bad_cases_and_coverage_are_reported():
    with pytest.raises(ConfigurationError, match="unknown tolerance"):
        SurrogateCase("matern", Sphere(2), tolerances={"everything": 1.0})
    with pytest.raises(AssertionError, match=r"surrogates without contract coverage: \['b'\]"):
        covered(["a", "b"], {"a": {}}, "surrogates")
    covered(["a"], {"a": {}, "c": {}}, "surrogates")
    with pytest.raises(ConfigurationError, match="analytic"):
        run_acquisition_check(SurrogateCase("matern", Sphere(2)), "LogEI", 3)
    with pytest.raises(
        ConfigurationError,
        match=r"unknown model check 'posterior shape'; choose one of 'posterior shapes', ",
    ):
        run_model_check(SurrogateCase("matern", Sphere(2)), "posterior shape")
    with pytest.raises(
        ConfigurationError,
        match=r"unknown acquisition check 'qucb'; choose one of LogEI, UCB, .*qUCB.*not look "
        r"names up in the loop's registry",
    ):
        run_acquisition_check(SurrogateCase("matern", Sphere(2)), "qucb", 1)


def test_the_input_transform_check_does_not_apply_to_a_space_without_a_known_isometry():
    run_model_check(SurrogateCase("matern", Box([0.0, 0.0], [1.0, 2.0])), "input transform")


def test_case_data_are_seeded_points_of_the_space():
    case = SurrogateCase("matern", Sphere(2), num_train=7)
    X, Y = case.data(2)
    assert X.shape == (7, 3) and Y.shape == (7, 2)
    Sphere(2).check(X)
    assert torch.equal(X, case.data()[0]) and torch.equal(case.points(2, 3), case.points(2, 3))
    assert torch.allclose(case.points(4, dtype=torch.float32).double(), case.points(4), atol=1e-7)


def _botorch_matern_gp(space, train_X, train_Y, **options):
    """A plain BoTorch SingleTaskGP with GPyTorch's Matern kernel, as a plug-in author writes it."""
    kernel = ScaleKernel(MaternKernel(nu=2.5))
    return SingleTaskGP(train_X, train_Y, covar_module=kernel).to(train_X).eval()


class _NoFantasyGP(SingleTaskGP):
    """A GP whose fantasy models are not implemented."""

    def condition_on_observations(self, X, Y, noise=None, **kwargs):
        raise NotImplementedError("no fantasy models")

    def fantasize(self, X, sampler, observation_noise=None, **kwargs):
        raise NotImplementedError("no fantasy models")


def _botorch_gp_as(cls):
    """A factory of the BoTorch Matérn GP turned into an instance of ``cls``, a subclass."""

    def factory(space, train_X, train_Y, **options):
        model = _botorch_matern_gp(space, train_X, train_Y)
        model.__class__ = cls
        return model

    return factory


def test_a_model_list_without_fantasies_passes_when_they_are_declared(isolated_surrogates):
    register_surrogate(
        "test-list-no-fantasies", unsupported_features={"fantasize": "no fantasy models."}
    )(_botorch_gp_as(_NoFantasyGP))
    run_model_check(SurrogateCase("test-list-no-fantasies", Sphere(2)), "ModelList")


def test_undeclared_missing_fantasies_point_to_the_declaration(isolated_surrogates):
    register_surrogate("test-undeclared-no-fantasies")(_botorch_gp_as(_NoFantasyGP))
    case = SurrogateCase("test-undeclared-no-fantasies", Sphere(2))
    advice = r"unsupported_features=\{'fantasize': 'why, and what to use instead'\}\)\.$"
    for check in ("condition_on_observations", "fantasize", "ModelList"):
        with pytest.raises(AssertionError, match=advice):
            run_model_check(case, check)
    with pytest.raises(AssertionError, match=advice):
        run_acquisition_check(case, "qKnowledgeGradient", 1)


class _NoObservationNoiseGP(SingleTaskGP):
    """A GP whose posterior ignores observation_noise, True or a tensor."""

    def posterior(self, X, output_indices=None, observation_noise=False, **kwargs):
        return super().posterior(X, output_indices, observation_noise=False, **kwargs)


def test_a_declared_noise_tensor_still_checks_observation_noise_true(isolated_surrogates):
    register_surrogate(
        "test-no-noise",
        unsupported_features={"observation_noise_tensor": "its noise is learned; pass True."},
    )(_botorch_gp_as(_NoObservationNoiseGP))
    case = SurrogateCase("test-no-noise", Sphere(2))
    run_model_check(case, "noise tensor")  # the refusal of the loop is checked instead
    with pytest.raises(AssertionError, match="did not add a positive variance"):
        run_model_check(case, "observation noise")


def test_a_plain_botorch_gp_is_told_what_to_change(isolated_surrogates):
    """BoTorch's SingleTaskGP conditions after a prediction, as BoTorch's acquisitions do; the
    checks it fails say what the model must do."""
    register_surrogate("test-botorch-matern")(_botorch_matern_gp)
    case = SurrogateCase("test-botorch-matern", Sphere(2))
    with pytest.raises(AssertionError, match=r"conditioned variance.*fast_pred_var\(False\)"):
        run_model_check(case, "condition_on_observations")
    with pytest.raises(AssertionError, match=r"ignores the `noise`.*ExactGPModel"):
        run_model_check(case, "fantasize")
    required = r"must raise manibo\.exceptions\.InputDataError.*ExactGPModel"
    with pytest.raises(AssertionError, match=required):
        run_model_check(case, "outputs")
    with pytest.raises(AssertionError, match=required):
        run_model_check(case, "input errors")


def _exact_matern_gp(space, train_X, train_Y, **options):
    return exact_gp(space, train_X, train_Y, MaternKernel(nu=2.5), **options)


def test_checks_do_not_depend_on_the_global_seed(isolated_surrogates):
    """On this case qMES is flat to rounding at one of the check's random points (a gradient
    near 1e-17, or exactly 0 under some global seeds): the check seeds itself, and asks for a
    gradient only where the acquisition changes."""
    register_surrogate("test-exact-matern")(_exact_matern_gp)
    case = SurrogateCase("test-exact-matern", Box([0.0, 0.0], [1.0, 1.0]), seed=2)
    failures = []
    for seed in range(6):
        torch.manual_seed(seed)
        try:
            run_acquisition_check(case, "qMaxValueEntropy", 3)
        except AssertionError as error:
            failures.append((seed, str(error)))
    assert not failures, failures
    # qMES is flat at two of the three random points of this case (gradients 0 and 2e-84)
    run_acquisition_check(
        SurrogateCase("test-exact-matern", Circle(), seed=7), "qMaxValueEntropy", 3
    )


def test_checks_seed_torch_and_restore_its_state(isolated_surrogates):
    draws = []

    def drawing_gp(space, train_X, train_Y, **options):
        draws.append(float(torch.rand(())))
        return _exact_matern_gp(space, train_X, train_Y, **options)

    register_surrogate("test-drawing-gp")(drawing_gp)
    for seed in (0, 1):
        torch.manual_seed(seed)
        expected = torch.rand(())
        torch.manual_seed(seed)
        run_model_check(SurrogateCase("test-drawing-gp", Sphere(2)), "batch independence")
        assert torch.rand(()) == expected
    assert draws[0] == draws[1]


def test_coverage_of_the_names_one_module_registers(isolated_surrogates):
    register_surrogate("test-exact-matern")(_exact_matern_gp)
    assert available_surrogates(module=__name__) == ["test-exact-matern"]
    assert "matern" in available_surrogates(module="manibo")
    covered(available_surrogates(module=__name__), {"test-exact-matern": {}}, "surrogates")
    with pytest.raises(AssertionError, match=r"without contract coverage: \['test-exact-matern'\]"):
        covered(available_surrogates(module=__name__), {}, "surrogates")


class _PlainTensorRegression(Model):
    """Bayesian-less linear regression on the embedding that keeps its weights as a plain
    attribute: no train_inputs, parameters or buffers."""

    num_outputs = 1
    batch_shape = torch.Size([])

    def __init__(self, train_X, train_Y):
        super().__init__()
        features = torch.cat([train_X, torch.ones_like(train_X[:, :1])], -1)
        self.weights = torch.linalg.lstsq(features, train_Y).solution[:, 0]

    def posterior(self, X, output_indices=None, observation_noise=False, **kwargs):
        mean = X @ self.weights[:-1] + self.weights[-1]
        eye = torch.eye(X.shape[-2], dtype=X.dtype, device=X.device)
        return GPyTorchPosterior(MultivariateNormal(mean, eye.expand(*mean.shape, -1)))


def test_acquisition_checks_run_on_a_model_without_tensors_of_its_own(isolated_surrogates):
    register_surrogate("test-plain-tensors")(
        lambda space, train_X, train_Y, **options: _PlainTensorRegression(train_X, train_Y)
    )
    case = SurrogateCase("test-plain-tensors", Sphere(2))
    for name, q in (("UCB", 1), ("qLogEI", 2), ("qUCB", 1)):
        run_acquisition_check(case, name, q)


class _FlatteningRegression(_PlainTensorRegression):
    """Drops the batch dimensions of X."""

    def posterior(self, X, *args, **kwargs):
        return super().posterior(X.reshape(-1, X.shape[-1]), *args, **kwargs)


def test_a_posterior_that_drops_the_batch_dimensions_is_told_what_the_shape_must_be(
    isolated_surrogates,
):
    register_surrogate("test-flattening")(
        lambda space, train_X, train_Y, **options: _FlatteningRegression(train_X, train_Y)
    )
    with pytest.raises(AssertionError, match=r"\(3, 2, 1\) at X of shape \(3, 2, 3\) .* keeps"):
        run_model_check(SurrogateCase("test-flattening", Sphere(2)), "posterior shapes")
