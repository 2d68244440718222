"""The kernel contract itself: it must reject a kernel whose input gradient is wrong."""

import pytest
import torch
from gpytorch.kernels import Kernel

from manibo.kernels import GeometricMaternKernel
from manibo.spaces import Sphere
from manibo.testing.contracts import check_kernel_contract


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
