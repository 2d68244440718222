"""The feature-map protocol: exact maps reproduce the kernel on every space with eigenfunctions,
random maps reproduce it in expectation, and ScaleKernel and FactorProductKernel compose."""

import math

import pytest
import torch
from gpytorch.kernels import RBFKernel, ScaleKernel
from registry import SPACES

from manibo.exceptions import ConfigurationError
from manibo.kernels import (
    ArcCosineKernel,
    ChordalMaternKernel,
    FactorProductKernel,
    FeatureMap,
    GeometricMaternKernel,
    HomogeneousLiftKernel,
    feature_map,
)
from manibo.kernels.features import AdditionTheoremFeatureMap, KernelFeatureMap
from manibo.spaces import (
    Circle,
    CompactSpace,
    Hyperbolic,
    ProductSpace,
    SpecialOrthogonal,
    Sphere,
    SymmetricPositiveDefinite,
)
from manibo.spaces.base import UnsupportedError

COMPACT = sorted(name for name in SPACES if isinstance(SPACES[name](), CompactSpace))
EXPLICIT = [name for name in COMPACT if SPACES[name]().has_eigenfunctions]
CHARACTERS_ONLY = [name for name in COMPACT if name not in EXPLICIT]


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _dense(kernel, x, y=None):
    with torch.no_grad():
        return kernel(x, x if y is None else y).to_dense()


def test_the_spaces_without_eigenfunctions_are_the_groups_with_characters_only():
    assert set(CHARACTERS_ONLY) == {"so4", "so5", "su2", "su3"}


@pytest.mark.parametrize("name", CHARACTERS_ONLY)
def test_spaces_without_eigenfunctions_get_random_maps_or_a_clear_error(name):
    space = SPACES[name]()
    kernel = GeometricMaternKernel(space, nu=1.5, num_levels=6).double()
    assert not feature_map(kernel).exact  # the default: random phases (addition theorem)
    with pytest.raises(UnsupportedError, match="eigenfunctions"):
        feature_map(kernel, random=False)(space.random(2, generator=_gen()))


@pytest.mark.parametrize("name", EXPLICIT)
def test_eigenfunction_maps_reproduce_the_kernel(name):
    space = SPACES[name]()
    kernel = GeometricMaternKernel(
        space, nu=1.5, num_levels=min(6, space.num_levels_available or 6)
    )
    kernel = kernel.double()
    fmap = feature_map(kernel, random=False)
    assert isinstance(fmap, FeatureMap) and fmap.exact
    x, y = space.random(7, generator=_gen()), space.random(5, generator=_gen(1))
    with torch.no_grad():
        assert torch.allclose(fmap.gram(x, y), _dense(kernel, x, y), atol=1e-10)
        assert fmap(x).shape[:-1] == (7,)


def test_random_phases_on_a_compact_group_are_unbiased():
    space = SpecialOrthogonal(3)
    kernel = GeometricMaternKernel(space, nu=2.5, num_levels=8).double()
    x = space.random(6, generator=_gen())
    exact = _dense(kernel, x)
    errors = []
    for points in (256, 4096):
        with torch.no_grad():
            grams = [feature_map(kernel, points, seed, random=True).gram(x) for seed in range(6)]
        errors.append(float((torch.stack(grams).mean(0) - exact).abs().max()))
    fmap = feature_map(kernel, 4096, random=True)
    assert isinstance(fmap, AdditionTheoremFeatureMap) and not fmap.exact
    assert errors[1] < 0.02 and errors[1] < errors[0] / 2  # 1/sqrt(M) convergence


@pytest.mark.parametrize("space", [Hyperbolic(3), SymmetricPositiveDefinite(2)])
def test_noncompact_maps_are_the_kernels_random_phases(space):
    kernel = GeometricMaternKernel(space, nu=2.5, method="features", num_phases=256).double()
    fmap = feature_map(kernel)
    assert isinstance(fmap, KernelFeatureMap) and not fmap.exact
    x = space.random(9, generator=_gen())
    with torch.no_grad():
        assert fmap(x).shape == (9, 512)
        assert torch.allclose(fmap.gram(x), _dense(kernel, x), atol=1e-12)


def test_scale_kernel_multiplies_the_features_and_follows_its_outputscale():
    space = Sphere(2)
    base = GeometricMaternKernel(space, nu=2.5, num_levels=5)
    kernel = ScaleKernel(base).double()
    fmap = feature_map(kernel)
    x = space.random(6, generator=_gen())
    for scale in (0.3, 4.0):
        kernel.outputscale = scale
        with torch.no_grad():
            assert torch.allclose(fmap.gram(x), _dense(kernel, x), atol=1e-10)


def test_product_maps_are_row_wise_kronecker_products():
    space = ProductSpace(Sphere(2), Circle())
    factors = [GeometricMaternKernel(f, nu=1.5, num_levels=4) for f in space.factors]
    kernel = FactorProductKernel(space, factors).double()
    fmap = feature_map(kernel)
    x = space.random(6, generator=_gen())
    with torch.no_grad():
        assert fmap(x).shape == (6, 16 * 7)
        assert torch.allclose(fmap.gram(x), _dense(kernel, x), atol=1e-10)


def test_zonal_and_lifted_kernels_use_their_own_maps():
    sphere = Sphere(2)
    zonal = ArcCosineKernel(sphere, order=1, num_levels=40).double()
    x = sphere.random(5, generator=_gen())
    with torch.no_grad():
        gap = (feature_map(zonal).gram(x) - _dense(zonal, x)).abs().max()
    assert float(gap) < 1e-2  # the 40-level truncation of the arc-cosine kernel
    base = ChordalMaternKernel(Sphere(3), nu=2.5, num_levels=12)
    base.lengthscale = 2.0
    lift = HomogeneousLiftKernel(base, 3).double()
    z = torch.randn(4, 3, generator=_gen(1), dtype=torch.float64)
    with torch.no_grad():
        gap = (feature_map(lift).gram(z) - _dense(lift, z)).abs().max()
    assert float(gap) < 1e-4 * float(_dense(lift, z).abs().max())


def test_kernels_without_a_feature_map_are_refused():
    with pytest.raises(ConfigurationError, match="no feature map"):
        feature_map(RBFKernel())
    with pytest.raises(ConfigurationError, match="num_points"):
        feature_map(GeometricMaternKernel(SpecialOrthogonal(3), num_levels=3), 0, random=True)


def test_maps_follow_the_kernel_dtype():
    space = Hyperbolic(2)
    kernel = GeometricMaternKernel(space, nu=1.5, num_phases=64).float()
    x = space.random(4, generator=_gen()).float()
    with torch.no_grad():
        phi = feature_map(kernel)(x)
    assert phi.dtype == torch.float32 and torch.isfinite(phi).all()
    assert math.isclose(float(phi.square().sum(-1).mean()), 1.0, abs_tol=0.5)
