"""Every registered space with every kernel flavour passes the kernel contract.

Both float32 and float64 are checked.
"""

import warnings

import pytest
import torch
from registry import KERNELS, SPACES, make_kernel

from manibo.exceptions import TruncationWarning
from manibo.testing import check_kernel_contract


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("flavour", sorted(KERNELS))
@pytest.mark.parametrize("name", sorted(SPACES))
def test_kernel_contract(name, flavour, dtype):
    space = SPACES[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncationWarning)
        check_kernel_contract(make_kernel(space, flavour), space, dtype, "cpu")
