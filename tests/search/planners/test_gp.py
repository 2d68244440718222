"""The manibo GP planner: the travel-time acquisition by hand; proposals on the sphere."""

import warnings

import pytest
import torch
from botorch.acquisition import PosteriorMean, UpperConfidenceBound
from botorch.models import SingleTaskGP

from manibo.exceptions import ConfigurationError
from manibo.search.assets import Asset
from manibo.search.belief import ParticleBelief
from manibo.search.drift import Drift
from manibo.search.geography import GLOBE, distance_km, latlon, offset
from manibo.search.planners import GPPlanner, MissionBrief, PlannerState, SearchRecord
from manibo.search.planners.base import intercept
from manibo.search.planners.gp import DetectionFieldMean
from manibo.search.sensor import Outcome, Sensor


def _brief(speed=40.0):
    lkp = latlon(50.0, -30.0)
    gen = torch.Generator().manual_seed(0)
    particles = offset(lkp, *(torch.randn(2, 800, generator=gen, dtype=torch.float64) * 100))
    drift = Drift.through(lkp, 270.0, 1.5, 20.0)
    return MissionBrief(lkp, particles, drift, Sensor(range_km=40.0), Asset(speed_kmh=speed), lkp)


def test_travel_time_acquisition_is_the_inner_value_over_transit_plus_search():
    brief = _brief()
    planner = GPPlanner("sphere", beta=0.25, num_gp_particles=400)
    planner.start(brief)
    history = [
        SearchRecord(offset(brief.lkp, torch.tensor(10.0), torch.tensor(0.0)), 3.0, Outcome.NOTHING)
    ]
    state = PlannerState(9.0, brief.lkp, ParticleBelief(brief.prior_particles), history)
    acq = planner.acquisition(state)
    X = offset(brief.lkp, torch.tensor([50.0, -80.0, 0.0]), torch.tensor([20.0, 10.0, 0.0]))
    hours = distance_km(X, brief.lkp) / 40.0
    comoving = brief.drift.advect(X, -(9.0 + hours))
    inner = UpperConfidenceBound(planner.model(state), beta=0.25)
    with torch.no_grad():
        expected = inner(comoving.unsqueeze(1)) / (hours + brief.asset.search_hours)
        assert torch.allclose(acq(X.unsqueeze(1)), expected, rtol=1e-10)
    X.requires_grad_(True)
    acq(X.unsqueeze(1)).sum().backward()
    assert torch.isfinite(X.grad).all()  # including the candidate at the asset's own position
    with pytest.raises(ConfigurationError, match="q = 1"):
        acq(X.detach().reshape(1, 3, 3))
    greedy = GPPlanner("sphere", beta=0.0, num_gp_particles=400)  # beta = 0: the posterior mean
    greedy.start(brief)
    with torch.no_grad():
        mean = greedy.model(state).posterior(comoving.unsqueeze(1)).mean.reshape(-1)
        assert torch.allclose(
            greedy.acquisition(state)(X.detach().unsqueeze(1)),
            mean / (hours + brief.asset.search_hours),
            rtol=1e-10,
        )


@pytest.mark.parametrize("correlation", ["sphere", "latlon"])
def test_cached_posterior_mean_equals_gpytorchs_posterior_mean(correlation):
    brief = _brief()
    planner = GPPlanner(correlation, num_gp_particles=400)
    planner.start(brief)
    gen = torch.Generator().manual_seed(1)
    searched = offset(brief.lkp, *(torch.randn(2, 12, generator=gen, dtype=torch.float64) * 60))
    history = [
        SearchRecord(x, 2.0 * i, Outcome.FOUND if i == 5 else Outcome.NOTHING)
        for i, x in enumerate(searched)
    ]
    for records in ([], history):
        model = planner.model(PlannerState(30.0, brief.lkp, None, records))
        X = offset(brief.lkp, *(torch.randn(2, 40, generator=gen, dtype=torch.float64) * 100))
        with torch.no_grad():
            expected = PosteriorMean(model)(X.unsqueeze(1))
            assert torch.allclose(DetectionFieldMean(model)(X.unsqueeze(1)), expected, atol=1e-12)
    assert float(expected.max()) > 2 * float(expected.median())  # the found search stands out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unscaled data: this model only has the wrong inputs
        plain = SingleTaskGP(searched, torch.rand(12, 1, generator=gen, dtype=torch.float64))
    plain.eval()
    with pytest.raises(ConfigurationError, match="detection_field_gp"):
        DetectionFieldMean(plain)


@pytest.mark.parametrize("beta", [0.0, 0.25])
def test_raw_candidates_are_scored_as_the_acquisition_scores_them(beta):
    brief = _brief()
    planner = GPPlanner("sphere", beta=beta, num_gp_particles=400)
    planner.start(brief)
    history = [SearchRecord(brief.lkp, 4.0, Outcome.NOTHING)]
    state = PlannerState(20.0, brief.start, None, history)
    acq = planner.acquisition(state)
    now = brief.drift.advect(planner.features.particles, state.time_h)
    met, hours = intercept(state.position, now, brief)
    with torch.no_grad():
        expected = acq(met.unsqueeze(1))
        values = planner._meeting_values(acq, met, hours)
    assert float(expected.max()) > 0 and int((expected > 0).sum()) > 300
    assert torch.allclose(values, expected, rtol=1e-5, atol=0)  # the intercept residual: cm


@pytest.mark.parametrize("correlation", ["sphere", "latlon"])
def test_proposals_lie_on_the_sphere_near_the_prior_mass(correlation):
    brief = _brief()
    planner = GPPlanner(correlation, num_gp_particles=400)
    planner.start(brief, seed=0)
    state = PlannerState(0.0, brief.start, ParticleBelief(brief.prior_particles))
    first = planner.propose(state)
    GLOBE.check(first)
    assert float(distance_km(first, brief.lkp)) < 150.0  # the prior's core, next to the asset
    searched = [SearchRecord(first, 1.0, Outcome.NOTHING)] * 4  # four misses at the same place
    second = planner.propose(
        PlannerState(17.0, first, ParticleBelief(brief.prior_particles), searched)
    )
    assert float(distance_km(second, brief.drift.advect(first, 16.0))) > 20.0  # moved on


@pytest.mark.parametrize("correlation", ["sphere", "latlon"])
def test_searches_that_do_not_fit_in_the_endurance_left_score_zero(correlation):
    brief = _brief()  # 40 km/h, 3 h per search, 240 h endurance; prior within ~300 km of the LKP
    asset_at = offset(brief.lkp, torch.tensor(250.0), torch.tensor(0.0))
    planner = GPPlanner(correlation, num_gp_particles=400)
    planner.start(brief)
    belief = ParticleBelief(brief.prior_particles)
    early = planner.propose(PlannerState(0.0, asset_at, belief))
    assert float(distance_km(early, asset_at)) > 150.0  # with time to spare it heads for the core
    late = PlannerState(234.0, asset_at, belief)  # 6 h left: 3 h of transit (120 km), 3 h search
    acq = planner.acquisition(late)
    core = brief.drift.advect(brief.lkp, 234.0)
    near = offset(asset_at, torch.tensor(-100.0), torch.tensor(0.0))  # 2.5 h away, towards the LKP
    with torch.no_grad():
        values = acq(torch.stack([core, near]).unsqueeze(1))
    assert float(values[0]) == 0.0 and float(values[1]) > 0.0
    proposal = planner.propose(late)
    assert float(distance_km(proposal, asset_at)) <= 120.0 + 1e-6  # the last search still fits


def test_bad_settings_are_rejected():
    with pytest.raises(ConfigurationError, match="correlation"):
        GPPlanner("torus")
    with pytest.raises(ConfigurationError, match="beta"):
        GPPlanner(beta=-1.0)
    with pytest.raises(ConfigurationError, match="num_restarts"):
        GPPlanner(num_restarts=0)
