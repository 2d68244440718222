r"""The rotation group SO(3), points as flattened rotation matrices: geometry and spectrum."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo._validation import default_tolerance
from manibo.exceptions import ConfigurationError
from manibo.harmonics.characters import SO3CharacterLevels
from manibo.harmonics.series import level_series
from manibo.spaces.base import CompactSpace, pairwise_in_chunks, series_coefficients
from manibo.spaces.sphere import Sphere


def _matrices(x: Tensor) -> Tensor:
    """``(*batch, 9)`` → ``(*batch, 3, 3)`` (row-major)."""
    return x.reshape(*x.shape[:-1], 3, 3)


def _flat(m: Tensor) -> Tensor:
    """``(*batch, 3, 3)`` → ``(*batch, 9)`` (row-major)."""
    return m.reshape(*m.shape[:-2], 9)


def _skew(a: Tensor) -> Tensor:
    return 0.5 * (a - a.transpose(-1, -2))


def quaternion_to_rotation(q: Tensor) -> Tensor:
    """Rotation matrices of unit quaternions ``(w, x, y, z)``, ``(*batch, 4)`` → ``(*batch, 3, 3)``.

    Uses only products of the components, so ``-q`` and ``q`` give the same rotation.
    """
    w, x, y, z = q.unbind(-1)
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    return torch.stack([torch.stack(row, -1) for row in rows], -2)


def rotation_to_quaternion(r: Tensor) -> Tensor:
    r"""Unit quaternions ``(w, x, y, z)``, :math:`w \ge 0`, of rotation matrices ``(*batch, 3, 3)``.

    Each of the four components yields a candidate quaternion divided by twice that component; the
    candidate of the largest component is taken (Shepperd's method), so no division is
    ill-conditioned.

    Returns:
        Shape ``(*batch, 4)``.
    """
    m = r.reshape(*r.shape[:-2], 9).unbind(-1)
    m00, m01, m02, m10, m11, m12, m20, m21, m22 = m
    doubled = (
        torch.stack(
            [1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], -1
        )
        .clamp_min(0.0)
        .sqrt()
    )  # 2|w|, 2|x|, 2|y|, 2|z|
    a, b, c, d = doubled.unbind(-1)
    candidates = torch.stack(
        [
            torch.stack([a * a, m21 - m12, m02 - m20, m10 - m01], -1),
            torch.stack([m21 - m12, b * b, m10 + m01, m02 + m20], -1),
            torch.stack([m02 - m20, m10 + m01, c * c, m12 + m21], -1),
            torch.stack([m10 - m01, m20 + m02, m21 + m12, d * d], -1),
        ],
        -2,
    ) / (2 * doubled.clamp_min(0.1)).unsqueeze(-1)
    best = doubled.argmax(-1, keepdim=True)
    q = candidates.gather(-2, best.unsqueeze(-1).expand(*best.shape, 4)).squeeze(-2)
    q = q / q.norm(dim=-1, keepdim=True)
    return torch.where(q[..., :1] < 0, -q, q)


class SpecialOrthogonal(CompactSpace):
    r"""The rotation group SO(3), points as row-major flattened rotations, shape ``(*batch, 9)``.

    The metric is the bi-invariant one with geodesic distance equal to the rotation angle
    :math:`\theta \in [0, \pi]` of :math:`R_1^\top R_2` (as in geomstats); a tangent vector
    :math:`V = R\Omega` (:math:`\Omega` skew) has length :math:`\|\Omega\|_F/\sqrt2`.

    Levels are the irreducible representations :math:`p = 0, 1, \dots`:
    :math:`\lambda_p = p(p+1)`, multiplicity :math:`(2p+1)^2`, and
    :math:`G_p(R_1, R_2) = (2p+1)\chi_p(\theta)` with
    :math:`\cos\theta = (\mathrm{tr}(R_1^\top R_2) - 1)/2` (GeometricKernels' convention), summed as
    a streaming series in :math:`\cos\theta`, a polynomial in the coordinates (smooth at 0 and π).
    Level :math:`p` is spanned by the degree-:math:`2p` spherical harmonics of :math:`S^3` at the
    unit quaternion of :math:`R`.

    Args:
        n: matrix size; only ``3`` is supported.
    """

    dim = 3
    spectral_dim = 3
    point_shape = (9,)
    default_max_levels = 200

    def __init__(self, n: int = 3) -> None:
        if n != 3:
            raise ConfigurationError(
                f"`n` must be 3: only SO(3) is implemented, got SpecialOrthogonal({n!r})."
            )
        self.n = 3
        self._levels = SO3CharacterLevels()
        self._quaternion_sphere = Sphere(3)

    def __repr__(self) -> str:
        return "SpecialOrthogonal(3)"

    # geometry -------------------------------------------------------------------------------
    def random(self, n, generator=None, dtype=torch.float64, device=None) -> Tensor:
        """Haar-uniform rotations from uniform unit quaternions, shape ``(n, 9)``."""
        q = torch.randn(n, 4, generator=generator, dtype=dtype, device=device)
        return _flat(quaternion_to_rotation(q / q.norm(dim=-1, keepdim=True)))

    def _check_membership(self, x: Tensor, name: str) -> None:
        r = _matrices(x)
        eye = torch.eye(3, dtype=x.dtype, device=x.device)
        err = (r.transpose(-1, -2) @ r - eye).abs().amax(dim=(-1, -2))
        tol = default_tolerance(x.dtype)
        advice = f"Map them to the nearest rotations with `space.project({name})`."
        if (err > tol).any():
            raise self._membership_error(
                name,
                f"rows must be 3x3 rotation matrices flattened row-major with RᵀR = I within "
                f"{tol:g}, the worst is off by {float(err.max()):.3g}",
                advice,
            )
        reflections = int((torch.linalg.det(r) < 0).sum())
        if reflections:
            raise self._membership_error(
                name,
                f"{reflections} matrices are orthogonal with det = -1 (reflections), not +1",
                advice,
            )

    def project(self, x: Tensor) -> Tensor:
        """Nearest rotation in Frobenius norm (SVD, with the sign fix that keeps det = +1)."""
        u, _, vh = torch.linalg.svd(_matrices(x))
        sign = torch.linalg.det(u @ vh)
        u = torch.cat([u[..., :2], u[..., 2:] * sign[..., None, None]], dim=-1)
        return _flat(u @ vh)

    def to_tangent(self, x: Tensor, v: Tensor) -> Tensor:
        r""":math:`R\,\mathrm{skew}(R^\top V)`, shapes ``(*batch, 9)``."""
        r = _matrices(x)
        return _flat(r @ _skew(r.transpose(-1, -2) @ _matrices(v)))

    def retract(self, x: Tensor, v: Tensor) -> Tensor:
        r"""The exponential map :math:`R \exp(\mathrm{skew}(R^\top V))` (for tangent ``v``)."""
        r = _matrices(x)
        return _flat(r @ torch.linalg.matrix_exp(_skew(r.transpose(-1, -2) @ _matrices(v))))

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        r"""Rotation angle of :math:`M = R_1^\top R_2`, shape ``(*batch)``.

        Computed as :math:`\mathrm{atan2}(\sin\theta, \cos\theta)` from the axial vector of the
        skew part of :math:`M` and its trace, which is accurate near 0 and :math:`\pi` (unlike a
        clamped arccos).
        """
        m = _matrices(x).transpose(-1, -2) @ _matrices(y)
        axial = torch.stack(
            [m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]],
            -1,
        )
        cos = 0.5 * (m.diagonal(dim1=-2, dim2=-1).sum(-1) - 1)
        return torch.atan2(0.5 * axial.norm(dim=-1), cos)

    def ambient_bounds(self) -> Tensor:
        """The box ``[-1, 1]^9`` holding every rotation matrix's entries, shape ``(2, 9)``."""
        return torch.tensor([[-1.0] * 9, [1.0] * 9], dtype=torch.float64)

    def chart(self, x: Tensor) -> Tensor:
        """Rotation vectors (axis times angle in ``[0, π]``), shape ``(*batch, 3)``."""
        q = rotation_to_quaternion(_matrices(x))
        sin_half = q[..., 1:].norm(dim=-1, keepdim=True)
        angle = 2 * torch.atan2(sin_half, q[..., :1])
        small = sin_half < math.sqrt(torch.finfo(x.dtype).eps)
        scale = torch.where(small, 2 / q[..., :1], angle / torch.where(small, 1.0, sin_half))
        return scale * q[..., 1:]

    # spectrum -------------------------------------------------------------------------------
    def levels(self, num_levels: int) -> tuple[Tensor, Tensor]:
        p = torch.arange(num_levels, dtype=torch.float64)
        return p * (p + 1), (2 * p + 1) ** 2

    def spectral_sum(self, weights: Tensor, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        scales = self._levels.scales(weights.shape[-1])
        if diag:
            coeffs = series_coefficients(weights, scales, extra_dims=1)
            return level_series(0.5 * ((x1 * x2).sum(-1) - 1), coeffs, self._levels)
        coeffs = series_coefficients(weights, scales, extra_dims=2)

        def block(a: Tensor, b: Tensor) -> Tensor:
            return level_series(0.5 * (a @ b.transpose(-1, -2) - 1), coeffs, self._levels)

        return pairwise_in_chunks(block, x1, x2, point_ndim=1)

    def eigenfunctions(self, x: Tensor, num_levels: int) -> Tensor:
        """Even-degree spherical harmonics of :math:`S^3` at the unit quaternions of ``x``.

        Args:
            x: rotations, shape ``(*batch, n, 9)``.
            num_levels: number of levels ``L``.

        Returns:
            Shape ``(*batch, n, M)``, ``M = sum_{p<L} (2p+1)^2``, level by level.
        """
        quaternions = rotation_to_quaternion(_matrices(x))
        harmonics = self._quaternion_sphere.eigenfunctions(quaternions, 2 * num_levels - 1)
        # degree 2p starts after sum_{l < 2p} (l + 1)^2 columns
        starts = [(2 * p) * (2 * p + 1) * (4 * p + 1) // 6 for p in range(num_levels)]
        columns = torch.cat(
            [torch.arange(s, s + (2 * p + 1) ** 2, device=x.device) for p, s in enumerate(starts)]
        )
        return harmonics.index_select(-1, columns)
