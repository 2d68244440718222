"""Logarithm coordinates of rotations: float32 input is computed in float64, returned in float32."""

import warnings

import pytest
import torch

from manibo.problems.rotation import log_coordinates, rotation_vector
from manibo.spaces import SpecialOrthogonal


@pytest.mark.parametrize("n", [3, 4])
def test_float32_rotations_give_no_warning_and_match_float64(n):
    points = SpecialOrthogonal(n).random(200, generator=torch.Generator().manual_seed(3))
    single = points.to(torch.float32).reshape(-1, n, n)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SciPy's "logm result may be inaccurate" fails here
        coords = log_coordinates(single)
    assert coords.dtype == torch.float32 and coords.shape == (200, n * (n - 1) // 2)
    reference = log_coordinates(single.to(torch.float64))
    torch.testing.assert_close(coords.double(), reference, rtol=0, atol=2e-6)
    if n == 3:  # the reference, independently: Ω = [w]× has (Ω01, Ω02, Ω12) = (-w2, w1, -w0)
        exact = points.reshape(-1, 3, 3)
        w = rotation_vector(exact)
        torch.testing.assert_close(
            log_coordinates(exact),
            torch.stack([-w[:, 2], w[:, 1], -w[:, 0]], -1),
            rtol=0,
            atol=1e-9,
        )
