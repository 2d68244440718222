"""Circle: refusals of angles off [0, 2π) with the advice that fits what arrived; the spectral sum
from a table of cosines and from the level recurrence against the Fourier sum."""

import math

import pytest
import torch

from manibo.exceptions import InputDataError
from manibo.spaces import Circle


def test_angles_in_degrees_are_refused_with_the_conversion():
    # The advice was to wrap them, which turns 90 degrees into 2.035 rad, silently another angle.
    space = Circle()
    with pytest.raises(InputDataError, match=r"look like degrees.*deg2rad\(x\)` first"):
        space.check(torch.tensor([[90.0], [45.0]], dtype=torch.float64))
    with pytest.raises(InputDataError) as info:  # radians out of [0, 2π) are only wrapped
        space.check(torch.tensor([[7.0], [-0.5]], dtype=torch.float64))
    assert "degrees" not in str(info.value) and "torch.remainder(x, 2 * math.pi)" in str(info.value)


def test_the_table_of_cosines_and_the_level_recurrence_agree_with_their_gradients(monkeypatch):
    # A kernel matrix small enough is summed from a table of cos(l d), a larger one level by
    # level; both against the Fourier sum computed here, values and gradients.
    import manibo.spaces.circle as circle_module

    space = Circle()
    gen = torch.Generator().manual_seed(0)
    x1 = (2 * math.pi * torch.rand(7, 1, generator=gen, dtype=torch.float64)).requires_grad_()
    x2 = 2 * math.pi * torch.rand(5, 1, generator=gen, dtype=torch.float64)
    weights = torch.rand(2, 1, 1, 40, generator=gen, dtype=torch.float64)  # a batch of two
    gap = x1[:, 0].detach().unsqueeze(-1) - x2[:, 0]
    level = torch.arange(40, dtype=torch.float64)
    scale = torch.where(level > 0, 2.0, 1.0)
    expected = (torch.cos(gap.unsqueeze(-1) * level) * scale * weights).sum(-1)
    results = []
    for elements in (circle_module.COSINE_TABLE_ELEMENTS, 0):  # the table, then the recurrence
        monkeypatch.setattr(circle_module, "COSINE_TABLE_ELEMENTS", elements)
        K = space.spectral_sum(weights[..., 0, 0, :], x1, x2)
        (grad,) = torch.autograd.grad(K.sum(), x1)
        results.append((K.detach(), grad))
        assert torch.allclose(K.detach(), expected, atol=1e-12)
        diag = space.spectral_sum(weights[..., 0, 0, :], x1[:5], x2, diag=True)
        assert torch.allclose(diag.detach(), torch.diagonal(expected[:, :5], dim1=-2, dim2=-1))
    assert torch.allclose(results[0][1], results[1][1], atol=1e-10)


def test_only_a_small_whole_kernel_matrix_is_summed_from_the_table(monkeypatch):
    # Decided per row block, a 2000 x 2000 matrix of 16 levels took the table in every block and
    # held the whole N x N x L table for the backward pass (1.2 GiB against 31 MiB for K).
    import manibo.spaces.circle as circle_module

    def refuse(*args):
        raise AssertionError("the table of cosines was built for a large matrix")

    monkeypatch.setattr(circle_module, "cosine_series", refuse)
    x = torch.linspace(0, 6, 2000, dtype=torch.float64).unsqueeze(-1)
    K = Circle().spectral_sum(torch.rand(16, dtype=torch.float64), x, x)
    assert K.shape == (2000, 2000)
