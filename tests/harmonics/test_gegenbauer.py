"""Gegenbauer recurrence against SciPy's independent evaluation.

The tests also check closed-form constants and identities.
"""

import math

import numpy as np
import pytest
import scipy.special as sp
import torch

from manibo.exceptions import ConfigurationError
from manibo.harmonics import (
    addition_kernel,
    gegenbauer,
    gegenbauer_at_one,
    gegenbauer_derivative,
    harmonic_dimension,
    normalized_gegenbauer,
    normalized_gegenbauer_derivative,
)

T = torch.linspace(-1, 1, 401, dtype=torch.float64)


@pytest.mark.parametrize("alpha", [0.5, 1.0, 1.5, 4.0, 0.25])
def test_recurrence_matches_scipy_to_degree_200(alpha):
    ours = normalized_gegenbauer(200, alpha, T).numpy()
    for n in (0, 1, 7, 50, 120, 200):
        ref = sp.eval_gegenbauer(n, alpha, T.numpy()) / sp.eval_gegenbauer(n, alpha, 1.0)
        assert np.max(np.abs(ours[:, n] - ref)) < 1e-11, n


def test_alpha_zero_is_chebyshev():
    ours = normalized_gegenbauer(60, 0.0, T).numpy()
    ref = np.stack([sp.eval_chebyt(n, T.numpy()) for n in range(61)], -1)
    assert np.max(np.abs(ours - ref)) < 1e-12


def test_unnormalised_and_value_at_one():
    assert gegenbauer_at_one(5, 1.0) == pytest.approx(6.0)  # C_n^1 = U_n, U_n(1) = n + 1
    assert gegenbauer_at_one(3, 0.0) == 0.0
    ours = gegenbauer(30, 1.5, T).numpy()
    ref = np.stack([sp.eval_gegenbauer(n, 1.5, T.numpy()) for n in range(31)], -1)
    assert np.max(np.abs(ours - ref) / np.maximum(1, np.abs(ref))) < 1e-12


@pytest.mark.parametrize("alpha", [0.0, 0.5, 2.0])
def test_derivative_matches_autograd_and_identity(alpha):
    t = T[1:-1].clone().requires_grad_(True)
    p = normalized_gegenbauer(25, alpha, t)
    auto = torch.stack(
        [torch.autograd.grad(p[:, n].sum(), t, retain_graph=True)[0] for n in range(26)], -1
    )
    assert torch.allclose(normalized_gegenbauer_derivative(25, alpha, t), auto, atol=1e-9)
    if alpha > 0:  # d/dt C_n^a = 2a C_{n-1}^{a+1}
        d = gegenbauer_derivative(10, alpha, t.detach())
        shifted = gegenbauer(9, alpha + 1, t.detach())
        assert torch.allclose(d[:, 1:], 2 * alpha * shifted, atol=1e-9)


def test_harmonic_dimension_table():
    # cumulative counts of seed 001 / algorithms.md A.2 (d = 9: 1, 10, 54, 210, 660)
    assert [sum(harmonic_dimension(9, n) for n in range(L)) for L in range(1, 6)] == [
        1,
        10,
        54,
        210,
        660,
    ]
    assert [harmonic_dimension(3, n) for n in range(5)] == [1, 3, 5, 7, 9]
    assert [harmonic_dimension(4, n) for n in range(4)] == [1, 4, 9, 16]
    assert [harmonic_dimension(2, n) for n in range(4)] == [1, 2, 2, 2]
    for d in range(3, 11):
        for n in range(1, 8):
            alpha = (d - 2) / 2
            assert (n + alpha) / alpha * gegenbauer_at_one(n, alpha) == pytest.approx(
                harmonic_dimension(d, n)
            )


def test_addition_kernel_at_one_is_dimension():
    g = addition_kernel(12, 5, torch.ones(1, dtype=torch.float64))
    expected = [float(harmonic_dimension(5, n)) for n in range(13)]
    assert g[0].tolist() == pytest.approx(expected, rel=1e-13)


def test_float32_is_stable():
    t32 = T.float()
    err = (normalized_gegenbauer(100, 1.5, t32).double() - normalized_gegenbauer(100, 1.5, T)).abs()
    assert float(err.max()) < 1e-4


def test_bad_arguments():
    with pytest.raises(ConfigurationError, match="alpha"):
        normalized_gegenbauer(3, -0.5, T)
    with pytest.raises(ConfigurationError, match="non-negative"):
        harmonic_dimension(3, -1)
    with pytest.raises(ConfigurationError, match="ambient"):
        harmonic_dimension(1, 2)
    assert math.isfinite(gegenbauer_at_one(200, 3.5))
