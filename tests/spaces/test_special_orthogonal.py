"""SO(3): geometry against geomstats and SciPy, the kernel against an independent per-level sum."""

import math

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import GeometricMaternKernel
from manibo.spaces import SpecialOrthogonal
from manibo.spaces._geomstats import geomstats_module

DTYPES = [torch.float32, torch.float64]
SO3 = SpecialOrthogonal(3)


def _tol(dtype):
    return 1e-10 if dtype == torch.float64 else 1e-4


def _rotations(n, seed, dtype=torch.float64):
    return SO3.random(n, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _mat(x):
    return x.reshape(*x.shape[:-1], 3, 3)


def _independent_matern(x1, x2, nu, lengthscale, levels):
    """Per-level character formula, with angles from SciPy (no manibo code)."""
    r1, r2 = x1.reshape(-1, 3, 3), x2.reshape(-1, 3, 3)
    rel = np.einsum("iba,jbc->ijac", r1, r2).reshape(-1, 3, 3)
    theta = Rotation.from_matrix(rel).magnitude().reshape(len(r1), len(r2))
    p = np.arange(levels)
    lam, mult = p * (p + 1.0), (2 * p + 1.0) ** 2
    s = (
        np.exp(-0.5 * lengthscale**2 * lam)
        if math.isinf(nu)
        else (2 * nu / lengthscale**2 + lam) ** (-nu - 1.5)
    )
    w = s / np.sum(mult * s)
    chi = [np.sin((2 * k + 1) * theta / 2) / np.sin(theta / 2) for k in p]
    return sum(w[k] * (2 * k + 1) * chi[k] for k in p)


@pytest.mark.parametrize("nu,ls", [(0.5, 0.4), (2.5, 1.0), (math.inf, 0.7)])
def test_matern_equals_character_formula(nu, ls):
    x, y = _rotations(9, 0), _rotations(7, 1)
    kernel = GeometricMaternKernel(SO3, nu=nu, num_levels=30).double()
    kernel.lengthscale = torch.tensor(ls, dtype=torch.float64)
    with torch.no_grad():
        ours = kernel(x, y).to_dense().numpy()
    ref = _independent_matern(x.numpy(), y.numpy(), nu, ls, 30)
    assert np.max(np.abs(ours - ref)) < 1e-11


@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_is_normalised_symmetric_psd_and_bi_invariant(dtype):
    x, q = _rotations(20, 2, dtype), _rotations(1, 3, dtype)
    kernel = GeometricMaternKernel(SO3, nu=1.5, num_levels=40).to(dtype)
    kernel.lengthscale = 0.5
    with torch.no_grad():
        K = kernel(x).to_dense()
        left = kernel((_mat(q) @ _mat(x)).reshape(-1, 9)).to_dense()
        right = kernel((_mat(x) @ _mat(q)).reshape(-1, 9)).to_dense()
    tol = _tol(dtype) * 10
    assert torch.allclose(K.diagonal(), torch.ones(20, dtype=dtype), atol=tol)
    assert torch.allclose(K, K.T, atol=tol)
    assert torch.linalg.eigvalsh(K.double()).min() > -tol
    assert torch.allclose(left, K, atol=tol) and torch.allclose(right, K, atol=tol)


def test_distance_equals_geomstats():
    x, y = _rotations(30, 4), _rotations(30, 5)
    y[0] = x[0]
    near_pi = Rotation.from_rotvec(
        [0.0, (math.pi - 1e-4) / math.sqrt(2), (math.pi - 1e-4) / math.sqrt(2)]
    )
    y[1] = (_mat(x[1]) @ torch.from_numpy(near_pi.as_matrix())).reshape(9)
    so3 = geomstats_module("geometry.special_orthogonal").SpecialOrthogonal(3)
    reference = so3.metric.dist(_mat(x), _mat(y)).to(torch.float64)
    assert torch.allclose(SO3.distance(x, y), reference, atol=1e-7)
    assert abs(float(SO3.distance(x[1], y[1])) - (math.pi - 1e-4)) < 1e-12


def test_distance_is_accurate_at_zero_and_pi():
    x = _rotations(3, 6)
    half_turn = torch.from_numpy(Rotation.from_rotvec([0.0, 0.0, math.pi]).as_matrix())
    y = (_mat(x) @ half_turn).reshape(-1, 9)
    assert torch.allclose(
        SO3.distance(x, y), torch.full((3,), math.pi, dtype=torch.float64), atol=1e-12
    )
    assert SO3.distance(x, x).abs().max() < 1e-12


@pytest.mark.parametrize("dtype", DTYPES)
def test_tangent_projection_and_exponential_map(dtype):
    gen = torch.Generator().manual_seed(7)
    x = _rotations(10, 7, dtype)
    v = torch.randn(10, 9, generator=gen, dtype=dtype)
    tangent = SO3.to_tangent(x, v)
    body = _mat(x).transpose(-1, -2) @ _mat(tangent)
    tol = _tol(dtype)
    assert torch.allclose(body, -body.transpose(-1, -2), atol=tol)
    assert torch.allclose(SO3.to_tangent(x, tangent), tangent, atol=tol)
    assert torch.allclose(SO3.retract(x, torch.zeros_like(v)), x, atol=tol)
    moved = SO3.retract(x, tangent)
    r = _mat(moved)
    eye = torch.eye(3, dtype=dtype)
    assert (r.transpose(-1, -2) @ r - eye).abs().max() < tol
    assert torch.allclose(torch.linalg.det(r), torch.ones(10, dtype=dtype), atol=tol)
    # geodesic: distance travelled = |Omega|_F / sqrt(2) while that is below pi
    small = SO3.retract(x, 0.3 * tangent / tangent.norm(dim=-1, keepdim=True))
    expected = torch.full((10,), 0.3 / math.sqrt(2), dtype=dtype)
    assert torch.allclose(SO3.distance(x, small), expected, atol=tol * 10)


def test_random_is_haar_uniform_and_honours_generator():
    a = SO3.random(20000, generator=torch.Generator().manual_seed(8))
    b = SO3.random(20000, generator=torch.Generator().manual_seed(8))
    assert torch.equal(a, b)
    assert SO3.random(3, dtype=torch.float32).dtype == torch.float32
    # Haar: E[R] = 0, and the angle has density (1 - cos θ)/π, so E[cos θ] = -1/2
    assert a.mean(0).abs().max() < 0.03
    cos = 0.5 * (_mat(a).diagonal(dim1=-2, dim2=-1).sum(-1) - 1)
    assert abs(float(cos.mean()) + 0.5) < 0.02


def test_project_returns_nearest_rotation():
    x = _rotations(6, 9)
    noisy = x + 1e-3 * torch.randn(
        6, 9, generator=torch.Generator().manual_seed(9), dtype=torch.float64
    )
    reflected = -x  # det -1: the nearest rotation flips one singular direction
    assert torch.allclose(SO3.project(x), x, atol=1e-12)
    SO3.check(SO3.project(noisy))
    SO3.check(SO3.project(reflected))
    assert (SO3.project(noisy) - x).abs().max() < 3e-3


@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_gradients_are_finite_at_zero_and_pi(dtype):
    x = _rotations(3, 10, dtype)
    half_turn = torch.from_numpy(Rotation.from_rotvec([math.pi, 0.0, 0.0]).as_matrix()).to(dtype)
    y = torch.stack([x[0], (_mat(x[1]) @ half_turn).reshape(9), x[2]])
    kernel = GeometricMaternKernel(SO3, nu=2.5, num_levels=20).to(dtype)
    xr = x.clone().requires_grad_()
    kernel(xr, y, diag=True).sum().backward()
    assert torch.isfinite(xr.grad).all()
    # k(., y) is largest at y: its Riemannian gradient vanishes at θ = 0
    riemannian = SO3.to_tangent(x, xr.grad)
    assert riemannian[0].abs().max() < _tol(dtype) * 100
    assert riemannian[2].abs().max() < _tol(dtype) * 100


def test_eigenfunctions_satisfy_the_addition_theorem():
    x, y = _rotations(6, 11), _rotations(5, 12)
    levels = 4
    phi_x, phi_y = SO3.eigenfunctions(x, levels), SO3.eigenfunctions(y, levels)
    _, mult = SO3.levels(levels)
    assert phi_x.shape == (6, int(mult.sum()))
    start = 0
    for p, m in enumerate(mult.to(torch.long).tolist()):
        weights = torch.zeros(levels, dtype=torch.float64)
        weights[p] = 1.0
        reproducing = SO3.spectral_sum(weights, x, y)
        block = phi_x[:, start : start + m] @ phi_y[:, start : start + m].T
        assert (block - reproducing).abs().max() < 1e-10, f"level {p}"
        start += m


def test_eigenfunctions_are_orthonormal_under_haar():
    z = _rotations(20000, 13)
    phi = SO3.eigenfunctions(z, 3)  # 1 + 9 + 25 functions
    gram = phi.T @ phi / len(z)
    stderr = ((phi**2).T @ phi**2 / len(z) - gram**2).clamp_min(0).sqrt() / math.sqrt(len(z))
    deviation = (gram - torch.eye(phi.shape[-1], dtype=torch.float64)).abs()
    assert (deviation < 5 * stderr + 1e-12).all(), float((deviation / stderr).max())


def test_spectral_sum_gradients_match_finite_differences():
    x, y = _rotations(4, 15), _rotations(3, 16)
    weights = torch.rand(12, generator=torch.Generator().manual_seed(15), dtype=torch.float64)
    inputs = (x.requires_grad_(), weights.requires_grad_())
    assert torch.autograd.gradcheck(lambda a, w: SO3.spectral_sum(w, a, y), inputs)
    # the diagonal of rotations sits at cos(angle) = 1, where the series' argument is clamped
    # (points a little off SO(3) keep the prior variance): checked just inside, at 0.99 x
    inside = (0.99 * x.detach()).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda a, w: SO3.spectral_sum(w, a, a, diag=True), (inside, weights)
    )


def test_levels_and_chart():
    eigenvalues, multiplicities = SO3.levels(5)
    assert eigenvalues.tolist() == [0, 2, 6, 12, 20]
    assert multiplicities.tolist() == [1, 9, 25, 49, 81]
    x = _rotations(20, 17)
    rotvec = Rotation.from_matrix(_mat(x).numpy()).as_rotvec()
    assert np.abs(SO3.chart(x).numpy() - rotvec).max() < 1e-12
    assert SO3.chart(torch.eye(3, dtype=torch.float64).reshape(1, 9)).abs().max() == 0


def test_bad_input_is_refused_with_advice():
    for n in (1, 2.5, True):
        with pytest.raises(ConfigurationError, match="integer >= 2"):
            SpecialOrthogonal(n)
    x = _rotations(4, 14)
    with pytest.raises(InputDataError, match="project"):
        SO3.check(x * 1.1)
    with pytest.raises(InputDataError, match="determinant < 0: reflections"):
        SO3.check(-x)
    with pytest.raises(InputDataError, match=r"\(\*batch, 9\)"):
        SO3.check(_mat(x))
    kernel = GeometricMaternKernel(SO3, num_levels=5).double()
    with pytest.raises(InputDataError, match="RᵀR = I"):
        kernel(x + 0.01).to_dense()


def test_ambient_bounds_hold_rotations_and_projection_lands_on_the_group():
    space = SpecialOrthogonal()
    bounds = space.ambient_bounds()
    x = space.random(200, generator=torch.Generator().manual_seed(1))
    assert bounds.shape == (2, 9)
    assert ((x >= bounds[0]) & (x <= bounds[1])).all()
    box_points = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(
        50, 9, generator=torch.Generator().manual_seed(2), dtype=torch.float64
    )
    r = space.project(box_points).reshape(-1, 3, 3)
    eye = torch.eye(3, dtype=torch.float64).expand_as(r)
    assert torch.allclose(r.transpose(-1, -2) @ r, eye, atol=1e-10)
    assert torch.allclose(torch.linalg.det(r), torch.ones(50, dtype=torch.float64), atol=1e-10)


# ------------------------------------------------------------------------------ SO(n), n != 3
def _group_points(space, n, seed, dtype=torch.float64):
    return space.random(n, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def test_so2_is_the_circle():
    from manibo.spaces import Circle

    so2, circle = SpecialOrthogonal(2), Circle()
    angles = Circle().random(12, generator=torch.Generator().manual_seed(0))
    c, s = torch.cos(angles[:, 0]), torch.sin(angles[:, 0])
    points = torch.stack([c, -s, s, c], -1)
    so2.check(points)
    for nu in (0.5, 2.5, math.inf):
        k_so2 = GeometricMaternKernel(so2, nu=nu, num_levels=40).double()
        k_circle = GeometricMaternKernel(circle, nu=nu, num_levels=40).double()
        k_so2.lengthscale = k_circle.lengthscale = 0.8
        with torch.no_grad():
            assert (k_so2(points).to_dense() - k_circle(angles).to_dense()).abs().max() < 1e-13
    assert torch.allclose(
        so2.distance(points[:6], points[6:]), circle.distance(angles[:6], angles[6:])
    )
    assert torch.allclose(so2.chart(points), angles, atol=1e-12)
    phi_so2, phi_circle = so2.eigenfunctions(points, 5), circle.eigenfunctions(angles, 5)
    assert torch.allclose(phi_so2, phi_circle, atol=1e-12)


def test_characters_reproduce_the_so3_series():
    from manibo.harmonics.weights import OrthogonalWeights
    from manibo.spaces._lie_group import CharacterSum
    from manibo.spaces.special_orthogonal import _relative_rotations

    generic = CharacterSum(OrthogonalWeights(3), 3, False, _relative_rotations)
    x, y = _rotations(15, 20), _rotations(11, 21)
    weights = torch.rand(25, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.allclose(generic(weights, x, y), SO3.spectral_sum(weights, x, y), atol=1e-11)
    assert torch.allclose(generic.levels(25)[0], SO3.levels(25)[0])


def _weyl_kernel(space, x, y, nu, lengthscale, num_levels):
    """Σ_l w_l Σ_π d_π χ_π(xᵀy) with χ from Weyl's ratio at NumPy eigenvalue angles."""
    from harmonics.test_class_functions import _weyl_so

    n = space.n
    levels = space._weights.levels(num_levels)
    lam = np.array([float(level.eigenvalue) for level in levels])
    mult = np.array([level.multiplicity for level in levels], dtype=float)
    d = space.dim
    s = (2 * nu / lengthscale**2 + lam) ** (-nu - d / 2)
    w = s / (mult * s).sum()
    rel = np.einsum("iba,jbc->ijac", _group_matrices(x), _group_matrices(y)).reshape(-1, n, n)
    out = np.zeros(len(rel))
    for p, m in enumerate(rel):
        z = np.linalg.eigvals(m)
        angles = np.sort(np.angle(z[np.angle(z) > 1e-12]))[: n // 2]
        angles = np.concatenate([angles, np.zeros(n // 2 - len(angles))])
        for wl, level in zip(w, levels, strict=True):
            for label, dim in zip(level.weights, level.dimensions, strict=True):
                out[p] += wl * dim * _weyl_so(n, label, angles).real
    return out.reshape(len(x), len(y))


def _group_matrices(x):
    n = math.isqrt(x.shape[-1])
    return x.reshape(-1, n, n).numpy()


@pytest.mark.parametrize("n", [4, 5])
def test_matern_equals_the_weyl_formula_sum(n):
    space = SpecialOrthogonal(n)
    x, y = _group_points(space, 5, 30), _group_points(space, 4, 31)
    kernel = GeometricMaternKernel(space, nu=1.5, num_levels=25).double()
    kernel.lengthscale = torch.tensor(0.6, dtype=torch.float64)
    with torch.no_grad():
        ours = kernel(x, y).to_dense().numpy()
    assert np.abs(ours - _weyl_kernel(space, x, y, 1.5, 0.6, 25)).max() < 1e-10


def check_bi_invariant(kernel, x, moved):
    """K(x, x) has unit diagonal, is PSD and equals K at the moved copies of x (g x, x g, x⁻¹)."""
    dtype = x.dtype
    with torch.no_grad():
        K = kernel(x).to_dense()
        others = [kernel(m).to_dense() for m in moved]
    tol = 1e-9 if dtype == torch.float64 else 1e-4
    assert torch.allclose(K.diagonal(), torch.ones(len(x), dtype=dtype), atol=tol)
    assert torch.linalg.eigvalsh(K.double()).min() > -tol
    for other in (*others, K.T):
        assert torch.allclose(other, K, atol=tol)


@pytest.mark.parametrize("n,num_levels", [(4, 80), (5, 60), (6, 60), (7, 30)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_is_normalised_psd_and_a_class_function(n, num_levels, dtype):
    """Any number of levels (GeometricKernels ships 25 precomputed characters per group)."""
    space = SpecialOrthogonal(n)
    x, g = _group_points(space, 14, 40, dtype), _group_points(space, 2, 41, dtype)
    kernel = GeometricMaternKernel(space, nu=0.5, num_levels=num_levels).to(dtype)
    kernel.lengthscale = 0.5

    def moved(a, left):
        m = a.reshape(-1, n, n)
        return (left @ m if left is not None else m @ g[1].reshape(n, n)).reshape(-1, n * n)

    inverse = x.reshape(-1, n, n).transpose(-1, -2).reshape(-1, n * n)
    check_bi_invariant(kernel, x, [moved(x, g[0].reshape(n, n)), moved(x, None), inverse])


@pytest.mark.parametrize("n", [2, 4, 5])
def test_general_geometry(n):
    from scipy.linalg import logm, polar

    space = SpecialOrthogonal(n)
    x, y = _group_points(space, 8, 50), _group_points(space, 8, 51)
    # distance: |log(xᵀy)|_F / √2 (SciPy's matrix logarithm)
    rel = np.einsum("iba,ibc->iac", _group_matrices(x), _group_matrices(y))
    expected = [np.linalg.norm(logm(m)) / math.sqrt(2) for m in rel]
    assert np.abs(space.distance(x, y).numpy() - np.real(expected)).max() < 1e-9
    # the exponential map travels |Ω|_F/√2
    gen = torch.Generator().manual_seed(3)
    v = space.to_tangent(x, torch.randn(8, n * n, generator=gen, dtype=torch.float64))
    v = 0.4 * v / v.norm(dim=-1, keepdim=True)
    moved = space.retract(x, v)
    space.check(moved)
    travelled = torch.full((8,), 0.4 / math.sqrt(2), dtype=torch.float64)
    assert torch.allclose(space.distance(x, moved), travelled, atol=1e-10)
    # projection: the polar factor of a matrix with positive determinant
    noisy = x + 0.05 * torch.randn(8, n * n, generator=gen, dtype=torch.float64)
    nearest = np.stack([polar(m)[0] for m in _group_matrices(noisy)])
    assert np.abs(space.project(noisy).numpy().reshape(-1, n, n) - nearest).max() < 1e-10
    sign = torch.ones(n * n, dtype=torch.float64)
    sign[0] = -1.0
    flipped = space.project(-x if n % 2 else x * sign)
    space.check(flipped)


@pytest.mark.parametrize("n", [4, 5])
def test_random_is_haar(n):
    """E[tr R] = 0 and E[(tr R)²] = 1 (the defining representation is real and irreducible),
    and the characters of the lowest levels are orthonormal by Monte Carlo."""
    space = SpecialOrthogonal(n)
    a = space.random(40000, generator=torch.Generator().manual_seed(60))
    assert torch.equal(a, space.random(40000, generator=torch.Generator().manual_seed(60)))
    trace = a.reshape(-1, n, n).diagonal(dim1=-2, dim2=-1).sum(-1)
    assert abs(float(trace.mean())) < 0.03 and abs(float((trace**2).mean()) - 1) < 0.05
    characters = space._characters.characters(a.reshape(-1, n, n), 4)
    copies = [space._weights.copies(w) for w in space._characters.labels(4)]
    gram = characters.T @ characters / len(a)
    stderr = ((characters**2).T @ characters**2 / len(a) - gram**2).clamp_min(0).sqrt()
    deviation = (gram - torch.diag(torch.tensor(copies, dtype=torch.float64))).abs()
    assert (deviation < 5 * stderr / math.sqrt(len(a)) + 1e-12).all()


def check_spectral_sum_gradients(space, num_levels):
    """gradcheck of the level sum in the points and the weights, off and on the diagonal."""
    x, y = _group_points(space, 3, 70), _group_points(space, 2, 71)
    weights = torch.rand(
        num_levels, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )
    inputs = (x.requires_grad_(), weights.requires_grad_())
    assert torch.autograd.gradcheck(lambda a, w: space.spectral_sum(w, a, y), inputs)
    assert torch.autograd.gradcheck(lambda a, w: space.spectral_sum(w, a, a, diag=True), inputs)


def test_general_spectral_sum_gradients_match_finite_differences():
    check_spectral_sum_gradients(SpecialOrthogonal(4), 8)


def test_so4_has_no_eigenfunctions_or_chart_and_refuses_reflections():
    from manibo.spaces import UnsupportedError

    space = SpecialOrthogonal(4)
    x = _group_points(space, 3, 80)
    with pytest.raises(UnsupportedError):
        space.eigenfunctions(x, 3)
    with pytest.raises(UnsupportedError):
        space.chart(x)
    reflected = x.reshape(-1, 4, 4) * torch.tensor([-1.0, 1.0, 1.0, 1.0])
    with pytest.raises(InputDataError, match="determinant < 0: reflections"):
        space.check(reflected.reshape(-1, 16))
    with pytest.raises(InputDataError, match=r"\(\*batch, 16\)"):
        space.check(x.reshape(-1, 4, 4))
    assert repr(space) == "SpecialOrthogonal(4)" and space.dim == 6 and space.point_shape == (16,)


@pytest.mark.parametrize("n", [3, 4])
def test_retraction_derivative_is_the_exponential_maps(n):
    """Through the projection that keeps retract on SO(n), autograd still gives the velocity of
    the geodesic, d/dt R exp(tΩ) = R exp(tΩ) Ω (Ω = RᵀV), at t = 0.7."""
    space = SpecialOrthogonal(n)
    gen = torch.Generator().manual_seed(4)
    x = space.random(5, generator=gen)
    v = space.to_tangent(x, torch.randn(5, n * n, generator=gen, dtype=torch.float64))
    t = torch.tensor(0.7, dtype=torch.float64)
    velocity = torch.autograd.functional.jacobian(lambda s: space.retract(x, s * v), t)
    r = x.reshape(5, n, n)
    expected = (
        r @ torch.linalg.matrix_exp(0.7 * r.mT @ v.reshape(5, n, n)) @ r.mT @ v.reshape(5, n, n)
    )
    assert torch.allclose(velocity, expected.reshape(5, n * n), atol=1e-12)


def test_quaternion_given_for_a_rotation_names_the_conversion():
    import manibo

    q = torch.tensor([1.0, 0, 0, 0], dtype=torch.float64)
    calls = [lambda: SO3.check(q), lambda: manibo.BayesianOptimizer(SO3, seed=0).tell(q, [0.0])]
    for call in calls:
        with pytest.raises(InputDataError, match=r"got \((1, )?4,?\)") as info:
            call()
        message = str(info.value)
        assert "quaternion" in message and "(w, x, y, z)" in message
        assert "manibo.spaces.quaternion_to_rotation" in message
        assert "Stack points" not in message
    with pytest.raises(InputDataError, match="Stack points"):
        SpecialOrthogonal(4).check(q)  # only SO(3) has quaternions


def test_a_reflection_is_refused_without_advising_project():
    # A frame with one axis flipped: every flip back is equally near (Frobenius distance 2), and
    # `project` picks one; for a flipped second or third column that is the rotation a half turn
    # from the intended one. So the refusal must say to fix the convention, not to project.
    x = _rotations(1, seed=5)
    for axis in range(3):
        flipped = _mat(x).clone()
        flipped[..., :, axis] *= -1
        with pytest.raises(InputDataError) as info:
            SO3.check(flipped.reshape(1, 9))
        message = str(info.value)
        assert "left-handed" in message and "cannot repair" in message
        assert "Map them to the nearest rotations" not in message
    # matrices far from orthogonal (an input transform moved them) are no flipped frames
    far = (_mat(_rotations(3, seed=6)) * torch.tensor([1.0, -1.0, 0.4], dtype=torch.float64)) + 0.3
    assert (torch.linalg.det(far) < 0).any()
    with pytest.raises(InputDataError, match="off by .*no rotations.*Normalize") as info:
        SO3.check(far.reshape(3, 9))
    assert "left-handed" not in str(info.value)
    projected = _mat(SO3.project(flipped.reshape(1, 9)))
    half_turn = Rotation.from_matrix((_mat(x).transpose(-1, -2) @ projected).numpy()).magnitude()
    assert np.allclose(half_turn, math.pi)


def test_quaternion_to_rotation_normalises_and_refuses_no_rotation():
    from manibo.spaces import quaternion_to_rotation, rotation_to_quaternion

    # a quaternion that is not of unit length (|q| = 0.975) is the rotation of q / |q| (scipy
    # normalises likewise); before, its matrix had det 0.972 and was 2.06° from it once projected
    q = torch.tensor([[0.9, 0.1, -0.3, 0.2], [-1.0, 2.0, 0.5, 0.0]], dtype=torch.float64)
    expected = Rotation.from_quat(q[:, [1, 2, 3, 0]].numpy()).as_matrix()
    r = quaternion_to_rotation(q)
    assert np.allclose(r.numpy(), expected, atol=1e-14)
    SO3.check(r.reshape(-1, 9))
    # scaled far up or down (|q| would overflow or underflow), the same rotation
    for scale, dtype in ((1e200, torch.float64), (1e-200, torch.float64), (1e20, torch.float32)):
        scaled = quaternion_to_rotation((scale * q).to(dtype))
        assert torch.allclose(scaled.double(), r, atol=1e-6 if dtype == torch.float32 else 1e-14)
    for bad, match in (
        (torch.zeros(4, dtype=torch.float64), "all zero"),
        (torch.tensor([float("nan"), 0, 0, 1.0]), "NaN"),
        (torch.tensor([1, 0, 0, 0]), "floating tensor of quaternions"),
        (torch.ones(3, dtype=torch.float64), r"shape \(\*batch, 4\); got a torch.float64"),
    ):
        with pytest.raises(InputDataError, match=match):
            quaternion_to_rotation(bad)
    # a reflection has no quaternion; a non-orthogonal matrix is refused with the projection
    reflection = torch.diag(torch.tensor([1.0, -1.0, 1.0], dtype=torch.float64))
    with pytest.raises(InputDataError, match="reflections"):
        rotation_to_quaternion(reflection)
    with pytest.raises(InputDataError, match="project"):
        rotation_to_quaternion(1.1 * torch.eye(3, dtype=torch.float64))


def test_quaternion_helpers_are_public_and_invert_each_other():
    from manibo.spaces import quaternion_to_rotation, rotation_to_quaternion

    x = _rotations(5, seed=3)
    q = rotation_to_quaternion(_mat(x))
    assert q.shape == (5, 4)
    assert torch.allclose(quaternion_to_rotation(q).reshape(-1, 9), x)


def test_a_homogeneous_pose_given_for_a_rotation_is_not_taken_for_quaternions():
    # a 4x4 pose followed the quaternion advice into four valid, meaningless rotations
    pose = torch.eye(4, dtype=torch.float64)
    pose[:3, 3] = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64)
    with pytest.raises(InputDataError) as info:
        SO3.check(pose)
    message = str(info.value)
    assert "quaternion" not in message and "homogeneous transform" in message
    assert "x[..., :3, :3].reshape(*x.shape[:-2], 9)" in message and "SE3" in message


def test_rotation_to_quaternion_of_flattened_points_says_how_to_unflatten():
    from manibo.spaces import rotation_to_quaternion

    with pytest.raises(InputDataError, match=r"unflatten them with `r.reshape\(\*r.shape\[:-1\], "):
        rotation_to_quaternion(_rotations(2, seed=0))


def test_a_rotation_of_so3_given_to_so2_names_so3_too():
    with pytest.raises(InputDataError, match=r"is a rotation of SpecialOrthogonal\(3\)"):
        SpecialOrthogonal(2).check(_mat(_rotations(2, seed=0)))
