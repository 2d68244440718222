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


# --- search mission on the globe (manibo.search) -------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_search_drift_and_belief_on_cuda(dtype):
    from manibo.search.belief import ParticleBelief
    from manibo.search.drift import Drift
    from manibo.search.geography import latlon, offset
    from manibo.search.sensor import Outcome, Sensor

    centre = latlon(2.98, -30.59, dtype=dtype, device="cuda")
    gen = torch.Generator().manual_seed(0)
    east, north = (torch.randn(2, 2000, generator=gen, dtype=dtype) * 100).to("cuda")
    belief = ParticleBelief(offset(centre, east, north))
    start = belief.positions.clone()
    drift = Drift(latlon(40.0, 10.0, dtype=dtype, device="cuda"), 1.8)
    belief.drift(drift, 100.0)
    assert torch.allclose(drift.advect(belief.positions, -100.0), start, atol=1e-5)
    cpu = ParticleBelief(belief.positions.cpu())
    sensor = Sensor()
    pos = belief.update(sensor, drift.advect(centre, 100.0), Outcome.NOTHING)
    pos_cpu = cpu.update(sensor, drift.advect(centre, 100.0).cpu(), Outcome.NOTHING)
    assert belief.weights.device.type == "cuda" and abs(pos - pos_cpu) < 1e-4
    assert torch.allclose(belief.weights.cpu(), cpu.weights, rtol=1e-3)


def test_search_mission_with_the_gp_planner_on_cuda():
    from dataclasses import replace

    from manibo.search.mission import simulate
    from manibo.search.planners import GPPlanner
    from manibo.search.scenarios import MissionSettings, af447_scenario

    settings = MissionSettings()
    settings = replace(settings, asset=replace(settings.asset, endurance_hours=20.0))
    scenario = af447_scenario(settings, seed=0, device="cuda")
    record = simulate(scenario, GPPlanner("sphere", num_gp_particles=300), num_particles=400)
    assert record.steps and record.steps[0].point.device.type == "cuda"
    assert record.belief.positions.device.type == "cuda"
