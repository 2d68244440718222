"""Outcome and input transforms of the surrogates: the space isometry keeps points on their space
and distances unchanged, so an isotropic GP predicts the same through it; outcome transforms are
fitted, checked and rebuilt from moments."""

import pytest
import torch
from botorch.models.transforms.input import Normalize
from botorch.models.transforms.outcome import Standardize
from botorch.utils.types import DEFAULT
from registry import SPACES

from manibo.exceptions import ConfigurationError
from manibo.models import SpaceIsometry, build_surrogate
from manibo.models.transforms import (
    checked_input_transform,
    fitted_outcome_transform,
    standardize_from_moments,
)
from manibo.spaces import Box


@pytest.mark.parametrize(
    "name", ["sphere2", "sphere5", "circle", "torus2", "so3", "product_sphere_circle"]
)
def test_isometry_keeps_points_on_the_space_and_distances(name):
    space = SPACES[name]()
    g = torch.Generator().manual_seed(0)
    x, y = space.random(20, generator=g), space.random(20, generator=g)
    move = SpaceIsometry(space, seed=3)
    mx, my = move.transform(x), move.transform(y)
    space.check(mx)
    assert not torch.allclose(mx, x)
    assert torch.allclose(space.distance(mx, my), space.distance(x, y), atol=1e-10)
    assert torch.equal(SpaceIsometry(space, seed=3).transform(x), mx)  # seeded


@pytest.mark.parametrize("name", ["sphere2", "torus2", "so3"])
def test_an_isotropic_gp_predicts_the_same_through_an_isometry(name):
    """The geometric Matérn kernel depends on distances only: fitted to the same data with the
    isometry as input transform, the GP's posterior equals the plain GP's."""
    space = SPACES[name]()
    g = torch.Generator().manual_seed(1)
    X, X_test = space.random(10, generator=g), space.random(5, generator=g)
    Y = torch.cos(2 * space.distance(X, X[:1].expand_as(X))).unsqueeze(-1)
    plain = build_surrogate("matern", space, X, Y)
    moved = build_surrogate("matern", space, X, Y, input_transform=SpaceIsometry(space, seed=2))
    with torch.no_grad():
        a, b = plain.posterior(X_test), moved.posterior(X_test)
        assert torch.allclose(a.mean, b.mean, atol=1e-6)
        assert torch.allclose(a.variance, b.variance, atol=1e-6)


def test_transform_arguments_are_checked():
    Y = torch.tensor([[1.0], [4.0], [7.0]], dtype=torch.float64)
    transform, Z = fitted_outcome_transform(Y, DEFAULT)
    assert isinstance(transform, Standardize) and not transform.training
    assert torch.allclose(Z[:, 0], torch.tensor([-1.0, 0.0, 1.0], dtype=torch.float64))
    assert fitted_outcome_transform(Y, None) == (None, Y)
    with pytest.raises(ConfigurationError, match="OutcomeTransform"):
        fitted_outcome_transform(Y, "standardize")
    with pytest.raises(ConfigurationError, match="InputTransform"):
        checked_input_transform(lambda x: x)
    assert checked_input_transform(None) is None
    assert not checked_input_transform(Normalize(d=2)).training
    with pytest.raises(ConfigurationError, match="isometries of spheres"):
        SpaceIsometry(Box([0.0], [1.0]))


def test_standardize_from_moments_is_the_affine_map():
    mean, std = torch.tensor([2.0, -1.0]), torch.tensor([3.0, 0.5])
    transform = standardize_from_moments(mean, std)
    Y = torch.randn(4, 2)
    Z, _ = transform(Y)
    assert torch.allclose(Z, (Y - mean) / std)
    assert torch.allclose(transform.untransform(Z)[0], Y)


def test_an_outcome_transform_for_another_number_of_outputs_is_refused_with_the_one_to_pass():
    # the activated deep GP models its outcomes together: Standardize(m=1) on two columns gave
    # BoTorch's "Wrong output dimension. Y.size(-1) is 2; expected 1." (the per-column
    # surrogates take m=1 and say so)
    Y = torch.rand(6, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    with pytest.raises(ConfigurationError, match=r"m=1 outputs.*2 columns.*Standardize\(m=2\)"):
        fitted_outcome_transform(Y, Standardize(m=1))
    transform, _ = fitted_outcome_transform(Y, Standardize(m=2))
    assert transform.means.shape == (1, 2)
    space = SPACES["sphere2"]()
    X = space.random(12, generator=0)
    with pytest.raises(ConfigurationError, match=r"Standardize\(m=2\)"):
        build_surrogate("adgp", space, X, X[:, :2], outcome_transform=Standardize(m=1))
