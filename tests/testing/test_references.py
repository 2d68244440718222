"""The spectral references against closed forms and mpmath's hypergeometric functions."""

import math

import mpmath as mp
import numpy as np
import pytest

from manibo.testing.references import (
    hyperbolic_kernel,
    hyperbolic_log_plancherel,
    hyperbolic_spherical_function,
    spd2_coordinates,
    spd2_kernel,
)


@pytest.mark.parametrize("d", [2, 3, 4, 7])
def test_spherical_functions_are_the_hypergeometric_ones(d):
    # phi_lam(r) = 2F1((rho + i lam) / 2, (rho - i lam) / 2; d / 2; -sinh^2 r)
    rho = (d - 1) / 2
    lam = np.array([0.0, 0.4, 2.5, 9.0])
    for r in (0.3, 1.7):
        got = hyperbolic_spherical_function(lam, r, d)
        expected = [
            float(
                mp.re(mp.hyp2f1((rho + 1j * x) / 2, (rho - 1j * x) / 2, d / 2, -(mp.sinh(r) ** 2)))
            )
            for x in lam
        ]
        assert np.allclose(got, expected, atol=1e-11)


def test_plancherel_densities_of_h2_and_h3():
    lam = np.array([0.1, 1.0, 4.0])
    assert np.allclose(hyperbolic_log_plancherel(lam, 3), np.log(lam**2))
    assert np.allclose(hyperbolic_log_plancherel(lam, 2), np.log(lam * np.tanh(np.pi * lam)))


def test_h3_kernels_are_the_closed_forms():
    r = np.array([0.0, 0.4, 1.5, 3.0])
    shape = np.where(r > 0, r / np.sinh(np.where(r > 0, r, 1)), 1.0)
    heat = hyperbolic_kernel(3, math.inf, 0.9, r)
    assert np.allclose(heat, shape * np.exp(-(r**2) / (2 * 0.9**2)), atol=1e-9)
    a = math.sqrt(5) / 0.9
    matern = hyperbolic_kernel(3, 2.5, 0.9, r)
    assert np.allclose(matern, shape * (1 + a * r + (a * r) ** 2 / 3) * np.exp(-a * r), atol=1e-8)


def test_spd2_reference_splits_into_a_line_and_a_hyperbolic_plane():
    x = np.array([[2.0, 0.3], [0.3, 0.5]])
    y = np.array([[0.7, -0.2], [-0.2, 1.4]])
    u, r = spd2_coordinates(x, y)
    logs = np.log(np.linalg.eigvals(np.linalg.solve(x, y)).real)
    assert math.isclose(u**2 + 2 * r**2, float((logs**2).sum()))  # the squared distance
    # the heat kernel is the product of the Euclidean and the H^2 heat kernels (H^2 time l^2/4)
    ell = 0.8
    plane = hyperbolic_kernel(2, math.inf, ell / math.sqrt(2), np.array([r]))[0]
    assert math.isclose(
        spd2_kernel(math.inf, ell, x, y), math.exp(-(u**2) / (2 * ell**2)) * plane, rel_tol=1e-8
    )
    assert math.isclose(spd2_kernel(2.5, ell, x, x), 1.0, rel_tol=1e-9)
