"""The Euclidean baseline's optimiser: box L-BFGS-B on ambient coordinates, then projection."""

import pytest
import torch
from botorch.acquisition import AcquisitionFunction

from manibo.models import build_surrogate
from manibo.optim.projection import optimize_acqf_by_projection
from manibo.spaces import Grassmann


class AmbientSum(AcquisitionFunction):
    """Sum of the ambient coordinates: its box maximum is the corner of ones, a 4 x 2 frame of
    two equal columns, which spans no plane."""

    def forward(self, X):
        return X.sum(dim=(-1, -2))


def test_a_box_optimum_that_projects_nowhere_is_moved_onto_the_space():
    # the Grassmannian refused the corner's rank-one frame: the loop with surrogate='euclidean'
    # and optimizer='projection' stopped with "`x` holds 1 matrices of rank < 2"
    space = Grassmann(2, 4)
    X = space.random(6, generator=torch.Generator().manual_seed(0))
    model = build_surrogate("euclidean", space, X, X[:, :1])
    candidates, value = optimize_acqf_by_projection(
        AmbientSum(model), space, num_restarts=2, raw_samples=16, seed=0
    )
    space.check(candidates)
    frame = candidates.reshape(4, 2)
    # the plane nearest the corner's direction: the ones vector lies in it
    ones = torch.ones(4, dtype=candidates.dtype) / 2
    assert float((frame @ (frame.T @ ones) - ones).norm()) < 1e-3
    assert torch.isfinite(value).all()


def test_a_seed_fixes_the_answer_and_leaves_the_global_generator_alone():
    """With a seed, optimize_acqf_by_projection advanced torch's global generator (BoTorch's
    Boltzmann selection of the starts draws from it), unlike optimize_acqf_on_space."""
    from botorch.acquisition import UpperConfidenceBound

    from manibo.spaces import Sphere

    space = Sphere(2)
    X = space.random(8, generator=torch.Generator().manual_seed(0))
    model = build_surrogate("euclidean", space, X, X[:, :1] - X[:, 2:])
    acqf = UpperConfidenceBound(model, beta=2.0)
    candidates = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        state = torch.random.get_rng_state()
        candidate, _ = optimize_acqf_by_projection(
            acqf, space, num_restarts=4, raw_samples=32, seed=0, maxiter=20
        )
        assert torch.equal(torch.random.get_rng_state(), state)
        candidates.append(candidate)
    assert torch.equal(candidates[0], candidates[1])


@pytest.mark.parametrize("context", [torch.no_grad, torch.inference_mode])
def test_the_projection_optimiser_runs_inside_a_callers_no_grad(context):
    from botorch.acquisition import UpperConfidenceBound

    from manibo.spaces import Sphere

    space = Sphere(2)
    X = space.random(8, generator=torch.Generator().manual_seed(0))
    acqf = UpperConfidenceBound(build_surrogate("euclidean", space, X, X[:, :1]), beta=2.0)
    options = {"num_restarts": 4, "raw_samples": 32, "seed": 0, "maxiter": 20}
    expected, _ = optimize_acqf_by_projection(acqf, space, **options)
    with context():
        candidate, _ = optimize_acqf_by_projection(acqf, space, **options)
    assert torch.equal(candidate, expected)
