"""The default Matérn kernel of each kind of space, and registering one for a new kind."""

import math
import warnings

import pytest
import torch
from gpytorch.kernels import RBFKernel
from gpytorch.priors import LogNormalPrior

from manibo.exceptions import ConfigurationError, TruncationWarning
from manibo.kernels import (
    BoxMaternKernel,
    FactorProductKernel,
    GeometricMaternKernel,
    matern_kernel,
)
from manibo.models import build_surrogate
from manibo.spaces import (
    SE3,
    Box,
    Categorical,
    Circle,
    Integers,
    Mesh,
    ProductSpace,
    Space,
    SpecialOrthogonal,
    Sphere,
    Torus,
)


def test_compact_spaces_get_the_geometric_kernel_and_boxes_the_ard_kernel():
    for space in (Sphere(2), Torus(2), SpecialOrthogonal(4), ProductSpace(Sphere(2), Sphere(1))):
        kernel = matern_kernel(space, 1.5, 1e-4)
        assert type(kernel) is GeometricMaternKernel and kernel.space is space
        assert kernel.nu == 1.5 and kernel.truncation_tol == 1e-4
    box = Box([0.0, 0.0], [1.0, 2.0])
    assert isinstance(matern_kernel(box), BoxMaternKernel)
    assert isinstance(matern_kernel(box, math.inf).base, RBFKernel)


def test_products_with_a_box_multiply_the_factor_kernels():
    space = SE3([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    prior = LogNormalPrior(0.0, 1.0)
    kernel = matern_kernel(space, 2.5, lengthscale_prior=prior).double()
    assert isinstance(kernel, FactorProductKernel)
    box_kernel, rotation_kernel = kernel.factor_kernels
    assert isinstance(box_kernel, BoxMaternKernel)
    assert isinstance(rotation_kernel, GeometricMaternKernel)
    priors = [p for name, p, *_ in kernel.named_priors()]
    assert len(priors) == 2 and priors[0] is not priors[1]  # each factor has its own copy
    x = space.random(6, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = box_kernel(x[:, :3]).to_dense() * rotation_kernel(x[:, 3:]).to_dense()
        assert (kernel(x).to_dense() - expected).abs().max() < 1e-14


def test_per_factor_gives_a_compact_product_one_kernel_and_lengthscale_per_factor():
    space = ProductSpace(Sphere(2), Torus(2))
    kernel = matern_kernel(space, 1.5, 1e-4, max_levels=60, per_factor=True).double()
    assert isinstance(kernel, FactorProductKernel)
    sphere_kernel, torus_kernel = kernel.factor_kernels
    # the torus is itself a product: per_factor reaches it, one kernel per circle
    assert type(sphere_kernel) is GeometricMaternKernel and sphere_kernel.max_levels == 60
    assert [type(k) for k in torus_kernel.factor_kernels] == [GeometricMaternKernel] * 2
    sphere_kernel.lengthscale, torus_kernel.factor_kernels[1].lengthscale = 0.8, 2.0
    x = space.random(5, generator=0)
    with torch.no_grad():
        expected = (
            sphere_kernel(x[:, :3]).to_dense()
            * torus_kernel.factor_kernels[0](x[:, 3:4]).to_dense()
            * torus_kernel.factor_kernels[1](x[:, 4:]).to_dense()
        )
        assert (kernel(x).to_dense() - expected).abs().max() < 1e-14
    # a space of one factor has nothing to split
    assert type(matern_kernel(Sphere(2), per_factor=True)) is GeometricMaternKernel


def test_a_product_with_a_finite_factor_gets_one_kernel_per_factor_unless_told_otherwise():
    """An integer or a choice beside a manifold is another kind of setting: by default each
    factor has its own kernel and lengthscale; per_factor=False still gives the product
    manifold's kernel, and products of manifolds keep it by default."""
    mixed = ProductSpace(Sphere(2), Integers(1, 8), Categorical(3))
    kernel = matern_kernel(mixed)
    assert isinstance(kernel, FactorProductKernel)
    assert [type(k.space) for k in kernel.factor_kernels] == [Sphere, Integers, Categorical]
    assert type(matern_kernel(mixed, per_factor=False)) is GeometricMaternKernel
    assert type(matern_kernel(ProductSpace(Sphere(2), Torus(2)))) is GeometricMaternKernel
    nested = ProductSpace(Sphere(2), ProductSpace(Sphere(1), Integers(0, 3)))  # a factor's factor
    assert isinstance(matern_kernel(nested), FactorProductKernel)
    # per_factor=False reaches a compact product inside a product with a box
    boxed = ProductSpace(Box([0.0], [1.0]), ProductSpace(Sphere(2), Categorical(3)))
    assert type(matern_kernel(boxed, per_factor=False).factor_kernels[1]) is GeometricMaternKernel
    assert isinstance(matern_kernel(boxed).factor_kernels[1], FactorProductKernel)
    deeper = ProductSpace(Box([0.0], [1.0]), boxed)  # and two products down
    inner = matern_kernel(deeper, per_factor=False).factor_kernels[1].factor_kernels[1]
    assert type(inner) is GeometricMaternKernel
    # graph and mesh factors are points of a domain, not settings: the product manifold's kernel
    # as before (enumerating their thousands of points made proposals 15-100 times slower)
    assert type(matern_kernel(ProductSpace(Mesh.icosphere(1), Circle()))) is GeometricMaternKernel
    model = build_surrogate(
        "matern", mixed, mixed.random(4, generator=0), torch.zeros(4, 1, dtype=torch.float64)
    )
    assert isinstance(model.covar_module.base_kernel, FactorProductKernel)
    options = {"per_factor": False, "fit_iterations": 1}
    with warnings.catch_warnings():  # the product's series is truncated: the choice was made
        warnings.simplefilter("ignore", TruncationWarning)
        X = mixed.random(4, generator=0)
        model = build_surrogate(
            "matern", mixed, X, torch.zeros(4, 1, dtype=torch.float64), **options
        )
    assert type(model.covar_module.base_kernel) is GeometricMaternKernel


def test_a_plug_in_kernel_written_as_the_docs_show_works_beside_a_choice():
    """Its signature takes no per_factor; the default per-factor product gave it per_factor=True
    and it raised a TypeError on every product with an integer or a choice."""

    class Globe(Sphere):
        pass

    @matern_kernel.register(Globe)
    def _(space, nu=2.5, truncation_tol=1e-6, lengthscale_prior=None):
        return GeometricMaternKernel(space, nu=nu)

    kernel = matern_kernel(ProductSpace(Globe(2), Categorical(3)))
    assert [type(k) for k in kernel.factor_kernels] == [GeometricMaternKernel] * 2


@pytest.mark.parametrize("spec", ["box2", "hyperbolic2", "box1*hyperbolic2", "sphere2"])
def test_misspelt_options_and_a_per_factor_that_is_no_bool_are_refused_on_every_space(spec):
    from manibo.spaces import make_space

    space = make_space(spec)
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_level'"):
        matern_kernel(space, max_level=5)
    with pytest.raises(ConfigurationError, match="per_factor"):
        matern_kernel(space, per_factor="yes")


def test_a_new_kind_of_space_is_registered_and_unknown_ones_are_refused():
    class Plane(Box):
        pass

    class Opaque(Space):
        dim, point_shape = 1, (1,)

        def random(self, n, generator=None, dtype=torch.float64, device=None):
            return torch.zeros(n, 1, dtype=dtype, device=device)

        def _check_membership(self, x, name):
            pass

        project = to_tangent = retract = distance = None

    with pytest.raises(ConfigurationError, match="no default Matérn kernel is known for Opaque"):
        matern_kernel(Opaque())

    @matern_kernel.register(Opaque)
    def _(space, nu=2.5, truncation_tol=1e-6, lengthscale_prior=None):
        return RBFKernel()

    assert isinstance(matern_kernel(ProductSpace(Opaque(), Sphere(2))).factor_kernels[0], RBFKernel)
    assert isinstance(matern_kernel(Plane([0.0], [1.0])), BoxMaternKernel)
