"""Product spaces and the torus: levels, the streaming product sum, gradients, memory, geometry."""

import math
import time
from collections import Counter

import numpy as np
import pytest
import scipy.special as sp
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import GeometricHeatKernel, GeometricMaternKernel
from manibo.spaces import Circle, ProductSpace, Sphere, Torus, _product_series, product

DTYPES = [torch.float32, torch.float64]


def _points(space, n, seed, dtype=torch.float64):
    return space.random(n, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _lattice_matern(x1, x2, nu, ls, levels):
    """Matérn on T^k summed over integer vectors j with |j|^2 among the first `levels` values."""
    k = x1.shape[-1]
    radius = int(math.isqrt(10 * levels)) + 2
    grid = (
        np.array(np.meshgrid(*[np.arange(-radius, radius + 1)] * k, indexing="ij")).reshape(k, -1).T
    )
    norms = (grid**2).sum(1)
    kept = np.unique(norms)[:levels]
    assert kept[-1] < radius**2, "lattice radius too small for the requested levels"
    grid, norms = grid[norms <= kept[-1]], norms[norms <= kept[-1]]
    s = (
        np.exp(-0.5 * ls**2 * norms)
        if math.isinf(nu)
        else (2 * nu / ls**2 + norms) ** (-nu - k / 2)
    )
    phase = np.einsum("nmk,jk->nmj", x1[:, None, :] - x2[None, :, :], grid)
    return (np.cos(phase) * s).sum(-1) / s.sum()


def test_torus_levels_group_lattice_shells():
    eigenvalues, multiplicities = Torus(2).levels(40)
    counts = Counter(a * a + b * b for a in range(-9, 10) for b in range(-9, 10))
    expected = sorted(counts)[:40]
    assert eigenvalues.tolist() == expected
    assert multiplicities.tolist() == [counts[e] for e in expected]
    # the eigenvalue 25 = 0²+5² = 3²+4² is one level (GeometricKernels splits it)
    assert multiplicities[eigenvalues.tolist().index(25)] == 12


def test_sphere_circle_levels_group_equal_sums():
    eigenvalues, multiplicities = ProductSpace(Sphere(2), Circle()).levels(30)
    counts = Counter()
    for l in range(12):
        for j in range(12):
            counts[l * (l + 1) + j * j] += (2 * l + 1) * (1 if j == 0 else 2)
    expected = sorted(counts)[:30]
    assert eigenvalues.tolist() == expected
    assert multiplicities.tolist() == [counts[e] for e in expected]


def test_many_levels_are_enumerated_quickly():
    start = time.perf_counter()
    eigenvalues, multiplicities = Torus(2).levels(20000)
    elapsed = time.perf_counter() - start
    assert len(eigenvalues) == 20000 and (eigenvalues.diff() > 0).all()
    # Landau–Ramanujan: about 0.764 N / sqrt(ln N) sums of two squares below N
    assert 0.5 < 20000 / (0.764 * eigenvalues[-1] / math.sqrt(math.log(eigenvalues[-1]))) < 1.5
    assert elapsed < 2.0, f"20000 torus levels took {elapsed:.2f} s"
    finite = Torus(5).levels(3000)[0]
    assert finite.tolist() == list(range(3000))  # every integer is a sum of five squares


@pytest.mark.parametrize("nu,ls", [(0.5, 0.6), (2.5, 0.5), (math.inf, 0.4)])
def test_torus_matern_equals_lattice_sum(nu, ls):
    space = Torus(2)
    x, y = _points(space, 8, 0), _points(space, 6, 1)
    kernel = GeometricMaternKernel(space, nu=nu, num_levels=60).double()
    kernel.lengthscale = torch.tensor(ls, dtype=torch.float64)
    with torch.no_grad():
        ours = kernel(x, y).to_dense().numpy()
    ref = _lattice_matern(x.numpy(), y.numpy(), nu, ls, 60)
    assert np.abs(ours - ref).max() < 1e-12


def test_three_torus_matern_equals_lattice_sum():
    space = Torus(3)
    x, y = _points(space, 5, 2), _points(space, 4, 3)
    kernel = GeometricMaternKernel(space, nu=1.5, num_levels=25).double()
    kernel.lengthscale = torch.tensor(0.8, dtype=torch.float64)
    with torch.no_grad():
        ours = kernel(x, y).to_dense().numpy()
    assert np.abs(ours - _lattice_matern(x.numpy(), y.numpy(), 1.5, 0.8, 25)).max() < 1e-12


def test_sphere_circle_matern_equals_double_sum():
    space = ProductSpace(Sphere(2), Circle())
    x, y = _points(space, 7, 4), _points(space, 5, 5)
    kernel = GeometricMaternKernel(space, nu=1.5, num_levels=40).double()
    kernel.lengthscale = torch.tensor(0.7, dtype=torch.float64)
    with torch.no_grad():
        ours = kernel(x, y).to_dense().numpy()
    x, y = x.numpy(), y.numpy()
    t = np.clip(x[:, :3] @ y[:, :3].T, -1, 1)
    gap = x[:, None, 3] - y[None, :, 3]
    terms = [(l * (l + 1) + j * j, l, j) for l in range(15) for j in range(15)]
    kept = sorted({e for e, _, _ in terms})[:40]
    s = {e: (3 / 0.49 + e) ** (-3.0) for e in kept}
    norm = sum(s[e] * (2 * l + 1) * (1 if j == 0 else 2) for e, l, j in terms if e in s)
    ref = sum(
        s[e] * (2 * l + 1) * sp.eval_legendre(l, t) * (1 if j == 0 else 2) * np.cos(j * gap)
        for e, l, j in terms
        if e in s
    )
    assert np.abs(ours - ref / norm).max() < 1e-12


@pytest.mark.parametrize("dtype", DTYPES)
def test_torus_kernel_is_symmetric_under_swapping_coordinates(dtype):
    space = Torus(2)
    x = _points(space, 15, 6, dtype)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for levels in (
        None,
        24,
        25,
        26,
    ):  # 25 product levels cut GeometricKernels' torus through λ = 25
        kernel = GeometricMaternKernel(space, nu=2.5, num_levels=levels).to(dtype)
        kernel.lengthscale = 1.0
        with torch.no_grad():
            K, swapped = kernel(x).to_dense(), kernel(x.flip(-1)).to_dense()
        assert (K - swapped).abs().max() < tol
        assert (K.diagonal() - 1).abs().max() < tol


def test_circle_heat_kernel_equals_theta_function():
    ls = 0.5
    kernel = GeometricHeatKernel(Circle(), num_levels=40).double()
    kernel.lengthscale = torch.tensor(ls, dtype=torch.float64)
    x, y = _points(Circle(), 9, 7), _points(Circle(), 8, 8)
    with torch.no_grad():
        ours = kernel(x, y).to_dense()
    # heat kernel exp(tΔ) with t = ℓ²/2, by Poisson summation a periodised Gaussian of variance ℓ²
    shifts = 2 * math.pi * torch.arange(-6, 7, dtype=torch.float64)
    gap = x - y.T
    theta = torch.exp(-((gap[..., None] + shifts) ** 2) / (2 * ls**2)).sum(-1)
    assert (ours - theta / torch.exp(-(shifts**2) / (2 * ls**2)).sum()).abs().max() < 1e-10


def test_torus_heat_kernel_is_the_product_of_theta_functions():
    ls = 0.6
    space = Torus(2)
    kernel = GeometricHeatKernel(space, num_levels=150).double()
    kernel.lengthscale = torch.tensor(ls, dtype=torch.float64)
    x, y = _points(space, 6, 9), _points(space, 7, 10)
    with torch.no_grad():
        ours = kernel(x, y).to_dense()
    shifts = 2 * math.pi * torch.arange(-6, 7, dtype=torch.float64)
    gap = x[:, None, :] - y[None, :, :]
    theta = torch.exp(-((gap[..., None] + shifts) ** 2) / (2 * ls**2)).sum(-1).prod(-1)
    assert (ours - theta / torch.exp(-(shifts**2) / (2 * ls**2)).sum() ** 2).abs().max() < 1e-10


@pytest.mark.parametrize("dtype", DTYPES)
def test_batched_inputs_equal_a_loop(dtype):
    for space in (Torus(2), ProductSpace(Sphere(2), Circle())):
        kernel = GeometricMaternKernel(space, nu=1.5, num_levels=50).to(dtype)
        xb = _points(space, 4 * 3, 11, dtype).reshape(4, 3, -1)
        z = _points(space, 6, 12, dtype)
        with torch.no_grad():
            batched = kernel(xb, z.expand(4, 6, -1)).to_dense()
            diag = kernel(xb, xb, diag=True)
            for i in range(4):
                assert torch.allclose(batched[i], kernel(xb[i], z).to_dense(), atol=1e-6)
                assert torch.allclose(diag[i], torch.ones(3, dtype=dtype), atol=1e-5)


def test_batched_weights_broadcast_against_points():
    space = Torus(2)
    x, y = _points(space, 5, 13), _points(space, 4, 14)
    weights = torch.rand(3, 1, 30, generator=torch.Generator().manual_seed(13), dtype=torch.float64)
    out = space.spectral_sum(weights, x.expand(2, 5, 2), y)
    assert out.shape == (3, 2, 5, 4)
    for i in range(3):
        assert torch.allclose(out[i, 1], space.spectral_sum(weights[i, 0], x, y), atol=1e-13)


@pytest.mark.parametrize("space", [Torus(2), Torus(3), ProductSpace(Sphere(2), Circle())], ids=repr)
def test_gradients_match_finite_differences(space):
    x, y = _points(space, 4, 15), _points(space, 3, 16)
    weights = torch.rand(12, generator=torch.Generator().manual_seed(15), dtype=torch.float64)
    inputs = (x.requires_grad_(), y.requires_grad_(), weights.requires_grad_())
    assert torch.autograd.gradcheck(lambda a, b, w: space.spectral_sum(w, a, b), inputs)
    assert torch.autograd.gradcheck(lambda a, b, w: space.spectral_sum(w, a, a, diag=True), inputs)


def sum_gradients_and_saved(space, weights, x):
    """K(x, x), its gradients for a fixed linear functional, and the elements autograd saved."""
    n = x.shape[-2]
    xr, wr = x.clone().requires_grad_(), weights.clone().requires_grad_()
    saved = []
    hooks = (lambda t: saved.append(t.numel()) or t, lambda t: t)
    with torch.autograd.graph.saved_tensors_hooks(*hooks):
        out = space.spectral_sum(wr, xr, xr)
    (out * torch.linspace(0, 1, n * n, dtype=torch.float64).reshape(n, n)).sum().backward()
    return out.detach(), xr.grad, wr.grad, sum(saved)


@pytest.mark.parametrize("space,levels", [(Torus(2), 150), (Torus(3), 40)], ids=["T2", "T3"])
def test_streaming_path_saves_no_per_level_tensors(space, levels, monkeypatch):
    monkeypatch.setattr(product, "FEATURES_PER_TUPLE", 0)  # the level series, not the features
    n = 40
    x = _points(space, n, 17)
    weights = torch.rand(levels, generator=torch.Generator().manual_seed(17), dtype=torch.float64)
    assert len(space.level_table(levels)) > 200  # an N x N x tuples graph would be huge

    def run():
        return sum_gradients_and_saved(space, weights, x)

    batched = run()
    monkeypatch.setattr(_product_series, "BATCH_ELEMENTS", n * n)  # one outer level per group
    streamed = run()
    assert streamed[3] < 4 * n * n, f"autograd saved {streamed[3]} elements"
    for a, b in zip(batched[:3], streamed[:3], strict=True):
        assert (a - b).abs().max() < 1e-11
    monkeypatch.setattr(_product_series, "BATCH_ELEMENTS", 1)
    inputs = (x[:2].clone().requires_grad_(), weights[:12].clone().requires_grad_())
    assert torch.autograd.gradcheck(lambda a, w: space.spectral_sum(w, a, x[:3]), inputs)


def test_eigenfunctions_reproduce_the_kernel_and_are_orthonormal():
    for space in (Torus(2), ProductSpace(Circle(), Sphere(2))):
        x, y = _points(space, 6, 18), _points(space, 5, 19)
        levels = 12
        _, mult = space.levels(levels)
        weights = torch.rand(
            levels, generator=torch.Generator().manual_seed(18), dtype=torch.float64
        )
        per_feature = torch.repeat_interleave(weights, mult.to(torch.long))
        phi_x, phi_y = space.eigenfunctions(x, levels), space.eigenfunctions(y, levels)
        assert phi_x.shape == (6, int(mult.sum()))
        assert (
            phi_x * per_feature @ phi_y.T - space.spectral_sum(weights, x, y)
        ).abs().max() < 1e-12
    z = _points(Torus(2), 20000, 20)
    phi = Torus(2).eigenfunctions(z, 8)
    gram = phi.T @ phi / len(z)
    stderr = ((phi**2).T @ phi**2 / len(z) - gram**2).clamp_min(0).sqrt() / math.sqrt(len(z))
    deviation = (gram - torch.eye(phi.shape[-1], dtype=torch.float64)).abs()
    assert (deviation < 5 * stderr + 1e-12).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_geometry_is_factorwise(dtype):
    space = ProductSpace(Sphere(2), Circle())
    x, y = _points(space, 10, 21, dtype), _points(space, 10, 22, dtype)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    expected = (
        Sphere(2).distance(x[:, :3], y[:, :3]) ** 2 + Circle().distance(x[:, 3:], y[:, 3:]) ** 2
    ).sqrt()
    assert torch.allclose(space.distance(x, y), expected, atol=tol)
    v = torch.randn(10, 4, generator=torch.Generator().manual_seed(21), dtype=dtype)
    tangent = space.to_tangent(x, v)
    assert torch.allclose(tangent[:, :3], Sphere(2).to_tangent(x[:, :3], v[:, :3]), atol=tol)
    assert torch.allclose(tangent[:, 3:], v[:, 3:])
    moved = space.retract(x, tangent)
    space.check(moved)
    assert torch.allclose(moved[:, 3:], torch.remainder(x[:, 3:] + v[:, 3:], 2 * math.pi), atol=tol)
    assert space.point_shape == (4,) and space.dim == 3 and space.spectral_dim == 3
    assert repr(Torus(3)) == "Torus(3)" and repr(space) == "ProductSpace(Sphere(2), Circle())"


def test_bad_input_is_refused_with_advice():
    space = Torus(2)
    bad = torch.tensor([[0.5, 7.0]], dtype=torch.float64)
    with pytest.raises(InputDataError, match=r"x\[\.\.\., 1:2\].*space.project") as info:
        space.check(bad)
    assert "is factors[1] of Torus(2)" in str(info.value)  # a torus user never made a Circle
    # numbered as Python indexes `space.factors`, as the constructor's message numbers them (one
    # said "factor 0", the other "factor 1" for the same first factor)
    with pytest.raises(ConfigurationError, match=r"factors\[1\] must be a space with 1-D points"):
        ProductSpace(Sphere(2), "circle")
    with pytest.raises(InputDataError, match=r"\(\*batch, 2\)"):
        space.check(torch.zeros(3, 3, dtype=torch.float64))
    with pytest.raises(InputDataError, match="NaN"):
        GeometricMaternKernel(space)(
            torch.full((2, 2), float("nan"), dtype=torch.float64)
        ).to_dense()
    with pytest.raises(ConfigurationError, match="integer >= 1"):
        Torus(0)
    with pytest.raises(ConfigurationError, match="at least one factor"):
        ProductSpace()
    with pytest.raises(ConfigurationError, match="space with 1-D points"):
        ProductSpace(Circle(), "circle")


def test_ambient_bounds_hold_random_points_and_a_factor_without_one_is_refused():
    torus = Torus(3)
    bounds = torus.ambient_bounds()
    x = torus.random(500, generator=torch.Generator().manual_seed(0))
    assert bounds.shape == (2, 3)
    assert ((x >= bounds[0]) & (x <= bounds[1])).all()
    assert torch.allclose(bounds[1] - bounds[0], torch.full((3,), 2 * math.pi, dtype=torch.float64))
    mixed = ProductSpace(Sphere(2), Circle())
    assert mixed.ambient_bounds().shape == (2, 4)


def test_torus_embedding_has_no_seam_and_its_chords_are_the_circles_chords():
    """Each angle embeds as its cosine and sine: angles just either side of 0 = 2π embed next to
    each other, and a product's squared chord is the sum of the circles' ``(2 sin(d/2))²``."""
    torus = Torus(2)
    near_seam = torch.tensor([[1e-9, 1.0], [2 * math.pi - 1e-9, 1.0]], dtype=torch.float64)
    ends = torus.embed(near_seam)
    assert ends.shape == (2, 4)
    assert (ends[0] - ends[1]).norm() < 1e-8
    g = torch.Generator().manual_seed(0)
    x, y = torus.random(100, generator=g), torus.random(100, generator=g)
    gaps = torch.stack([Circle().distance(x[:, i : i + 1], y[:, i : i + 1]) for i in (0, 1)], -1)
    chord = (torus.embed(x) - torus.embed(y)).norm(dim=-1)
    assert torch.allclose(chord, (2 * torch.sin(gaps / 2)).norm(dim=-1), atol=1e-12)


def test_a_box_coordinate_out_of_range_in_a_product_is_named_with_its_bound():
    from manibo.spaces import Box, SpecialOrthogonal

    space = ProductSpace(SpecialOrthogonal(3), Box([0.0, 0.0], [5.0, 1.0]))
    x = space.random(1, generator=0)
    x[0, 9] = 7.0
    with pytest.raises(InputDataError) as info:
        space.check(x)
    message = str(info.value)
    assert "`x[..., 9:11]` holds points off Box([0.0, 0.0], [5.0, 1.0])" in message
    assert "at batch index (0,): coordinate 0 of the box = 7.0 > upper bound 5.0" in message
    assert "factors[1] of" in message and "Clamp them" in message
    assert "on the product, `space.project(x)` maps every factor of whole points" in message
    assert torch.equal(space.project(x)[0, 9], torch.tensor(5.0, dtype=x.dtype))  # as it says


def test_a_point_of_the_wrong_length_is_told_the_layout_and_factor_advice_works_as_written():
    # a 9-vector (the damping left out) on SPD(3) x [0.1, 2] was told to "Stack points along the
    # leading dimensions"; and a factor's advice `space.project(x[..., 0:9])`, with `space` the
    # product, raised a shape error when followed
    from manibo.spaces import Box, SymmetricPositiveDefinite

    space = ProductSpace(
        SymmetricPositiveDefinite(3, eigenvalue_bounds=(100.0, 2000.0)), Box([0.1], [2.0])
    )
    with pytest.raises(InputDataError, match=r"got \(9,\). A point of the product") as info:
        space.check(torch.ones(9, dtype=torch.float64))
    message = str(info.value)
    assert "(9 + 1 numbers)" in message
    assert "`x[..., 0:9]`: SymmetricPositiveDefinite(3" in message
    assert "(a 3x3 matrix flattened row-major)" in message
    assert "`x[..., 9:10]`: Box([0.1], [2.0])" in message
    x = space.random(1, generator=0)
    x[0, 0] = x[0, 4] = x[0, 8] = 5000.0  # eigenvalues beyond the upper bound
    with pytest.raises(InputDataError, match="Clamp them") as info:
        space.check(x)
    message = str(info.value)
    assert "`space.factors[0].project(x[..., 0:9])`" in message
    space.factors[0].check(space.factors[0].project(x[..., 0:9]))  # as it says
    x[0, 4] = -800.0  # not positive definite: no advice to project, on the factor or the product
    with pytest.raises(InputDataError, match="sign or assembly error") as info:
        space.check(x)
    assert "maps every factor of whole points" not in str(info.value)
    # a factor whose advice named `x` itself named the whole point: it names its slice now
    from manibo.spaces import Hyperbolic

    mixed = ProductSpace(Box([0.0], [1.0]), Hyperbolic(2))
    with pytest.raises(InputDataError, match=r"`space.factors\[1\].project\(x\[\.\.\., 1:4\]\)`"):
        mixed.check(torch.tensor([0.5, 1.0, 0.5, 0.5], dtype=torch.float64))


def test_a_factor_of_settings_must_be_finite():
    """is_setting asks the optimiser to enumerate the factor's values: on a continuous factor the
    run stopped after its initial design with 'not a finite space'."""

    class SetCircle(Circle):
        is_setting = True

    with pytest.raises(ConfigurationError, match=r"factors\[1\].*is_setting but not is_discrete"):
        ProductSpace(Sphere(2), SetCircle())
