"""Logarithm coordinates of rotations: float32 input is computed in float64, returned in float32."""

import math
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


def _skew3(v):
    zero = torch.zeros_like(v[..., 0])
    return torch.stack(
        [
            torch.stack([zero, -v[..., 2], v[..., 1]], -1),
            torch.stack([v[..., 2], zero, -v[..., 0]], -1),
            torch.stack([-v[..., 1], v[..., 0], zero], -1),
        ],
        -2,
    )


@pytest.mark.parametrize("gap", [1e-4 / 2, 1e-7])
def test_rotation_vector_just_below_pi_matches_scipy(gap):
    # Below the angle pi - 1e-4 the axis is read off R + I; its sign must follow the skew part.
    from scipy.spatial.transform import Rotation

    axes = torch.randn(300, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    axes = axes / axes.norm(dim=-1, keepdim=True)
    theta = torch.pi - gap
    r = torch.linalg.matrix_exp(_skew3(theta * axes))
    vec = rotation_vector(r)
    reference = torch.from_numpy(Rotation.from_matrix(r.numpy()).as_rotvec())
    torch.testing.assert_close(vec, reference, rtol=0, atol=1e-9)
    torch.testing.assert_close(vec, theta * axes, rtol=0, atol=1e-9)
    torch.testing.assert_close(torch.linalg.matrix_exp(_skew3(vec)), r, rtol=0, atol=1e-12)


def _skew_from_coordinates(coords, n):
    rows, cols = torch.triu_indices(n, n, 1)
    omega = coords.new_zeros(*coords.shape[:-1], n, n)
    omega[..., rows, cols] = coords
    return omega - omega.transpose(-1, -2)


def _rotations_with_angles(angles, n, count, seed):
    """``count`` rotations ``Q B Qᵀ`` with ``B`` rotating planes (0,1), (2,3), ... by ``angles``;
    the first has ``Q = I``. An angle of π is the exact block ``diag(-1, -1)``."""
    block = torch.eye(n, dtype=torch.float64)
    for k, angle in enumerate(angles):
        c, s = (-1.0, 0.0) if angle == math.pi else (math.cos(angle), math.sin(angle))
        block[2 * k : 2 * k + 2, 2 * k : 2 * k + 2] = torch.tensor(
            [[c, -s], [s, c]], dtype=torch.float64
        )
    q = SpecialOrthogonal(n).random(count, generator=torch.Generator().manual_seed(seed))
    q = q.reshape(count, n, n)
    q[0] = torch.eye(n, dtype=torch.float64)
    return q @ block @ q.transpose(-1, -2)


@pytest.mark.parametrize("n", [4, 5])
@pytest.mark.parametrize(
    "angles",
    [None, (math.pi,), (math.pi, 0.7), (math.pi, math.pi)],
    ids=["random", "one-pi", "pi-and-0.7", "two-pi"],
)
def test_log_coordinates_exponentiate_back_with_the_geodesic_norm(n, angles):
    space = SpecialOrthogonal(n)
    if angles is None:
        r = space.random(100, generator=torch.Generator().manual_seed(11)).reshape(-1, n, n)
    else:
        r = _rotations_with_angles(angles, n, 30, seed=len(angles) + n)
    coords = log_coordinates(r)
    assert coords.shape == (len(r), n * (n - 1) // 2)
    torch.testing.assert_close(
        torch.linalg.matrix_exp(_skew_from_coordinates(coords, n)), r, rtol=0, atol=1e-12
    )
    identity = torch.eye(n, dtype=torch.float64).reshape(1, -1).expand(len(r), -1)
    distance = space.distance(identity, r.reshape(len(r), -1))
    torch.testing.assert_close(coords.norm(dim=-1), distance, rtol=0, atol=1e-7)
    if angles is None:  # where the principal logarithm is real, it is what is returned
        import numpy as np
        from scipy.linalg import logm

        principal = np.stack([np.real(logm(m)) for m in r.numpy()])
        torch.testing.assert_close(
            _skew_from_coordinates(coords, n), torch.from_numpy(principal), rtol=0, atol=1e-12
        )


def test_orientation_so4_has_no_false_minima_at_angle_pi():
    # -target is at angles (pi, pi) from the target, target diag(-1, -1, 1, 1) at (pi, 0). Ackley
    # of coordinates x in d = 6 dimensions is at least 20 (1 - exp(-0.2 |x| / sqrt(d))).
    from manibo.problems import make_problem

    problem = make_problem("orientation-so4")
    target = problem.target
    flip = target @ torch.diag(torch.tensor([-1.0, -1.0, 1.0, 1.0], dtype=torch.float64))
    for point, norm in [(-target, torch.pi * 2**0.5), (flip, torch.pi)]:
        bound = 20 * (1 - torch.exp(torch.tensor(-0.2 * norm / 6**0.5, dtype=torch.float64)))
        assert problem.evaluate_true(point.reshape(1, 16)).item() >= bound.item() > 3
