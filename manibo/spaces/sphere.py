r"""The hypersphere: geometry and spectrum.

The hypersphere is :math:`S^{\mathrm{dim}} \subset \mathbb{R}^{\mathrm{dim}+1}`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from manibo._validation import default_tolerance
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.harmonics.gegenbauer import degrees_with_float_dimension, harmonic_dimension
from manibo.harmonics.series import GegenbauerLevels
from manibo.spaces._snap import onto_unit_norm
from manibo.spaces.base import (
    CompactSpace,
    inner_product_series,
    rescaled,
    safe_atan2,
    safe_sqrt,
)


class Sphere(CompactSpace):
    r"""The unit sphere :math:`S^{\mathrm{dim}}`.

    Its points are the unit vectors in :math:`\mathbb{R}^{\mathrm{dim}+1}`.

    Levels are the spaces of degree-:math:`n` spherical harmonics:
    :math:`\lambda_n = n(n+\mathrm{dim}-1)`, multiplicity :math:`N(\mathrm{dim}+1, n)`, and
    :math:`G_n(x, y) = N P_n(x \cdot y)` (addition theorem).

    Args:
        dim: intrinsic dimension, ``>= 1`` (``Sphere(2)`` is the globe in :math:`\mathbb{R}^3`).
    """

    default_max_levels = 200

    def __init__(self, dim: int) -> None:
        if int(dim) != dim or dim < 1:
            raise ConfigurationError(f"`dim` must be an integer >= 1, got {dim!r}.")
        self.dim = int(dim)
        self.spectral_dim = self.dim
        self.point_shape = (self.dim + 1,)
        self._levels = GegenbauerLevels(self.dim + 1)
        self.max_scan_levels = degrees_with_float_dimension(self.dim + 1)

    def __repr__(self) -> str:
        return f"Sphere({self.dim})"

    # geometry -------------------------------------------------------------------------------
    def random(self, n, generator=None, dtype=torch.float64, device=None) -> Tensor:
        z = torch.randn(n, self.dim + 1, generator=generator, dtype=dtype, device=device)
        return z / z.norm(dim=-1, keepdim=True)

    def _shape_advice(self, x: Tensor, name: str) -> str | None:
        if self.dim != 2 or x.shape[-1:] != (2,):
            return None
        return (
            "A last dimension of 2 looks like latitude and longitude; points of Sphere(2) are unit "
            "vectors (x, y, z). Convert degrees with "
            f"`manibo.geo.latlon_to_unit({name}[..., 0], {name}[..., 1])` (latitude first)."
        )

    def _check_membership(self, x: Tensor, name: str) -> None:
        norm = x.norm(dim=-1)
        err = (norm - 1).abs()
        tol = default_tolerance(x.dtype)
        if (err > tol).any():
            zeros = int((norm == 0).sum())
            normalise = (
                f"Normalise with `{name} / {name}.norm(dim=-1, keepdim=True)` "
                f"or `space.project({name})`."
            )
            if zeros:  # normalising them gives NaN
                others = int((err > tol).sum()) - zeros
                normalise = (
                    f"{zeros} of them {'is a zero vector' if zeros == 1 else 'are zero vectors'}, "
                    "which point in no direction: find where they are built (normalising them "
                    "gives NaN)." + (f" For the other {others}: {normalise}" if others else "")
                )
            raise self._membership_error(
                name,
                f"norms must be 1 within {tol:g}, the worst is off by {float(err.max()):.3g}",
                normalise,
            )

    def snap(self, x: Tensor) -> Tensor:
        """Points within :meth:`check`'s tolerance of unit norm, scaled to norm 1 where they are
        off it by more than rounding (:meth:`Space.snap`); shapes ``(*batch, dim + 1)``."""
        return onto_unit_norm(x)

    def project(self, x: Tensor) -> Tensor:
        """The unit vector along ``x``, for any finite nonzero ``x`` (however large or small);
        shapes ``(*batch, dim + 1)``."""
        direction, _ = rescaled(x)
        norm = direction.norm(dim=-1, keepdim=True)
        if (norm == 0).any():
            raise InputDataError(
                "`x` contains zero vectors, which have no nearest point on the sphere."
            )
        return direction / norm

    def to_tangent(self, x: Tensor, v: Tensor) -> Tensor:
        return v - (x * v).sum(-1, keepdim=True) * x

    def retract(self, x: Tensor, v: Tensor) -> Tensor:
        r"""The exponential map :math:`\cos(\|v\|) x + \mathrm{sinc}(\|v\|) v`, renormalised."""
        norm = v.norm(dim=-1, keepdim=True)
        y = torch.cos(norm) * x + torch.sinc(norm / torch.pi) * v
        return y / y.norm(dim=-1, keepdim=True)

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        r"""Great-circle angle, accurate near 0 and π.

        Computed as :math:`2\,\mathrm{atan2}(\|x-y\|, \|x+y\|)`.
        """
        return 2 * torch.atan2((x - y).norm(dim=-1), (x + y).norm(dim=-1))

    def ambient_bounds(self) -> Tensor:
        """The cube ``[-1, 1]^(dim+1)``, shape ``(2, dim+1)``."""
        return torch.tensor([[-1.0], [1.0]], dtype=torch.float64).expand(2, self.dim + 1).clone()

    def chart(self, x: Tensor) -> Tensor:
        """Hyperspherical angles; on S² these are (latitude, longitude) in radians.

        Where an angle is undefined (the longitude at a pole) or its slope infinite (the latitude
        there), its gradient is 0, not NaN. Shape ``(*batch, dim)``.
        """
        if self.dim == 2:
            z = x[..., 2].clamp(-1, 1)
            pole = z.abs() == 1  # asin's slope is infinite there; its gradient goes to the copy
            latitude = torch.asin(torch.where(pole, z.detach(), z))
            return torch.stack([latitude, safe_atan2(x[..., 1], x[..., 0])], -1)
        tail = safe_sqrt(torch.flip(torch.cumsum(torch.flip(x**2, [-1]), -1), [-1]))
        angles = [safe_atan2(tail[..., i + 1], x[..., i]) for i in range(self.dim - 1)]
        angles.append(safe_atan2(x[..., -1], x[..., -2]))
        return torch.stack(angles, -1)

    # spectrum -------------------------------------------------------------------------------
    def levels(self, num_levels: int) -> tuple[Tensor, Tensor]:
        n = torch.arange(num_levels, dtype=torch.float64)
        eigenvalues = n * (n + self.dim - 1)
        multiplicities = torch.tensor(
            [float(harmonic_dimension(self.dim + 1, k)) for k in range(num_levels)],
            dtype=torch.float64,
        )
        return eigenvalues, multiplicities

    def spectral_sum(self, weights: Tensor, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        return inner_product_series(self._levels, weights, x1, x2, diag)

    def eigenfunctions(self, x: Tensor, num_levels: int) -> Tensor:
        if self.dim == 1:
            from manibo.harmonics.fourier import circle_harmonics

            return circle_harmonics(x[..., 0], x[..., 1], num_levels)
        from manibo.harmonics.spherical_harmonics import spherical_harmonics

        return spherical_harmonics(x, num_levels)
