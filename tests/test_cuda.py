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


# ---------------------------------------------------------------------------- activated deep GPs
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_adgp_layer_network_and_posterior_cuda(dtype):
    from models.adgp import test_activations, test_layer, test_network, test_posterior

    test_activations.test_inducing_functions(dtype, "cuda")
    test_layer.test_kuu_is_symmetric_positive_definite(dtype, "cuda")
    test_layer.test_variance_is_clamped_non_negative(dtype, "cuda")
    test_network.test_network_is_the_composition_of_layer_means(dtype, "cuda")
    test_posterior.test_sample_shapes_and_sampler(dtype, "cuda")


def test_adgp_model_fits_and_acquisitions_run_on_cuda():
    from models.adgp.test_model import FAST, _data, check_acquisitions

    from manibo.models import build_surrogate

    space, X, Y = _data(device="cuda")
    model = build_surrogate("adgp", space, X, Y, **FAST)
    assert model.posterior(X).mean.device.type == "cuda"
    check_acquisitions(model, space, X, Y)


def test_adgp_stage_two_start_on_cuda():
    from models.adgp import test_initialization

    test_initialization.test_mean_equals_the_network_after_initialisation("softplus", "cuda")
    test_initialization.test_one_layer_start_is_a_stationary_point_of_the_exact_elbo(2, "cuda")
