r"""The Earth as the sphere :math:`S^2` of radius 6371 km: coordinates, great circles, rotations.

Points are unit vectors ``(*batch, 3)`` in an Earth-centred frame (x towards 0°N 0°E, y towards
0°N 90°E, z towards the North Pole), as everywhere in manibo; distances on the ground are the
great-circle angle times :data:`EARTH_RADIUS_KM`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from manibo._validation import as_tensor_arg, check_finite
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.spaces.sphere import Sphere

#: Mean Earth radius (IUGG), in kilometres.
EARTH_RADIUS_KM = 6371.0

GLOBE = Sphere(2)


def check_points(name: str, x: Tensor) -> Tensor:
    """Return ``x`` if it holds unit vectors ``(*batch, 3)``, else raise ``InputDataError`` (for
    pairs of numbers, latitude and longitude most likely, with the way to unit vectors)."""
    pair = (
        (x.dim() > 0 and x.shape[-1] == 2)
        if torch.is_tensor(x)
        else isinstance(x, tuple | list) and len(x) == 2
    )
    if pair:
        shape = tuple(x.shape) if torch.is_tensor(x) else (2,)
        raise InputDataError(
            f"`{name}` holds pairs of numbers, shape {shape}: latitude and longitude? Points on "
            "the globe are unit vectors of shape (3,); make them with manibo.geo.latlon(lat, lon) "
            "(degrees)."
        )
    return GLOBE.check(x, name)


def latlon_to_unit(lat_deg: Tensor, lon_deg: Tensor) -> Tensor:
    """Unit vectors from latitude and longitude in degrees.

    Args:
        lat_deg: latitudes in [-90, 90], shape ``(*batch)``.
        lon_deg: longitudes in degrees (any real value), shape ``(*batch)``.

    Returns:
        Shape ``(*batch, 3)``, in the dtype and device of ``lat_deg``.

    Raises:
        InputDataError: when a latitude lies outside [-90, 90] or an entry is not finite.
    """
    lat_deg = (
        torch.as_tensor(lat_deg, dtype=torch.float64) if not torch.is_tensor(lat_deg) else lat_deg
    )
    lon_deg = torch.as_tensor(lon_deg, dtype=lat_deg.dtype, device=lat_deg.device)
    as_tensor_arg("lat_deg", lat_deg)
    check_finite("lat_deg", lat_deg)
    check_finite("lon_deg", lon_deg)
    if (lat_deg.abs() > 90).any():
        raise InputDataError(
            f"`lat_deg` must lie in [-90, 90], got values up to {float(lat_deg.abs().max()):.6g}. "
            "Pass latitude first and longitude second."
        )
    lat, lon = torch.deg2rad(lat_deg), torch.deg2rad(lon_deg)
    return torch.stack([lat.cos() * lon.cos(), lat.cos() * lon.sin(), lat.sin()], dim=-1)


def latlon(
    lat_deg: float, lon_deg: float, dtype: torch.dtype = torch.float64, device=None
) -> Tensor:
    """One point from latitude and longitude in degrees: a unit vector of shape ``(3,)``."""
    return latlon_to_unit(
        torch.tensor(float(lat_deg), dtype=dtype, device=device),
        torch.tensor(float(lon_deg), dtype=dtype, device=device),
    )


def unit_to_latlon(x: Tensor) -> Tensor:
    """Latitude and longitude in degrees (longitude in (-180, 180]) of unit vectors.

    Args:
        x: unit vectors, shape ``(*batch, 3)``.

    Returns:
        Shape ``(*batch, 2)``: ``[..., 0]`` latitude, ``[..., 1]`` longitude.
    """
    lat = torch.rad2deg(torch.asin(x[..., 2].clamp(-1, 1)))
    lon = torch.rad2deg(torch.atan2(x[..., 1], x[..., 0]))
    return torch.stack([lat, lon], dim=-1)


def distance_km(x: Tensor, y: Tensor) -> Tensor:
    """Great-circle km between broadcastable unit vectors ``(*batch, 3)``; returns ``(*batch)``."""
    check_points("x", x)
    check_points("y", y)
    return EARTH_RADIUS_KM * GLOBE.distance(x, y)


def local_frame(x: Tensor) -> tuple[Tensor, Tensor]:
    """Unit east and north vectors at ``x`` (shape ``(*batch, 3)`` each).

    At the poles, where east is undefined, east is taken as the y axis (the direction of the 90°E
    meridian) and north completes a right-handed frame.
    """
    z = torch.zeros_like(x)
    z[..., 2] = 1.0
    east = torch.linalg.cross(z, x, dim=-1)
    norm = east.norm(dim=-1, keepdim=True)
    fallback = torch.zeros_like(x)
    fallback[..., 1] = 1.0
    east = torch.where(norm > 1e-12, east / norm.clamp_min(1e-300), fallback)
    north = torch.linalg.cross(x, east, dim=-1)
    return east, north


def offset(center: Tensor, east_km: Tensor, north_km: Tensor) -> Tensor:
    """Points reached from ``center`` along great circles by tangent displacements (exp map).

    Args:
        center: unit vector(s), shape ``(*batch, 3)``.
        east_km: eastward displacement, shape broadcastable to ``(*batch)``.
        north_km: northward displacement, same shape.

    Returns:
        Shape ``(*batch', 3)``: the point at distance ``hypot(east, north)`` km from ``center`` in
        the direction of the displacement.
    """
    east, north = local_frame(center)
    tangent = (
        torch.as_tensor(east_km, dtype=center.dtype, device=center.device).unsqueeze(-1) * east
        + torch.as_tensor(north_km, dtype=center.dtype, device=center.device).unsqueeze(-1) * north
    ) / EARTH_RADIUS_KM
    return GLOBE.retract(center.expand_as(tangent), tangent)


def destination(start: Tensor, bearing_deg: float, distance: float) -> Tensor:
    """The point ``distance`` km from ``start`` ``(3,)`` on bearing ``bearing_deg`` (0: north)."""
    bearing = torch.deg2rad(
        torch.tensor(float(bearing_deg), dtype=start.dtype, device=start.device)
    )
    return offset(start, distance * torch.sin(bearing), distance * torch.cos(bearing))


def tangent_offsets(center: Tensor, x: Tensor) -> Tensor:
    """Inverse of :func:`offset` (logarithm map): east and north km of ``x`` seen from ``center``.

    Args:
        center: unit vector, shape ``(3,)``.
        x: unit vectors, shape ``(*batch, 3)``; the antipode of ``center`` has no direction.

    Returns:
        Shape ``(*batch, 2)``: ``[..., 0]`` east km, ``[..., 1]`` north km, whose norm is the
        great-circle distance to ``center``.
    """
    east, north = local_frame(center)
    angle = GLOBE.distance(x, center.expand_as(x))
    direction = x - (x @ center).unsqueeze(-1) * center
    norm = direction.norm(dim=-1, keepdim=True).clamp_min(1e-300)
    scale = (EARTH_RADIUS_KM * angle).unsqueeze(-1) / norm
    return torch.stack([(direction @ east), (direction @ north)], dim=-1) * scale


def rotation_matrix(axis: Tensor, angle: Tensor) -> Tensor:
    r"""Rodrigues' formula: the rotation by ``angle`` (radians, right-handed) about unit ``axis``.

    :math:`R = I + \sin\theta\,[k]_\times + (1 - \cos\theta)\,[k]_\times^2`, exact and orthogonal;
    the inverse rotation is the one by :math:`-\theta`, and equals :math:`R^\top`.

    Args:
        axis: unit vector, shape ``(3,)``.
        angle: shape ``(*batch)``.

    Returns:
        Shape ``(*batch, 3, 3)``.
    """
    angle = torch.as_tensor(angle, dtype=axis.dtype, device=axis.device)
    k = torch.zeros(3, 3, dtype=axis.dtype, device=axis.device)
    k[0, 1], k[0, 2], k[1, 2] = -axis[2], axis[1], -axis[0]
    k = k - k.T
    s, c = torch.sin(angle)[..., None, None], torch.cos(angle)[..., None, None]
    eye = torch.eye(3, dtype=axis.dtype, device=axis.device)
    return eye + s * k + (1 - c) * (k @ k)


def great_circle_track(start: Tensor, end: Tensor, num: int) -> Tensor:
    """``num`` points evenly spaced on the short great-circle arc from ``start`` to ``end``.

    Returns:
        Shape ``(num, 3)``, the first row ``start`` and the last ``end``.
    """
    if num < 2:
        raise ConfigurationError(f"`num` must be at least 2, got {num}.")
    fraction = torch.linspace(0, 1, num, dtype=start.dtype, device=start.device)
    return move_fraction(start, end, fraction)


def move_fraction(start: Tensor, end: Tensor, fraction: Tensor) -> Tensor:
    """Points a ``fraction`` ``(*batch)`` of the way on the great circle from ``start`` to ``end``.

    ``start`` and ``end`` are unit vectors ``(3,)``; antipodal endpoints have no unique great circle
    and raise ``InputDataError``. Returns shape ``(*batch, 3)``.
    """
    angle = GLOBE.distance(start, end)
    if float(angle) > torch.pi - 1e-9:
        raise InputDataError(
            "`start` and `end` are antipodal: no unique great circle joins them. Route via a "
            "waypoint."
        )
    direction = end - torch.dot(start, end) * start
    norm = direction.norm()
    if float(norm) < 1e-15:
        return start.expand(*torch.as_tensor(fraction).shape, 3).clone()
    direction = direction / norm
    theta = angle * torch.as_tensor(fraction, dtype=start.dtype, device=start.device)
    return torch.cos(theta).unsqueeze(-1) * start + torch.sin(theta).unsqueeze(-1) * direction


def pairwise_distance_km(a: Tensor, b: Tensor) -> Tensor:
    r"""Great-circle distances in km between every row of ``a`` and every row of ``b``.

    Computed as :math:`2R\arcsin(\sqrt{(1 - a\cdot b)/2})` with one matrix product; differentiable
    everywhere: the argument of the square root is clamped to the dtype's smallest normal number,
    so coincident points are at distance :math:`2R\sqrt{\text{tiny}}` (about
    :math:`10^{-151}` km in float64) with gradient 0. Round-off in :math:`a\cdot b` limits the
    resolution at very short range to about 1 m in float64 and 2 km in float32.

    Args:
        a: unit vectors, shape ``(*batch, m, 3)``.
        b: unit vectors, shape ``(n, 3)``.

    Returns:
        Shape ``(*batch, m, n)``.
    """
    half = ((1 - a @ b.transpose(-1, -2)) / 2).clamp(torch.finfo(a.dtype).tiny, 1.0)
    return (2 * EARTH_RADIUS_KM) * torch.asin(half.sqrt())
