r"""Where a planner draws its legs: on the sphere, or on a latitude/longitude chart.

A leg planner optimises the ends of its next legs (waypoints) and predicts what the legs sweep. The
same planner can do this in two geometries, which is how the value of the sphere is measured:

* :class:`SphereChart` — waypoints are points of :math:`S^2` (manibo's ``Sphere(2)``); legs are
  great-circle arcs, lengths are great-circle distances and the sweep is computed across the arc
  (:func:`~manibo.search.sweep.leg_coordinates`). This is the geometry the assets fly.
* :class:`LatLonChart` — waypoints are (latitude, longitude) in radians in a box
  (:class:`~manibo.spaces.Box`); legs are straight lines of the chart, lengths and sweeps are
  Euclidean in :math:`R \cdot (\varphi, \lambda)`. East–west distances are too long by
  :math:`1/\cos\varphi`, so the planner believes its sweeps narrower east–west than they are, its
  east–west legs slower, and the chart is cut at the antimeridian.

Both map waypoints to the water's frame through the same current model, and the asset flies the
great circle between the waypoints whichever chart chose them.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.geo import EARTH_RADIUS_KM, GLOBE, local_frame
from manibo.search.drift import Drift
from manibo.search.sweep import SweepLaw, leg_hazard
from manibo.spaces.base import Space
from manibo.spaces.box import Box

CHARTS = ("sphere", "latlon")


class SphereChart:
    """Waypoints on :math:`S^2` (unit vectors ``(*batch, 3)``): the geometry the assets fly."""

    name = "sphere"
    space: Space = GLOBE

    def to_sphere(self, w: Tensor) -> Tensor:
        """Waypoints ``(*batch, 3)`` as unit vectors (the identity)."""
        return w

    def from_sphere(self, x: Tensor) -> Tensor:
        """Unit vectors ``(*batch, 3)`` as waypoints (the identity)."""
        return x

    def distance_km(self, a: Tensor, b: Tensor) -> Tensor:
        """Great-circle km between ``(*batch, 3)`` points, differentiable also at ``a == b``."""
        half = ((1 - (a * b).sum(-1)) / 2).clamp(torch.finfo(a.dtype).tiny, 1.0)
        return 2 * EARTH_RADIUS_KM * torch.asin(half.sqrt())

    def comoving(self, w: Tensor, hours: Tensor, drift: Drift) -> Tensor:
        """Where the water at waypoints ``(*batch, 3)`` at ``hours`` ``(*batch)`` was at time 0."""
        return drift.to_comoving(w, hours)

    def hazard(self, sweep: SweepLaw, points: Tensor, start: Tensor, end: Tensor) -> Tensor:
        """Smoothed hazard of legs ``(*batch, m, 3)`` for points ``(n, 3)``: ``(*batch, m, n)``."""
        return leg_hazard(sweep, points, start, end, smooth=True)

    def towards(self, point: Tensor, heading: Tensor, km: Tensor) -> Tensor:
        """From ``point`` ``(*batch, 3)``, ``km`` along the great circle on ``heading`` (radians
        clockwise from north), both ``(*batch)``."""
        east, north = local_frame(point)
        direction = heading.sin().unsqueeze(-1) * east + heading.cos().unsqueeze(-1) * north
        return GLOBE.retract(point, direction * (km / EARTH_RADIUS_KM).unsqueeze(-1))

    def step_km(self, a: Tensor, b: Tensor, km: Tensor) -> Tensor:
        """From ``b``, ``km`` further along the great circle from ``a`` through ``b`` (``(*, 3)``).

        Where ``a == b`` the direction is east.
        """
        direction = (a * b).sum(-1, keepdim=True) * b - a  # at b, away from a
        norm = direction.norm(dim=-1, keepdim=True)
        east = torch.linalg.cross(torch.zeros_like(b) + b.new_tensor([0.0, 0.0, 1.0]), b, dim=-1)
        east = east / east.norm(dim=-1, keepdim=True).clamp_min(1e-300)
        direction = torch.where(norm > 1e-12, direction / norm.clamp_min(1e-300), east)
        return GLOBE.retract(b, direction * (km / EARTH_RADIUS_KM).unsqueeze(-1))


class LatLonChart:
    """Waypoints as (latitude, longitude) in radians, ``(*batch, 2)``, in the plate carrée chart."""

    name = "latlon"

    def __init__(self) -> None:
        self.space: Space = Box([-math.pi / 2, -math.pi], [math.pi / 2, math.pi])

    def to_sphere(self, w: Tensor) -> Tensor:
        """Unit vectors ``(*batch, 3)`` of chart points ``(*batch, 2)``."""
        latitude, longitude = w[..., 0], w[..., 1]
        return torch.stack(
            [latitude.cos() * longitude.cos(), latitude.cos() * longitude.sin(), latitude.sin()],
            dim=-1,
        )

    def from_sphere(self, x: Tensor) -> Tensor:
        """Chart points ``(*batch, 2)`` of unit vectors ``(*batch, 3)`` (longitude in (-π, π])."""
        latitude = torch.asin(x[..., 2].clamp(-1, 1))
        return torch.stack([latitude, torch.atan2(x[..., 1], x[..., 0])], dim=-1)

    def distance_km(self, a: Tensor, b: Tensor) -> Tensor:
        """Chart distance :math:`R\\,|a - b|` between ``(*batch, 2)`` points, differentiable."""
        squared = ((a - b) ** 2).sum(-1).clamp_min(torch.finfo(a.dtype).tiny)
        return EARTH_RADIUS_KM * squared.sqrt()

    def comoving(self, w: Tensor, hours: Tensor, drift: Drift) -> Tensor:
        """The current's map to mission time 0, taken through the sphere, in chart points."""
        return self.from_sphere(drift.to_comoving(self.to_sphere(w), hours))

    def hazard(self, sweep: SweepLaw, points: Tensor, start: Tensor, end: Tensor) -> Tensor:
        """Smoothed hazard of straight chart legs ``(*batch, m, 2)`` for points ``(n, 2)``."""
        delta = (end - start) * EARTH_RADIUS_KM
        squared = (delta * delta).sum(-1, keepdim=True).clamp_min(torch.finfo(delta.dtype).tiny)
        length = squared.sqrt()
        unit = delta / length
        relative = (points * EARTH_RADIUS_KM).unsqueeze(-3) - (start * EARTH_RADIUS_KM).unsqueeze(
            -2
        )
        along = (relative * unit.unsqueeze(-2)).sum(-1)
        cross = relative[..., 0] * unit[..., 1].unsqueeze(-1) - relative[..., 1] * unit[
            ..., 0
        ].unsqueeze(-1)
        return sweep.smooth_hazard(cross, along, length)

    def towards(self, point: Tensor, heading: Tensor, km: Tensor) -> Tensor:
        """From ``point`` ``(*batch, 2)``, ``km`` chart km on ``heading`` (radians clockwise from
        north), both ``(*batch)``; kept in the chart."""
        step = torch.stack([heading.cos(), heading.sin()], dim=-1) * (
            km / EARTH_RADIUS_KM
        ).unsqueeze(-1)
        return self._inside(point + step)

    def _inside(self, point: Tensor) -> Tensor:
        return torch.minimum(
            torch.maximum(point, self.space.lower.to(point)), self.space.upper.to(point)
        )

    def step_km(self, a: Tensor, b: Tensor, km: Tensor) -> Tensor:
        """From ``b``, ``km`` (chart km) further along the chart line from ``a`` through ``b``."""
        delta = b - a
        norm = delta.norm(dim=-1, keepdim=True)
        east = torch.zeros_like(delta)
        east[..., 1] = 1.0
        direction = torch.where(norm > 1e-15, delta / norm.clamp_min(1e-300), east)
        return self._inside(b + direction * (km / EARTH_RADIUS_KM).unsqueeze(-1))


def make_chart(name: str) -> SphereChart | LatLonChart:
    """The chart called ``name`` (one of :data:`CHARTS`)."""
    if name == "sphere":
        return SphereChart()
    if name == "latlon":
        return LatLonChart()
    raise ConfigurationError(f"`chart` must be one of {CHARTS}, got {name!r}.")
