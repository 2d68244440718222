"""Categorical: the complete graph's spectrum in closed form, kernels exchangeable across choices,
distance and errors."""

import numpy as np
import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import GeometricMaternKernel
from manibo.spaces import Categorical, Graph


def kernel_matrix(space, nu, lengthscale):
    k = GeometricMaternKernel(space, nu=nu, num_levels=space.num_levels_available).double()
    k.lengthscale = torch.tensor(lengthscale, dtype=torch.float64)
    with torch.no_grad():
        return k(space.all_points()).to_dense().numpy()


@pytest.mark.parametrize("k", [2, 3, 7, 2000])
def test_spectrum_is_zero_once_and_k_with_multiplicity_k_minus_one(k):
    """The closed-form eigenpairs solve L v = lambda v for the Laplacian kI - 11^T built here and
    are orthonormal (beyond 2000 points the generic solver kept the constant alone: every choice
    alike)."""
    space = Categorical(k)
    assert np.allclose(space._level_values, [0.0, k], atol=1e-12)
    assert space._multiplicities.tolist() == [1, k - 1]
    vectors = space._eigenvectors / np.sqrt(k)  # scaled to a mean square of 1 over the k points
    eigenvalues = np.repeat(space._level_values, space._multiplicities)
    laplacian = k * np.eye(k) - np.ones((k, k))
    assert np.abs(laplacian @ vectors - vectors * eigenvalues).max() < 1e-9
    assert np.abs(vectors.T @ vectors - np.eye(k)).max() < 1e-12


@pytest.mark.parametrize("nu", [0.5, 2.5, float("inf")])
def test_kernel_is_exchangeable_and_spans_every_correlation(nu):
    """a + b [x = x']: one value on the diagonal and one off it; the correlation between two
    choices goes from near 1 at long lengthscales to near 0 at short ones, decreasing."""
    correlations = []
    for lengthscale in (100.0, 2.0, 0.5, 0.05):
        k = kernel_matrix(Categorical(5), nu, lengthscale)
        off = k[~np.eye(5, dtype=bool)]
        assert np.ptp(np.diag(k)) < 1e-12 and np.ptp(off) < 1e-12
        assert np.diag(k).mean() == pytest.approx(1.0, abs=1e-12)  # unit mean variance
        correlations.append(off[0] / k[0, 0])
    assert correlations == sorted(correlations, reverse=True)
    assert correlations[0] > 0.95 and correlations[-1] < 0.05


def test_distance_is_one_between_different_choices_as_the_graph_counts_hops():
    space = Categorical(4)
    x = space.all_points()
    expected = Graph(np.ones((4, 4)) - np.eye(4)).distance(x[:, None], x[None])
    assert torch.equal(space.distance(x[:, None], x[None]), expected)
    assert torch.equal(expected, 1 - torch.eye(4, dtype=torch.float64))
    embedded = space.embed(x)
    assert embedded.shape == (4, 4)
    assert torch.allclose(torch.cdist(embedded, embedded), expected, atol=1e-15)


def test_errors_name_the_choices():
    space = Categorical(3)
    with pytest.raises(InputDataError, match=r"choice indices must lie in \[0, 3\)"):
        space.check(torch.tensor([[3.0]]))
    with pytest.raises(ConfigurationError, match="`k` must be an integer >= 2 and <= 2000, got 1"):
        Categorical(1)
    with pytest.raises(ConfigurationError, match="<= 2000, got 3000"):
        Categorical(3000)
    assert Categorical(3).fingerprint() != Categorical(4).fingerprint()
    assert repr(space) == "Categorical(3)"
