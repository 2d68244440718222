"""Spectrum adapter: levels per feature budget (zero levels by parity), eigenvalues against the
kernels' own, the residual and the residual correlation against an independent Gegenbauer sum."""

import math

import pytest
import torch
from gpytorch.kernels import RBFKernel

from manibo.exceptions import ConfigurationError
from manibo.harmonics import addition_kernel, funk_hecke
from manibo.kernels import ArcCosineKernel, ChordalMaternKernel, GeometricMaternKernel, ZonalKernel
from manibo.models.vish import ZonalSpectrum
from manibo.spaces import Circle, Sphere


def test_levels_per_budget():
    matern = ZonalSpectrum(ChordalMaternKernel(Sphere(8), nu=1.5))  # d = 9: 1, 9, 44, 156, 450
    assert matern.select_levels(210) == (0, 1, 2, 3)
    assert matern.select_levels(660) == (0, 1, 2, 3, 4)
    assert matern.select_levels(659) == (0, 1, 2, 3)
    relu = ZonalSpectrum(ArcCosineKernel(Sphere(8), order=1))  # odd levels >= 3 are zero
    assert relu.select_levels(660) == (0, 1, 2, 4)  # 504 features
    step = ZonalSpectrum(ArcCosineKernel(Sphere(8), order=0))  # even levels >= 2 are zero
    assert step.select_levels(660) == (0, 1, 3)
    truncated = ZonalSpectrum(GeometricMaternKernel(Sphere(2), num_levels=3))
    assert truncated.select_levels(10_000) == (0, 1, 2)


@torch.no_grad()
def test_eigenvalues_match_the_kernels():
    geo = GeometricMaternKernel(Sphere(2), nu=1.5, num_levels=6).double()
    levels = (0, 2, 5, 7)
    values = ZonalSpectrum(geo).eigenvalues(levels, torch.float64, "cpu")
    weights = geo.level_weights().reshape(-1)
    assert torch.allclose(values[:3], weights[[0, 2, 5]], rtol=1e-14)
    assert values[3] == 0  # beyond the kernel's truncation
    chordal = ChordalMaternKernel(Sphere(3), nu=2.5).double()
    chordal.lengthscale = 0.7
    expected = funk_hecke(lambda t: chordal.shape_function(t[:, None])[:, 0], 4, 5)
    got = ZonalSpectrum(chordal).eigenvalues((0, 1, 2, 3, 4), torch.float64, "cpu")
    assert torch.allclose(got, expected, rtol=1e-12)
    relu = ZonalSpectrum(ArcCosineKernel(Sphere(2), order=1))
    got = relu.eigenvalues((0, 1, 2, 4), torch.float64, "cpu")
    assert torch.allclose(got, torch.tensor([0.375, 1 / 6, 3 / 128, 6.51041667e-4]).double())


@pytest.mark.parametrize(
    "kernel",
    [
        GeometricMaternKernel(Sphere(2), nu=1.5, num_levels=9),
        ChordalMaternKernel(Sphere(3), nu=1.5),
        ArcCosineKernel(Sphere(4), order=1),
    ],
    ids=["geometric", "chordal", "arccos"],
)
@torch.no_grad()
def test_residual_and_residual_correlation(kernel):
    kernel = kernel.double()
    spectrum = ZonalSpectrum(kernel)
    levels = spectrum.select_levels(40)
    d = spectrum.d
    eig = spectrum.eigenvalues(levels, torch.float64, "cpu")
    t = torch.linspace(-1, 1, 41, dtype=torch.float64)
    # independent: kappa(t) from the kernel minus a stacked Gegenbauer sum of the kept levels
    G = addition_kernel(max(levels), d, t)[:, list(levels)]
    kappa = kernel.forward(
        torch.tensor([[0.0] * (d - 1) + [1.0]], dtype=torch.float64),
        torch.stack([torch.sqrt(1 - t**2)] + [torch.zeros_like(t)] * (d - 2) + [t], -1),
    )[0]
    expected = kappa - G @ eig
    got = spectrum.residual_correlation(t, levels, eig)
    assert torch.allclose(got, expected, atol=1e-12)
    residual = spectrum.residual(levels, eig)
    assert torch.allclose(residual, expected[-1], atol=1e-12) and residual >= 0
    full = ZonalSpectrum(GeometricMaternKernel(Sphere(2), num_levels=4).double())
    all_levels = full.select_levels(100)
    assert all_levels == (0, 1, 2, 3)
    with torch.no_grad():
        eig = full.eigenvalues(all_levels, torch.float64, "cpu")
        assert abs(float(full.residual(all_levels, eig))) < 1e-14


def test_errors():
    with pytest.raises(ConfigurationError, match="zonal kernel on a sphere"):
        ZonalSpectrum(RBFKernel())
    with pytest.raises(ConfigurationError, match="lives on Circle"):
        ZonalSpectrum(GeometricMaternKernel(Circle()))
    with pytest.raises(ConfigurationError, match="dimension >= 2"):
        ZonalSpectrum(ZonalKernel(Sphere(1), lambda t: torch.exp(t)))
    spectrum = ZonalSpectrum(ChordalMaternKernel(Sphere(2)))
    for bad in (0, 2.5, True):
        with pytest.raises(ConfigurationError, match="num_features"):
            spectrum.select_levels(bad)
    assert math.isfinite(float(spectrum.variance(torch.float64, "cpu").detach()))
