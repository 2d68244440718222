"""Every registered space with every kernel flavour passes the kernel contract, and so does every
kernel class that manibo.kernels exports, in float32 and float64."""

import inspect
import warnings

import pytest
import torch
from gpytorch.kernels import Kernel
from registry import KERNEL_CASES, KERNELS, SPACES, make_kernel

import manibo.kernels
from manibo.exceptions import TruncationWarning
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
