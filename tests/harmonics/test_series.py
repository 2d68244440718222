"""The streaming level series: values and both gradients against a plain autograd computation."""

import torch

from manibo.harmonics import GegenbauerLevels, addition_kernel, level_series


def _dense(t, coeffs, d):
    g = addition_kernel(coeffs.shape[-1] - 1, d, t) / addition_kernel(
        coeffs.shape[-1] - 1, d, torch.ones((), dtype=t.dtype)
    ).clamp(min=1)  # b_l = P_l, so divide G_l by N(d, l)
    return (g * coeffs).sum(-1)


def test_series_values_and_gradients_match_autograd():
    gen = torch.Generator().manual_seed(0)
    for d in (2, 3, 6):
        t = (2 * torch.rand(4, 6, generator=gen, dtype=torch.float64) - 1).requires_grad_(True)
        coeffs = torch.rand(3, 1, 1, 9, generator=gen, dtype=torch.float64).requires_grad_(True)
        ours = level_series(t, coeffs, GegenbauerLevels(d))
        ref = _dense(t, coeffs, d)
        assert ours.shape == (3, 4, 6)
        assert torch.allclose(ours, ref, atol=1e-12)
        w = torch.randn(ours.shape, generator=gen, dtype=torch.float64)
        g_ours = torch.autograd.grad((ours * w).sum(), (t, coeffs))
        g_ref = torch.autograd.grad((ref * w).sum(), (t, coeffs))
        for a, b in zip(g_ours, g_ref, strict=True):
            assert torch.allclose(a, b, atol=1e-10)


def test_series_passes_gradcheck():
    t = (torch.rand(3, 2, dtype=torch.float64) * 1.8 - 0.9).requires_grad_(True)
    coeffs = torch.rand(5, dtype=torch.float64).requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda a, c: level_series(a, c, GegenbauerLevels(4)), (t, coeffs)
    )
