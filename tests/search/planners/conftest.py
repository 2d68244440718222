"""A small search for planner tests: a blob of particles, a current, two aircraft and a ship."""

import pytest
import torch

from manibo.geo import destination, latlon, offset
from manibo.search.assets import Asset
from manibo.search.belief import ParticleBelief
from manibo.search.drift import Drift
from manibo.search.planners import MissionBrief, PlannerState
from manibo.search.sweep import SweepLaw

DATUM = (-38.0, 95.0)


@pytest.fixture
def brief():
    datum = latlon(*DATUM)
    gen = torch.Generator().manual_seed(0)
    east, north = torch.randn(2, 400, generator=gen, dtype=torch.float64)
    particles = offset(datum, 250.0 * east, 80.0 * north)  # an elongated blob, 250 by 80 km
    base = destination(datum, 30.0, 900.0)
    assets = (
        Asset.aircraft("aircraft 1", base, SweepLaw(20.0), endurance_h=9.0, turnaround_h=15.0),
        Asset.aircraft("aircraft 2", base, SweepLaw(16.0), endurance_h=9.0, available_h=1.0),
        Asset.vessel("ship", destination(datum, 200.0, 300.0), SweepLaw(8.0, "definite-range")),
    )
    drift = Drift.through(datum, 250.0, 1.8, 30.0, 0.0)
    return MissionBrief(datum, particles, drift, assets, 48.0)


def state(brief, asset=0, time_h=0.0, position=None, deadline_h=None, pending=()):
    """The decision of ``asset`` at ``time_h`` on the prior belief."""
    a = brief.assets[asset]
    position = a.start if position is None else position
    deadline = (a.available_h + a.endurance_h) if deadline_h is None else deadline_h
    belief = ParticleBelief(brief.prior_particles.clone())
    return PlannerState(time_h, asset, position, deadline, belief, list(pending), [])
