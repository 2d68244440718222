"""The Euclidean baseline's optimiser: box L-BFGS-B on ambient coordinates, then projection."""

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
