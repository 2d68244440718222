"""Figures: globe maps in azimuthal projections (matplotlib only), curves over repeated runs, and
the convergence figure of one run."""

from manibo.plotting.convergence import best_so_far, plot_convergence
from manibo.plotting.curves import plot_censored_distributions, plot_median_curves
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
    "best_so_far",
    "density_colormap",
    "draw_density",
    "draw_graticule",
    "draw_land_and_sea",
    "draw_path",
    "draw_points",
    "plot_censored_distributions",
    "plot_convergence",
    "plot_median_curves",
]
