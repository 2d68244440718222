r"""The circle :math:`S^1` with points given as angles in :math:`[0, 2\pi)`."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo._validation import default_tolerance
from manibo.harmonics.fourier import COSINE_TABLE_ELEMENTS, angle_harmonics, cosine_series
from manibo.harmonics.series import GegenbauerLevels, level_series
from manibo.spaces.base import CompactSpace, pairwise_in_chunks, series_coefficients

TWO_PI = 2 * math.pi


DEGREES_LIKELY = 4 * math.pi
"""Angles beyond this magnitude are taken for degrees in the advice of a refusal (radians wrapped
once or twice stay within it)."""


class Circle(CompactSpace):
    r"""The unit circle, points as angles ``(*batch, 1)`` in :math:`[0, 2\pi)`.

    Levels: :math:`\lambda_l = l^2`, multiplicities ``1, 2, 2, ...``, and
    :math:`G_l(\theta, \theta') = 2\cos(l(\theta - \theta'))` for ``l >= 1``. Angles outside
    :math:`[0, 2\pi)` are rejected by :meth:`check`; wrap them with :meth:`project`.
    """

    dim = 1
    spectral_dim = 1
    point_shape = (1,)
    default_max_levels = 2000

    def __init__(self) -> None:
        self._levels = GegenbauerLevels(2)

    def __repr__(self) -> str:
        return "Circle()"

    def random(self, n, generator=None, dtype=torch.float64, device=None) -> Tensor:
        return TWO_PI * torch.rand(n, 1, generator=generator, dtype=dtype, device=device)

    def _check_membership(self, x: Tensor, name: str) -> None:
        tol = default_tolerance(x.dtype)
        if ((x < -tol) | (x > TWO_PI + tol)).any():
            advice = (
                f"Wrap them with `torch.remainder({name}, 2 * math.pi)` or "
                f"`space.project({name})` (angles in radians)."
            )
            if float(x.abs().max()) > DEGREES_LIKELY:
                advice = (
                    f"Values beyond ±{DEGREES_LIKELY:g} look like degrees: convert them with "
                    f"`torch.deg2rad({name})` first (wrapping degrees as radians gives other "
                    f"angles: 90 becomes 2.035). Then {advice[0].lower()}{advice[1:]}"
                )
            raise self._membership_error(
                name,
                "angles must lie in [0, 2π), "
                f"got values in [{float(x.min()):.4g}, {float(x.max()):.4g}]",
                advice,
            )

    def project(self, x: Tensor) -> Tensor:
        return torch.remainder(x, TWO_PI)

    def to_tangent(self, x: Tensor, v: Tensor) -> Tensor:
        return v

    def retract(self, x: Tensor, v: Tensor) -> Tensor:
        return torch.remainder(x + v, TWO_PI)

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        gap = torch.remainder(x - y, TWO_PI)[..., 0]
        return torch.minimum(gap, TWO_PI - gap)

    def ambient_bounds(self) -> Tensor:
        """The interval ``[0, 2π]``, shape ``(2, 1)``."""
        return torch.tensor([[0.0], [TWO_PI]], dtype=torch.float64)

    def embed(self, x: Tensor) -> Tensor:
        r"""The unit circle in the plane, :math:`(\cos\theta, \sin\theta)`: no seam at 0 = 2π.

        Shape ``(*batch, 1)`` → ``(*batch, 2)``.
        """
        return torch.cat([x.cos(), x.sin()], dim=-1)

    def _check_on_manifold(self, x: Tensor, name: str) -> None:
        """Any finite angle names a point (``atan2`` gives angles in (-π, π]): distances and the
        chart take it modulo 2π."""

    def chart(self, x: Tensor) -> Tensor:
        """The angle modulo 2π, in [0, 2π), shape ``(*batch, 1)`` (a seam at 0 = 2π)."""
        return torch.remainder(x, TWO_PI)

    def levels(self, num_levels: int) -> tuple[Tensor, Tensor]:
        n = torch.arange(num_levels, dtype=torch.float64)
        multiplicities = torch.full((num_levels,), 2.0, dtype=torch.float64)
        multiplicities[0] = 1.0
        return n**2, multiplicities

    def spectral_sum(self, weights: Tensor, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        """:math:`\\sum_l w_l G_l`: from a table of cosines where the whole table is small (few
        points against many, as an acquisition asks), else by the level recurrence, in row
        blocks (its memory is that of the output)."""
        scales = self._levels.scales(weights.shape[-1])
        coeffs = series_coefficients(weights, scales, extra_dims=1 if diag else 2)
        if diag:
            size = torch.broadcast_shapes(x1.shape[:-1], x2.shape[:-1], coeffs.shape[:-1]).numel()
        else:
            batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2], coeffs.shape[:-3])
            size = batch.numel() * x1.shape[-2] * x2.shape[-2]
        if size * coeffs.shape[-1] <= COSINE_TABLE_ELEMENTS:
            gap = x1[..., 0] - x2[..., 0] if diag else x1 - x2.transpose(-1, -2)
            return cosine_series(gap, coeffs)
        if diag:
            return level_series(torch.cos(x1[..., 0] - x2[..., 0]), coeffs, self._levels)

        def block(a: Tensor, b: Tensor) -> Tensor:
            return level_series(torch.cos(a - b.transpose(-1, -2)), coeffs, self._levels)

        return pairwise_in_chunks(block, x1, x2, point_ndim=1)

    def eigenfunctions(self, x: Tensor, num_levels: int) -> Tensor:
        return angle_harmonics(x[..., 0], num_levels)
