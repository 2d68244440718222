"""SU(n): geometry against SciPy, SU(2) against the 3-sphere, kernels against Weyl's formula."""

import math

import numpy as np
import pytest
import torch
from harmonics.test_class_functions import _weyl_su
from spaces.test_special_orthogonal import check_bi_invariant, check_spectral_sum_gradients

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import GeometricMaternKernel
from manibo.spaces import SpecialUnitary, Sphere
from manibo.spaces.special_unitary import to_complex, to_real

DTYPES = [torch.float32, torch.float64]


def _points(space, n, seed, dtype=torch.float64):
    return space.random(n, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _su2_from_quaternions(q):
    a, b = torch.complex(q[..., 0], q[..., 1]), torch.complex(q[..., 2], q[..., 3])
    rows = [torch.stack([a, -b.conj()], -1), torch.stack([b, a.conj()], -1)]
    return to_real(torch.stack(rows, -2))


@pytest.mark.parametrize("nu", [0.5, 2.5, math.inf])
def test_su2_is_the_three_sphere_of_radius_sqrt2(nu):
    sphere, su2 = Sphere(3), SpecialUnitary(2)
    q = sphere.random(12, generator=torch.Generator().manual_seed(0))
    x = _su2_from_quaternions(q)
    su2.check(x)
    k_su2 = GeometricMaternKernel(su2, nu=nu, num_levels=40).double()
    k_sphere = GeometricMaternKernel(sphere, nu=nu, num_levels=40).double()
    k_su2.lengthscale = torch.tensor(0.9, dtype=torch.float64)
    k_sphere.lengthscale = torch.tensor(0.9 / math.sqrt(2), dtype=torch.float64)
    with torch.no_grad():
        assert (k_su2(x).to_dense() - k_sphere(q).to_dense()).abs().max() < 1e-12
    arc = sphere.distance(q[:6], q[6:])
    assert torch.allclose(su2.distance(x[:6], x[6:]), math.sqrt(2) * arc, atol=1e-10)


def test_characters_reproduce_the_su2_series():
    from manibo.harmonics.weights import UnitaryWeights
    from manibo.spaces._lie_group import CharacterSum
    from manibo.spaces.special_unitary import _relative_unitaries

    su2 = SpecialUnitary(2)
    generic = CharacterSum(UnitaryWeights(2), 2, True, _relative_unitaries)
    x, y = _points(su2, 9, 1), _points(su2, 7, 2)
    weights = torch.rand(30, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.allclose(generic(weights, x, y), su2.spectral_sum(weights, x, y), atol=1e-10)
    assert torch.allclose(generic.levels(30)[0], su2.levels(30)[0])


@pytest.mark.parametrize("n", [3, 4])
def test_matern_equals_the_weyl_formula_sum(n):
    space = SpecialUnitary(n)
    x, y = _points(space, 4, 10 + n), _points(space, 3, 20 + n)
    num_levels = 20
    kernel = GeometricMaternKernel(space, nu=1.5, num_levels=num_levels).double()
    kernel.lengthscale = torch.tensor(0.7, dtype=torch.float64)
    with torch.no_grad():
        ours = kernel(x, y).to_dense().numpy()
    levels = space._weights.levels(num_levels)
    lam = np.array([float(level.eigenvalue) for level in levels])
    mult = np.array([level.multiplicity for level in levels], dtype=float)
    s = (3 / 0.49 + lam) ** (-1.5 - space.dim / 2)
    w = s / (mult * s).sum()
    rel = np.einsum("iba,jbc->ijac", to_complex(x).numpy().conj(), to_complex(y).numpy())
    expected = np.zeros((len(x), len(y)))
    for i in range(len(x)):
        for j in range(len(y)):
            z = np.linalg.eigvals(rel[i, j])
            for wl, level in zip(w, levels, strict=True):
                for label, dim in zip(level.weights, level.dimensions, strict=True):
                    expected[i, j] += wl * dim * _weyl_su(label, z).real
    assert np.abs(ours - expected).max() < 1e-10


@pytest.mark.parametrize("n,num_levels", [(3, 60), (4, 40)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_is_normalised_psd_and_a_class_function(n, num_levels, dtype):
    space = SpecialUnitary(n)
    x, g = _points(space, 12, 30, dtype), _points(space, 1, 31, dtype)
    kernel = GeometricMaternKernel(space, nu=0.5, num_levels=num_levels).to(dtype)
    kernel.lengthscale = 0.5
    u, h = to_complex(x), to_complex(g)[0]
    check_bi_invariant(kernel, x, [to_real(h @ u), to_real(u @ h), to_real(u.mH)])


@pytest.mark.parametrize("n", [2, 3])
def test_random_is_haar(n):
    """E[tr U] = 0, E[|tr U|²] = 1, and characters orthonormal by Monte Carlo."""
    space = SpecialUnitary(n)
    a = space.random(40000, generator=torch.Generator().manual_seed(40))
    assert torch.equal(a, space.random(40000, generator=torch.Generator().manual_seed(40)))
    trace = to_complex(a).diagonal(dim1=-2, dim2=-1).sum(-1)
    assert abs(complex(trace.mean())) < 0.03
    assert abs(float((trace.abs() ** 2).mean()) - 1) < 0.05
    from manibo.harmonics.weights import UnitaryWeights
    from manibo.spaces._lie_group import CharacterSum
    from manibo.spaces.special_unitary import _relative_unitaries

    table = CharacterSum(UnitaryWeights(n), n, True, _relative_unitaries)
    characters = table.characters(to_complex(a), 4)
    gram = characters.T @ characters.conj() / len(a)
    second = (characters.abs() ** 2).T @ characters.abs() ** 2 / len(a)
    stderr = (second - gram.abs() ** 2).clamp_min(0).sqrt() / math.sqrt(len(a))
    deviation = (gram - torch.eye(len(gram), dtype=gram.dtype)).abs()
    assert (deviation < 5 * stderr + 1e-12).all()


@pytest.mark.parametrize("n", [2, 3, 4])
def test_geometry(n):
    from scipy.linalg import logm, polar

    space = SpecialUnitary(n)
    x = _points(space, 6, 50)
    gen = torch.Generator().manual_seed(51)
    v = space.to_tangent(x, torch.randn(6, 2 * n * n, generator=gen, dtype=torch.float64))
    body = to_complex(x).mH @ to_complex(v)
    assert torch.allclose(body, -body.mH, atol=1e-12)
    assert body.diagonal(dim1=-2, dim2=-1).sum(-1).abs().max() < 1e-12
    v = 0.5 * v / v.norm(dim=-1, keepdim=True)
    moved = space.retract(x, v)
    space.check(moved)
    # nearby points: the distance is |log(U₁ᴴU₂)|_F, and the exponential map travels |v|
    rel = (to_complex(x).mH @ to_complex(moved)).numpy()
    expected = np.array([np.linalg.norm(logm(m)) for m in rel])
    assert np.abs(space.distance(x, moved).numpy() - expected).max() < 1e-9
    assert np.abs(expected - 0.5).max() < 1e-9
    noisy = x + 0.02 * torch.randn(6, 2 * n * n, generator=gen, dtype=torch.float64)
    projected = space.project(noisy)
    space.check(projected)
    polar_factor = np.stack([polar(m)[0] for m in to_complex(noisy).numpy()])
    phase = np.angle(np.linalg.det(polar_factor)) / n
    expected_projection = polar_factor * np.exp(-1j * phase)[:, None, None]
    assert np.abs(to_complex(projected).numpy() - expected_projection).max() < 1e-10


def test_distance_takes_the_shortest_trace_free_lift():
    # ω I (ω = e^{2πi/3}) is central in SU(3): the principal angles (2π/3, 2π/3, 2π/3) sum to
    # 2π, and the shortest trace-free lift is (2π/3, 2π/3, -4π/3)
    space = SpecialUnitary(3)
    identity = to_real(torch.eye(3, dtype=torch.complex128)).unsqueeze(0)
    omega = to_real(torch.eye(3, dtype=torch.complex128) * np.exp(2j * math.pi / 3)).unsqueeze(0)
    space.check(omega)
    expected = math.sqrt((4 + 4 + 16) * math.pi**2 / 9)
    assert abs(float(space.distance(identity, omega)[0]) - expected) < 1e-12
    assert abs(float(space.distance(omega, identity)[0]) - expected) < 1e-12


def test_spectral_sum_gradients_match_finite_differences():
    check_spectral_sum_gradients(SpecialUnitary(3), 6)


def test_bad_input_is_refused_with_advice():
    for n in (1, 1.5, True):
        with pytest.raises(ConfigurationError, match="integer >= 2"):
            SpecialUnitary(n)
    space = SpecialUnitary(3)
    x = _points(space, 4, 70)
    with pytest.raises(InputDataError, match="UᴴU = I"):
        space.check(1.1 * x)
    phase = to_real(to_complex(x) * np.exp(0.3j))
    with pytest.raises(InputDataError, match="det"):
        space.check(phase)
    with pytest.raises(InputDataError, match=r"\(\*batch, 18\)"):
        space.check(x[:, :9])
    assert repr(space) == "SpecialUnitary(3)" and space.dim == 8 and space.point_shape == (18,)


def test_retraction_derivative_is_the_exponential_maps():
    """Through the projection that keeps retract on SU(3), autograd still gives the velocity of
    the geodesic, d/dt U exp(tA) = U exp(tA) A (A = UᴴV), at t = 0.7."""
    space = SpecialUnitary(3)
    x = _points(space, 5, 4)
    gen = torch.Generator().manual_seed(5)
    v = space.to_tangent(x, torch.randn(5, 18, generator=gen, dtype=torch.float64))
    t = torch.tensor(0.7, dtype=torch.float64)
    velocity = torch.autograd.functional.jacobian(lambda s: space.retract(x, s * v), t)
    u, a = to_complex(x), to_complex(x).mH @ to_complex(v)
    assert torch.allclose(velocity, to_real(u @ torch.linalg.matrix_exp(0.7 * a) @ a), atol=1e-12)
