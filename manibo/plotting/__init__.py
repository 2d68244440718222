"""Figures: globe maps in azimuthal projections (matplotlib only) and curves over repeated runs."""

from manibo.plotting.curves import plot_censored_distributions, plot_mean_curves
from manibo.plotting.globe import (
    AzimuthalView,
    LandMask,
    density_colormap,
    draw_density,
    draw_graticule,
    draw_land_and_sea,
    draw_path,
    draw_points,
)

__all__ = [
    "AzimuthalView",
    "LandMask",
    "density_colormap",
    "draw_density",
    "draw_graticule",
    "draw_land_and_sea",
    "draw_path",
    "draw_points",
    "plot_censored_distributions",
    "plot_mean_curves",
]
