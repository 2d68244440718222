r"""The special unitary groups SU(n): complex matrices as real vectors, geometry and spectrum."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo._validation import default_tolerance
from manibo.harmonics.series import GegenbauerLevels
from manibo.harmonics.weights import unitary_weights
from manibo.spaces._lie_group import attach_characters, matrix_size
from manibo.spaces._polar import polar_factor
from manibo.spaces._snap import newton_schulz, orthonormality_error, snapped
from manibo.spaces.base import (
    CompactSpace,
    inner_product_series,
    safe_sqrt,
)


def to_complex(x: Tensor) -> Tensor:
    r"""Points ``(*batch, 2n^2)`` → complex matrices ``(*batch, n, n)``.

    The first :math:`n^2` coordinates are the real part, row-major, and the last :math:`n^2` the
    imaginary part.
    """
    n = math.isqrt(x.shape[-1] // 2)
    half = n * n
    return torch.complex(x[..., :half], x[..., half:]).reshape(*x.shape[:-1], n, n)


def to_real(u: Tensor) -> Tensor:
    """Complex matrices ``(*batch, n, n)`` → points ``(*batch, 2n^2)`` (see :func:`to_complex`)."""
    flat = u.reshape(*u.shape[:-2], u.shape[-2] * u.shape[-1])
    return torch.cat([flat.real, flat.imag], dim=-1)


def _trace_free_skew(a: Tensor) -> Tensor:
    """The orthogonal projection of ``(..., n, n)`` complex matrices onto su(n)."""
    skew = 0.5 * (a - a.mH)
    trace = skew.diagonal(dim1=-2, dim2=-1).sum(-1) / a.shape[-1]
    return skew - trace[..., None, None] * torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def _unit_determinant(u: Tensor) -> Tensor:
    r"""Unitary ``u`` times :math:`e^{-i\arg\det(u)/n}`, which has determinant 1."""
    phase = torch.angle(torch.linalg.det(u)) / u.shape[-1]
    return u * torch.polar(torch.ones_like(phase), -phase)[..., None, None]


class SpecialUnitary(CompactSpace):
    r"""The special unitary group SU(n), ``n >= 2``, points as real vectors ``(*batch, 2n^2)``.

    A point is a complex matrix :math:`U` (:math:`U^H U = I`, :math:`\det U = 1`) stored as its
    real part flattened row-major followed by its imaginary part flattened row-major
    (:func:`to_complex`, :func:`to_real`). The Euclidean inner product of these vectors is
    :math:`\mathrm{Re}\,\mathrm{tr}(X^H Y)`, which restricted to the tangent spaces is the
    bi-invariant metric used here: the geodesic distance is :math:`\sqrt{\sum_j \varphi_j^2}` over
    the eigenvalue angles of :math:`U_1^H U_2`, lifted so that they sum to zero. With this metric
    SU(2) is the 3-sphere of radius :math:`\sqrt2` (its Laplace–Beltrami eigenvalues are
    :math:`k(k+2)/2`) and the eigenvalues are GeometricKernels'
    :math:`\|\rho + \tilde\lambda\|^2 - \|\rho\|^2`.

    Levels are the irreducible representations (partitions :math:`\lambda` with at most
    :math:`n - 1` parts) grouped by Casimir eigenvalue, with
    :math:`G_l(U_1, U_2) = \sum_{\pi \in l} d_\pi \chi_\pi(U_1^H U_2)`; each level holds the
    complex-conjugate representations together, so :math:`G_l` is real. The characters are Schur
    polynomials evaluated as Jacobi–Trudi determinants in the coefficients of the characteristic
    polynomial (:mod:`manibo.harmonics.class_functions`), for any number of levels; SU(2) is summed
    as the series of :math:`S^3`, in :math:`\tfrac12\mathrm{Re}\,\mathrm{tr}(U_1^H U_2)`.

    Args:
        n: matrix size, ``>= 2``.
    """

    def __init__(self, n: int) -> None:
        self.n = n = matrix_size(n, "SpecialUnitary")
        self.dim = self.spectral_dim = n * n - 1
        self.point_shape = (2 * n * n,)
        self._weights = unitary_weights(n)
        if n == 2:
            self._series = GegenbauerLevels(4)
            self.default_max_levels = 200
        else:
            self._characters = attach_characters(self, self._weights, True, _relative_unitaries)

    def __repr__(self) -> str:
        return f"SpecialUnitary({self.n})"

    # geometry -------------------------------------------------------------------------------
    def random(self, n, generator=None, dtype=torch.float64, device=None) -> Tensor:
        r"""Haar-uniform points, shape ``(n, 2 self.n^2)``.

        The QR decomposition of a complex Gaussian matrix with the phases of ``R``'s diagonal
        moved into ``Q`` is Haar on U(n); multiplying by :math:`e^{-i\arg\det Q / n}` gives Haar on
        SU(n).
        """
        shape = (n, self.n, self.n)
        real = torch.randn(shape, generator=generator, dtype=dtype, device=device)
        imag = torch.randn(shape, generator=generator, dtype=dtype, device=device)
        q, r = torch.linalg.qr(torch.complex(real, imag))
        diagonal = r.diagonal(dim1=-2, dim2=-1)
        q = q * (diagonal / diagonal.abs()).unsqueeze(-2)
        return to_real(_unit_determinant(q))

    def _check_membership(self, x: Tensor, name: str) -> None:
        u = to_complex(x)
        eye = torch.eye(self.n, dtype=u.dtype, device=u.device)
        err = (u.mH @ u - eye).abs().amax(dim=(-1, -2))
        det_err = (torch.linalg.det(u) - 1).abs()
        tol = default_tolerance(x.dtype)
        advice = f"Map them to the group with `space.project({name})`."
        if (err > tol).any():
            raise self._membership_error(
                name,
                f"rows must be {self.n}x{self.n} unitary matrices (real parts then imaginary "
                f"parts, each row-major) with UᴴU = I within {tol:g}, the worst is off by "
                f"{float(err.max()):.3g}",
                advice,
            )
        if (det_err > 10 * tol).any():
            raise self._membership_error(
                name,
                f"{int((det_err > 10 * tol).sum())} unitary matrices have det ≠ 1 "
                f"(the worst is off by {float(det_err.max()):.3g})",
                advice,
            )

    def snap(self, x: Tensor) -> Tensor:
        """Matrices within :meth:`check`'s tolerance of SU(n), moved to their unitary polar factor
        by Newton–Schulz steps and then to determinant 1, as :meth:`project`, where they are off
        the group by more than rounding (:meth:`Space.snap`); shapes ``(*batch, 2n^2)``."""
        u = to_complex(x)
        determinant_error = (torch.linalg.det(u) - 1).abs()[..., None, None]
        error = torch.maximum(orthonormality_error(u), determinant_error)
        anchor = torch.eye(self.n, dtype=u.dtype, device=u.device)
        return to_real(snapped(u, error, lambda v: _unit_determinant(newton_schulz(v)), anchor))

    def project(self, x: Tensor) -> Tensor:
        r"""The unitary polar factor :math:`WV^H` of :math:`U = W\Sigma V^H`, times
        :math:`e^{-i\arg\det/n}`: the nearest point of SU(n) for matrices near the group."""
        return to_real(_unit_determinant(polar_factor(to_complex(x))))

    def to_tangent(self, x: Tensor, v: Tensor) -> Tensor:
        r""":math:`U\,P(U^H V)`, :math:`P` the projection onto trace-free skew-Hermitian
        matrices; shapes ``(*batch, 2n^2)``."""
        u = to_complex(x)
        return to_real(u @ _trace_free_skew(u.mH @ to_complex(v)))

    def retract(self, x: Tensor, v: Tensor) -> Tensor:
        r"""The exponential map :math:`U\exp(P(U^H V))`, projected onto SU(n) (:meth:`project`):
        the product of ``matrix_exp`` is unitary only to rounding that grows with the step and
        adds up over steps (in float32 past the membership tolerance)."""
        u = to_complex(x)
        moved = u @ torch.linalg.matrix_exp(_trace_free_skew(u.mH @ to_complex(v)))
        return to_real(_unit_determinant(polar_factor(moved)))

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        r""":math:`\sqrt{\sum_j \varphi_j^2}`, shape ``(*batch)``.

        The :math:`\varphi_j \in (-\pi, \pi]` are the eigenvalue angles of :math:`U_1^H U_2`;
        when they sum to :math:`2\pi k \ne 0`, :math:`2\pi` is taken from the :math:`k` largest
        (added to the :math:`|k|` smallest), the shortest lift with zero sum.
        """
        z = torch.linalg.eigvals(to_complex(x).mH @ to_complex(y))
        angles = torch.sort(torch.angle(z), dim=-1, descending=True).values
        turns = torch.round(angles.sum(-1, keepdim=True) / (2 * math.pi))
        rank = torch.arange(self.n, device=x.device, dtype=angles.dtype)
        down = (turns > 0) & (rank < turns)
        up = (turns < 0) & (rank >= self.n + turns)
        angles = angles - 2 * math.pi * down.to(angles) + 2 * math.pi * up.to(angles)
        return safe_sqrt(angles.pow(2).sum(-1))

    def ambient_bounds(self) -> Tensor:
        """The box ``[-1, 1]^(2n^2)`` holding every unitary matrix's real and imaginary parts."""
        return (
            torch.tensor([[-1.0], [1.0]], dtype=torch.float64)
            .expand(2, self.point_shape[0])
            .clone()
        )

    # spectrum -------------------------------------------------------------------------------
    def levels(self, num_levels: int) -> tuple[Tensor, Tensor]:
        if self.n == 2:
            k = torch.arange(num_levels, dtype=torch.float64)
            return k * (k + 2) / 2, (k + 1) ** 2
        return self._characters.levels(num_levels)

    def spectral_sum(self, weights: Tensor, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        if self.n > 2:
            return self._characters(weights, x1, x2, diag)
        # SU(2) is S^3 of radius √2: t = Re tr(U₁ᴴU₂)/2 is the cosine of the quaternion angle
        return inner_product_series(self._series, weights, x1, x2, diag, scale=0.5)


def _relative_unitaries(a: Tensor, b: Tensor, diag: bool) -> Tensor:
    r""":math:`U_a^H U_b` for every pair (``diag``: for matching rows), ``(..., [r, m,] n, n)``."""
    ua, ub = to_complex(a), to_complex(b)
    if diag:
        return ua.mH @ ub
    return torch.einsum("...iba,...jbc->...ijac", ua.conj(), ub)
