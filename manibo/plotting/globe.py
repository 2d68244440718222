r"""Maps of the globe with matplotlib alone: azimuthal projections, land from the mask, overlays.

:class:`AzimuthalView` projects unit vectors onto the plane tangent at a centre point:

* ``"orthographic"`` — the globe as seen from space (the visible hemisphere, radius :math:`R`);
* ``"equidistant"`` — azimuthal equidistant: distances and directions from the centre are exact, so
  the axes read "km east/north of the centre" (for regional maps).

Land, sea and coastlines are drawn by rendering the ocean mask at every pixel (inverse projection),
never downloaded; belief densities are weighted histograms of particles in the projected plane,
smoothed with a Gaussian filter.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.colors import Colormap, ListedColormap
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.geo import (
    EARTH_RADIUS_KM,
    check_points,
    great_circle_track,
    latlon_to_unit,
    local_frame,
)

KINDS = ("orthographic", "equidistant")


class LandMask(Protocol):
    """Anything that says which points of the globe are land (e.g. ``manibo.search.OceanMask``)."""

    def is_land(self, x: Tensor) -> Tensor:
        """Booleans ``(*batch)`` for unit vectors ``(*batch, 3)``: True over land."""


OCEAN_RGB = (0.80, 0.88, 0.95)
LAND_RGB = (0.87, 0.84, 0.76)
COAST_COLOR = "0.35"


class AzimuthalView:
    """An azimuthal projection centred on ``center``, with plane coordinates in km.

    Args:
        center: unit vector ``(3,)``.
        kind: ``"orthographic"`` or ``"equidistant"``.
        extent_km: half-width of the map; default ``R`` for orthographic (the whole disc).
    """

    def __init__(self, center: Tensor, kind: str = "orthographic", extent_km: float | None = None):
        check_points("center", center)
        if kind not in KINDS:
            raise ConfigurationError(f"`kind` must be one of {KINDS}, got {kind!r}.")
        self.center = center.detach().cpu().double()
        self.east, self.north = local_frame(self.center)
        self.kind = kind
        self.extent_km = float(extent_km or EARTH_RADIUS_KM)
        if self.extent_km <= 0:
            raise ConfigurationError(f"`extent_km` must be positive, got {extent_km!r}.")

    def project(self, points: Tensor) -> tuple[np.ndarray, np.ndarray]:
        """Plane coordinates (km) and visibility of points ``(*batch, 3)``.

        Returns:
            ``(xy, visible)``: arrays of shapes ``(*batch, 2)`` and ``(*batch)``.
        """
        p = points.detach().cpu().double()
        cos_c = p @ self.center
        e, n = p @ self.east, p @ self.north
        if self.kind == "orthographic":
            xy = torch.stack([e, n], -1) * EARTH_RADIUS_KM
            visible = cos_c > 0
        else:
            angle = torch.atan2(torch.hypot(e, n), cos_c)
            scale = EARTH_RADIUS_KM * angle / torch.hypot(e, n).clamp_min(1e-300)
            xy = torch.stack([e * scale, n * scale], -1)
            visible = (xy.abs() <= self.extent_km * 1.02).all(-1)
        return xy.numpy(), visible.numpy()

    def unproject(self, x: np.ndarray, y: np.ndarray) -> tuple[Tensor, np.ndarray]:
        """Points on the sphere ``(*shape, 3)`` under plane coordinates (km), and which exist."""
        x_t = torch.as_tensor(x, dtype=torch.float64)
        y_t = torch.as_tensor(y, dtype=torch.float64)
        r = torch.hypot(x_t, y_t)
        direction = (x_t.unsqueeze(-1) * self.east + y_t.unsqueeze(-1) * self.north) / r.clamp_min(
            1e-300
        ).unsqueeze(-1)
        if self.kind == "orthographic":
            valid = r < EARTH_RADIUS_KM
            sin_c = (r / EARTH_RADIUS_KM).clamp(max=1.0)
            cos_c = (1 - sin_c**2).sqrt()
        else:
            valid = r < np.pi * EARTH_RADIUS_KM
            angle = r / EARTH_RADIUS_KM
            sin_c, cos_c = torch.sin(angle), torch.cos(angle)
        points = cos_c.unsqueeze(-1) * self.center + sin_c.unsqueeze(-1) * direction
        return points / points.norm(dim=-1, keepdim=True), valid.numpy()

    def pixel_grid(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        """Pixel-centre coordinates (km) of a ``size × size`` image; each ``(size, size)``."""
        edge = np.linspace(-self.extent_km, self.extent_km, size)
        return np.meshgrid(edge, edge)

    def set_limits(self, ax: Axes) -> None:
        """Square limits covering the map (the whole disc for orthographic)."""
        ax.set_xlim(-self.extent_km, self.extent_km)
        ax.set_ylim(-self.extent_km, self.extent_km)
        ax.set_aspect("equal")


def draw_land_and_sea(
    ax: Axes, view: AzimuthalView, mask: LandMask | None, size: int = 500
) -> None:
    """Paint sea and land at every pixel from the mask (None: all sea); the coastline is the 0.5
    contour."""
    x, y = view.pixel_grid(size)
    points, valid = view.unproject(x, y)
    land = np.zeros(x.shape, dtype=float)
    if mask is not None:
        land = mask.is_land(points.reshape(-1, 3)).reshape(x.shape).numpy().astype(float)
    rgb = np.where(land[..., None] > 0.5, LAND_RGB, OCEAN_RGB)
    rgba = np.concatenate([rgb, valid[..., None].astype(float)], axis=-1)
    extent = (-view.extent_km, view.extent_km, -view.extent_km, view.extent_km)
    ax.imshow(rgba, origin="lower", extent=extent, interpolation="bilinear", zorder=0)
    if mask is not None and 0 < land[valid].mean() < 1:
        ax.contour(
            x,
            y,
            np.where(valid, land, np.nan),
            levels=[0.5],
            colors=COAST_COLOR,
            linewidths=0.6,
            zorder=1,
        )
    if view.kind == "orthographic":
        circle = np.linspace(0, 2 * np.pi, 361)
        ax.plot(
            EARTH_RADIUS_KM * np.cos(circle),
            EARTH_RADIUS_KM * np.sin(circle),
            color="0.3",
            linewidth=0.8,
            zorder=5,
        )
    view.set_limits(ax)


def draw_graticule(
    ax: Axes, view: AzimuthalView, step_deg: float = 15.0, labels: bool = False
) -> None:
    """Parallels and meridians every ``step_deg``; ``labels`` writes their values on the map."""
    fine = np.linspace(-180, 180, 721)
    for lat in np.arange(-90 + step_deg, 90, step_deg):
        _draw_latlon_line(ax, view, np.full_like(fine, lat), fine, f"{_fmt_lat(lat)}", labels, "y")
    fine_lat = np.linspace(-89.5, 89.5, 360)
    for lon in np.arange(-180, 180, step_deg):
        _draw_latlon_line(
            ax, view, fine_lat, np.full_like(fine_lat, lon), f"{_fmt_lon(lon)}", labels, "x"
        )


def _draw_latlon_line(ax, view, lat, lon, label, labels, axis):
    points = latlon_to_unit(torch.as_tensor(lat), torch.as_tensor(lon))
    xy, visible = view.project(points)
    inside = visible & (np.abs(xy) <= view.extent_km).all(-1)
    segments = _split_runs(xy, inside)
    for segment in segments:
        ax.plot(segment[:, 0], segment[:, 1], color="white", linewidth=0.5, alpha=0.9, zorder=2)
    if labels and segments:
        longest = max(segments, key=len)
        index = int(np.argmin(longest[:, 0 if axis == "y" else 1]))
        x, y = longest[index]
        ax.annotate(
            label,
            (x, y),
            fontsize=7,
            color="0.25",
            zorder=6,
            xytext=(2, 2),
            textcoords="offset points",
        )


def _split_runs(xy: np.ndarray, keep: np.ndarray) -> list[np.ndarray]:
    """Consecutive runs of kept points (at least two each) as separate polylines."""
    runs, start = [], None
    for i, k in enumerate(list(keep) + [False]):
        if k and start is None:
            start = i
        elif not k and start is not None:
            if i - start >= 2:
                runs.append(xy[start:i])
            start = None
    return runs


def _fmt_lat(lat: float) -> str:
    return f"{abs(lat):.0f}°{'N' if lat > 0 else 'S' if lat < 0 else ''}"


def _fmt_lon(lon: float) -> str:
    return f"{abs(lon):.0f}°{'E' if 0 < lon < 180 else 'W' if lon < 0 else ''}"


def density_colormap(name: str = "magma_r") -> Colormap:
    """A colormap fading to transparent at its low end, for densities over a map."""
    import matplotlib

    base = matplotlib.colormaps[name](np.linspace(0, 1, 256))
    base[:, 3] = np.clip(np.linspace(0, 1, 256) * 4, 0, 1) * 0.9
    return ListedColormap(base)


def draw_density(
    ax: Axes,
    view: AzimuthalView,
    points: Tensor,
    weights: Tensor | None = None,
    bins: int = 160,
    smooth_bins: float = 1.5,
    cmap: Colormap | None = None,
    zorder: int = 3,
):
    """Weighted particle density in the projected plane, as probability per 10,000 km².

    Args:
        ax: the axes.
        view: the projection.
        points: particles ``(n, 3)``.
        weights: their weights ``(n,)`` (default: equal).
        bins: histogram bins per side of the map.
        smooth_bins: standard deviation of the Gaussian smoothing, in bins.
        cmap: colormap (default :func:`density_colormap`).
        zorder: drawing order.

    Returns:
        The image (for a colour bar).
    """
    from scipy.ndimage import gaussian_filter

    xy, visible = view.project(points)
    w = np.ones(len(xy)) if weights is None else weights.detach().cpu().double().numpy()
    w = w / w.sum()
    edges = np.linspace(-view.extent_km, view.extent_km, bins + 1)
    hist, _, _ = np.histogram2d(
        xy[visible, 0], xy[visible, 1], bins=[edges, edges], weights=w[visible]
    )
    cell_km2 = (edges[1] - edges[0]) ** 2
    density = gaussian_filter(hist.T, smooth_bins) / cell_km2 * 1e4
    extent = (-view.extent_km, view.extent_km, -view.extent_km, view.extent_km)
    return ax.imshow(
        np.ma.masked_less(density, density.max() * 0.01),
        origin="lower",
        extent=extent,
        cmap=cmap or density_colormap(),
        vmin=0,
        interpolation="bilinear",
        zorder=zorder,
    )


def draw_path(ax: Axes, view: AzimuthalView, points: Tensor, **style):
    """A polyline through points ``(n, 3)`` along great circles, split where it leaves the map."""
    dense = [points[0].unsqueeze(0)]
    for a, b in zip(points[:-1], points[1:], strict=True):
        if float((a - b).norm()) > 1e-12:
            dense.append(great_circle_track(a, b, 12)[1:])
    xy, visible = view.project(torch.cat(dense))
    lines = []
    for segment in _split_runs(xy, visible):
        lines += ax.plot(segment[:, 0], segment[:, 1], **style)
    return lines


def draw_points(ax: Axes, view: AzimuthalView, points: Tensor, **style):
    """Scatter points ``(n, 3)`` (only the visible ones)."""
    xy, visible = view.project(points.reshape(-1, 3))
    return ax.scatter(xy[visible, 0], xy[visible, 1], **style)
