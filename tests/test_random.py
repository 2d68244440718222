"""Seeded computations fork torch's global generators: the CPU's, and their own GPU's only."""

import pytest
import torch

from manibo._random import seeded_global_generators
from manibo.loop import BayesianOptimizer
from manibo.spaces import Sphere


def test_the_cpu_stream_is_torch_manual_seed_s_and_the_caller_s_state_comes_back():
    torch.manual_seed(123)
    expected_after = torch.rand(3)
    torch.manual_seed(123)
    with seeded_global_generators(7):
        inside = torch.rand(4)
    torch.manual_seed(7)
    assert torch.equal(inside, torch.rand(4))
    torch.manual_seed(123)
    with seeded_global_generators(7):
        torch.rand(100)
    assert torch.equal(torch.rand(3), expected_after)  # as if nothing had drawn


def test_an_unseeded_block_draws_from_the_caller_s_stream():
    torch.manual_seed(5)
    with seeded_global_generators(None):
        first = torch.rand(2)
    torch.manual_seed(5)
    assert torch.equal(first, torch.rand(2))


def test_a_seeded_cpu_run_leaves_every_gpu_s_generator_alone(monkeypatch):
    # torch.manual_seed seeds every GPU (or queues the seed for a CUDA not started yet), and the
    # optimiser's starts forked every visible GPU's state, starting CUDA in a CPU run: a caller's
    # torch.cuda.manual_seed_all(1234) was replaced by manibo's seed after the first proposal
    calls = []
    for name in ("manual_seed", "manual_seed_all", "get_rng_state", "set_rng_state", "init"):
        monkeypatch.setattr(torch.cuda, name, lambda *a, _n=name, **k: calls.append(_n))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)
    opt = BayesianOptimizer(Sphere(2), initial_design=3, seed=0, num_restarts=2, raw_samples=16)
    for _ in range(4):
        x = opt.ask()
        opt.tell(x, float(x[0, 0]))
    assert opt.result().recommended_x is not None  # fits the final model, seeded
    assert calls == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_a_cuda_block_seeds_its_own_device_and_restores_it():
    device = torch.device("cuda")
    state = torch.cuda.get_rng_state(device)
    with seeded_global_generators(7, device):
        inside = torch.rand(4, device=device)
    assert torch.equal(torch.cuda.get_rng_state(device), state)
    torch.cuda.manual_seed(7)
    assert torch.equal(inside, torch.rand(4, device=device))
