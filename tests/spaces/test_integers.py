"""Integers: the closed-form spectrum against SciPy's eigensolver on the same path graph, kernels
against the dense closed form, the lengthscale in units of the range, geometry and errors."""

import math

import numpy as np
import pytest
import scipy.linalg
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import GeometricMaternKernel
from manibo.spaces import Graph, Integers


def path_laplacian(n: int) -> np.ndarray:
    """L = D - A of the path on n nodes with edge weights (n - 1)^2, built entry by entry."""
    lap = np.zeros((n, n))
    for i in range(n - 1):
        w = (n - 1) ** 2
        lap[i, i + 1] = lap[i + 1, i] = -w
        lap[i, i] += w
        lap[i + 1, i + 1] += w
    return lap


def matern_kernel_matrix(space, nu, lengthscale):
    k = GeometricMaternKernel(space, nu=nu, num_levels=space.num_levels_available).double()
    k.lengthscale = torch.tensor(lengthscale, dtype=torch.float64)
    with torch.no_grad():
        return k(space.all_points()).to_dense().numpy()


@pytest.mark.parametrize("low, high", [(0, 1), (-3, 4), (10, 49)])
def test_closed_form_spectrum_is_the_eigensolvers(low, high):
    n = high - low + 1
    space = Integers(low, high)
    values, vectors = scipy.linalg.eigh(path_laplacian(n))
    assert space._multiplicities.tolist() == [1] * n  # the path's eigenvalues are simple
    assert np.abs(space._level_values - values).max() < 1e-9 * values.max()
    # eigenvectors scaled to a mean square of 1 over the n points; each determined up to sign
    scaled = vectors * math.sqrt(n)
    overlap = np.abs(np.sum(space._eigenvectors * scaled, axis=0)) / n
    assert np.abs(overlap - 1).max() < 1e-9


@pytest.mark.parametrize("nu", [0.5, 2.5, math.inf])
def test_kernel_equals_the_dense_closed_form(nu):
    space = Integers(-2, 9)
    values, vectors = scipy.linalg.eigh(path_laplacian(12))
    lengthscale = 0.3
    lam = np.maximum(values, 0)
    if math.isinf(nu):
        s = np.exp(-0.5 * lengthscale**2 * lam)
    else:
        s = (2 * nu / lengthscale**2 + lam) ** (-nu)
    dense = 12 * (vectors * (s / s.sum())) @ vectors.T
    assert np.abs(matern_kernel_matrix(space, nu, lengthscale) - dense).max() < 1e-12


def test_truncated_spectrum_keeps_the_lowest_eigenpairs_and_bounds_the_rest():
    full, truncated = Integers(0, 39), Integers(0, 39, num_eigenpairs=10)
    assert truncated.num_levels_available == 10
    assert np.allclose(truncated._level_values, full._level_values[:10], rtol=1e-14, atol=0)
    count, lowest, mean = truncated.dropped_spectrum
    assert count == 30 and lowest == pytest.approx(full._level_values[10], rel=1e-12)
    assert mean == pytest.approx(full._level_values[10:].mean(), rel=1e-9)


def test_the_lengthscale_is_in_units_of_the_range():
    """The correlation of the two ends at lengthscale 0.5 hardly depends on how many integers the
    range holds (with a lengthscale in steps it would fall to 0 as the range grows)."""

    def end_correlation(n):
        k = matern_kernel_matrix(Integers(0, n - 1), 2.5, 0.5)
        return k[0, -1] / math.sqrt(k[0, 0] * k[-1, -1])

    correlations = [end_correlation(n) for n in (21, 201, 2001)]
    assert max(correlations) - min(correlations) < 0.05 and 0.1 < correlations[-1] < 0.3


def test_kernel_is_symmetric_under_reflection_of_the_range():
    k = matern_kernel_matrix(Integers(3, 12), 1.5, 0.4)
    assert np.abs(k - k[::-1, ::-1]).max() < 1e-12


def test_points_are_the_integers_themselves():
    space = Integers(-3, 4)
    assert space.all_points().squeeze(-1).tolist() == list(range(-3, 5))
    draws = space.random(8000, generator=torch.Generator().manual_seed(0)).squeeze(-1)
    counts = torch.bincount((draws + 3).long(), minlength=8)
    assert counts.sum() == 8000 and (counts - 1000).abs().max() < 150
    assert space.project(torch.tensor([[-7.2], [0.4], [3.6], [9.0]])).squeeze(-1).tolist() == [
        -3.0,
        0.0,
        4.0,
        4.0,
    ]


def test_distance_is_the_number_of_steps_as_the_graph_counts_hops():
    space = Integers(-3, 4)
    pairs = np.stack([np.arange(7), np.arange(1, 8)], 1)
    hops = Graph.from_edges(pairs, 8)
    x = space.all_points()
    expected = hops.distance(x[:, None] + 3, x[None] + 3)
    assert torch.equal(space.distance(x[:, None], x[None]), expected)


def test_membership_refuses_the_neighbours_of_the_range_and_rounds_within_tolerance():
    space = Integers(0, 10)
    for outside in (11.0, -1.0):
        with pytest.raises(InputDataError, match=r"lie in 0 \.\. 10"):
            space.check(torch.tensor([[outside]], dtype=torch.float64))
    kernel = GeometricMaternKernel(space, nu=2.5).double()
    five, just_below = torch.tensor([[5.0]]).double(), torch.tensor([[5 - 5e-10]]).double()
    with torch.no_grad():
        assert kernel(just_below, five).to_dense() == kernel(five, five).to_dense()
        assert kernel(just_below, five).to_dense() != kernel(five - 1, five).to_dense()


def test_membership_errors_say_what_is_wrong():
    space = Integers(1, 8)
    with pytest.raises(InputDataError, match=r"entries must be integers .* e.g. 2.5"):
        space.check(torch.tensor([[2.5]]))
    out_of_range = r"entries must lie in 1 \.\. 8, got values in \[0, 9\]"
    with pytest.raises(InputDataError, match=out_of_range):
        space.check(torch.tensor([[0.0], [9.0]]))


def test_bad_ranges_are_refused():
    with pytest.raises(ConfigurationError, match="needs low < high"):
        Integers(3, 3)
    with pytest.raises(ConfigurationError, match="`low` must be an integer, got 0.5"):
        Integers(0.5, 3)
    with pytest.raises(ConfigurationError, match="holds 10001 values, more than 10000"):
        Integers(0, 10_000)


def test_float32_is_refused_where_it_cannot_tell_neighbours_apart():
    space = Integers(16_777_000, 16_777_300)  # float32 holds every integer up to 2**24 only
    assert space.all_points().squeeze(-1).unique().numel() == 301
    with pytest.raises(ConfigurationError, match=r"beyond 16777216, which torch.float32 cannot"):
        space.all_points(dtype=torch.float32)
    with pytest.raises(ConfigurationError, match="use torch.float64"):
        space.random(3, dtype=torch.float32)
    assert Integers(-5, 5).random(3, dtype=torch.float32).dtype == torch.float32
    with pytest.raises(ConfigurationError, match="beyond 16777216"):  # below -2**24 too
        Integers(-(2**24) - 10, -(2**24)).all_points(dtype=torch.float32)


def test_fingerprint_tells_ranges_apart():
    assert Integers(0, 5).fingerprint() == Integers(0, 5).fingerprint()
    assert Integers(0, 5).fingerprint() != Integers(1, 6).fingerprint()
