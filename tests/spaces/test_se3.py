"""SE(3) as a product: a position in a box times an orientation."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.spaces import SE3, Box, ProductSpace, SpecialOrthogonal


def test_points_geometry_and_parts():
    space = SE3([-1.0, 0.0, 0.0], [1.0, 2.0, 0.5])
    assert isinstance(space, ProductSpace) and space.point_shape == (12,) and space.dim == 6
    assert repr(space) == "SE3([-1.0, 0.0, 0.0], [1.0, 2.0, 0.5])"
    x = space.random(50, generator=torch.Generator().manual_seed(0))
    space.check(x)
    p, r = space.position(x), space.rotation(x)
    assert ((p >= torch.tensor([-1.0, 0, 0])) & (p <= torch.tensor([1.0, 2.0, 0.5]))).all()
    assert torch.allclose(r.transpose(-1, -2) @ r, torch.eye(3, dtype=torch.float64).expand_as(r))
    y = space.random(50, generator=torch.Generator().manual_seed(1))
    angle = SpecialOrthogonal(3).distance(x[:, 3:], y[:, 3:])
    expected = ((p - space.position(y)).norm(dim=-1) ** 2 + angle**2).sqrt()
    assert torch.allclose(space.distance(x, y), expected, atol=1e-12)
    # a step past the box stops on its face; the rotation part moves by the exponential map
    # (here by none: it stays to rounding, which the projection onto SO(3) leaves)
    v = torch.zeros(12, dtype=torch.float64)
    v[0] = 10.0
    moved = space.retract(x[:1], space.to_tangent(x[:1], v.unsqueeze(0)))
    assert float(moved[0, 0]) == 1.0
    assert torch.allclose(moved[0, 3:], x[0, 3:], rtol=0.0, atol=1e-15)


def test_a_position_box_of_another_dimension_is_refused():
    with pytest.raises(ConfigurationError, match="3 coordinates"):
        SE3([0.0, 0.0], [1.0, 1.0])


def test_products_with_a_box_are_not_compact_and_compact_products_are():
    from manibo.spaces import CompactProductSpace, CompactSpace, Sphere

    mixed = ProductSpace(Sphere(2), Box([0.0], [1.0]))
    assert not isinstance(mixed, CompactSpace) and type(mixed) is ProductSpace
    compact = ProductSpace(Sphere(2), SpecialOrthogonal(3))
    assert isinstance(compact, CompactProductSpace) and isinstance(compact, CompactSpace)
    import copy
    import pickle

    for space in (mixed, compact, SE3([0.0] * 3, [1.0] * 3)):
        for clone in (copy.deepcopy(space), pickle.loads(pickle.dumps(space))):
            assert type(clone) is type(space) and repr(clone) == repr(space)
    assert math.isclose(compact.spectral_dim, 5)


def test_homogeneous_transforms_convert_to_points_and_back():
    from scipy.spatial.transform import Rotation

    space = SE3([-1.0, -1.0, -1.0], [1.0, 1.0, 1.0])
    rotation = Rotation.from_euler("zyx", [[30.0, -20.0, 10.0], [90.0, 0.0, 45.0]], degrees=True)
    T = torch.zeros(2, 4, 4, dtype=torch.float64)
    T[:, :3, :3] = torch.as_tensor(rotation.as_matrix())
    T[:, :3, 3] = torch.tensor([[0.1, -0.2, 0.3], [0.5, 0.5, -0.5]], dtype=torch.float64)
    T[:, 3, 3] = 1.0
    x = space.check(space.from_homogeneous(T))
    assert torch.equal(space.position(x), T[:, :3, 3])
    assert torch.equal(space.rotation(x), T[:, :3, :3])
    assert torch.equal(space.homogeneous(x), T)
    scaled = T.clone()
    scaled[0, 3, 3] = 2.0
    with pytest.raises(InputDataError, match=r"last row .* must be \(0, 0, 0, 1\)"):
        space.from_homogeneous(scaled)
    with pytest.raises(InputDataError, match=r"shape \(\*batch, 4, 4\), got \(3, 4\)"):
        space.from_homogeneous(T[0, :3])
    with pytest.raises(InputDataError, match=r"convert it with `space.from_homogeneous\(x\)`"):
        space.check(T)


def test_homogeneous_of_a_numpy_array_says_to_convert_it():
    import numpy as np

    with pytest.raises(InputDataError, match=r"`x` must be a torch.Tensor, got ndarray"):
        SE3([0.0] * 3, [1.0] * 3).homogeneous(np.zeros(12))


def test_a_projective_last_row_is_refused():
    T = torch.eye(4, dtype=torch.float64)
    T[3, 0] = 0.1  # (0.1, 0, 0, 1): a projective transform, no rigid pose
    with pytest.raises(InputDataError, match=r"last row .* must be \(0, 0, 0, 1\), got \[0.1"):
        SE3([0.0] * 3, [1.0] * 3).from_homogeneous(T)
