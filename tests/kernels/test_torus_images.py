"""Torus kernels summed over periodic images, against closed forms and lattice sums.

The references use no manibo code: the circle's Matérn-1/2 kernel in closed form, and the spectral
definition summed over every integer frequency vector of a large cube.
"""

import itertools
import math
import warnings

import numpy as np
import pytest
import torch

from manibo.exceptions import TruncationWarning
from manibo.kernels import GeometricHeatKernel, GeometricMaternKernel
from manibo.kernels.torus_images import (
    MAX_IMAGES,
    image_offsets,
    torus_dimension,
    torus_image_kernel,
)
from manibo.models.exact_gp import SURROGATE_TRUNCATION_TOL
from manibo.spaces import Circle, ProductSpace, Sphere, Torus


def _lattice_kernel(x1, x2, nu, lengthscale, cutoff):
    """The normalised kernel sum_j S(|j|^2) cos(j . delta) over the integer j with |j| <= cutoff.

    The ball of j and S(|j|^2) are even in each coordinate of j, so cos(j . delta) enters as its
    average over the sign flips of the coordinates, prod_k cos(j_k delta_k), and each axis folds
    onto j_k >= 0 (twice the weight for j_k > 0): the sum contracts S on that corner of the cube
    with one cosine table per axis and pair of points."""
    x1, x2 = np.asarray(x1, dtype=float), np.asarray(x2, dtype=float)
    dim = x1.shape[-1]
    axis = np.arange(cutoff + 1)
    eig = sum(np.meshgrid(*[axis**2] * dim, indexing="ij", sparse=True))
    if math.isinf(nu):
        s = np.exp(-0.5 * lengthscale**2 * eig)
    else:
        s = (2 * nu / lengthscale**2 + eig) ** (-nu - dim / 2)
    fold = math.prod(np.meshgrid(*[np.where(axis > 0, 2.0, 1.0)] * dim, indexing="ij", sparse=True))
    s = np.where(eig <= cutoff**2, s * fold, 0.0)
    delta = (x1[:, None, :] - x2[None, :, :]).reshape(-1, dim)  # (pairs, dim)
    total = s
    for k in reversed(range(dim)):  # sum out the last axis of j, one pair of points per column
        cosines = np.cos(np.multiply.outer(delta[:, k], axis))  # (pairs, cutoff + 1)
        if k == dim - 1:
            total = total @ cosines.T
        else:
            total = np.einsum("...jp,pj->...p", total, cosines)
    return (total / s.sum()).reshape(len(x1), len(x2))


def _kernel(space, nu, lengthscale, **options):
    kernel = GeometricMaternKernel(space, nu=nu, **options).double()
    kernel.lengthscale = lengthscale
    return kernel


def test_circle_matern_half_matches_its_closed_form():
    # sum_k cos(k d) / (a^2 + k^2), normalised: cosh(a (pi - |d|)) / cosh(a pi), a = 1/lengthscale
    x = Circle().random(9, generator=torch.Generator().manual_seed(0))
    y = Circle().random(7, generator=torch.Generator().manual_seed(1))
    gap = torch.remainder(x - y.T, 2 * math.pi)
    gap = torch.minimum(gap, 2 * math.pi - gap)
    for lengthscale in (0.05, 0.4, 2.0):
        a = 1 / lengthscale
        closed = torch.cosh(a * (math.pi - gap)) / math.cosh(a * math.pi)
        ls = torch.tensor([[lengthscale]], dtype=torch.float64)
        offsets = image_offsets(lengthscale, 0.5, 1, 1e-12)
        got = torus_image_kernel(x, y, ls, offsets, 0.5)
        assert torch.allclose(got, closed, atol=1e-11), lengthscale


@pytest.mark.parametrize("nu", [1.5, 2.5, math.inf])
def test_torus2_image_sum_matches_the_lattice_sum(nu):
    space = Torus(2)
    x = space.random(6, generator=torch.Generator().manual_seed(2))
    y = space.random(5, generator=torch.Generator().manual_seed(3))
    for lengthscale in (0.3, 0.9):
        ls = torch.tensor([[lengthscale]], dtype=torch.float64)
        got = torus_image_kernel(x, y, ls, image_offsets(lengthscale, nu, 2, 1e-12), nu)
        reference = _lattice_kernel(x, y, nu, lengthscale, cutoff=400)
        # the lattice sum leaves out frequencies beyond 400: about 1e-6 of the mass for nu = 3/2
        tol = 3e-6 if nu == 1.5 else 1e-9
        assert np.abs(got.numpy() - reference).max() < tol, lengthscale


@pytest.mark.parametrize("nu", [2.5, math.inf])
def test_surrogate_kernel_on_torus3_is_exact_where_the_level_cap_binds(nu):
    # the lengthscales the shipped examples fit on the arm; the level series capped at 84 levels
    # neglected 7.4% (nu = 5/2) and 0.4% (heat) of the spectral mass there, and warned
    space = Torus(3)
    x = space.random(5, generator=torch.Generator().manual_seed(4))
    x = torch.cat([x, space.project(x[:2] + 0.15)])  # near pairs, where a truncation shows
    lengthscale = 0.364 if nu == 2.5 else 0.368
    kernel = _kernel(space, nu, lengthscale, truncation_tol=SURROGATE_TRUNCATION_TOL)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncationWarning)
        with torch.no_grad():
            got = kernel(x, x).to_dense().numpy()
    reference = _lattice_kernel(x, x, nu, lengthscale, cutoff=90 if nu == 2.5 else 40)
    assert np.abs(got - reference).max() < 1e-5
    capped = _kernel(space, nu, lengthscale, num_levels=kernel.max_levels)
    with torch.no_grad():
        assert np.abs(capped(x, x).to_dense().numpy() - reference).max() > 1e-3  # was this


def test_kernel_is_continuous_and_differentiable_across_the_hand_over():
    space = Torus(3)
    x = space.random(12, generator=torch.Generator().manual_seed(5))
    kernel = _kernel(space, 2.5, 1.0, truncation_tol=SURROGATE_TRUNCATION_TOL)
    grid = torch.linspace(1.1, 1.6, 101, dtype=torch.float64)
    shares, values = [], []
    for ls in grid:
        kernel.lengthscale = float(ls)
        images = kernel.periodic_images(kernel.lengthscale)
        shares.append(0.0 if images is None else float(images[0].detach()))
        with torch.no_grad():
            values.append(kernel(x, x).to_dense())
    shares = np.array(shares)
    assert shares[0] == 1.0 and shares[-1] == 0.0 and ((shares > 0) & (shares < 1)).sum() >= 5
    steps = torch.stack([(b - a).abs().max() for a, b in zip(values, values[1:], strict=False)])
    assert float(steps.max()) < 3 * float(steps.median())  # no jump where the sums hand over
    # inside the blend, autograd's slope in the lengthscale matches central differences
    inside = float(grid[np.flatnonzero((shares > 0.2) & (shares < 0.8))[0]])
    kernel.lengthscale = inside
    raw = kernel.raw_lengthscale
    total = kernel(x, x).to_dense().sum()
    (slope,) = torch.autograd.grad(total, raw)
    h = 1e-5
    with torch.no_grad():
        kernel.raw_lengthscale.add_(h)
        up = kernel(x, x).to_dense().sum()
        kernel.raw_lengthscale.sub_(2 * h)
        down = kernel(x, x).to_dense().sum()
    assert torch.allclose(slope.reshape(()), (up - down) / (2 * h), rtol=1e-5)


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5, math.inf])
def test_image_kernel_is_positive_semidefinite_with_unit_diagonal(nu):
    space = Torus(3)
    x = space.random(200, generator=torch.Generator().manual_seed(6))
    kernel = _kernel(space, nu, 0.3, truncation_tol=SURROGATE_TRUNCATION_TOL)
    assert kernel.periodic_images(kernel.lengthscale) is not None
    with torch.no_grad():
        gram = kernel(x, x).to_dense()
        diag = kernel(x, x, diag=True)
    assert float(torch.linalg.eigvalsh(gram).min()) > -1e-10
    assert torch.allclose(diag, torch.ones(200, dtype=torch.float64), atol=1e-13)
    assert torch.allclose(gram.diagonal(), diag, atol=1e-13)


def test_gradient_in_the_points_matches_finite_differences_and_is_finite_at_coincidence():
    space = Torus(2)
    x = space.random(4, generator=torch.Generator().manual_seed(7))
    y = torch.cat([x[:1], space.random(3, generator=torch.Generator().manual_seed(8))])
    kernel = _kernel(space, 2.5, 0.3)
    assert kernel.periodic_images(kernel.lengthscale) is not None
    xr = x.clone().requires_grad_()
    kernel(xr, y).to_dense().sum().backward()
    assert torch.isfinite(xr.grad).all()
    h = 1e-6
    for i, j in itertools.product(range(4), range(2)):
        up, down = x.clone(), x.clone()
        up[i, j] += h
        down[i, j] -= h
        with torch.no_grad():
            fd = (kernel(up, y).to_dense().sum() - kernel(down, y).to_dense().sum()) / (2 * h)
        assert abs(float(fd) - float(xr.grad[i, j])) < 1e-6


def test_batched_lengthscales_take_each_their_own_sum():
    space = Torus(3)
    x = space.random(8, generator=torch.Generator().manual_seed(9))
    batched = GeometricMaternKernel(
        space, nu=2.5, truncation_tol=SURROGATE_TRUNCATION_TOL, batch_shape=torch.Size([2])
    ).double()
    batched.lengthscale = torch.tensor([[[0.4]], [[2.5]]], dtype=torch.float64)
    with torch.no_grad():
        both = batched(x, x).to_dense()
        for b, ls in enumerate((0.4, 2.5)):
            alone = _kernel(space, 2.5, ls, truncation_tol=SURROGATE_TRUNCATION_TOL)
            # a batch shares one count of levels, so the long lengthscale's series may differ
            # from its own by the truncation tolerance
            atol = 1e-10 if b == 0 else SURROGATE_TRUNCATION_TOL
            assert torch.allclose(both[b], alone(x, x).to_dense(), atol=atol)
    exact = _lattice_kernel(x, x, 2.5, 0.4, cutoff=90)
    assert np.abs(both[0].numpy() - exact).max() < 1e-5


def test_float32_points_give_float32_values():
    space = Torus(2)
    x = space.random(6, generator=torch.Generator().manual_seed(10), dtype=torch.float32)
    kernel = GeometricMaternKernel(space, nu=1.5, truncation_tol=SURROGATE_TRUNCATION_TOL)
    kernel.lengthscale = 0.2
    assert kernel.periodic_images(kernel.lengthscale) is not None
    with torch.no_grad():
        gram = kernel(x, x).to_dense()
    assert gram.dtype == torch.float32
    reference = _lattice_kernel(x.double(), x.double(), 1.5, 0.2, cutoff=300)
    assert np.abs(gram.numpy() - reference).max() < 1e-5


def test_level_series_stays_where_no_closed_form_or_levels_are_fixed():
    space = Torus(3)
    x = space.random(5, generator=torch.Generator().manual_seed(11))
    rough = _kernel(space, 0.7, 0.4)  # nu = 0.7 has no closed form: the cap binds and warns
    assert rough.periodic_images(rough.lengthscale) is None
    with pytest.warns(TruncationWarning, match="max_levels"):
        rough(x, x).to_dense()
    fixed = _kernel(space, 2.5, 0.4, num_levels=20)
    assert fixed.periodic_images(fixed.lengthscale) is None
    sphere = _kernel(Sphere(2), 2.5, 0.4)
    assert sphere.periodic_images(sphere.lengthscale) is None


def test_too_many_images_fall_back_to_the_series_and_warn():
    assert image_offsets(3.0, 0.5, 6, 1e-8) is None  # more than MAX_IMAGES images
    offsets = image_offsets(0.3, 2.5, 3, 1e-8)
    assert 1 <= offsets.shape[0] <= MAX_IMAGES and torch.equal(offsets[0], torch.zeros(3))
    # T³, nu = 1/2, lengthscale 3: the capped series leaves out 1e-2 of the mass, and the images
    # would be too many; the kernel says so rather than truncating quietly
    space = Torus(3)
    rough = _kernel(space, 0.5, 3.0)
    assert rough.periodic_images(rough.lengthscale) is None
    x = space.random(4, generator=torch.Generator().manual_seed(13))
    with pytest.warns(TruncationWarning, match="periodic images"):
        rough(x, x).to_dense()


def _brute_force_image_kernel(x1, x2, lengthscale, offsets, nu):
    """sum_m kappa(|delta + s_m| / l), normalised at 0, by autograd through plain torch: the
    reference for the closed-form derivatives (no manibo code)."""

    def kappa(r):
        if math.isinf(nu):
            return torch.exp(-0.5 * r * r)
        s = math.sqrt(2 * nu) * r
        poly = {0.5: 1.0, 1.5: 1 + s, 2.5: 1 + s + s * s / 3}[nu]
        return poly * torch.exp(-s)

    def total(delta):
        v = delta.unsqueeze(-2) + offsets  # (..., K, d)
        return kappa(v.square().sum(-1).clamp_min(1e-300).sqrt() / lengthscale).sum(-1)

    delta = torch.remainder(x1.unsqueeze(-2) - x2.unsqueeze(-3) + math.pi, 2 * math.pi) - math.pi
    return total(delta) / total(torch.zeros_like(offsets[0]))


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5, math.inf])
def test_image_sums_and_their_gradients_match_autograd_for_every_copy_of_a_repeated_pair(nu):
    """A Monte Carlo acquisition's joint posterior repeats the baseline in every batch element:
    each pair is summed once, and every copy still gets its own gradient."""
    dim, lengthscale = 3, 0.9
    offsets = image_offsets(lengthscale, nu, dim, 1e-9)
    generator = torch.Generator().manual_seed(15)
    baseline = Torus(dim).random(4, generator=generator)
    candidates = Torus(dim).random(5, generator=generator).reshape(5, 1, dim)
    x = torch.cat([baseline.expand(5, 4, dim), candidates], dim=-2)  # (5, 5, dim)
    x[3, 4] = x[1, 4]  # two restarts at the same point
    results = []
    for kernel in (torus_image_kernel, _brute_force_image_kernel):
        xr = x.clone().requires_grad_()
        scale = torch.tensor([[[lengthscale]]], dtype=torch.float64, requires_grad=True)
        gram = kernel(xr, xr.detach()[0], scale, offsets, nu)  # (5, 5, 5)
        loss = (gram * torch.linspace(0.5, 1.5, gram.numel()).reshape(gram.shape)).sum()
        results.append((gram.detach(), *torch.autograd.grad(loss, [xr, scale])))
    (gram, gx, gl), (ref, rx, rl) = results
    assert torch.allclose(gram, ref, atol=1e-13)
    assert torch.allclose(gx, rx, atol=1e-11) and torch.allclose(gl, rl, atol=1e-11)
    assert gx[3, 4].abs().sum() > 0 and gx[1, 4].abs().sum() > 0  # both copies, as the reference


def test_blocks_give_the_same_values_and_gradients_and_second_derivatives_are_refused(
    monkeypatch,
):
    import manibo.kernels.torus_images as images

    space = Torus(3)
    x = space.random(12, generator=torch.Generator().manual_seed(14))
    kernel = _kernel(space, 2.5, 0.8, truncation_tol=SURROGATE_TRUNCATION_TOL)

    def value_and_gradients():
        xr = x.clone().requires_grad_()
        gram = kernel(xr, x).to_dense()
        grads = torch.autograd.grad((gram * gram).sum(), [xr, kernel.raw_lengthscale])
        return gram.detach(), grads

    whole, (gx, gl) = value_and_gradients()
    monkeypatch.setattr(images, "_BLOCK_ELEMENTS", 500)  # a few differences per block
    monkeypatch.setattr(images, "_PAIRS_PER_BLOCK", 20)  # one or two rows of pairs
    blocked, (bx, bl) = value_and_gradients()
    assert torch.allclose(blocked, whole, atol=1e-14)
    assert torch.allclose(bx, gx, atol=1e-12) and torch.allclose(bl, gl, atol=1e-12)
    xr = x.clone().requires_grad_()
    (first,) = torch.autograd.grad(kernel(xr, x).to_dense().sum(), xr, create_graph=True)
    with pytest.raises(RuntimeError):  # first derivatives only: never a silent zero
        torch.autograd.grad(first.sum(), xr)


def test_torus_dimension_recognises_flat_tori_only():
    assert torus_dimension(Circle()) == 1
    assert torus_dimension(Torus(3)) == 3
    assert torus_dimension(ProductSpace(Torus(2), Circle())) == 3
    assert torus_dimension(ProductSpace(Sphere(2), Circle())) is None
    assert torus_dimension(Sphere(1)) is None


def test_heat_kernel_of_the_torus_is_the_product_of_circle_heat_kernels():
    x = Torus(2).random(5, generator=torch.Generator().manual_seed(12))
    heat = GeometricHeatKernel(Torus(2), truncation_tol=SURROGATE_TRUNCATION_TOL).double()
    heat.lengthscale = 0.1
    assert heat.periodic_images(heat.lengthscale) is not None
    circle = [_lattice_kernel(x[:, i : i + 1], x[:, i : i + 1], math.inf, 0.1, 400) for i in (0, 1)]
    with torch.no_grad():
        got = heat(x, x).to_dense().numpy()
    assert np.abs(got - circle[0] * circle[1]).max() < 1e-12


def _reference_log_tail(space, num_levels, lengthscale):
    """Log share of the Matérn-3/2 spectral mass in levels >= l over the first ``num_levels``
    levels, ``(len(lengthscale), num_levels)``, by a cumulative sum over all of them."""
    eigenvalues, multiplicities = space.levels(num_levels)
    log_mass = (-(1.5 + space.spectral_dim / 2)) * torch.log(
        3.0 / lengthscale.reshape(-1, 1) ** 2 + eigenvalues
    ) + torch.log(multiplicities)
    tail = torch.logcumsumexp(log_mass.flip(-1), dim=-1).flip(-1)
    return tail - tail[:, :1]


@pytest.mark.parametrize("space", [Circle(), Torus(2), Sphere(2)], ids=repr)
def test_the_spectral_tail_read_by_the_truncation_is_the_tail_of_every_scanned_level(space):
    """The truncation and the hand-over to the image sum read the mass beyond each level up to
    ``max_levels`` only; the levels past it enter through their total (a cumulative sum over the
    100,000 scanned levels of a circle took 5 ms at every evaluation). Values and gradients are
    those of the cumulative sum over every scanned level."""
    kernel = GeometricMaternKernel(space, nu=1.5).double()
    lengthscale = torch.tensor([[[0.02]], [[0.7]]], dtype=torch.float64, requires_grad=True)
    got = kernel._log_tail(lengthscale)
    head = kernel.max_levels + 1
    assert kernel._scan_levels > head and got.shape == (2, head)
    expected = _reference_log_tail(space, kernel._scan_levels, lengthscale)[:, :head]
    assert torch.allclose(got, expected, rtol=1e-12, atol=1e-12)
    weights = torch.linspace(0.0, 1.0, head, dtype=torch.float64)
    (grad,) = torch.autograd.grad((got * weights).sum(), lengthscale)
    (expected_grad,) = torch.autograd.grad((expected * weights).sum(), lengthscale)
    assert torch.allclose(grad, expected_grad, rtol=1e-10)
    if torus_dimension(space) is not None:  # a torus sums its images where the cap binds
        return
    # the warning of a binding cap counts the levels needed among every scanned one
    rough = _kernel(space, 1.5, 0.002)
    tail = _reference_log_tail(space, rough._scan_levels, rough.lengthscale.detach())
    needed = int((tail > math.log(rough.truncation_tol)).sum())
    assert needed > head
    with pytest.warns(TruncationWarning, match=f" {needed} levels are needed"):
        rough.levels_for(rough.lengthscale)


def test_pairs_repeated_across_a_batch_are_summed_once(monkeypatch):
    import manibo.kernels.torus_images as images

    dim, batch, n = 4, 64, 10
    generator = torch.Generator().manual_seed(16)
    baseline = Torus(dim).random(n, generator=generator)
    candidates = Torus(dim).random(batch, generator=generator).reshape(batch, 1, dim)
    x = torch.cat([baseline.expand(batch, n, dim), candidates], dim=-2)  # BoTorch's X_full
    summed = []
    sums = images._sums
    monkeypatch.setattr(
        images, "_sums", lambda delta, *a: summed.append(len(delta)) or sums(delta, *a)
    )
    offsets = image_offsets(1.0, 2.5, dim, 1e-7)
    torus_image_kernel(x, x, torch.ones(1, 1, dtype=torch.float64), offsets, 2.5)
    # distinct differences: the zero, the baseline's n (n - 1) and each candidate's 2 n
    assert sum(summed) <= 1 + 1 + n * (n - 1) + batch * 2 * n < batch * (n + 1) ** 2 / 5


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16])
def test_distinct_rows_are_found_exactly_even_when_their_hashes_collide(monkeypatch, dtype):
    import manibo.kernels.torus_images as images

    generator = torch.Generator().manual_seed(17)
    rows = torch.rand(6, 4, generator=generator).to(dtype)
    keys = rows[torch.tensor([0, 1, 0, 2, 3, 1, 4, 5, 5, 0])]
    for mix in (images._mix, torch.zeros_like):  # the hash, then one that makes all collide
        monkeypatch.setattr(images, "_mix", mix)
        distinct, inverse = images._distinct_rows(keys)
        assert len(distinct) == 6 and torch.equal(distinct[inverse], keys)


@pytest.mark.parametrize(
    "points",
    [
        Torus(2).random(300, generator=torch.Generator().manual_seed(18)),
        Torus(4).random(300, generator=torch.Generator().manual_seed(18)),
        torch.cartesian_prod(*[torch.linspace(0, 6, 7, dtype=torch.float64)] * 3),  # a grid
    ],
    ids=["T2", "T4", "T3-grid"],
)
def test_the_hash_tells_the_differences_of_a_gram_matrix_apart(monkeypatch, points):
    """Sorting whole rows is the slow path for hashes that collide: d and -d, and the ulp steps
    of a grid, must not."""
    import manibo.kernels.torus_images as images

    sorted_rows = []
    monkeypatch.setattr(images, "_sorted_distinct_rows", lambda keys: sorted_rows.append(keys))
    delta = images._wrap(points.unsqueeze(-2) - points.unsqueeze(-3)).reshape(-1, points.shape[-1])
    distinct, inverse = images._distinct_rows(torch.cat([delta, torch.ones_like(delta[:, :1])], -1))
    assert sorted_rows == [] and torch.equal(distinct[inverse][:, :-1], delta)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_batched_lengthscales_the_diagonal_and_gradients_in_both_inputs_match_autograd(dtype):
    dim, nu = 2, 2.5
    offsets = image_offsets(1.2, nu, dim, 1e-9).to(dtype)
    generator = torch.Generator().manual_seed(19)
    x1 = Torus(dim).random(4, generator=generator).to(dtype).requires_grad_()
    x2 = Torus(dim).random(4, generator=generator).to(dtype).requires_grad_()
    scale = torch.tensor([0.6, 1.2], dtype=dtype).reshape(2, 1, 1).requires_grad_()
    tol = {torch.float64: 1e-11, torch.float32: 1e-4}[dtype]
    for diag in (False, True):
        got = torus_image_kernel(x1, x2, scale, offsets, nu, diag=diag)
        ref = _brute_force_image_kernel(x1, x2, scale.unsqueeze(-1), offsets, nu)
        ref = ref.diagonal(dim1=-2, dim2=-1) if diag else ref
        assert got.shape == ref.shape == ((2, 4) if diag else (2, 4, 4))
        weights = torch.linspace(0.5, 1.5, got.numel(), dtype=dtype).reshape(got.shape)
        grads = torch.autograd.grad((got * weights).sum(), [x1, x2, scale])
        refs = torch.autograd.grad((ref * weights).sum(), [x1, x2, scale])
        assert torch.allclose(got, ref, atol=tol)
        assert all(torch.allclose(g, r, atol=tol) for g, r in zip(grads, refs, strict=True))


def _cube_of_images(radius, dim):
    """The shifts 2 pi m of every integer m with |m_k| <= radius, ``((2 radius + 1)^dim, dim)``."""
    axis = torch.arange(-radius, radius + 1, dtype=torch.float64)
    return 2 * math.pi * torch.cartesian_prod(*[axis] * dim).reshape(-1, dim)


def test_a_batch_member_with_too_many_images_leaves_the_others_exact():
    """T³, nu = 1/2: lengthscale 4 needs more than MAX_IMAGES images, 0.2 and 1 few. Each member
    takes its own sum, as alone (the whole batch fell back to the capped series, 3e-2 off), and
    the warning names the member left with the series."""
    space = Torus(3)
    x = space.random(7, generator=torch.Generator().manual_seed(20))
    y = space.random(5, generator=torch.Generator().manual_seed(21))
    batched = GeometricMaternKernel(space, nu=0.5, batch_shape=torch.Size([3])).double()
    batched.lengthscale = torch.tensor([0.2, 1.0, 4.0], dtype=torch.float64).reshape(3, 1, 1)
    with pytest.warns(TruncationWarning, match="at lengthscale 4,"):
        gram = batched(x, y).to_dense()
    weights = torch.linspace(0.5, 1.5, 35, dtype=torch.float64).reshape(5, 7).T
    (grad,) = torch.autograd.grad((gram[:2] * weights).sum(), batched.raw_lengthscale)
    cube = _cube_of_images(12, 3)  # the images left out are worth below 1e-30
    ls = batched.lengthscale
    refs = [_brute_force_image_kernel(x, y, ls[b], cube, 0.5) for b in (0, 1)]
    (ref_grad,) = torch.autograd.grad(
        sum((ref * weights).sum() for ref in refs), batched.raw_lengthscale
    )
    for b in (0, 1):  # alone: 2.3e-12 and 2.8e-9 off
        assert (gram[b] - refs[b]).abs().max() < 1e-8, b
    # the images left out are worth 1e-7 of kappa(0): 1.2e-7 of the slope at lengthscale 1
    assert torch.allclose(grad, ref_grad, rtol=1e-6, atol=1e-12)
    alone = _kernel(space, 0.5, 4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncationWarning)
        assert torch.allclose(gram[2], alone(x, y).to_dense(), atol=1e-12)


@pytest.mark.parametrize("dim", [1, 2, 3, 4])
def test_the_images_are_closed_under_the_symmetries_of_the_lattice(dim):
    """Whole shells of equal |m|: with m, the images hold -m, m with one sign flipped and m with
    its coordinates permuted (these generate the symmetries of Z^d), so k(delta) = k(-delta)
    and the kernel is invariant under reflections and permutations of the angles."""
    cases = itertools.product(
        [0.5, 1.5, 2.5, math.inf], [0.3, 0.7, 1.0, 1.5, 2.3], [1e-5, 1e-7, 1e-9]
    )
    checked = 0
    for nu, lengthscale, tol in cases:
        offsets = image_offsets(lengthscale, nu, dim, tol)
        if offsets is None:
            continue
        images = {tuple(m) for m in (offsets / (2 * math.pi)).round().long().tolist()}
        for m in images:
            moved = [tuple(-v for v in m), (-m[0], *m[1:]), (*m[1:], m[0]), (*m[1::-1], *m[2:])]
            assert all(image in images for image in moved), (nu, lengthscale, tol, m)
        checked += 1
    assert checked >= 40


@pytest.mark.parametrize("dim, nu", [(2, 0.5), (3, 2.5)])
def test_the_kernel_matrix_is_symmetric_and_invariant_under_the_isometries(dim, nu):
    # the cut in a shell of equal bound left 1.1e-8 in K - K^T on T², nu = 1/2, lengthscale 1
    space = Torus(dim)
    x = space.random(200, generator=torch.Generator().manual_seed(22))
    kernel = _kernel(space, nu, 1.0)
    assert kernel.periodic_images(kernel.lengthscale) is not None
    with torch.no_grad():
        gram = kernel(x, x).to_dense()
        reflected = kernel(space.project(-x), space.project(-x)).to_dense()
        swapped = kernel(x.flip(-1), x.flip(-1)).to_dense()
    assert (gram - gram.T).abs().max() < 1e-14
    assert (gram - reflected).abs().max() < 1e-14
    assert (gram - swapped).abs().max() < 1e-14


@pytest.mark.parametrize("nu", [0.5, 2.5, math.inf])
def test_the_images_left_out_on_t4_are_worth_at_most_the_tolerance(nu):
    """The images are chosen by their distance to the cube of wrapped differences: the pairs
    nearest its corners, where that bound is attained, are within ``tol`` of an 11^4-image sum
    (which leaves out below 1e-8 at these lengthscales)."""
    tol, dim = 1e-6, 4
    generator = torch.Generator().manual_seed(23)
    x = Torus(dim).random(6, generator=generator)
    y = torch.cat([x[:3] + math.pi - 1e-3 * torch.rand(3, dim, generator=generator), x[3:]])
    y = Torus(dim).project(y)
    cube = _cube_of_images(5, dim)
    for lengthscale in (0.4, 0.8, 1.2):
        ls = torch.tensor([[lengthscale]], dtype=torch.float64)
        offsets = image_offsets(lengthscale, nu, dim, tol)
        got = torus_image_kernel(x, y, ls, offsets, nu)
        reference = _brute_force_image_kernel(x, y, ls, cube, nu)
        assert (got - reference).abs().max() < tol, lengthscale


@pytest.mark.parametrize("nu", [0.5, 2.5])
def test_the_kernel_jumps_by_less_than_the_image_tolerance_where_the_images_change(nu):
    """The image set is chosen for the lengthscale rounded up to a grid of ratio 2^(1/8) and
    grows at its points; the images added there were left out at most ``tol`` below the point,
    so K changes by less than 2 tol (the sum and its normalisation)."""
    tol, space = 1e-5, Torus(2)
    x = space.random(30, generator=torch.Generator().manual_seed(24))
    x = torch.cat([x, space.project(x[:10] + math.pi - 1e-3)])  # differences near the corners
    for grid in 2.0 ** (torch.arange(-8, 9) / 8):
        ls = grid.reshape(1, 1).double()
        below = image_offsets(float(grid), nu, 2, tol)
        above = image_offsets(float(grid) * (1 + 1e-12), nu, 2, tol)
        jump = torus_image_kernel(x, x, ls, above, nu) - torus_image_kernel(x, x, ls, below, nu)
        assert jump.abs().max() < 2 * tol, float(grid)
