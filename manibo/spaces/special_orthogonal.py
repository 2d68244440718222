r"""The rotation groups SO(n), points as flattened rotation matrices: geometry and spectrum."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo._validation import default_tolerance, described
from manibo.exceptions import InputDataError
from manibo.harmonics.characters import SO3CharacterLevels
from manibo.harmonics.fourier import circle_harmonics
from manibo.harmonics.series import GegenbauerLevels
from manibo.harmonics.weights import orthogonal_weights
from manibo.spaces._lie_group import attach_characters, matrix_size, rotation_angles
from manibo.spaces._polar import polar_factor
from manibo.spaces._snap import onto_orthonormal
from manibo.spaces.base import (
    CompactSpace,
    UnsupportedError,
    inner_product_series,
    safe_sqrt,
)
from manibo.spaces.sphere import Sphere


def _matrices(x: Tensor) -> Tensor:
    """``(*batch, n*n)`` → ``(*batch, n, n)`` (row-major)."""
    n = math.isqrt(x.shape[-1])
    return x.reshape(*x.shape[:-1], n, n)


def _flat(m: Tensor) -> Tensor:
    """``(*batch, n, n)`` → ``(*batch, n*n)`` (row-major)."""
    return m.reshape(*m.shape[:-2], m.shape[-1] * m.shape[-2])


def _skew(a: Tensor) -> Tensor:
    return 0.5 * (a - a.transpose(-1, -2))


REFLECTION_ERROR = 0.1
"""An orthogonal-to-this (largest entry of :math:`R^\top R - I`) matrix of determinant < 0 is
refused as a reflection (a frame with an axis flipped); farther from orthogonal, as no rotation
at all (the points of a transform that moved them off the space, say)."""


def quaternion_to_rotation(q: Tensor) -> Tensor:
    """Rotation matrices of quaternions ``(w, x, y, z)``, ``(*batch, 4)`` → ``(*batch, 3, 3)``.

    The scalar part comes first. ``q`` is normalised first, as ``q`` and ``c q`` (``c ≠ 0``, ``-1``
    included) are the same rotation. ``SpecialOrthogonal(3)`` points are these matrices
    flattened: ``quaternion_to_rotation(q).reshape(*q.shape[:-1], 9)``.

    Raises:
        InputDataError: ``q`` is not a floating tensor ``(*batch, 4)``, or holds a NaN, an
            infinite entry or a zero quaternion (no rotation; an uninitialised message, often).
    """
    if not (isinstance(q, Tensor) and q.is_floating_point() and q.shape[-1:] == (4,)):
        raise InputDataError(
            f"`q` must be a floating tensor of quaternions (w, x, y, z), shape (*batch, 4); got "
            f"{described(q)}."
        )
    largest = q.abs().amax(dim=-1, keepdim=True)  # scaled first: |q| of 1e200 overflows
    bad = ~torch.isfinite(q).all(-1, keepdim=True) | (largest == 0)
    if bool(bad.any()):
        raise InputDataError(
            f"`q` holds {int(bad.sum())} quaternion(s) with a NaN or infinite entry or all zero, "
            "which are no rotation; the zero quaternion is often an uninitialised message."
        )
    q = q / largest
    return _quaternion_matrix(q / q.norm(dim=-1, keepdim=True))


def _quaternion_matrix(q: Tensor) -> Tensor:
    """:func:`quaternion_to_rotation` of unit quaternions, unchecked; ``(*batch, 4)`` →
    ``(*batch, 3, 3)``. Uses only products of the components, so ``-q`` and ``q`` give the same
    rotation."""
    w, x, y, z = q.unbind(-1)
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    return torch.stack([torch.stack(row, -1) for row in rows], -2)


def rotation_to_quaternion(r: Tensor) -> Tensor:
    r"""Unit quaternions ``(w, x, y, z)``, :math:`w \ge 0`, of rotation matrices ``(*batch, 3, 3)``.

    ``r`` must be rotations as :meth:`SpecialOrthogonal.check` accepts them (orthogonal to its
    tolerance, determinant +1). ``SpecialOrthogonal(3)`` points ``x`` are
    ``x.reshape(*x.shape[:-1], 3, 3)``.

    Returns:
        Shape ``(*batch, 4)``.

    Raises:
        InputDataError: ``r`` is not a floating tensor ``(*batch, 3, 3)``, or not a rotation (a
            reflection, of determinant -1, has no quaternion).
    """
    if not (isinstance(r, Tensor) and r.is_floating_point() and r.shape[-2:] == (3, 3)):
        flat = isinstance(r, Tensor) and r.shape[-1:] == (9,)
        advice = (
            " Points of SpecialOrthogonal(3) are flattened: unflatten them with "
            "`r.reshape(*r.shape[:-1], 3, 3)`."
            if flat
            else ""
        )
        raise InputDataError(
            f"`r` must be a floating tensor of rotation matrices, shape (*batch, 3, 3); got "
            f"{described(r)}.{advice}"
        )
    SpecialOrthogonal(3).check(_flat(r), "r")
    return _rotation_quaternion(r)


def _rotation_quaternion(r: Tensor) -> Tensor:
    """:func:`rotation_to_quaternion` of rotations, unchecked: each of the four components yields
    a candidate quaternion divided by twice that component; the candidate of the largest
    component is taken (Shepperd's method), so no division is ill-conditioned."""
    m = r.reshape(*r.shape[:-2], 9).unbind(-1)
    m00, m01, m02, m10, m11, m12, m20, m21, m22 = m
    doubled = safe_sqrt(
        torch.stack(
            [1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], -1
        )
    )  # 2|w|, 2|x|, 2|y|, 2|z|; a zero one (the identity, half turns) has gradient 0, not NaN
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
    r"""The rotation group SO(n), ``n >= 2``, points as flattened rotations ``(*batch, n*n)``.

    Matrices are flattened row-major.

    The metric is the bi-invariant one with tangent vectors :math:`V = R\Omega` (:math:`\Omega`
    skew) of length :math:`\|\Omega\|_F/\sqrt2`, so the geodesic distance is
    :math:`\sqrt{\sum_j \theta_j^2}` over the rotation angles :math:`\theta_j \in [0, \pi]` of
    :math:`R_1^\top R_2` (the rotation angle on SO(3), the angle on SO(2)), as in geomstats.

    Levels are the irreducible representations (with equal Casimir eigenvalues grouped; see
    :mod:`manibo.harmonics.weights`): :math:`G_l(R_1, R_2) = \sum_{\pi \in l} d_\pi
    \chi_\pi(R_1^\top R_2)`, GeometricKernels' convention. SO(2) is the circle
    (:math:`\lambda = k^2`, :math:`G_k = 2\cos k\theta`); SO(3) has :math:`\lambda_p = p(p+1)`,
    multiplicity :math:`(2p+1)^2`, summed as a streaming series in :math:`\cos\theta` (a polynomial
    in the coordinates, smooth at 0 and π), and level :math:`p` is spanned by the degree-:math:`2p`
    spherical harmonics of :math:`S^3` at the unit quaternion of :math:`R`. For ``n >= 4`` the
    characters are Jacobi–Trudi determinants in the coefficients of the characteristic polynomial
    of :math:`R_1^\top R_2`, computed on the fly for any number of levels
    (:mod:`manibo.harmonics.class_functions`); there are no explicit eigenfunctions.

    Args:
        n: matrix size, ``>= 2``.
    """

    def __init__(self, n: int = 3) -> None:
        self.n = n = matrix_size(n, "SpecialOrthogonal")
        self.dim = self.spectral_dim = n * (n - 1) // 2
        self.point_shape = (n * n,)
        self.matrix_shape = (n, n)
        self._weights = orthogonal_weights(n)
        if n == 2:
            self._series = GegenbauerLevels(2)
            self.default_max_levels = 2000
        elif n == 3:
            self._series = SO3CharacterLevels()
            self._quaternion_sphere = Sphere(3)
            self.default_max_levels = 200
        else:
            self._characters = attach_characters(self, self._weights, False, _relative_rotations)

    def __repr__(self) -> str:
        return f"SpecialOrthogonal({self.n})"

    def _shape_advice(self, x: Tensor, name: str) -> str | None:
        pose = (self.n + 1, self.n + 1)
        if x.dim() >= 2 and x.shape[-2:] == pose:
            se3 = (
                "; for the position and the orientation together, optimise on "
                f"`manibo.spaces.SE3(lower, upper)`, whose `from_homogeneous({name})` converts them"
                if self.n == 3
                else ""
            )
            return (
                f"A {pose[0]}x{pose[1]} matrix is a rotation of SpecialOrthogonal({self.n + 1}) "
                "(then optimise on that space), or a homogeneous transform (a pose), whose "
                f"rotation is `{name}[..., :{self.n}, :{self.n}].reshape(*{name}.shape[:-2], "
                f"{self.n**2})`{se3}."
            )
        if self.n != 3 or x.shape[-1:] != (4,):
            return None
        return (
            "A last dimension of 4 looks like unit quaternions; manibo's are scalar first, "
            f"(w, x, y, z) (reorder (x, y, z, w) ones with `{name}[..., [3, 0, 1, 2]]`). "
            "Convert them with "
            f"`manibo.spaces.quaternion_to_rotation({name}).reshape(*{name}.shape[:-1], 9)`."
        )

    # geometry -------------------------------------------------------------------------------
    def random(self, n, generator=None, dtype=torch.float64, device=None) -> Tensor:
        """Haar-uniform rotations, shape ``(n, self.n ** 2)``.

        SO(3) from uniform unit quaternions; otherwise the QR decomposition of a Gaussian matrix
        with the signs of ``R``'s diagonal moved into ``Q`` (Haar on O(n)) and the first column
        flipped where the determinant is -1.
        """
        if self.n == 3:
            q = torch.randn(n, 4, generator=generator, dtype=dtype, device=device)
            return _flat(_quaternion_matrix(q / q.norm(dim=-1, keepdim=True)))
        g = torch.randn(n, self.n, self.n, generator=generator, dtype=dtype, device=device)
        q, r = torch.linalg.qr(g)
        q = q * torch.sign(r.diagonal(dim1=-2, dim2=-1)).unsqueeze(-2)
        flip = torch.ones(n, 1, self.n, dtype=dtype, device=device)
        flip[:, 0, 0] = torch.sign(torch.linalg.det(q))
        return _flat(q * flip)

    def _check_membership(self, x: Tensor, name: str) -> None:
        r = _matrices(x)
        eye = torch.eye(self.n, dtype=x.dtype, device=x.device)
        err = (r.transpose(-1, -2) @ r - eye).abs().amax(dim=(-1, -2))
        tol = default_tolerance(x.dtype)
        # a reflection near O(n) is a flipped frame; far from it, a matrix is no frame at all
        reflections = int(((torch.linalg.det(r) < 0) & (err < REFLECTION_ERROR)).sum())
        if reflections:
            raise self._membership_error(
                name,
                f"{reflections} of the matrices have determinant < 0: reflections (a left-handed "
                "frame, one of its axes flipped), not rotations",
                "No rotation is nearer to a reflection than another one flipping a different "
                f"axis, so `space.project({name})` cannot repair them: fix the frame convention "
                "where they come from (negate the flipped axis).",
            )
        if (err > tol).any():
            advice = f"Map them to the nearest rotations with `space.project({name})`."
            if float(err.max()) > REFLECTION_ERROR:
                advice = (
                    "So far off, they are no rotations: look for what changed them (a scaling, an "
                    "input transform such as BoTorch's Normalize, which rotation matrices must not "
                    f"go through); `space.project({name})` maps them to the nearest rotations, "
                    "which is right only for points off by rounding."
                )
            raise self._membership_error(
                name,
                f"rows must be {self.n}x{self.n} rotation matrices flattened row-major with "
                f"RᵀR = I within {tol:g}, the worst is off by {float(err.max()):.3g}",
                advice,
            )

    def snap(self, x: Tensor) -> Tensor:
        """Matrices within :meth:`check`'s tolerance of SO(n), moved to their polar factor by
        Newton–Schulz steps where they are off it by more than rounding (:meth:`Space.snap`);
        shapes ``(*batch, n*n)``."""
        return _flat(onto_orthonormal(_matrices(x)))

    def project(self, x: Tensor) -> Tensor:
        """Nearest rotation in Frobenius norm (SVD, with the sign fix that keeps det = +1),
        differentiable on the group too (:func:`~manibo.spaces._polar.polar_factor`)."""
        return _flat(polar_factor(_matrices(x), rotation=True))

    def to_tangent(self, x: Tensor, v: Tensor) -> Tensor:
        r""":math:`R\,\mathrm{skew}(R^\top V)`, shapes ``(*batch, n*n)``."""
        r = _matrices(x)
        return _flat(r @ _skew(r.transpose(-1, -2) @ _matrices(v)))

    def retract(self, x: Tensor, v: Tensor) -> Tensor:
        r"""The exponential map :math:`R \exp(\mathrm{skew}(R^\top V))` (for tangent ``v``),
        projected onto SO(n) (:meth:`project`).

        The product of ``matrix_exp`` is orthogonal only to rounding that grows with the step
        (in float32 about 1e-6 at 1 rad, 5e-4 at 1000 rad) and adds up over steps; the projection
        removes it and, the product being on the group, leaves values and gradients unchanged.
        """
        r = _matrices(x)
        moved = r @ torch.linalg.matrix_exp(_skew(r.transpose(-1, -2) @ _matrices(v)))
        return _flat(polar_factor(moved, rotation=True))

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        r""":math:`\sqrt{\sum_j \theta_j^2}` over the rotation angles of :math:`M = R_1^\top R_2`.

        SO(2) and SO(3) use :math:`\mathrm{atan2}(\sin\theta, \cos\theta)` from the skew part and
        the trace of :math:`M`, accurate near 0 and :math:`\pi` (unlike a clamped arccos); larger
        ``n`` take the angles of the eigenvalues of :math:`M`. Shape ``(*batch)``.
        """
        m = _matrices(x).transpose(-1, -2) @ _matrices(y)
        if self.n == 2:
            return torch.atan2(m[..., 1, 0], m[..., 0, 0]).abs()
        if self.n == 3:
            axial = torch.stack(
                [
                    m[..., 2, 1] - m[..., 1, 2],
                    m[..., 0, 2] - m[..., 2, 0],
                    m[..., 1, 0] - m[..., 0, 1],
                ],
                -1,
            )
            cos = 0.5 * (m.diagonal(dim1=-2, dim2=-1).sum(-1) - 1)
            return torch.atan2(0.5 * axial.norm(dim=-1), cos)
        return safe_sqrt(0.5 * (rotation_angles(m) ** 2).sum(-1))

    def ambient_bounds(self) -> Tensor:
        """The box ``[-1, 1]^(n*n)`` holding every rotation matrix's entries."""
        return torch.tensor([[-1.0], [1.0]], dtype=torch.float64).expand(2, self.n**2).clone()

    def chart(self, x: Tensor) -> Tensor:
        """SO(2): the angle in ``[0, 2π)``, ``(*batch, 1)``; SO(3): rotation vectors (axis times
        angle in ``[0, π]``), ``(*batch, 3)``. Larger ``n`` have no chart here."""
        if self.n == 2:
            return torch.remainder(torch.atan2(x[..., 2], x[..., 0]), 2 * math.pi).unsqueeze(-1)
        if self.n != 3:
            raise UnsupportedError(f"{self!r} has no global chart here.")
        q = _rotation_quaternion(_matrices(x))
        sin_half = q[..., 1:].norm(dim=-1, keepdim=True)
        angle = 2 * torch.atan2(sin_half, q[..., :1])
        small = sin_half < math.sqrt(torch.finfo(x.dtype).eps)
        w = torch.where(small, q[..., :1], 1.0)  # not 0 at half turns: 2/0 would give NaN gradients
        scale = torch.where(small, 2 / w, angle / torch.where(small, 1.0, sin_half))
        return scale * q[..., 1:]

    # spectrum -------------------------------------------------------------------------------
    def levels(self, num_levels: int) -> tuple[Tensor, Tensor]:
        k = torch.arange(num_levels, dtype=torch.float64)
        if self.n == 2:
            multiplicities = torch.full((num_levels,), 2.0, dtype=torch.float64)
            multiplicities[0] = 1.0
            return k**2, multiplicities
        if self.n == 3:
            return k * (k + 1), (2 * k + 1) ** 2
        return self._characters.levels(num_levels)

    def spectral_sum(self, weights: Tensor, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        if self.n > 3:
            return self._characters(weights, x1, x2, diag)
        # SO(2): t = cos θ = tr(MᵀM')/2; SO(3): t = cos θ = (tr(MᵀM') - 1)/2
        shift = 0.0 if self.n == 2 else 1.0
        return inner_product_series(self._series, weights, x1, x2, diag, scale=0.5, shift=shift)

    def eigenfunctions(self, x: Tensor, num_levels: int) -> Tensor:
        """SO(2): the circle's Fourier basis at the angle; SO(3): even-degree spherical harmonics
        of :math:`S^3` at the unit quaternions of ``x``. None for larger ``n``.

        Args:
            x: rotations, shape ``(*batch, n, self.n ** 2)``.
            num_levels: number of levels ``L``.

        Returns:
            Shape ``(*batch, n, M)``, ``M`` the sum of the first ``L`` multiplicities, level by
            level.
        """
        if self.n == 2:
            return circle_harmonics(x[..., 0], x[..., 2], num_levels)
        if self.n != 3:
            raise UnsupportedError(
                f"{self!r} has no explicit eigenfunctions here; its kernels use characters."
            )
        quaternions = _rotation_quaternion(_matrices(x))
        harmonics = self._quaternion_sphere.eigenfunctions(quaternions, 2 * num_levels - 1)
        # degree 2p starts after sum_{l < 2p} (l + 1)^2 columns
        starts = [(2 * p) * (2 * p + 1) * (4 * p + 1) // 6 for p in range(num_levels)]
        columns = torch.cat(
            [torch.arange(s, s + (2 * p + 1) ** 2, device=x.device) for p, s in enumerate(starts)]
        )
        return harmonics.index_select(-1, columns)


def _relative_rotations(a: Tensor, b: Tensor, diag: bool) -> Tensor:
    r""":math:`R_a^\top R_b` for every pair (``diag``: matching rows): ``(..., [r, m,] n, n)``."""
    ma, mb = _matrices(a), _matrices(b)
    if diag:
        return ma.transpose(-1, -2) @ mb
    return torch.einsum("...iba,...jbc->...ijac", ma, mb)
