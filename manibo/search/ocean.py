r"""The ocean mask: land or sea for points on the globe, from the mask ``global-land-mask`` ships.

``global-land-mask`` (MIT; NOAA GLOBE data) ships a 1 km mask of 21600 × 43200 cells; importing its
module decompresses all of it (about 950 MB and 5 s). manibo instead streams the shipped archive
once, the first time a mask of a given resolution is needed, keeps the centre pixel of every cell of
a coarser regular latitude/longitude grid (0.25° by default: 720 × 1440 cells, 1 MB in memory), and
caches that small grid as ``.npz`` under the manibo cache folder (``$MANIBO_CACHE_DIR``, see
:func:`manibo._cache.cache_dir`). Nothing is downloaded.
"""

from __future__ import annotations

import functools
import importlib.util
import zipfile
from pathlib import Path

import numpy as np
import torch
from numpy.lib import format as np_format
from torch import Tensor

from manibo._cache import cache_dir, save_npz_atomically
from manibo.exceptions import ConfigurationError
from manibo.geo import check_points, unit_to_latlon

DEFAULT_RESOLUTION_DEG = 0.25
_CACHE_VERSION = 1
_PACKAGE_FILE = "globe_combined_mask_compressed.npz"


class OceanMask:
    """Land and sea on a regular latitude/longitude grid of cells.

    Cell ``(i, j)`` spans latitudes ``[-90 + i r, -90 + (i+1) r]`` and longitudes
    ``[-180 + j r, -180 + (j+1) r]`` for the resolution ``r`` in degrees; a point belongs to the
    cell it falls in.

    Args:
        ocean: boolean array ``(180/r, 360/r)``, True over the ocean; rows run south to north.
    """

    def __init__(self, ocean: np.ndarray) -> None:
        ocean = np.asarray(ocean, dtype=bool)
        rows, cols = ocean.shape if ocean.ndim == 2 else (0, 0)
        if ocean.ndim != 2 or rows < 2 or cols != 2 * rows:
            raise ConfigurationError(
                f"`ocean` must be a 2-D boolean grid with twice as many columns as rows "
                f"(latitude x longitude), got shape {ocean.shape}."
            )
        self.ocean = ocean
        self.resolution_deg = 180.0 / rows
        self._grids: dict[torch.device, Tensor] = {}

    @classmethod
    def from_package(
        cls, resolution_deg: float = DEFAULT_RESOLUTION_DEG, use_cache: bool = True
    ) -> OceanMask:
        """The mask of ``global-land-mask`` sampled at the centres of cells of ``resolution_deg``.

        Args:
            resolution_deg: cell size in degrees; 180 must be a whole multiple of it.
            use_cache: read (and write) the sampled grid in the manibo cache folder.

        Raises:
            ConfigurationError: for a resolution that does not divide 180°, or when
                ``global-land-mask`` is not installed.
        """
        rows = 180.0 / resolution_deg
        if resolution_deg <= 0 or abs(rows - round(rows)) > 1e-9:
            raise ConfigurationError(
                f"`resolution_deg` must divide 180 exactly (for example 1, 0.5, 0.25), got "
                f"{resolution_deg!r}."
            )
        rows = int(round(rows))
        path = cache_dir() / "search" / f"ocean_mask_{rows}x{2 * rows}_v{_CACHE_VERSION}.npz"
        if use_cache and path.exists():
            try:
                with np.load(path) as data:
                    return cls(data["ocean"])
            except (OSError, KeyError, ValueError, zipfile.BadZipFile):
                path.unlink(missing_ok=True)  # a damaged cache file is rebuilt below
        ocean = _sample_package_mask(rows)
        if use_cache:
            try:
                save_npz_atomically(path, ocean=ocean)
            except OSError:
                pass  # a read-only cache folder only costs the rebuild next time
        return cls(ocean)

    def cell_index(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Row and column of the cell of each point ``x`` (``(*batch, 3)``); each ``(*batch)``."""
        ll = unit_to_latlon(x)
        rows, cols = self.ocean.shape
        i = ((ll[..., 0] + 90.0) / self.resolution_deg).floor().long().clamp(0, rows - 1)
        j = ((ll[..., 1] + 180.0) / self.resolution_deg).floor().long().remainder(cols)
        return i, j

    def is_ocean(self, x: Tensor) -> Tensor:
        """True where the points lie over the ocean.

        Args:
            x: unit vectors, shape ``(*batch, 3)``.

        Returns:
            Boolean tensor of shape ``(*batch)`` on the device of ``x``.
        """
        check_points("x", x)
        i, j = self.cell_index(x)
        if x.device not in self._grids:
            self._grids[x.device] = torch.as_tensor(self.ocean, device=x.device)
        return self._grids[x.device][i, j]

    def is_land(self, x: Tensor) -> Tensor:
        """The complement of :meth:`is_ocean`; shape ``(*batch)``."""
        return ~self.is_ocean(x)

    def cell_centres(self) -> tuple[np.ndarray, np.ndarray]:
        """Latitudes ``(rows,)`` and longitudes ``(cols,)`` of the cell centres, in degrees."""
        rows, cols = self.ocean.shape
        r = self.resolution_deg
        return -90 + r * (np.arange(rows) + 0.5), -180 + r * (np.arange(cols) + 0.5)


def _sample_package_mask(rows: int) -> np.ndarray:
    """Read the package's 1 km mask row by row and keep the centre pixel of every coarse cell.

    The archive's ``mask.npy`` is ``(21600, 43200)`` booleans, True over the ocean, rows from 90°N
    to 90°S and columns from 180°W eastwards; streaming it keeps memory at a few MB instead of the
    950 MB that importing ``global_land_mask.globe`` decompresses.
    """
    spec = importlib.util.find_spec("global_land_mask")
    if spec is None or spec.origin is None:
        raise ConfigurationError(
            "the ocean mask needs the package `global-land-mask` (a dependency of manibo); "
            "install it with `pip install global-land-mask`."
        )
    path = Path(spec.origin).parent / _PACKAGE_FILE
    try:
        with zipfile.ZipFile(path) as archive, archive.open("mask.npy") as stream:
            version = np_format.read_magic(stream)
            read_header = (
                np_format.read_array_header_1_0
                if version == (1, 0)
                else np_format.read_array_header_2_0
            )
            shape, fortran_order, dtype = read_header(stream)
            full_rows, full_cols = shape
            step = full_rows // rows
            if (
                dtype != np.bool_
                or fortran_order
                or full_cols != 2 * full_rows
                or step * rows != full_rows
            ):
                raise ValueError(
                    f"unexpected mask layout {shape}, {dtype}, fortran={fortran_order}"
                )
            ocean = np.empty((rows, 2 * rows), dtype=bool)
            for i in range(rows):  # north to south
                block = np.frombuffer(stream.read(step * full_cols), dtype=bool)
                ocean[rows - 1 - i] = block[(step // 2) * full_cols :][:full_cols][
                    step // 2 :: step
                ]
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise ConfigurationError(
            f"could not read the mask shipped by global-land-mask ({path}): {error}. Reinstall it "
            "with `pip install --force-reinstall global-land-mask==1.0.0`."
        ) from error
    return ocean


@functools.lru_cache(maxsize=4)
def ocean_mask(resolution_deg: float = DEFAULT_RESOLUTION_DEG) -> OceanMask:
    """The process-wide :class:`OceanMask` at ``resolution_deg`` (built or read once)."""
    return OceanMask.from_package(resolution_deg)
