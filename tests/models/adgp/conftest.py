"""A trained three-class classifier shared by the classification and stage-2-start tests."""

import copy

import pytest
import torch

from manibo.models.adgp import ActivatedDeepGP, fit_network


def _three_blobs(n=60, seed=0):
    """Three Gaussian classes in the plane, centres on a circle of radius 1.5; labels ``(n,)``."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.arange(n) % 3
    angle = 2 * torch.pi * labels.double() / 3
    centres = 1.5 * torch.stack([angle.cos(), angle.sin()], dim=-1)
    return centres + 0.6 * torch.randn(n, 2, generator=gen, dtype=torch.float64), labels


@pytest.fixture
def three_blobs():
    """The data maker ``(n=60, seed=0) -> (x (n, 2), labels (n,))`` of the classifier."""
    return _three_blobs


@pytest.fixture(scope="session")
def _classifier_after_stage_one():
    x, y = _three_blobs()
    model = ActivatedDeepGP(2, 3, num_layers=2, num_units=12, likelihood="categorical", seed=1)
    losses = fit_network(model, x, y, epochs=150, lr=2e-2).loss
    return model, x, y, losses


@pytest.fixture
def trained_classifier(_classifier_after_stage_one):
    """``(model, x, y, losses)``: a two-layer categorical deep GP after stage 1 (a fresh copy)."""
    model, x, y, losses = _classifier_after_stage_one
    return copy.deepcopy(model), x, y, losses
