"""The space, kernel, model and optimiser checks again on CUDA; skipped cleanly on machines without a GPU."""

import warnings

import pytest
import torch
from registry import KERNELS, SPACES, make_kernel

from manibo.exceptions import TruncationWarning
from manibo.testing import check_kernel_contract, check_space_contract

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(SPACES))
def test_space_contract_cuda(name, dtype):
    check_space_contract(SPACES[name](), dtype, "cuda")


@pytest.mark.parametrize("flavour", sorted(KERNELS))
@pytest.mark.parametrize("name", sorted(SPACES))
def test_kernel_contract_cuda(name, flavour):
    space = SPACES[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncationWarning)
        check_kernel_contract(make_kernel(space, flavour), space, torch.float64, "cuda")


@pytest.mark.parametrize("name", ["sphere2", "so3", "torus2", "graph"])
def test_model_and_optimiser_on_cuda(name):
    from botorch.acquisition import LogExpectedImprovement

    from manibo.models import build_surrogate
    from manibo.optim import LBFGSOptions, optimize_acqf_on_space

    space = SPACES[name]()
    gen = torch.Generator(device="cuda").manual_seed(0)
    X = space.random(12, generator=gen, device="cuda")
    Y = -space.distance(X, X[:1]).unsqueeze(-1)
    model = build_surrogate("matern", space, X, Y)
    acqf = LogExpectedImprovement(model, best_f=Y.max())
    candidate, value = optimize_acqf_on_space(
        acqf, space, num_restarts=4, raw_samples=64, options=LBFGSOptions(maxiter=20), seed=0
    )
    assert candidate.device.type == "cuda" and torch.isfinite(value)
    space.check(candidate)


def test_sphere_kernel_large_matrix_cuda():
    from manibo.kernels import GeometricMaternKernel
    from manibo.spaces import Sphere

    space = Sphere(2)
    x = space.random(4000, generator=torch.Generator(device="cuda").manual_seed(0), device="cuda")
    kernel = GeometricMaternKernel(space, nu=1.5, num_levels=25).to(x)
    with torch.no_grad():
        K = kernel(x).to_dense()
        cpu = GeometricMaternKernel(space, nu=1.5, num_levels=25).double()(x[:300].cpu()).to_dense()
    assert torch.allclose(K[:300, :300].cpu(), cpu, atol=1e-10)


def test_loop_on_cuda_matches_its_cpu_design_and_stays_on_the_space(tmp_path):
    from manibo.loop import BayesianOptimizer
    from manibo.spaces import Sphere

    fast = {"num_restarts": 2, "raw_samples": 32, "optimizer_options": {"maxiter": 10}}
    runs = {}
    for device in ("cpu", "cuda"):
        opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, device=device, **fast)
        opt.run(lambda x: float(x[2]), budget=6, progress=False)
        runs[device] = torch.tensor([e.x for e in opt.history])
        assert opt.best[0].device.type == device
    assert torch.allclose(runs["cpu"][:3], runs["cuda"][:3], atol=1e-12)  # same seeded design
    Sphere(2).check(runs["cuda"])


# ---------------------------------------------------------------------------------------- GPNet
def _gpnet_tests(module: str):
    import importlib

    return importlib.import_module(f"models.gpnet.{module}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gpnet_target_and_tempered_prior_cuda(dtype):
    tests = _gpnet_tests("test_mirror_descent")
    tests.test_target_at_first_iteration_is_the_exact_gp_posterior(dtype, "cuda")
    tests.test_tempered_prior_matches_the_precision_form(0.9, 4, "cuda")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gpnet_features_and_networks_cuda(dtype):
    import math

    from manibo.spaces import Sphere

    tests = _gpnet_tests("test_features")
    tests.test_network_starts_at_the_feature_kernel_and_marginals_match_the_joint(dtype, "cuda")
    if dtype == torch.float64:
        tests.test_random_fourier_features_approach_the_kernel(math.inf, "cuda")
        tests.test_harmonic_features_reproduce_the_truncated_kernel("cuda")
        tests.test_random_phase_features_approach_the_kernel(Sphere(2), "cuda")


def test_gpnet_measurement_and_box_cuda():
    from manibo.spaces import Box, Sphere

    _gpnet_tests("test_measurement").test_samples_lie_on_the_space_in_the_configured_mix(
        Sphere(2), "cuda"
    )
    _gpnet_tests("test_measurement").test_samples_lie_on_the_space_in_the_configured_mix(
        Box([0.0, 0.0], [1.0, 3.0]), "cuda"
    )
    from manibo.testing import check_space_contract

    check_space_contract(Box([0.0, -1.0], [6.0, 1.0]), torch.float32, "cuda")


def test_gpnet_training_on_cuda():
    tests = _gpnet_tests("test_trainer")
    tests.test_kl_step_decreases_the_kl_to_a_fixed_target_and_leaves_the_prior_alone("cuda")
    tests.test_kl_step_at_beta_below_one_holds_the_q_t_dependent_target_constant("cuda")
    tests.test_hyper_step_uses_the_previous_network_and_matches_a_dense_bound("cuda")
    tests.test_conjugate_gpnet_converges_to_the_exact_posterior(torch.float64, "cuda")
    tests.test_conjugate_gpnet_converges_to_the_exact_posterior(torch.float32, "cuda")
    tests.test_general_objective_with_a_gaussian_likelihood_reaches_the_same_posterior("cuda")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gpnet_botorch_posterior_cuda(dtype):
    tests = _gpnet_tests("test_model")
    tests.test_posterior_is_the_networks_joint_gaussian_in_original_units(dtype, "cuda")
