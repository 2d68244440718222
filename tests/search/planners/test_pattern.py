"""IAMSAR patterns: parallel tracks one sweep width apart over the prior's rectangle, shared by
effort; the expanding square's legs; waypoints drift with the water."""

import pytest
import torch
from search.planners.conftest import state

from manibo.exceptions import ConfigurationError
from manibo.geo import distance_km, tangent_offsets
from manibo.search.planners import ExpandingSquare, ParallelSweep, expanding_square_offsets


def test_parallel_sweep_tracks_are_one_sweep_width_apart_within_the_prior(brief):
    planner = ParallelSweep()
    planner.start(brief)
    particles = brief.prior_particles
    centre = particles.mean(0) / particles.mean(0).norm()
    for asset, corners in zip(brief.assets, planner.waypoints, strict=True):
        plane = tangent_offsets(centre, corners)
        across = torch.linalg.svd(
            tangent_offsets(centre, particles) - tangent_offsets(centre, particles).mean(0),
            full_matrices=False,
        )[2][1]
        tracks = (plane @ across).reshape(-1, 2)[:, 0]  # one value per track
        gaps = (tracks[1:] - tracks[:-1]).abs()
        assert torch.allclose(gaps, torch.full_like(gaps, asset.sweep.width_km), rtol=1e-3)
        assert float(plane.norm(dim=-1).max()) < 2.5 * 250.0  # within the 90% rectangle
    lengths = [
        float(distance_km(c[0], c[1])) / (a.sweep.width_km * a.speed_kmh)
        for a, c in zip(brief.assets, planner.waypoints, strict=True)
    ]
    # each asset's share of the long axis is proportional to its effort: the ratios agree
    effort_hours = [9.0 * 2, 9.0 * 2 + 3.0, 48.0]  # sorties at 0, 24; 1, 23, 45 (3 h left); ship
    shares = [length / hours for length, hours in zip(lengths, effort_hours, strict=True)]
    assert shares[0] == pytest.approx(shares[1], rel=0.02)
    assert shares[0] == pytest.approx(shares[2], rel=0.02)


def test_expanding_square_corners_and_drift(brief):
    corners = expanding_square_offsets(7, 1.0).tolist()
    assert corners == [[0, 0], [0, 1], [1, 1], [1, -1], [-1, -1], [-1, 2], [2, 2]]
    with pytest.raises(ConfigurationError):
        expanding_square_offsets(0, 1.0)
    planner = ExpandingSquare()
    planner.start(brief)
    first = planner.propose(state(brief, 2, 10.0, brief.assets[2].start, float("inf")))
    hours = float(brief.assets[2].hours(brief.assets[2].start, first))
    assert float(distance_km(first, brief.drift.advect(brief.datum, 10.0 + hours))) < 0.01
    arrived = 10.0 + hours  # the next asset, there now, takes the next leg
    second = planner.propose(state(brief, 0, arrived, first, arrived + 8.0))
    assert float(distance_km(second, first)) == pytest.approx(20.0, rel=0.01)
