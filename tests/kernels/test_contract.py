"""Every registered space with every kernel flavour passes the kernel contract, and so does every
kernel class that manibo.kernels exports, in float32 and float64."""

import inspect
import warnings

import pytest
import torch
from gpytorch.kernels import Kernel
from registry import KERNEL_CASES, KERNELS, SPACES, make_kernel

import manibo.kernels
import manibo.spaces as spaces
from manibo.exceptions import TruncationWarning
from manibo.kernels import GeometricMaternKernel
from manibo.testing import check_kernel_contract, covered


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("flavour", sorted(KERNELS))
@pytest.mark.parametrize("name", sorted(SPACES))
def test_kernel_contract(name, flavour, dtype):
    space = SPACES[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncationWarning)
        check_kernel_contract(make_kernel(space, flavour), space, dtype, "cpu")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(KERNEL_CASES))
def test_every_kernel_class(name, dtype):
    space, kernel = KERNEL_CASES[name]()
    assert type(kernel).__name__ == name
    check_kernel_contract(kernel, space, dtype, "cpu")


def test_every_exported_kernel_class_is_covered():
    exported = [
        name
        for name in manibo.kernels.__all__
        if inspect.isclass(cls := getattr(manibo.kernels, name)) and issubclass(cls, Kernel)
    ]
    covered(exported, KERNEL_CASES, "kernel classes exported by manibo.kernels")


@pytest.mark.parametrize(
    "make", [lambda: spaces.SpecialOrthogonal(5), lambda: spaces.SpecialUnitary(3)]
)
def test_spaces_of_one_group_share_its_levels(make, monkeypatch):
    """The levels of SO(n) and SU(n) are enumerated once per group and process (pure maths: 1 s
    for the 5,000-10,000 levels a kernel lists on SO(5) or SU(3)), not at every space and kernel
    built (six times per space in the contract above)."""
    first = make()
    GeometricMaternKernel(first, nu=2.5)
    assert first._weights is make()._weights

    def enumerate_again(self, bound):
        raise AssertionError("the levels were enumerated again")

    monkeypatch.setattr(type(first._weights), "up_to_scaled", enumerate_again)
    again = make()
    kernel = GeometricMaternKernel(again, nu=2.5)
    assert again.default_max_levels == first.default_max_levels
    assert kernel._scan_levels == 8 * again.default_max_levels


def test_grassmann_spaces_of_one_rank_and_dimension_share_their_levels(monkeypatch):
    """The levels of Gr(k, n) (and their zonal tables) depend on min(k, n - k) and n alone: they
    are enumerated once per process, not for every space and kernel (7,000 levels of Gr(3, 5),
    about 1 s, six times per space in the contract above); a deep copy (of a model) shares them."""
    import copy

    import manibo.spaces.grassmann as grassmann

    first = spaces.Grassmann(3, 5)
    kernel = GeometricMaternKernel(first, nu=2.5).double()
    kernel.lengthscale = 0.7  # the contract's Matérn-5/2 kernel: its tables are built already
    x = first.random(4, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        before = kernel(x).to_dense()
    assert spaces.Grassmann(2, 5)._shared is first._shared
    assert copy.deepcopy(first)._shared is first._shared

    def enumerate_again(*args):
        raise AssertionError("the levels were enumerated again")

    monkeypatch.setattr(grassmann, "partitions_up_to", enumerate_again)
    monkeypatch.setattr(grassmann, "zonal_coefficients", enumerate_again)
    again = spaces.Grassmann(3, 5)
    with torch.no_grad():
        twin = GeometricMaternKernel(again, nu=2.5).double()
        twin.lengthscale = 0.7
        after = twin(x).to_dense()
    assert torch.equal(after, before)
