"""Sphere geometry against geomstats, and its spectral sum against independent per-level sums."""

import math

import numpy as np
import pytest
import scipy.special as sp
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.spaces import RealProjectiveSpace, Sphere
from manibo.spaces._geomstats import geomstats_module


@pytest.mark.parametrize("dim", [1, 2, 5])
def test_distance_equals_geomstats(dim):
    space = Sphere(dim)
    gen = torch.Generator().manual_seed(dim)
    x, y = space.random(20, generator=gen), space.random(20, generator=gen)
    y[0] = x[0]
    y[1] = -x[1]
    reference = geomstats_module("geometry.hypersphere").Hypersphere(dim).metric.dist(x, y)
    assert torch.allclose(space.distance(x, y), reference.to(torch.float64), atol=1e-7)


def test_retract_is_the_exponential_map():
    space = Sphere(2)
    x = torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64)
    v = torch.tensor([[torch.pi / 2, 0.0, 0.0]], dtype=torch.float64)
    assert torch.allclose(space.retract(x, v), torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64))
    assert torch.allclose(
        space.distance(x, space.retract(x, 0.4 * v)),
        torch.tensor(0.2 * torch.pi, dtype=torch.float64),
    )


@pytest.mark.parametrize("dim", [2, 5])
def test_spectral_sum_equals_independent_scipy_sum(dim):
    space = Sphere(dim)
    gen = torch.Generator().manual_seed(0)
    x1, x2 = space.random(7, generator=gen), space.random(9, generator=gen)
    weights = torch.rand(15, generator=gen, dtype=torch.float64)
    ours = space.spectral_sum(weights, x1, x2)
    t = (x1 @ x2.T).numpy()
    alpha = (dim - 1) / 2
    ref = sum(
        weights[n].item() * (n + alpha) / alpha * sp.eval_gegenbauer(n, alpha, t) for n in range(15)
    )
    assert np.max(np.abs(ours.numpy() - ref)) < 1e-11


def test_errors_say_what_to_do():
    space = Sphere(2)
    with pytest.raises(InputDataError, match="Normalise"):
        space.check(torch.ones(4, 3, dtype=torch.float64))
    with pytest.raises(InputDataError, match=r"\(\*batch, 3\)"):
        space.check(torch.ones(4, 2, dtype=torch.float64))
    with pytest.raises(InputDataError, match="floating"):
        space.check(torch.ones(4, 3, dtype=torch.long))
    with pytest.raises(InputDataError, match="zero vectors"):
        space.project(torch.zeros(1, 3))
    with pytest.raises(ConfigurationError, match="dim"):
        Sphere(0)


def test_zero_vectors_are_not_told_to_be_normalised():
    # "Normalise with `x / x.norm(...)`" gave NaN for a zero vector
    for space in (Sphere(3), RealProjectiveSpace(3)):
        with pytest.raises(InputDataError, match="1 of them is a zero vector") as info:
            space.check(torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]).double())
        assert "Normalise" not in str(info.value)
        with pytest.raises(InputDataError, match="For the other 1: Normalise"):  # and one of 2
            space.check(torch.tensor([[2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]).double())


def test_projection_handles_huge_and_tiny_vectors():
    """x / |x| with |x| computed from squares: 1e160 overflowed (zeros, off the sphere), 1e-160
    lost digits to subnormal squares (norm off by 5.6e-6) and 1e-200 underflowed to a 'zero
    vector'."""
    space = Sphere(2)
    expected = torch.tensor([[1.0, 1.0, 0.0]], dtype=torch.float64) / math.sqrt(2)
    for scale in (1e300, 1e160, 1e-160, 1e-200, 1e-310):
        y = space.project(scale * torch.tensor([[1.0, 1.0, 0.0]], dtype=torch.float64))
        assert torch.allclose(y, expected, rtol=1e-15, atol=0)
    y = space.project(torch.tensor([[3e38, 3e38, 0.0]]))
    assert torch.allclose(y, expected.float())
    with pytest.raises(InputDataError, match="zero vectors"):
        space.project(torch.zeros(2, 3))


def test_latitude_longitude_pairs_are_told_how_to_become_unit_vectors():
    # a VISH user's (n, 2) lat/lon data got only "must have shape (*batch, 3) ... Stack points
    # along the leading dimensions"
    from manibo.geo import latlon_to_unit
    from manibo.models.registry import build_surrogate

    latlon = torch.tensor([[10.0, 20.0], [-45.0, 170.0], [60.0, -30.0]], dtype=torch.float64)
    advice = r"latlon_to_unit\(X\[\.\.\., 0\], X\[\.\.\., 1\]\)"
    with pytest.raises(InputDataError, match=advice):
        Sphere(2).check(latlon, "X")
    with pytest.raises(InputDataError, match="latlon_to_unit"):
        build_surrogate("vish", Sphere(2), latlon, torch.zeros(3, 1, dtype=torch.float64))
    with pytest.raises(InputDataError) as info:  # S^1's points have 2 coordinates: no such advice
        Sphere(3).check(latlon)
    assert "latlon" not in str(info.value)
    points = latlon_to_unit(latlon[:, 0], latlon[:, 1])
    assert torch.equal(Sphere(2).check(points), points)
