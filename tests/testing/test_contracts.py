"""The contracts themselves: the kernel contract rejects a kernel whose input gradient is wrong, the
space contract an embedding with a seam, a point named twice or two points merged (the real
spaces pass it in tests/spaces/test_contract.py)."""

import pytest
import torch
from gpytorch.kernels import Kernel, RBFKernel

from manibo.exceptions import InputDataError
from manibo.kernels import GeometricMaternKernel
from manibo.spaces import Circle, RealProjectiveSpace, Sphere, Torus
from manibo.testing.contracts import check_kernel_contract, check_space_contract


class _DetachedGradientKernel(Kernel):
    """A valid Matérn kernel whose gradient in x1 is scaled by 1.5 (a plausible chain-rule bug)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x1, x2, diag=False, **params):
        # value unchanged, gradient in x1 multiplied by 1.5
        x1 = x1 + 0.5 * (x1 - x1.detach())
        return self.inner.forward(x1, x2, diag=diag, **params)


def test_the_contract_accepts_a_correct_kernel():
    space = Sphere(2)
    check_kernel_contract(GeometricMaternKernel(space, nu=2.5), space, torch.float64, "cpu")


def test_the_contract_rejects_a_wrong_input_gradient():
    space = Sphere(2)
    kernel = _DetachedGradientKernel(GeometricMaternKernel(space, nu=2.5))
    with pytest.raises(AssertionError, match="gradient in the inputs"):
        check_kernel_contract(kernel, space, torch.float64, "cpu")


class _GeodesicGaussian(Kernel):
    """exp(-(d / l)^2) of the geodesic distance: positive definite on the flat torus only for short
    lengthscales (smallest eigenvalue -0.565 on 400 points at l = 2)."""

    has_lengthscale = True

    def __init__(self, space):
        super().__init__()
        self.space = space

    def forward(self, x1, x2, diag=False, **params):
        pairs = (x1, x2) if diag else (x1[..., :, None, :], x2[..., None, :, :])
        return torch.exp(-((self.space.distance(*pairs) / self.lengthscale.squeeze()) ** 2))


def test_the_contract_finds_a_kernel_that_is_not_positive_definite_at_a_longer_lengthscale():
    space, kernel = Torus(2), _GeodesicGaussian(Torus(2))
    initial = kernel.lengthscale.detach().clone()  # 0.69, where it is positive definite
    with pytest.raises(
        AssertionError,
        match="K is not positive semi-definite on 100 points at 3.0 times its lengthscale",
    ):
        check_kernel_contract(kernel, space, torch.float64, "cpu")
    assert torch.allclose(kernel.lengthscale.float(), initial)  # restored


class _AmbientInner(Kernel):
    """x1 . x2 on the ambient coordinates, as plain torch code."""

    def forward(self, x1, x2, diag=False, **params):
        return (x1 * x2).sum(-1) if diag else x1 @ x2.transpose(-1, -2)


class _GuardedAmbientRBF(RBFKernel):
    def forward(self, x1, x2, diag=False, **params):
        if x1.dtype != x2.dtype:
            raise InputDataError(f"x1 is {x1.dtype} but x2 is {x2.dtype}; give both one dtype.")
        return super().forward(x1, x2, diag=diag, **params)


def test_the_contract_names_the_dtype_requirement_a_plain_gpytorch_kernel_misses():
    """Kernels on the ambient coordinates are correct, but mixed dtypes give torch's RuntimeError
    (a matrix product) or are promoted silently (GPyTorch's RBFKernel)."""
    space = Sphere(2)
    requirement = (
        r"mixed dtypes: the kernel must refuse x1 torch.float64 with x2 torch.float32 by raising "
        r"manibo.exceptions.InputDataError .*; "
    )
    with pytest.raises(AssertionError, match=requirement + "got RuntimeError"):
        check_kernel_contract(_AmbientInner(), space, torch.float64, "cpu")
    with pytest.raises(AssertionError, match=requirement + "nothing was raised"):
        check_kernel_contract(RBFKernel(), space, torch.float64, "cpu")
    check_kernel_contract(_GuardedAmbientRBF(), space, torch.float64, "cpu")


class _RawAngleCircle(Circle):
    """The circle embedded by its angle: a seam at 0 = 2π."""

    def embed(self, x):
        return x


class _SignedProjectiveSpace(RealProjectiveSpace):
    """RP² embedded by the unit vector: ``x`` and ``-x`` are named apart."""

    def embed(self, x):
        return x


class _FoldedCircle(Circle):
    """The circle embedded by the double angle: θ and θ + π merged."""

    def embed(self, x):
        return torch.cat([(2 * x).cos(), (2 * x).sin()], -1) / 2


@pytest.mark.parametrize(
    "space", [_RawAngleCircle(), _SignedProjectiveSpace(2), _FoldedCircle()], ids=repr
)
def test_the_space_contract_rejects_an_embedding_with_a_seam_a_double_name_or_a_fold(space):
    with pytest.raises(AssertionError, match="expected within"):
        check_space_contract(space, torch.float64, "cpu")
