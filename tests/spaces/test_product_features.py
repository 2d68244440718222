"""Product kernels as matrix products of eigenfunctions: equal to the level series, in blocks."""

import math

import pytest
import torch
from spaces.test_product import sum_gradients_and_saved

from manibo.spaces import (
    Circle,
    ProductSpace,
    RealProjectiveSpace,
    SpecialOrthogonal,
    Sphere,
    Torus,
    _product_features,
    product,
)

SPACES = {
    "T2": (lambda: Torus(2), 60),
    "T3": (lambda: Torus(3), 25),
    "S2xS1": (lambda: ProductSpace(Sphere(2), Circle()), 30),
    "RP2xSO2": (lambda: ProductSpace(RealProjectiveSpace(2), SpecialOrthogonal(2)), 20),
}


def _points(space, n, seed, dtype=torch.float64):
    return space.random(n, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _series(space, weights, x1, x2, diag=False):
    """The level-by-level product series (the path for factors without eigenfunctions)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(product, "FEATURES_PER_TUPLE", 0)
        return space.spectral_sum(weights, x1, x2, diag=diag)


@pytest.mark.parametrize("name", sorted(SPACES))
def test_features_equal_the_level_series(name):
    build, levels = SPACES[name]
    space = build()
    assert space._use_features(levels)
    gen = torch.Generator().manual_seed(0)
    weights = torch.rand(2, 1, levels, generator=gen, dtype=torch.float64)  # a kernel batch
    x = _points(space, 12, 1).reshape(2, 6, -1)
    y = _points(space, 5, 2)
    for x1, x2, diag in ((x, y, False), (x, x, False), (x, x, True)):
        ours = space.spectral_sum(weights[..., 0, :] if diag else weights, x1, x2, diag=diag)
        reference = _series(space, weights[..., 0, :] if diag else weights, x1, x2, diag)
        assert ours.shape == reference.shape
        assert (ours - reference).abs().max() < 1e-11


@pytest.mark.parametrize("name", ["T3", "S2xS1"])
def test_blocks_of_features_and_their_recomputed_gradients(name, monkeypatch):
    build, levels = SPACES[name]
    space = build()
    n = 30
    x = _points(space, n, 3)
    weights = torch.rand(levels, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    size = space._feature_plan(levels).size

    whole = sum_gradients_and_saved(space, weights, x)
    monkeypatch.setattr(_product_features, "BLOCK_ELEMENTS", 64 * n)  # blocks of 64 columns
    blocked = sum_gradients_and_saved(space, weights, x)
    assert size > 4 * 64
    for a, b in zip(whole[:3], blocked[:3], strict=True):
        assert (a - b).abs().max() < 1e-11
    assert blocked[3] < whole[3] / 2  # no block's features stay in the graph
    inputs = (x[:3].clone().requires_grad_(), weights.clone().requires_grad_())
    assert torch.autograd.gradcheck(lambda a, w: space.spectral_sum(w, a, x[3:5]), inputs)


def test_paths_are_chosen_by_features_per_tuple_and_by_eigenfunctions():
    assert Torus(3)._use_features(40)
    spheres = ProductSpace(Sphere(2), Sphere(2))
    _, multiplicities = spheres.levels(60)
    per_tuple = float(multiplicities.sum()) / len(spheres.level_table(60))
    assert per_tuple > product.FEATURES_PER_TUPLE and not spheres._use_features(60)
    no_eigenfunctions = ProductSpace(SpecialOrthogonal(4), Circle())
    assert not no_eigenfunctions._use_features(10)
    from manibo.spaces import UnsupportedError

    with pytest.raises(UnsupportedError, match="without explicit eigenfunctions"):
        no_eigenfunctions.eigenfunctions(_points(no_eigenfunctions, 2, 0), 3)


@pytest.mark.parametrize("name", ["T3", "S2xS1"])
def test_float32_features_stay_close_to_float64(name):
    build, levels = SPACES[name]
    space = build()
    weights = torch.rand(levels, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    weights = weights / (weights * space.levels(levels)[1]).sum()  # unit diagonal
    x = _points(space, 50, 5)
    exact = space.spectral_sum(weights, x, x)
    single = space.spectral_sum(weights.float(), x.float(), x.float())
    assert single.dtype == torch.float32
    assert (single.double() - exact).abs().max() < 1e-5 * math.sqrt(levels)
