"""The ocean mask from global-land-mask: known places on land and at sea, the cache, bad input."""

import numpy as np
import pytest
import torch

import manibo.search.ocean as ocean_module
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.geo import latlon
from manibo.search.ocean import OceanMask, ocean_mask

LAND = {
    "Paris": (48.8566, 2.3522),
    "Sahara": (23.0, 13.0),
    "Manaus": (-3.1, -60.0),
    "Denver": (39.74, -104.99),
}
SEA = {
    "AF447 last known position": (2.98, -30.59),
    "mid-Pacific": (0.0, -150.0),
    "Southern Indian Ocean (MH370 search)": (-35.0, 93.0),
    "North Atlantic": (50.0, -30.0),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_known_places_are_on_land_or_at_sea(dtype, device="cpu"):
    mask = ocean_mask()
    land = torch.stack([latlon(*p, dtype=dtype, device=device) for p in LAND.values()])
    sea = torch.stack([latlon(*p, dtype=dtype, device=device) for p in SEA.values()])
    assert mask.is_land(land).tolist() == [True] * len(LAND), list(LAND)
    assert mask.is_ocean(sea).tolist() == [True] * len(SEA), list(SEA)
    assert mask.is_ocean(sea).device.type == device


def test_ocean_covers_about_two_thirds_of_the_grid_cells():
    # 71% of the Earth's surface is ocean; per grid cell (over-weighting polar land) about 67%.
    fraction = ocean_mask().ocean.mean()
    assert 0.64 < fraction < 0.71


def _fake_sampler(calls):
    def sample(rows):
        calls.append(rows)
        grid = np.zeros((rows, 2 * rows), dtype=bool)
        grid[: rows // 2] = True  # southern hemisphere "ocean"
        return grid

    return sample


def test_the_sampled_grid_is_cached_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("MANIBO_CACHE_DIR", str(tmp_path))
    calls = []
    monkeypatch.setattr(ocean_module, "_sample_package_mask", _fake_sampler(calls))
    first = OceanMask.from_package(2.0)
    assert calls == [90] and len(list((tmp_path / "search").glob("ocean_mask_90x180_*.npz"))) == 1
    second = OceanMask.from_package(2.0)  # read from the cache: the sampler is not called again
    assert calls == [90] and np.array_equal(first.ocean, second.ocean)
    assert second.resolution_deg == 2.0
    assert bool(second.is_ocean(latlon(-30.0, 10.0))) and not bool(
        second.is_ocean(latlon(30.0, 10.0))
    )


def test_a_damaged_cache_file_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("MANIBO_CACHE_DIR", str(tmp_path))
    path = tmp_path / "search" / "ocean_mask_90x180_v1.npz"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not an npz file")
    calls = []
    monkeypatch.setattr(ocean_module, "_sample_package_mask", _fake_sampler(calls))
    mask = OceanMask.from_package(2.0)
    assert calls == [90] and mask.ocean.shape == (90, 180)
    with np.load(path) as saved:  # the damaged file was replaced
        assert np.array_equal(saved["ocean"], mask.ocean)


def test_bad_input_is_rejected():
    with pytest.raises(ConfigurationError, match="resolution_deg"):
        OceanMask.from_package(0.7)
    with pytest.raises(ConfigurationError, match="twice as many columns"):
        OceanMask(np.ones((10, 10), dtype=bool))
    with pytest.raises(InputDataError, match="off Sphere"):
        ocean_mask().is_ocean(torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64))
