"""The Grassmann manifold: geometry against SciPy's principal angles, and its level kernels
against the Laplacian (finite differences along geodesics), their ranks and invariances."""

import math

import numpy as np
import pytest
import torch
from scipy.linalg import subspace_angles

from manibo.exceptions import ConfigurationError, InputDataError, TruncationWarning
from manibo.kernels import GeometricMaternKernel
from manibo.spaces import Grassmann, RealProjectiveSpace


def frames(space, x):
    return x.reshape(*x.shape[:-1], space.n, space.k)


def level_kernel(space, level, x1, x2):
    weights = torch.zeros(level + 1, dtype=torch.float64)
    weights[level] = 1.0
    return space.spectral_sum(weights, x1, x2)


@pytest.mark.parametrize(("k", "n"), [(1, 3), (2, 4), (2, 5), (3, 5), (3, 7)])
def test_distance_is_the_norm_of_scipys_principal_angles(k, n):
    space = Grassmann(k, n)
    gen = torch.Generator().manual_seed(0)
    x, y = space.random(20, generator=gen), space.random(20, generator=gen)
    reference = [
        np.linalg.norm(subspace_angles(a, b))
        for a, b in zip(frames(space, x).numpy(), frames(space, y).numpy(), strict=True)
    ]
    assert space.distance(x, y).numpy() == pytest.approx(reference, abs=1e-10)
    near = space.retract(
        x, 1e-6 * space.to_tangent(x, torch.randn(x.shape, generator=gen, dtype=torch.float64))
    )
    assert (space.distance(x, near) > 0).all() and (space.distance(x, near) < 1e-5).all()


def test_frames_of_one_subspace_are_one_point():
    space = Grassmann(2, 5)
    gen = torch.Generator().manual_seed(1)
    x, y = space.random(6, generator=gen), space.random(6, generator=gen)
    q = torch.linalg.qr(torch.randn(6, 2, 2, generator=gen, dtype=torch.float64))[0]
    other = (frames(space, x) @ q).flatten(-2)  # the same subspaces, other frames
    assert space.distance(x, other).max() < 1e-7
    assert torch.allclose(space.embed(other), space.embed(x), atol=1e-12)
    kernel = GeometricMaternKernel(space, nu=2.5).double()
    kernel.lengthscale = 0.8
    with torch.no_grad():
        assert torch.allclose(kernel(other, y).to_dense(), kernel(x, y).to_dense(), atol=1e-10)


def test_the_kernel_is_invariant_under_rotations_and_matches_rp_and_the_complement():
    gen = torch.Generator().manual_seed(2)
    space = Grassmann(2, 5)
    x = space.random(8, generator=gen)
    g = torch.linalg.qr(torch.randn(5, 5, generator=gen, dtype=torch.float64))[0]
    moved = (g @ frames(space, x)).flatten(-2)
    weights = torch.rand(12, generator=gen, dtype=torch.float64)
    assert torch.allclose(
        space.spectral_sum(weights, moved, moved), space.spectral_sum(weights, x, x), atol=1e-10
    )
    # Gr(3, 5) through the orthogonal complements of the same subspaces
    complement = Grassmann(3, 5)
    full = torch.linalg.qr(
        torch.cat([frames(space, x), torch.randn(8, 5, 3, generator=gen, dtype=torch.float64)], -1)
    )[0]
    xc = full[..., 2:].flatten(-2)
    assert torch.allclose(complement.levels(12)[0], space.levels(12)[0])
    assert torch.allclose(complement.levels(12)[1], space.levels(12)[1])
    assert torch.allclose(
        complement.spectral_sum(weights, xc, xc), space.spectral_sum(weights, x, x), atol=1e-10
    )
    # Gr(1, 3) is RP^2, with the even Gegenbauer polynomials as level kernels
    line, rp = Grassmann(1, 3), RealProjectiveSpace(2)
    u = rp.random(10, generator=gen)
    assert torch.allclose(line.levels(15)[1], rp.levels(15)[1])
    weights = torch.rand(15, generator=gen, dtype=torch.float64)
    assert torch.allclose(line.spectral_sum(weights, u, u), rp.spectral_sum(weights, u, u))
    # and with the same default level cap, so the default kernels agree where the cap binds
    assert line.default_max_levels == rp.default_max_levels == 100


@pytest.mark.parametrize(("k", "n", "levels"), [(2, 4, 5), (2, 5, 4), (3, 6, 3)])
def test_level_kernels_are_eigenfunctions_of_the_laplacian(k, n, levels):
    # Delta f(x) as the sum of second differences along geodesics in an orthonormal basis of the
    # horizontal space, against -lambda f(x)
    space = Grassmann(k, n)
    gen = torch.Generator().manual_seed(3)
    base, points = space.random(1, generator=gen), space.random(3, generator=gen)
    eigenvalues, _ = space.levels(levels)
    h = 1e-3
    for y in frames(space, points):
        complement = torch.linalg.qr(torch.cat([y, torch.eye(n, dtype=torch.float64)], -1))[0][
            :, k:n
        ]
        # the geodesic through Y along the unit horizontal vector u e_b^T (u orthogonal to Y)
        # turns column b towards u: Y + Y e_b e_b^T (cos t - 1) + u e_b^T sin t
        plus, minus = [], []
        for a in range(n - k):
            for b in range(k):
                for sign, out in ((1, plus), (-1, minus)):
                    moved = y.clone()
                    moved[:, b] = y[:, b] * math.cos(h) + sign * complement[:, a] * math.sin(h)
                    out.append(moved.flatten())
        plus, minus = torch.stack(plus), torch.stack(minus)
        centre = y.flatten().unsqueeze(0)
        for level in range(1, levels):
            f = level_kernel(space, level, base, centre)[0, 0]
            fp = level_kernel(space, level, base, plus)[0]
            fm = level_kernel(space, level, base, minus)[0]
            laplacian = (fp + fm - 2 * f).sum() / h**2
            scale = float(eigenvalues[level]) * max(abs(float(f)), 1.0)
            assert float(laplacian) == pytest.approx(
                -float(eigenvalues[level] * f), abs=1e-4 * scale
            )


@pytest.mark.parametrize(("k", "n"), [(2, 4), (2, 5), (3, 6)])
def test_each_level_kernel_has_the_rank_of_its_multiplicity_and_reproduces(k, n):
    space = Grassmann(k, n)
    x = space.random(800, generator=torch.Generator().manual_seed(4))
    _, multiplicities = space.levels(4)
    # the four level kernels in one call (batched one-hot weights: the principal angles of the
    # 640,000 pairs once, not once per level); each equals the sum over its own levels alone
    grams = space.spectral_sum(torch.eye(4, dtype=torch.float64), x, x)
    for level in range(4):
        gram = grams[level]
        alone = level_kernel(space, level, x[:40], x[:40])
        assert torch.allclose(
            gram[:40, :40], alone, rtol=0, atol=1e-10 * float(multiplicities[level])
        )
        spectrum = torch.linalg.eigvalsh(gram).flip(0)
        m = int(multiplicities[level])
        assert spectrum[m - 1] > 1e-6 * spectrum[0] and spectrum[m] < 1e-9 * spectrum[0]
        # a reproducing kernel of an m-dimensional space: the mean of K(x, y)^2 over uniform pairs
        # is m (Monte Carlo over 800 points: a few per cent)
        assert float(gram.square().mean()) == pytest.approx(m, rel=0.15)
        assert torch.allclose(gram.diagonal(), torch.full((800,), float(m), dtype=torch.float64))


def test_a_matern_gram_matrix_is_positive_definite_and_differentiable():
    space = Grassmann(2, 4)
    gen = torch.Generator().manual_seed(5)
    x = space.random(60, generator=gen).requires_grad_(True)
    kernel = GeometricMaternKernel(space, nu=2.5).double()
    kernel.lengthscale = 0.7
    gram = kernel(x, x).to_dense()
    assert torch.linalg.eigvalsh(gram.detach()).min() > -1e-9
    assert torch.allclose(gram.diagonal(), torch.ones(60, dtype=torch.float64))
    (grad,) = torch.autograd.grad(gram[:5].sum(), x)
    assert torch.isfinite(grad).all() and grad.abs().sum() > 0
    # along a geodesic, the derivative matches central differences
    y, v = (
        x.detach()[:1],
        space.to_tangent(x.detach()[:1], torch.randn(1, 8, generator=gen, dtype=torch.float64)),
    )
    other = x.detach()[10:11]

    def k_at(t):
        with torch.no_grad():
            return float(kernel(space.retract(y, t * v), other).to_dense()[0, 0])

    t = torch.zeros((), dtype=torch.float64, requires_grad=True)
    value = kernel(space.retract(y, t * v), other).to_dense()[0, 0]
    (derivative,) = torch.autograd.grad(value, t)
    assert float(derivative) == pytest.approx((k_at(1e-6) - k_at(-1e-6)) / 2e-6, abs=1e-6)


def test_distance_has_a_zero_gradient_at_coincident_frames():
    """The square root of the summed squared angles has an infinite derivative at 0: at
    bit-identical frames the gradient is 0, as on spheres, not NaN."""
    space = Grassmann(1, 3)
    x = torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(space.distance(x, x.detach()).sum(), x)
    assert torch.equal(grad, torch.zeros_like(grad))
    frames = Grassmann(2, 4).random(3, generator=torch.Generator().manual_seed(2))
    y = frames.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(Grassmann(2, 4).distance(y, frames).sum(), y)
    assert torch.isfinite(grad).all()


def test_multiplicities_beyond_int64_enter_the_kernel_as_floats():
    """From Gr(2, 11) on, the dimensions of the representations of the default levels pass
    2**63 (from the 514th level of Gr(2, 11) on): the level table takes them as floats (as Python
    integers they overflowed)."""
    space = Grassmann(2, 11)
    _, multiplicities = space.levels(600)  # of the default 907; fewer levels build faster
    assert float(multiplicities.max()) > 2.0**63
    kernel = GeometricMaternKernel(space, nu=2.5, max_levels=600).double()
    kernel.lengthscale = 0.05
    x = space.random(5, generator=torch.Generator().manual_seed(1))
    with pytest.warns(TruncationWarning):
        gram = kernel(x).to_dense().detach()
    assert torch.allclose(gram.diagonal(), torch.ones(5, dtype=torch.float64), atol=1e-9)
    assert torch.linalg.eigvalsh(gram).min() > -1e-9


def test_kernels_beyond_the_collocation_budget_are_refused_clearly():
    x = Grassmann(8, 16).random(3, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ConfigurationError, match="rank min\\(k, n - k\\) = 8"):
        GeometricMaternKernel(Grassmann(8, 16)).double()(x).to_dense()
    # rank 3 with more levels than the polynomials' budget covers (largest part 15)
    space = Grassmann(3, 6)
    kernel = GeometricMaternKernel(space, num_levels=400).double()
    with pytest.raises(ConfigurationError, match="largest part affordable at rank 3 is 15"):
        kernel(space.random(3, generator=torch.Generator().manual_seed(0))).to_dense()
    # the default level caps of ranks 4 to 7 stay within it
    for k in (4, 5, 6, 7):
        assert Grassmann(k, 2 * k).default_max_levels >= 2


def test_bad_settings_and_points_get_clear_errors():
    for k, n in [(0, 3), (3, 3), (4, 3), (1.5, 4), (True, 3)]:
        with pytest.raises(ConfigurationError, match="Grassmann"):
            Grassmann(k, n)
    space = Grassmann(2, 4)
    with pytest.raises(InputDataError, match="orthonormal"):
        space.check(2 * space.random(3, generator=torch.Generator().manual_seed(6)))
    with pytest.raises(InputDataError, match="rank"):
        space.project(torch.ones(1, 8, dtype=torch.float64))
    assert repr(space) == "Grassmann(2, 4)" and space.dim == 4 and space.point_shape == (8,)


def test_frames_flattened_column_major_or_transposed_are_told_how_to_reorder_them():
    # a 4x2 frame flattened column-major (NumPy's order='F', MATLAB's Y(:)) was told to
    # `space.project` it, which returned a plane 1.049 rad from the frame's own
    space = Grassmann(2, 4)
    Y = space.random(3, generator=torch.Generator().manual_seed(7)).reshape(3, 4, 2)
    x = Y.transpose(-1, -2).reshape(3, 8)
    with pytest.raises(InputDataError, match="read column after column") as info:
        space.check(x)
    assert "would give another subspace" in str(info.value)
    reordered = x.reshape(*x.shape[:-1], 2, 4).transpose(-1, -2).reshape(x.shape)  # as it says
    assert space.distance(reordered, Y.reshape(3, 8)).max() < 1e-12
    assert space.distance(space.project(x), Y.reshape(3, 8)).max() > 0.1  # what it was told
    with pytest.raises(InputDataError, match="orthonormal") as info:  # plain bad frames: project
        space.check(2 * Y.reshape(3, 8))
    assert "column after column" not in str(info.value)
    with pytest.raises(InputDataError, match="looks like transposed frames") as info:
        space.check(Y.transpose(-1, -2))
    assert "`x.transpose(-1, -2).reshape(*x.shape[:-2], 8)`" in str(info.value)


def test_the_default_cap_of_gr_2_4_covers_short_lengthscales_at_surrogate_tolerance():
    """At lengthscale 0.17 and the surrogates' tolerance 1e-4, the default level cap of Gr(2, 4)
    leaves out at most twice the tolerance (the old cap of 560 levels left out 3.5e-4 and warned):
    the tail share computed here from the levels and the Matérn density; the kernel picks its
    levels without a TruncationWarning (an error in the tests)."""
    space, nu, lengthscale, tol = Grassmann(2, 4), 2.5, 0.17, 1e-4
    cap = space.default_max_levels
    eigenvalues, multiplicities = space.levels(4 * cap)
    density = (2 * nu / lengthscale**2 + eigenvalues.numpy()) ** (-nu - space.spectral_dim / 2)
    mass = multiplicities.numpy() * density
    assert mass[cap:].sum() / mass.sum() <= 2 * tol
    kernel = GeometricMaternKernel(space, nu=nu, truncation_tol=tol).double()
    kernel.lengthscale = lengthscale
    assert kernel.levels_for(kernel.lengthscale) == cap  # all of them, quietly
