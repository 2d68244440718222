"""The expanding square: the IAMSAR leg sequence, spacing, drift of the datum, land skipped."""

import pytest

from manibo.exceptions import ConfigurationError
from manibo.search.assets import Asset
from manibo.search.belief import ParticleBelief
from manibo.search.drift import Drift
from manibo.search.geography import distance_km, latlon
from manibo.search.planners import (
    ExpandingSquare,
    MissionBrief,
    PlannerState,
    expanding_square_offsets,
)
from manibo.search.sensor import Sensor


def test_leg_sequence_is_the_expanding_square():
    offsets = expanding_square_offsets(10, 1.0).tolist()
    # N 1, E 1, S 2, W 2, N 3 (partly): clockwise legs of 1, 1, 2, 2, 3, ...
    assert offsets == [
        [0, 0],
        [0, 1],
        [1, 1],
        [1, 0],
        [1, -1],
        [0, -1],
        [-1, -1],
        [-1, 0],
        [-1, 1],
        [-1, 2],
    ]
    with pytest.raises(ConfigurationError):
        expanding_square_offsets(0, 1.0)


def test_proposals_follow_the_drifting_datum_at_the_sweep_width():
    lkp = latlon(40.0, -40.0)
    drift = Drift.through(lkp, 90.0, 1.8)
    brief = MissionBrief(lkp, lkp.unsqueeze(0), drift, Sensor(), Asset(speed_kmh=1e6), lkp)
    planner = ExpandingSquare()
    planner.start(brief)
    belief = ParticleBelief(lkp.unsqueeze(0))
    first = planner.propose(PlannerState(100.0, lkp, belief))
    assert float(distance_km(first, drift.advect(lkp, 100.0))) < 1e-3  # the datum, drifted 180 km
    second = planner.propose(PlannerState(100.0, first, belief))
    assert float(distance_km(first, second)) == pytest.approx(Sensor().sweep_width_km, rel=1e-6)
