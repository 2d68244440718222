"""Funk–Hecke eigenvalues: quadrature against Bessel closed forms, reconstruction, and the
ReLU/step/arc-cosine closed forms against independent adaptive quadrature (SciPy only)."""

import math

import numpy as np
import pytest
import scipy.integrate as si
import scipy.special as sp
import torch

from manibo.exceptions import ConfigurationError
from manibo.harmonics.funk_hecke import (
    arc_cosine_eigenvalues,
    funk_hecke,
    funk_hecke_constant,
    relu_coefficients,
    step_coefficients,
)


def _dims(d, levels):
    """N(d, n) for n < levels, from the binomial formula."""
    return np.array(
        [
            math.comb(n + d - 1, n) - (math.comb(n + d - 3, n - 2) if n >= 2 else 0)
            for n in range(levels)
        ]
    )


def _normalized_gegenbauer(n, d, t):
    if d == 2:
        return sp.eval_chebyt(n, t)
    alpha = (d - 2) / 2
    return sp.eval_gegenbauer(n, alpha, t) / sp.eval_gegenbauer(n, alpha, 1.0)


def _adaptive_funk_hecke(f, d, n):
    """omega_d * int f(t) P_n(t) (1-t^2)^(alpha-1/2) dt by QUADPACK, split at the kink t = 0."""
    e = (d - 3) / 2
    omega = math.gamma(d / 2) / (math.sqrt(math.pi) * math.gamma((d - 1) / 2))
    options = dict(weight="alg", epsabs=1e-13, epsrel=1e-12, limit=200)
    left = si.quad(
        lambda t: f(t) * _normalized_gegenbauer(n, d, t) * (1 - t) ** e,
        -1,
        0,
        wvar=(e, 0),
        **options,
    )
    right = si.quad(
        lambda t: f(t) * _normalized_gegenbauer(n, d, t) * (1 + t) ** e,
        0,
        1,
        wvar=(0, e),
        **options,
    )
    return omega * (left[0] + right[0])


def _kappa1(t):
    return (math.sqrt(max(1 - t * t, 0.0)) + (math.pi - math.acos(t)) * t) / math.pi


def _kappa0(t):
    return 1 - math.acos(t) / math.pi


def test_constant_matches_surface_area_ratio():
    def area(k):  # |S^(k-1)|
        return 2 * math.pi ** (k / 2) / math.gamma(k / 2)

    for d in range(2, 12):
        assert funk_hecke_constant(d) == pytest.approx(area(d - 1) / area(d), rel=1e-14)


def test_exponential_on_circle_matches_bessel():
    # kappa = e^(t-1) on S^1 (Chebyshev weight): lambda_n = e^-1 I_n(1)
    lam = funk_hecke(lambda t: torch.exp(t - 1), 2, 40)
    ref = np.exp(-1) * sp.iv(np.arange(40), 1.0)
    assert np.max(np.abs(lam.numpy() - ref)) < 1e-15


@pytest.mark.parametrize("d", [3, 5, 8])
def test_exponential_matches_bessel_and_reconstructs(d):
    # omega_d int e^t P_n (1-t^2)^(alpha-1/2) dt = Gamma(alpha+1) 2^alpha I_{n+alpha}(1)
    alpha = (d - 2) / 2
    lam = funk_hecke(lambda t: torch.exp(t - 1), d, 40).numpy()
    ref = np.exp(-1) * math.gamma(alpha + 1) * 2**alpha * sp.iv(np.arange(40) + alpha, 1.0)
    assert np.max(np.abs(lam - ref)) < 1e-13  # the rounding floor of 512-node quadrature
    t = np.linspace(-1, 1, 21)
    dims = _dims(d, 40)
    series = sum(lam[n] * dims[n] * _normalized_gegenbauer(n, d, t) for n in range(40))
    # tolerance: the quadrature's ~1e-14 absolute floor per level, times N(d, n), summed over levels
    assert np.max(np.abs(series - np.exp(t - 1))) < 1e-10
    assert abs(np.sum(lam * dims) - 1.0) < 1e-10  # kappa(1)


@pytest.mark.parametrize("d", [2, 3, 5, 9])
def test_closed_forms_match_adaptive_quadrature(d):
    relu = relu_coefficients(d, 9).numpy()
    step = step_coefficients(d, 9).numpy()
    k1 = arc_cosine_eigenvalues(d, 9, order=1).numpy()
    k0 = arc_cosine_eigenvalues(d, 9, order=0).numpy()
    for n in range(9):
        assert relu[n] == pytest.approx(
            _adaptive_funk_hecke(lambda t: max(t, 0.0), d, n), abs=1e-10
        )
        assert step[n] == pytest.approx(
            _adaptive_funk_hecke(lambda t: float(t > 0), d, n), abs=1e-10
        )
        assert k1[n] == pytest.approx(_adaptive_funk_hecke(_kappa1, d, n), abs=1e-10)
        assert k0[n] == pytest.approx(_adaptive_funk_hecke(_kappa0, d, n), abs=1e-10)


def test_known_values_on_the_two_sphere():
    relu = relu_coefficients(3, 9).tolist()
    assert relu == pytest.approx(
        [1 / 4, 1 / 6, 1 / 16, 0, -1 / 96, 0, 1 / 256, 0, -1 / 512], abs=1e-16
    )
    step = step_coefficients(3, 8).tolist()
    assert step == pytest.approx([1 / 2, 1 / 4, 0, -1 / 16, 0, 1 / 32, 0, -5 / 256], abs=1e-16)
    k1 = arc_cosine_eigenvalues(3, 9, order=1).tolist()
    assert k1 == pytest.approx(
        [0.375, 1 / 6, 0.0234375, 0, 6.5104e-4, 0, 9.1553e-5, 0, 2.2888e-5], rel=1e-4
    )


@pytest.mark.parametrize("d", [3, 4, 9, 10])
def test_zero_levels_are_exactly_zero_by_parity(d):
    k1 = arc_cosine_eigenvalues(d, 40, order=1)
    k0 = arc_cosine_eigenvalues(d, 40, order=0)
    n = torch.arange(40)
    assert (k1[(n >= 3) & (n % 2 == 1)] == 0).all() and (k1[(n % 2 == 0) | (n < 2)] > 0).all()
    assert (k0[(n >= 2) & (n % 2 == 0)] == 0).all() and (k0[(n % 2 == 1) | (n == 0)] > 0).all()


@pytest.mark.parametrize("d", [3, 5, 10])
def test_quadrature_agrees_with_closed_forms(d):
    k1 = funk_hecke(
        lambda t: (torch.sqrt(1 - t * t) + (math.pi - torch.acos(t)) * t) / math.pi, d, 21
    )
    assert (k1 - arc_cosine_eigenvalues(d, 21, order=1)).abs().max() < 1e-12
    relu = funk_hecke(
        lambda t: t.clamp(min=0), d, 21, num_nodes=2000
    )  # kink: algebraic convergence
    assert (relu - relu_coefficients(d, 21)).abs().max() < 2e-7


@pytest.mark.parametrize("d", [3, 6])
def test_arc_cosine_series_reconstructs_kernel(d):
    lam = arc_cosine_eigenvalues(d, 60, order=1).numpy()
    t = np.array([-0.9, -0.3, 0.0, 0.3, 0.7])
    dims = _dims(d, 60)
    series = sum(lam[n] * dims[n] * _normalized_gegenbauer(n, d, t) for n in range(60))
    exact = np.array([_kappa1(v) for v in t])
    assert np.max(np.abs(series - exact)) < 1e-7
    trace = np.cumsum(arc_cosine_eigenvalues(d, 400, order=1).numpy() * _dims(d, 400))
    assert np.all(np.diff(trace) >= 0) and 1 - 1e-7 < trace[-1] <= 1 + 1e-14


def test_eigenvalues_are_differentiable_and_batched():
    scale = torch.tensor([0.5, 2.0], dtype=torch.float64, requires_grad=True)

    def spectrum(s):
        return funk_hecke(lambda t: torch.exp(s[:, None] * (t - 1)), 4, 12)

    lam = spectrum(scale)
    assert lam.shape == (2, 12)
    assert torch.autograd.gradcheck(spectrum, (scale,))
    single = funk_hecke(lambda t: torch.exp(0.5 * (t - 1)), 4, 12)
    assert torch.allclose(lam[0], single, atol=1e-15)


def test_float32_quadrature():
    lam = funk_hecke(lambda t: torch.exp(t - 1), 3, 10, dtype=torch.float32)
    assert lam.dtype == torch.float32
    ref = funk_hecke(lambda t: torch.exp(t - 1), 3, 10)
    assert (lam.double() - ref).abs().max() < 1e-7


def test_bad_arguments_raise_configuration_errors():
    with pytest.raises(ConfigurationError, match="`d`"):
        funk_hecke(torch.exp, 1, 5)
    with pytest.raises(ConfigurationError, match="num_levels"):
        funk_hecke(torch.exp, 3, 0)
    with pytest.raises(ConfigurationError, match="num_nodes"):
        funk_hecke(torch.exp, 3, 5, num_nodes=0)
    with pytest.raises(ConfigurationError, match="shape_fn"):
        funk_hecke(lambda t: t.sum(), 3, 5)
    with pytest.raises(ConfigurationError, match="order"):
        arc_cosine_eigenvalues(3, 5, order=2)
