r"""Drift of the lost object: rotation about a tilted axis (exact, invertible) plus diffusion.

The surface current is the velocity field :math:`v(x) = \omega\, k \times x` of a rotation about the
unit axis :math:`k` (Williamson et al. 1992, test case 1). Its flow map over :math:`t` hours is the
rotation :math:`R_k(\omega t)` (Rodrigues' formula): it is exact, preserves areas and therefore
probability, and is undone exactly by :math:`R_k(-\omega t)`. Unresolved currents and leeway are
Brownian motion on the sphere with diffusivity :math:`D` km²/day, simulated by a geodesic step of a
tangent Gaussian with variance :math:`2 D \Delta t` per direction.

Because rotations are isometries of :math:`S^2`, the *comoving* point :math:`R_k(-\omega t)\,x`
(where a water parcel seen at :math:`x` at time :math:`t` was at time 0) lets a rotation-invariant
kernel follow the drift: :math:`k(R(-\omega t)x, R(-\omega t')x')` is again a valid kernel on
:math:`S^2 \times \mathbb{R}`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.geo import (
    EARTH_RADIUS_KM,
    GLOBE,
    check_points,
    local_frame,
    rotation_matrix,
)

HOURS_PER_DAY = 24.0


class Drift:
    """Solid-body rotation about ``axis`` at angular speed ``speed_kmh / R``, plus diffusion.

    Args:
        axis: unit rotation axis, shape ``(3,)``.
        speed_kmh: surface speed of the current on the axis's equator, in km/h (positive:
            counter-clockwise seen from above the axis); 0.5 m/s is 1.8 km/h.
        diffusion_km2_per_day: diffusivity :math:`D` (0 for a deterministic drift).
    """

    def __init__(self, axis: Tensor, speed_kmh: float, diffusion_km2_per_day: float = 0.0) -> None:
        check_points("axis", axis)
        if axis.shape != (3,):
            raise ConfigurationError(
                f"`axis` must be one unit vector of shape (3,), got {tuple(axis.shape)}."
            )
        if not math.isfinite(speed_kmh):
            raise ConfigurationError(f"`speed_kmh` must be finite, got {speed_kmh!r}.")
        if not (math.isfinite(diffusion_km2_per_day) and diffusion_km2_per_day >= 0):
            raise ConfigurationError(
                f"`diffusion_km2_per_day` must be >= 0, got {diffusion_km2_per_day!r}."
            )
        self.axis = axis
        self.speed_kmh = float(speed_kmh)
        self.diffusion_km2_per_day = float(diffusion_km2_per_day)

    @classmethod
    def through(
        cls,
        point: Tensor,
        heading_deg: float,
        speed_kmh: float,
        tilt_deg: float = 0.0,
        diffusion_km2_per_day: float = 0.0,
    ) -> Drift:
        """The rotation whose current at ``point`` flows to ``heading_deg`` at ``speed_kmh``.

        ``tilt_deg`` turns the axis towards ``point``: 0 makes the streamline through ``point`` a
        great circle; larger tilts curve the streamlines into smaller circles around the axis (the
        current at ``point`` keeps its speed and heading).

        Args:
            point: unit vector ``(3,)``.
            heading_deg: direction of the current at ``point``, clockwise from north.
            speed_kmh: speed of the current at ``point`` (km/h).
            tilt_deg: in ``[0, 90)``.
            diffusion_km2_per_day: diffusivity.
        """
        check_points("point", point)
        if not 0 <= tilt_deg < 90:
            raise ConfigurationError(f"`tilt_deg` must lie in [0, 90), got {tilt_deg!r}.")
        east, north = local_frame(point)
        heading = math.radians(heading_deg)
        direction = math.sin(heading) * east + math.cos(heading) * north
        tilt = math.radians(tilt_deg)
        axis = (
            math.cos(tilt) * torch.linalg.cross(point, direction, dim=-1) + math.sin(tilt) * point
        )
        axis = axis / axis.norm()
        return cls(axis, speed_kmh / math.cos(tilt), diffusion_km2_per_day)

    @property
    def angular_speed(self) -> float:
        """Rotation rate in radians per hour."""
        return self.speed_kmh / EARTH_RADIUS_KM

    def rotation(self, hours: Tensor | float) -> Tensor:
        """The flow map over ``hours`` ``(*batch)``: rotation matrices ``(*batch, 3, 3)``."""
        hours = torch.as_tensor(hours, dtype=self.axis.dtype, device=self.axis.device)
        return rotation_matrix(self.axis, self.angular_speed * hours)

    def advect(self, x: Tensor, hours: Tensor | float) -> Tensor:
        r"""Move points ``x`` ``(*batch, 3)`` for ``hours`` (a float or ``(*batch)``).

        Rodrigues' formula applied to the vectors, :math:`x\cos\theta + (k \times x)\sin\theta
        + k\,(k\cdot x)(1 - \cos\theta)`: the rotation of :meth:`rotation` without building a
        matrix per point.
        """
        angle = self.angular_speed * torch.as_tensor(hours, dtype=x.dtype, device=x.device)
        cos, sin = torch.cos(angle).unsqueeze(-1), torch.sin(angle).unsqueeze(-1)
        axis = self.axis.to(x).expand_as(x)
        along = (x * axis).sum(-1, keepdim=True) * axis
        return x * cos + torch.linalg.cross(axis, x, dim=-1) * sin + along * (1 - cos)

    def to_comoving(self, x: Tensor, hours: Tensor | float) -> Tensor:
        """Where the water seen at ``x`` after ``hours`` was at time 0: ``advect(x, -hours)``."""
        return self.advect(x, -torch.as_tensor(hours, dtype=x.dtype, device=x.device))

    def velocity_kmh(self, x: Tensor) -> Tensor:
        """The current at ``x`` (``(*batch, 3)``), as tangent vectors in km/h of the same shape."""
        return self.speed_kmh * torch.linalg.cross(self.axis.to(x).expand_as(x), x, dim=-1)

    def diffuse(self, x: Tensor, hours: float, generator: torch.Generator | None = None) -> Tensor:
        """Brownian motion for ``hours``: a geodesic step of a tangent Gaussian (``(*batch, 3)``).

        ``generator`` is a CPU generator (the noise is drawn on the CPU, then moved to ``x``'s
        device, so a seed gives the same path on every device).
        """
        if self.diffusion_km2_per_day == 0 or hours == 0:
            return x
        std = math.sqrt(2 * self.diffusion_km2_per_day * hours / HOURS_PER_DAY) / EARTH_RADIUS_KM
        noise = torch.randn(x.shape, generator=generator, dtype=x.dtype).to(x.device)
        return GLOBE.retract(x, GLOBE.to_tangent(x, std * noise))

    def step(self, x: Tensor, hours: float, generator: torch.Generator | None = None) -> Tensor:
        """Advect then diffuse points ``x`` (``(*batch, 3)``) over ``hours`` (a float >= 0)."""
        if hours < 0:
            raise ConfigurationError(
                f"`hours` must be >= 0 to step forward in time, got {hours!r}."
            )
        return self.diffuse(self.advect(x, hours), hours, generator)
