"""The box of R^D as a space: the space contract, membership, retraction, errors."""

import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.spaces import Box
from manibo.testing import check_space_contract


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_box_satisfies_the_space_contract(dtype, device="cpu"):
    check_space_contract(Box([0.0, -1.0, 2.0], [6.0, 1.0, 2.5]), dtype, device)


def test_uniform_samples_membership_and_retraction():
    box = Box([0.0, -1.0], [6.0, 1.0])
    x = box.random(2000, generator=torch.Generator().manual_seed(0))
    assert (x.min(0).values >= torch.tensor([0.0, -1.0])).all()
    assert torch.allclose(x.mean(0), torch.tensor([3.0, 0.0], dtype=torch.float64), atol=0.1)
    moved = box.retract(x[:3], torch.tensor([[100.0, -100.0]], dtype=torch.float64))
    assert torch.equal(moved, torch.tensor([[6.0, -1.0]] * 3, dtype=torch.float64))
    assert torch.equal(box.ambient_bounds(), torch.tensor([[0.0, -1.0], [6.0, 1.0]]).double())
    with pytest.raises(InputDataError, match="outside the box.*space.project"):
        box.check(torch.tensor([[7.0, 0.0]], dtype=torch.float64), "X_M")


def test_points_outside_the_box_are_named_with_the_coordinate_and_the_bound_they_break():
    box = Box([0.0, 0.0], [5.0, 1.0])
    x = torch.tensor([[[1.0, 0.5], [2.0, -0.25]], [[7.0, 0.5], [1.0, 3.0]]], dtype=torch.float64)
    with pytest.raises(InputDataError) as info:
        box.check(x, "X_M")
    message = str(info.value)
    assert "3 of 4 point(s) lie outside the box (3 coordinate(s) in all)" in message
    first = "the first, at batch index (0, 1): coordinate 1 of the box = -0.25 < lower bound 0.0"
    assert first in message
    assert "Clamp them with `space.project(X_M)`" in message
    one = r"1 of 1 point\(s\) .* coordinate 0 of the box = 7.0 > upper bound 5.0"
    with pytest.raises(InputDataError, match=one):
        box.check(torch.tensor([7.0, 0.5], dtype=torch.float64))


def test_bad_boxes_are_refused():
    with pytest.raises(ConfigurationError, match="same number"):
        Box([0.0], [1.0, 2.0])
    with pytest.raises(ConfigurationError, match="exceed"):
        Box([0.0, 1.0], [1.0, 1.0])
    with pytest.raises(ConfigurationError, match="finite"):
        Box([0.0], [float("inf")])


def test_tangent_projection_drops_outward_components_on_the_boundary():
    box = Box([0.0, -1.0], [6.0, 1.0])
    x = torch.tensor([[6.0, 0.0], [0.0, -1.0], [3.0, 0.5]], dtype=torch.float64)
    v = torch.tensor([[1.0, 2.0], [-1.0, -2.0], [5.0, -5.0]], dtype=torch.float64)
    tangent = box.to_tangent(x, v)
    assert tangent.tolist() == [[0.0, 2.0], [0.0, 0.0], [5.0, -5.0]]
    inward = box.to_tangent(x, -v)
    assert torch.equal(inward, -v)  # directions into the box are kept
    assert torch.equal(box.to_tangent(x, tangent), tangent)


def test_matrix_bounds_are_refused_not_flattened():
    with pytest.raises(ConfigurationError, match=r"shapes \(2, 2\) and \(2, 2\).*bounds\[0\]"):
        Box(torch.zeros(2, 2), torch.ones(2, 2))
    assert Box(0.0, 1.0).dim == 1  # a number is a one-coordinate box
