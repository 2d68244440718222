"""Heat kernels of H^d against closed forms, numerical derivatives, the heat equation and
Harish-Chandra's c-function."""

import math

import mpmath as mp
import numpy as np
import pytest
import torch
from scipy import integrate, special

from manibo.exceptions import ConfigurationError
from manibo.harmonics.hyperbolic import (
    GRID_SCALE,
    GRID_STEP,
    hyperbolic_heat,
    interpolate,
    log_plancherel,
    superpose,
)
from manibo.testing.references import hyperbolic_kernel


def _heat(d, t, r):
    """Unnormalised shifted heat kernel from the module, at float times and distances."""
    heat = hyperbolic_heat(d)
    tt = torch.tensor(t, dtype=torch.float64)
    values, slopes = heat.profile(tt)
    r = torch.as_tensor(r, dtype=torch.float64)
    return interpolate(values, slopes, r) * heat.log_at_origin(tt).exp()


@pytest.mark.parametrize("t", [1e-3, 0.1, 1.0, 30.0])
def test_h3_heat_kernel_is_the_closed_form(t):
    r = torch.linspace(0, 6, 41, dtype=torch.float64)
    closed = math.sqrt(math.pi) / 4 * t**-1.5 * torch.exp(-(r**2) / (4 * t))
    closed = closed * torch.where(r > 0, r / torch.sinh(r.clamp_min(1e-12)), torch.ones_like(r))
    scale = closed.max()
    assert torch.allclose(_heat(3, t, r), closed, atol=1e-9 * float(scale), rtol=0)


@pytest.mark.parametrize("d", [5, 7])
def test_odd_dimensions_follow_the_shift_operator(d):
    # p^(d+2) = d * (-1/sinh r) d/dr p^(d), from the H^3 closed form by mpmath derivatives
    mp.mp.dps = 30
    t = mp.mpf("0.7")

    def p3(r):
        return mp.sqrt(mp.pi) / 4 * t ** mp.mpf(-1.5) * r / mp.sinh(r) * mp.exp(-(r**2) / (4 * t))

    def p5(r):
        return -3 / mp.sinh(r) * mp.diff(p3, r)

    def p7(r):
        return -5 / mp.sinh(r) * mp.diff(p5, r)

    reference = {5: p5, 7: p7}[d]
    for r in (0.3, 1.0, 2.5):
        expected = float(reference(mp.mpf(r)))
        assert abs(float(_heat(d, 0.7, r)) / expected - 1) < 1e-8


@pytest.mark.parametrize("d", [2, 3, 4, 5, 6])
def test_normalised_heat_kernels_match_the_spectral_integral(d):
    r = np.array([0.0, 0.2, 1.0, 2.5])
    t = 0.5  # lengthscale 1
    expected = hyperbolic_kernel(d, math.inf, math.sqrt(2 * t), r)
    heat = hyperbolic_heat(d)
    values, slopes = heat.profile(torch.tensor(t, dtype=torch.float64))
    got = interpolate(values, slopes, torch.from_numpy(r)).numpy()
    assert np.abs(got - expected).max() < 1e-8


@pytest.mark.parametrize("d", [2, 3, 4, 5])
@pytest.mark.parametrize("t", [0.05, 0.8, 20.0])
def test_heat_kernel_at_the_origin_is_the_spectral_mass(d, t):
    # p(0, t) = int exp(-t lam^2) P_d(lam) dlam, with the Plancherel density of this module
    def integrand(lam):
        return math.exp(
            -t * lam * lam + float(log_plancherel(torch.tensor(lam, dtype=torch.float64), d))
        )

    top = 40 / math.sqrt(t)
    expected, _ = integrate.quad(integrand, 0, top, limit=400, epsabs=0, epsrel=1e-10)
    got = float(hyperbolic_heat(d).log_at_origin(torch.tensor(t, dtype=torch.float64)).exp())
    assert abs(got / expected - 1) < 1e-8


@pytest.mark.parametrize("d", [2, 3, 4, 5])
def test_heat_equation_of_the_shifted_laplacian(d):
    # d/dt p = p'' + (d - 1) coth(r) p' + rho^2 p for the shifted kernel
    rho2 = ((d - 1) / 2) ** 2
    t, dt, h = 0.6, 1e-5, 1e-4
    r = torch.tensor([0.4, 1.0, 2.0, 3.0], dtype=torch.float64)
    p = _heat(d, t, r)
    p_t = (_heat(d, t + dt, r) - _heat(d, t - dt, r)) / (2 * dt)
    p_r = (_heat(d, t, r + h) - _heat(d, t, r - h)) / (2 * h)
    p_rr = (_heat(d, t, r + h) - 2 * p + _heat(d, t, r - h)) / h**2
    residual = p_t - (p_rr + (d - 1) / torch.tanh(r) * p_r + rho2 * p)
    assert float((residual / p.abs().max()).abs().max()) < 1e-5


@pytest.mark.parametrize("d", [2, 3, 4, 5, 6, 7])
def test_plancherel_density_is_harish_chandras(d):
    # |c(lam)|^-2 = |Gamma(i lam + rho) / Gamma(i lam)|^2 up to a constant
    lam = np.array([0.05, 0.3, 1.0, 2.7, 9.0])
    harish_chandra = 2 * np.real(
        special.loggamma(1j * lam + (d - 1) / 2) - special.loggamma(1j * lam)
    )
    ours = log_plancherel(torch.from_numpy(lam), d).numpy()
    difference = ours - harish_chandra
    assert np.ptp(difference) < 1e-10


def test_interpolation_reproduces_cubics_and_batches():
    heat = hyperbolic_heat(3)
    grid = heat.radii
    coeffs = torch.tensor([[0.3, -1.0, 0.2, 0.01], [1.0, 0.5, -0.1, 0.002]], dtype=torch.float64)
    powers = torch.stack([grid**k for k in range(4)], -1)
    values = powers @ coeffs.T  # (R, 2)
    slopes = torch.stack([k * grid ** max(k - 1, 0) for k in range(4)], -1) @ coeffs.T
    r = torch.rand(3, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 30
    batched = interpolate(values.T, slopes.T, r, point_dims=2)
    assert batched.shape == (2, 3, 5)  # the table's batch broadcasts against r's (none here)
    expected = (torch.stack([r**k for k in range(4)], -1) * coeffs[:, None, None, :]).sum(-1)
    assert torch.allclose(batched, expected, rtol=1e-11, atol=1e-9)
    single = interpolate(values[:, 0], slopes[:, 0], r)
    assert torch.allclose(single, batched[0], rtol=0, atol=1e-12)


def test_superposition_keeps_the_corner_at_zero():
    # a mixture of exp(-a r)-like profiles has a corner at 0; the first cell must follow it
    grid = hyperbolic_heat(3).radii
    profiles = torch.stack([torch.exp(-a * grid) for a in (1.0, 3.0)])
    slopes = torch.stack([-a * torch.exp(-a * grid) for a in (1.0, 3.0)])
    slopes[:, 0] = 0.0  # what smooth components report at the origin
    values, mixed_slopes = superpose(
        torch.tensor([0.3, 0.7], dtype=torch.float64).log(), profiles, slopes
    )
    r = torch.linspace(0, GRID_SCALE * math.sinh(GRID_STEP), 7, dtype=torch.float64)
    expected = 0.3 * torch.exp(-r) + 0.7 * torch.exp(-3 * r)
    assert torch.allclose(interpolate(values, mixed_slopes, r), expected, atol=1e-10, rtol=0)


def test_dimension_is_checked():
    with pytest.raises(ConfigurationError, match="dim"):
        hyperbolic_heat(1)
