"""RP^d: the even levels of S^d, sign invariance, and the distance between lines."""

import math

import numpy as np
import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import GeometricMaternKernel
from manibo.spaces import RealProjectiveSpace, Sphere


def _points(space, n, seed, dtype=torch.float64):
    return space.random(n, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("d", [1, 2, 4])
@pytest.mark.parametrize("nu", [0.5, 2.5, math.inf])
def test_kernel_is_the_symmetrised_sphere_kernel(d, nu):
    """k_RP(x, y) = (k_S(x, y) + k_S(x, -y)) / (1 + k_S(x, -x)) with S^d cut at 2L levels."""
    rp, sphere = RealProjectiveSpace(d), Sphere(d)
    x, y = _points(rp, 9, 0), _points(rp, 7, 1)
    k_rp = GeometricMaternKernel(rp, nu=nu, num_levels=15).double()
    k_s = GeometricMaternKernel(sphere, nu=nu, num_levels=30).double()
    k_rp.lengthscale = k_s.lengthscale = torch.tensor(0.6, dtype=torch.float64)
    with torch.no_grad():
        ours = k_rp(x, y).to_dense()
        antipode = k_s(x[:1], -x[:1]).to_dense()[0, 0]
        expected = (k_s(x, y).to_dense() + k_s(x, -y).to_dense()) / (1 + antipode)
        flipped = k_rp(-x, y).to_dense()
    assert (ours - expected).abs().max() < 1e-12
    assert (flipped - ours).abs().max() < 1e-12


def test_levels_are_the_even_sphere_levels():
    eigenvalues, multiplicities = RealProjectiveSpace(2).levels(5)
    assert eigenvalues.tolist() == [0, 6, 20, 42, 72]  # 2k(2k + 1)
    assert multiplicities.tolist() == [1, 5, 9, 13, 17]  # 4k + 1
    eigenvalues, multiplicities = RealProjectiveSpace(3).levels(3)
    assert eigenvalues.tolist() == [0, 8, 24] and multiplicities.tolist() == [1, 9, 25]


def test_distance_between_lines():
    rp = RealProjectiveSpace(2)
    x, y = _points(rp, 50, 2), _points(rp, 50, 3)
    expected = np.arccos(np.clip(np.abs((x * y).sum(-1).numpy()), 0, 1))
    assert np.abs(rp.distance(x, y).numpy() - expected).max() < 1e-12
    assert torch.allclose(rp.distance(x, -y), rp.distance(x, y), atol=1e-15)
    assert rp.distance(x, -x).abs().max() < 1e-15 and rp.distance(x, y).max() <= math.pi / 2
    near = rp.project(x + 1e-9 * y)
    assert (rp.distance(x, -near) - Sphere(2).distance(x, near)).abs().max() < 1e-15


def test_eigenfunctions_satisfy_the_addition_theorem_and_are_even():
    rp = RealProjectiveSpace(2)
    x, y = _points(rp, 6, 4), _points(rp, 5, 5)
    phi_x, phi_y = rp.eigenfunctions(x, 4), rp.eigenfunctions(y, 4)
    assert torch.allclose(rp.eigenfunctions(-x, 4), phi_x, atol=1e-12)
    _, mult = rp.levels(4)
    start = 0
    for k, m in enumerate(mult.long().tolist()):
        weights = torch.zeros(4, dtype=torch.float64)
        weights[k] = 1.0
        block = phi_x[:, start : start + m] @ phi_y[:, start : start + m].T
        assert (block - rp.spectral_sum(weights, x, y)).abs().max() < 1e-10
        start += m
    z = _points(rp, 20000, 6)
    phi = rp.eigenfunctions(z, 3)
    gram = phi.T @ phi / len(z)
    assert (gram - torch.eye(phi.shape[-1], dtype=torch.float64)).abs().max() < 0.1


def test_canonical_representatives_and_bad_input():
    rp = RealProjectiveSpace(2)
    x = torch.tensor([[-0.6, 0.8, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0]], dtype=torch.float64)
    assert rp.canonical(x).tolist() == [[0.6, -0.8, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    assert torch.equal(rp.canonical(-x), rp.canonical(x))
    for d in (0, 1.5, True):
        with pytest.raises(ConfigurationError, match="integer >= 1"):
            RealProjectiveSpace(d)
    with pytest.raises(InputDataError, match="norms must be 1"):
        rp.check(2 * x)
    assert repr(rp) == "RealProjectiveSpace(2)" and rp.point_shape == (3,)


def test_embedding_is_the_same_for_both_signs_and_a_chord_of_the_angle():
    r"""``embed`` is :math:`x x^\top`: equal for ``x`` and ``-x``, and two lines at angle
    :math:`\theta` sit :math:`\sqrt2\,\sin\theta` apart (Frobenius norm)."""
    space = RealProjectiveSpace(3)
    g = torch.Generator().manual_seed(0)
    x, y = space.random(200, generator=g), space.random(200, generator=g)
    assert torch.equal(space.embed(x), space.embed(-x))
    chord = (space.embed(x) - space.embed(y)).norm(dim=-1)
    assert torch.allclose(chord, math.sqrt(2) * torch.sin(space.distance(x, y)), atol=1e-12)
