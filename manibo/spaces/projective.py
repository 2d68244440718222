r"""The real projective space :math:`\mathbb{RP}^d`: lines through the origin, or unsigned axes."""

from __future__ import annotations

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.harmonics.gegenbauer import degrees_with_float_dimension, harmonic_dimension
from manibo.harmonics.series import EvenLevels, GegenbauerLevels
from manibo.spaces._snap import onto_unit_norm
from manibo.spaces.base import (
    CompactSpace,
    inner_product_series,
)
from manibo.spaces.sphere import Sphere


class RealProjectiveSpace(CompactSpace):
    r"""The real projective space :math:`\mathbb{RP}^d = S^d / \{\pm 1\}`, ``d >= 1``.

    A point is a unit vector of :math:`\mathbb{R}^{d+1}`, shape ``(*batch, d + 1)``, and ``x`` and
    ``-x`` are the same point (a line, an axis, an orientation without a sign). No sign is imposed
    on inputs: every operation is invariant under flipping the sign of a point, so candidates may
    come back with either sign; :meth:`canonical` picks the representative whose first non-zero
    coordinate is positive, for display and comparison.

    The metric is the one of the unit sphere, so the distance is
    :math:`\min(\angle(x, y), \angle(x, -y)) = \arccos|x \cdot y| \in [0, \pi/2]`. The
    eigenfunctions are the even spherical harmonics of :math:`S^d`: level :math:`k` is degree
    :math:`2k`, with :math:`\lambda_k = 2k(2k + d - 1)`, multiplicity :math:`N(d+1, 2k)` and
    :math:`G_k(x, y) = N(d+1, 2k)\, P_{2k}(x \cdot y)`, an even function of :math:`x \cdot y`.

    Args:
        d: intrinsic dimension, ``>= 1`` (``RealProjectiveSpace(2)``: axes in
            :math:`\mathbb{R}^3`).
    """

    default_max_levels = 100

    def __init__(self, d: int) -> None:
        if isinstance(d, bool) or int(d) != d or d < 1:
            raise ConfigurationError(f"`d` must be an integer >= 1, got {d!r}.")
        self.dim = self.spectral_dim = int(d)
        self.point_shape = (self.dim + 1,)
        self._sphere = Sphere(self.dim)
        self._levels = EvenLevels(GegenbauerLevels(self.dim + 1))
        degrees = degrees_with_float_dimension(self.dim + 1)
        self.max_scan_levels = None if degrees is None else (degrees + 1) // 2  # degrees 0, 2, ..

    def __repr__(self) -> str:
        return f"RealProjectiveSpace({self.dim})"

    # geometry -------------------------------------------------------------------------------
    def random(self, n, generator=None, dtype=torch.float64, device=None) -> Tensor:
        """Uniform points (uniform unit vectors; their lines are uniform), ``(n, d + 1)``."""
        return self._sphere.random(n, generator=generator, dtype=dtype, device=device)

    def _check_membership(self, x: Tensor, name: str) -> None:
        Sphere._check_membership(self, x, name)  # unit vectors; the message names this space

    def snap(self, x: Tensor) -> Tensor:
        """Points within :meth:`check`'s tolerance of unit norm, scaled to norm 1 where they are
        off it by more than rounding (:meth:`Space.snap`); shapes ``(*batch, dim + 1)``."""
        return onto_unit_norm(x)

    def point_key(self, x: Tensor) -> tuple[float, ...]:
        """The coordinates of ``x`` or ``-x``, whichever has its first non-zero coordinate
        positive: the same key for both signs of one point."""
        values = x.reshape(-1).tolist()
        first = next((v for v in values if v != 0), 0.0)
        return tuple(-v if first < 0 else v for v in values)

    def project(self, x: Tensor) -> Tensor:
        """The unit vector along ``x`` (either sign is the same point)."""
        return self._sphere.project(x)

    def to_tangent(self, x: Tensor, v: Tensor) -> Tensor:
        return self._sphere.to_tangent(x, v)

    def retract(self, x: Tensor, v: Tensor) -> Tensor:
        """The sphere's exponential map (it commutes with the sign flip)."""
        return self._sphere.retract(x, v)

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        r""":math:`\arccos|x \cdot y|` as :math:`2\,\mathrm{atan2}(\min(\|x-y\|, \|x+y\|),
        \max(\|x-y\|, \|x+y\|))`, accurate near 0 and :math:`\pi/2`; shape ``(*batch)``."""
        minus, plus = (x - y).norm(dim=-1), (x + y).norm(dim=-1)
        return 2 * torch.atan2(torch.minimum(minus, plus), torch.maximum(minus, plus))

    def embed(self, x: Tensor) -> Tensor:
        r"""The matrix :math:`x x^\top`, flattened: the same for ``x`` and ``-x``.

        Shape ``(*batch, d + 1)`` → ``(*batch, (d + 1)^2)``.
        """
        return (x.unsqueeze(-1) * x.unsqueeze(-2)).flatten(-2)

    def canonical(self, x: Tensor) -> Tensor:
        """The representative of each point whose first non-zero coordinate is positive."""
        first = torch.argmax((x != 0).to(torch.int8), dim=-1, keepdim=True)
        sign = torch.sign(x.gather(-1, first))
        return x * torch.where(sign == 0, torch.ones_like(sign), sign)

    def ambient_bounds(self) -> Tensor:
        """The cube ``[-1, 1]^(d+1)``, shape ``(2, d + 1)``."""
        return self._sphere.ambient_bounds()

    # spectrum -------------------------------------------------------------------------------
    def levels(self, num_levels: int) -> tuple[Tensor, Tensor]:
        degree = 2 * torch.arange(num_levels, dtype=torch.float64)
        multiplicities = [float(harmonic_dimension(self.dim + 1, 2 * k)) for k in range(num_levels)]
        return degree * (degree + self.dim - 1), torch.tensor(multiplicities, dtype=torch.float64)

    def spectral_sum(self, weights: Tensor, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        return inner_product_series(self._levels, weights, x1, x2, diag)

    def eigenfunctions(self, x: Tensor, num_levels: int) -> Tensor:
        """The even-degree spherical harmonics of :math:`S^d`, degrees ``0, 2, .., 2L - 2``.

        Args:
            x: points, shape ``(*batch, n, d + 1)``.
            num_levels: number of levels ``L``.

        Returns:
            Shape ``(*batch, n, M)``, ``M`` the sum of the first ``L`` multiplicities.
        """
        harmonics = self._sphere.eigenfunctions(x, 2 * num_levels - 1)
        sizes = [harmonic_dimension(self.dim + 1, degree) for degree in range(2 * num_levels - 1)]
        starts = [sum(sizes[:degree]) for degree in range(0, 2 * num_levels - 1, 2)]
        columns = torch.cat(
            [
                torch.arange(start, start + sizes[2 * k], device=x.device)
                for k, start in enumerate(starts)
            ]
        )
        return harmonics.index_select(-1, columns)
