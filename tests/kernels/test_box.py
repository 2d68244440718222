"""Matérn kernels on a box: the closed forms on unit-cube coordinates, one lengthscale per axis."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import BoxMaternKernel
from manibo.spaces import Box, Sphere


def _closed_form(r, nu):
    if math.isinf(nu):
        return torch.exp(-0.5 * r**2)
    s = math.sqrt(2 * nu) * r
    poly = {0.5: 1.0, 1.5: 1 + s, 2.5: 1 + s + s**2 / 3}[nu]
    return poly * torch.exp(-s)


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5, math.inf])
def test_equals_the_closed_form_on_scaled_coordinates(nu):
    box = Box([0.0, -2.0], [4.0, 2.0])
    kernel = BoxMaternKernel(box, nu=nu).double()
    kernel.lengthscale = torch.tensor([[0.3, 0.8]], dtype=torch.float64)
    x = box.random(7, generator=torch.Generator().manual_seed(0))
    y = box.random(5, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours = kernel(x, y).to_dense()
    scaled = (x[:, None, :] - y[None, :, :]) / torch.tensor([4.0, 4.0], dtype=torch.float64)
    r = (scaled / torch.tensor([0.3, 0.8], dtype=torch.float64)).norm(dim=-1)
    assert (ours - _closed_form(r, nu)).abs().max() < 1e-12
    assert kernel.lengthscale.shape == (1, 2)


def test_refuses_other_spaces_nus_and_points_off_the_box():
    with pytest.raises(ConfigurationError, match="Box"):
        BoxMaternKernel(Sphere(2))
    with pytest.raises(ConfigurationError, match="nu"):
        BoxMaternKernel(Box([0.0], [1.0]), nu=3.5)
    kernel = BoxMaternKernel(Box([0.0], [1.0])).double()
    with pytest.raises(InputDataError, match="outside the box"):
        kernel(torch.tensor([[2.0]], dtype=torch.float64)).to_dense()


def test_batch_index_gives_the_batch_members_kernel():
    # the batch is in the GPyTorch kernel inside: kernel[0] kept batch_shape [2] and its output
    # raised "The expected shape of the kernel was torch.Size([2, 4, 4]), but got [4, 4]"
    box = Box([0.0, -1.0], [1.0, 3.0])
    kernel = BoxMaternKernel(box, nu=2.5, batch_shape=torch.Size([2])).double()
    kernel.lengthscale = torch.tensor([[[0.2, 0.5]], [[0.7, 0.3]]], dtype=torch.float64)
    x = box.random(4, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full = kernel(x).to_dense()
        for i in range(2):
            assert kernel[i].batch_shape == torch.Size([])
            assert torch.allclose(kernel[i](x).to_dense(), full[i], atol=1e-12)


def test_ard_num_dims_other_than_the_boxs_dimension_is_refused():
    # ard_num_dims=3 on a 2-d box was accepted and then raised "The size of tensor a (2) must
    # match the size of tensor b (3)"
    box = Box([0.0, -1.0], [1.0, 3.0])
    with pytest.raises(ConfigurationError, match="one lengthscale per coordinate"):
        BoxMaternKernel(box, ard_num_dims=3)
    assert BoxMaternKernel(box, ard_num_dims=2).lengthscale.shape == (1, 2)
