"""The surrogate contract suite itself: it catches the faults it is meant to catch (conditioning
that drops the gradient, fantasies that ignore their noise), verifies declared limits through the
loop's refusal, and reports what is not covered."""

import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import ScaleKernel

from manibo.exceptions import ConfigurationError
from manibo.kernels import GeometricMaternKernel
from manibo.loop import BayesianOptimizer
from manibo.models import build_surrogate, register_surrogate
from manibo.models.vish import VISHModel
from manibo.spaces import Box, Sphere
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
    with pytest.raises(AssertionError, match="actual candidates is zero"):
        run_acquisition_check(case, "qKnowledgeGradient", 1)
    run_model_check(SurrogateCase("vish", Sphere(2), options=VISH), "condition_on_observations")


def test_fantasies_that_ignore_their_noise_fail_the_suite(isolated_surrogates):
    """BoTorch's SingleTaskGP with a fitted noise conditions fantasies with that noise, whatever
    noise they are given; manibo's exact GP honours it (the 'matern' case passes)."""
    register_surrogate("test-plain-gp")(_plain_single_task_gp)
    with pytest.raises(AssertionError, match="enormous noise"):
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
