"""Spherical harmonics by fundamental systems: exact-cubature orthonormality, the addition theorem
(against SciPy's Gegenbauer), gradients, dtypes, the disk cache and input errors."""

import math

import numpy as np
import pytest
import scipy.special as sp
import torch

from manibo.exceptions import ConfigurationError, InputDataError, ManiboWarning
from manibo.harmonics.fourier import circle_harmonics
from manibo.harmonics.spherical_harmonics import (
    fundamental_system,
    harmonic_level_index,
    spherical_harmonics,
)

# (d, levels): all levels n < L; products of two harmonics have degree <= 2(L - 1)
CASES = [(3, 12), (4, 7), (5, 5), (6, 4), (7, 4), (8, 3), (9, 3), (10, 3)]


@pytest.fixture(autouse=True)
def _temporary_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("MANIBO_CACHE_DIR", str(tmp_path))


def sphere_cubature(d, degree):
    """Product rule on S^(d-1), exact for polynomials of degree <= ``degree``; weights sum to 1.

    x = (sqrt(1 - t^2) y, t) with y on S^(d-2) and Gauss–Gegenbauer nodes in t (weight
    (1 - t^2)^((k-3)/2) on S^(k-1)); the circle uses degree + 1 equispaced angles.
    """
    k = degree + 1
    angles = 2 * np.pi * np.arange(k) / k
    points, weights = np.stack([np.cos(angles), np.sin(angles)], 1), np.full(k, 1 / k)
    for dim in range(3, d + 1):
        t, w = sp.roots_gegenbauer(degree // 2 + 1, (dim - 2) / 2)
        w = w / w.sum()
        radial = np.sqrt(1 - t**2)
        points = np.concatenate(
            [
                np.concatenate([r * points, np.full((len(points), 1), ti)], 1)
                for r, ti in zip(radial, t, strict=True)
            ]
        )
        weights = np.concatenate([wi * weights for wi in w])
    return torch.from_numpy(points), torch.from_numpy(weights)


def _dims(d, levels):
    return [
        math.comb(n + d - 1, n) - (math.comb(n + d - 3, n - 2) if n >= 2 else 0)
        for n in range(levels)
    ]


def _random_unit(n, d, seed):
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return x / x.norm(dim=-1, keepdim=True)


def test_cubature_is_exact_for_low_moments():
    x, w = sphere_cubature(5, 4)
    assert torch.allclose((w[:, None] * x**2).sum(0), torch.full((5,), 1 / 5, dtype=torch.float64))
    assert abs(float((w * x[:, 0] ** 4).sum()) - 3 / 35) < 1e-15  # E[x1^4] = 3 / (d (d + 2))


@pytest.mark.parametrize("d,levels", CASES)
def test_orthonormal_under_exact_cubature(d, levels):
    x, w = sphere_cubature(d, 2 * (levels - 1))
    y = spherical_harmonics(x, levels)
    assert y.shape == (len(x), sum(_dims(d, levels)))
    gram = y.T @ (w[:, None] * y)
    assert (gram - torch.eye(gram.shape[0], dtype=torch.float64)).abs().max() < 1e-10


@pytest.mark.parametrize("d,levels", CASES + [(3, 25)])
def test_addition_theorem(d, levels):
    x, y = _random_unit(40, d, 1), _random_unit(30, d, 2)
    fx, fy = spherical_harmonics(x, levels), spherical_harmonics(y, levels)
    t = (x @ y.T).clamp(-1, 1).numpy()
    alpha = (d - 2) / 2
    index = harmonic_level_index(d, levels)
    for n in range(levels):
        ours = (fx[:, index == n] @ fy[:, index == n].T).numpy()
        ref = (n + alpha) / alpha * sp.eval_gegenbauer(n, alpha, t)  # G_n, from SciPy
        assert np.max(np.abs(ours - ref)) < 1e-10, n


def test_level_index_and_circle_dispatch():
    assert harmonic_level_index(3, 4).tolist() == [0] + [1] * 3 + [2] * 5 + [3] * 7
    assert harmonic_level_index(2, 3).tolist() == [0, 1, 1, 2, 2]
    theta = torch.linspace(0, 6, 7, dtype=torch.float64)
    x = torch.stack([theta.cos(), theta.sin()], -1)
    assert torch.equal(spherical_harmonics(x, 4), circle_harmonics(theta.cos(), theta.sin(), 4))


def test_batch_shape_dtype_and_float32():
    x = _random_unit(12, 4, 3).reshape(3, 4, 4)
    y64 = spherical_harmonics(x, 5)
    assert y64.shape == (3, 4, 55) and y64.dtype == torch.float64
    flat = spherical_harmonics(x.reshape(12, 4), 5).reshape(3, 4, 55)
    assert torch.allclose(y64, flat, atol=1e-14)
    y32 = spherical_harmonics(x.float(), 5)
    assert y32.dtype == torch.float32 and y32.device == x.device
    # float32 input carries ~6e-8 relative error; harmonics up to degree 4 amplify it ~n^2 sqrt(N)
    assert (y32.double() - y64).abs().max() < 5e-6


def test_first_point_is_north_pole_and_level_zero_is_constant():
    for d in (3, 6):
        points = fundamental_system(d, 3)
        assert np.array_equal(points[0], np.eye(d)[-1])
        assert points.shape == (_dims(d, 4)[3], d)
    assert torch.allclose(spherical_harmonics(_random_unit(5, 7, 0), 1), torch.ones(5, 1).double())


def test_differentiable_in_x():
    x = _random_unit(3, 4, 5).requires_grad_(True)
    # eps keeps perturbed points within the unit-norm tolerance of the input check
    assert torch.autograd.gradcheck(lambda z: spherical_harmonics(z, 4), (x,), eps=1e-7, atol=1e-5)


def test_disk_cache_is_written_reused_and_deterministic(tmp_path):
    points = fundamental_system(5, 3)
    files = list((tmp_path / "fundamental_systems").glob("*d5_n3.npz"))
    assert len(files) == 1
    assert np.array_equal(fundamental_system(5, 3), points)  # loaded
    files[0].unlink()
    assert np.array_equal(fundamental_system(5, 3), points)  # recomputed identically
    files[0].write_bytes(b"not an npz file")
    assert np.array_equal(fundamental_system(5, 3), points)  # corrupt file recomputed
    with np.load(files[0]) as archive:
        assert np.array_equal(archive["points"], points)  # and rewritten


def test_unwritable_cache_warns_and_still_returns(monkeypatch, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("MANIBO_CACHE_DIR", str(blocker))
    with pytest.warns(ManiboWarning, match="MANIBO_CACHE_DIR"):
        points = fundamental_system(4, 2)
    assert points.shape == (9, 4)


def test_bad_inputs_raise_helpful_errors():
    x = _random_unit(4, 3, 0)
    with pytest.raises(InputDataError, match="unit vectors"):
        spherical_harmonics(2 * x, 3)
    bad = x.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(InputDataError, match="NaN"):
        spherical_harmonics(bad, 3)
    with pytest.raises(InputDataError, match="d >= 2"):
        spherical_harmonics(torch.ones(4, 1, dtype=torch.float64), 3)
    with pytest.raises(InputDataError, match="torch.Tensor"):
        spherical_harmonics(x.numpy(), 3)
    with pytest.raises(ConfigurationError, match="num_levels"):
        spherical_harmonics(x, 0)
    with pytest.raises(ConfigurationError, match="d = 2 is the circle"):
        fundamental_system(2, 1)


@pytest.mark.parametrize("d,levels", [(3, (0, 2, 5)), (5, (0, 1, 2, 4)), (9, (1, 3))])
def test_zonal_features_of_level_sets_map_to_the_harmonics(d, levels):
    from manibo.harmonics import harmonic_transform, zonal_features

    x = _random_unit(30, d, 4)
    full = spherical_harmonics(x, max(levels) + 1)
    index = harmonic_level_index(d, max(levels) + 1)
    wanted = torch.cat([torch.nonzero(index == n)[:, 0] for n in levels])
    Z = zonal_features(x, levels)
    assert torch.allclose(Z @ harmonic_transform(d, levels), full[:, wanted], atol=1e-12)
    # the zonal features are Gegenbauer polynomials of x . v (SciPy, independent)
    first = Z[:, 0].numpy()
    n = levels[0]
    alpha = (d - 2) / 2
    v = torch.zeros(d, dtype=torch.float64)
    v[-1] = 1.0  # each level's system starts at the north pole
    t = (x @ v).numpy()
    expected = sp.eval_gegenbauer(n, alpha, t) / sp.eval_gegenbauer(n, alpha, 1.0)
    assert np.allclose(first, expected, atol=1e-12)


@pytest.mark.parametrize("d,levels", [(3, (0, 2, 3, 5, 9)), (5, (0, 1, 2, 4, 6)), (4, (1, 6))])
def test_in_place_gegenbauer_against_scipy(d, levels):
    """The in-place evaluation (Horner in t^2 at low degree, the recurrence above) against SciPy,
    through zonal features with batch dimensions (a transposed view of feature-major storage)."""
    from manibo.harmonics import zonal_features
    from manibo.harmonics.spherical_harmonics import _power_coefficients, _stacked_basis

    alpha = (d - 2) / 2
    assert {_power_coefficients(n, alpha) is None for n in levels} == {True, False}  # both ways
    x = _random_unit(24, d, 6).reshape(2, 3, 4, d)
    Z = zonal_features(x, levels)
    assert Z.shape == (2, 3, 4, Z.shape[-1])
    points, _, sizes = _stacked_basis(d, levels, torch.device("cpu"))
    t = (x @ points.T).numpy()
    degree = np.repeat(levels, sizes)
    expected = sp.eval_gegenbauer(degree, alpha, t) / sp.eval_gegenbauer(degree, alpha, 1.0)
    assert np.allclose(Z.numpy(), expected, atol=1e-13)
    Z32 = zonal_features(x.float(), levels)
    assert np.abs(Z32.double().numpy() - expected).max() < 1e-5  # the float32 tolerance


def test_zonal_features_in_place_and_autograd_paths_agree():
    from manibo.harmonics import zonal_features

    x = _random_unit(20, 6, 5)
    fast = zonal_features(x, (0, 1, 3, 4))
    x_grad = x.clone().requires_grad_(True)
    slow = zonal_features(x_grad, (0, 1, 3, 4))
    assert torch.allclose(fast, slow.detach(), atol=1e-14)
    assert torch.autograd.gradcheck(lambda z: zonal_features(z, (2, 3)), (x_grad[:3],))
    f32 = zonal_features(x.float(), (0, 1, 3, 4))
    assert f32.dtype == torch.float32 and (f32.double() - fast).abs().max() < 1e-5
    with pytest.raises(ConfigurationError, match="strictly increasing"):
        zonal_features(x, (2, 1))
    with pytest.raises(ConfigurationError, match="strictly increasing"):
        zonal_features(x, ())


def test_a_degenerate_cached_system_is_recomputed_not_reused(tmp_path):
    """A cache file of unit vectors that is not a fundamental system (here the north pole
    repeated) passes the file checks; the basis finds it singular and rebuilds the file."""
    import importlib

    module = importlib.import_module("manibo.harmonics.spherical_harmonics")
    points = fundamental_system(4, 3)
    path = next((tmp_path / "fundamental_systems").glob("*d4_n3.npz"))
    np.savez(path, points=np.tile(points[:1], (len(points), 1)))
    module._level_basis.cache_clear()
    module._stacked_basis.cache_clear()
    x = _random_unit(6, 4, 11)
    y = spherical_harmonics(x, 4)
    assert torch.isfinite(y).all()
    with np.load(path) as archive:
        assert np.array_equal(archive["points"], points)  # rewritten with the real system


def test_angle_harmonics_equal_the_recurrence():
    from manibo.harmonics.fourier import angle_harmonics

    theta = torch.rand(4, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 7
    expected = circle_harmonics(torch.cos(theta), torch.sin(theta), 30)
    assert torch.allclose(angle_harmonics(theta, 30), expected, atol=1e-12)
    assert angle_harmonics(theta, 1).shape == (4, 7, 1)
