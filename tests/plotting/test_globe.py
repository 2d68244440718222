"""Azimuthal views: projections invert, equidistant distances are exact, maps render offline."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from manibo.exceptions import ConfigurationError  # noqa: E402
from manibo.geo import EARTH_RADIUS_KM, distance_km, latlon, offset  # noqa: E402
from manibo.plotting import (  # noqa: E402
    AzimuthalView,
    draw_density,
    draw_graticule,
    draw_land_and_sea,
    draw_path,
    draw_points,
)


@pytest.mark.parametrize("kind", ["orthographic", "equidistant"])
def test_project_and_unproject_are_inverse(kind):
    centre = latlon(55.0, -20.0)
    view = AzimuthalView(centre, kind, 2000.0 if kind == "equidistant" else None)
    gen = torch.Generator().manual_seed(0)
    points = offset(centre, *(torch.randn(2, 50, generator=gen, dtype=torch.float64) * 600))
    xy, visible = view.project(points)
    assert visible.all()
    back, valid = view.unproject(xy[:, 0], xy[:, 1])
    assert valid.all() and torch.allclose(back, points, atol=1e-9)


def test_equidistant_plane_distance_from_the_centre_is_the_great_circle_distance():
    centre = latlon(-40.0, 100.0)
    view = AzimuthalView(centre, "equidistant", 3000.0)
    points = offset(centre, torch.tensor([300.0, -1200.0]), torch.tensor([900.0, 50.0]))
    xy, _ = view.project(points)
    assert np.allclose(np.hypot(xy[:, 0], xy[:, 1]), distance_km(points, centre).numpy(), rtol=1e-9)
    far, visible = AzimuthalView(centre, "orthographic").project(-centre)  # the antipode is hidden
    assert not bool(visible) and np.allclose(far, 0.0, atol=1e-6)
    with pytest.raises(ConfigurationError, match="kind"):
        AzimuthalView(centre, "mercator")


class _NorthIsLand:
    """A land mask for tests: land north of 5°N (anything with ``is_land`` will do)."""

    def is_land(self, x):
        return x[..., 2] > np.sin(np.radians(5.0))


def test_a_globe_and_a_regional_map_render(tmp_path):
    centre = latlon(2.98, -30.59)
    fig, axes = plt.subplots(1, 2, figsize=(8, 4))
    globe = AzimuthalView(centre, "orthographic")
    draw_land_and_sea(axes[0], globe, _NorthIsLand(), size=120)
    draw_graticule(axes[0], globe)
    zoom = AzimuthalView(centre, "equidistant", 800.0)
    draw_land_and_sea(axes[1], zoom, _NorthIsLand(), size=80)
    draw_graticule(axes[1], zoom, step_deg=5.0, labels=True)
    gen = torch.Generator().manual_seed(0)
    particles = offset(centre, *(torch.randn(2, 300, generator=gen, dtype=torch.float64) * 150))
    image = draw_density(axes[1], zoom, particles, bins=40)
    draw_path(axes[1], zoom, torch.stack([centre, particles[0], particles[1]]), color="b")
    draw_points(axes[1], zoom, particles[:5], s=5)
    assert image.get_array().max() > 0
    assert axes[1].get_xlim() == (-800.0, 800.0)
    fig.savefig(tmp_path / "map.png")
    plt.close(fig)
    assert (tmp_path / "map.png").stat().st_size > 5000
    assert EARTH_RADIUS_KM == globe.extent_km


def test_plotting_does_not_import_the_search_application():
    import subprocess
    import sys

    code = "import sys, manibo.plotting; print(any('manibo.search' in m for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
