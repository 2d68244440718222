"""The manibo planner: the plan value by hand, endurance always kept, pending legs, the chart."""

import pytest
import torch
from search.planners.conftest import state

from manibo.exceptions import ConfigurationError
from manibo.geo import EARTH_RADIUS_KM, GLOBE, destination
from manibo.search.legs import Leg, total_hazard
from manibo.search.planners import MultiLegPlanner, PlanValue, SphereChart
from manibo.search.sweep import SweepLaw


def _value(brief, chart, asset=0, time_h=1.0, position=None, deadline=9.0, horizon=2.0):
    a = brief.assets[asset]
    position = a.start if position is None else position
    points = brief.prior_particles
    weights = torch.rand(
        points.shape[0], generator=torch.Generator().manual_seed(1), dtype=points.dtype
    )
    weights = weights / weights.sum()
    return (
        PlanValue(
            chart,
            chart.from_sphere(points),
            weights,
            a,
            chart.from_sphere(position),
            time_h,
            deadline,
            horizon,
            brief.drift,
        ),
        weights,
    )


def test_the_plan_value_is_its_probability_of_success_per_hour(brief):
    acquisition, weights = _value(brief, SphereChart(), deadline=5.0, horizon=3.0)
    datum, base = brief.datum, brief.assets[0].start
    plan = torch.stack([datum, destination(datum, 90.0, 300.0), destination(datum, 100.0, 500.0)])
    legs, clock, here = [], 1.0, base
    for waypoint in plan:  # the same plan as legs, timed by great-circle distance at 450 km/h
        hours = float(GLOBE.distance(here, waypoint)) * EARTH_RADIUS_KM / 450.0
        legs.append(Leg(0, here, waypoint, clock, clock + hours, SweepLaw(20.0)))
        here, clock = waypoint, clock + hours
    pos = float(weights @ -torch.expm1(-total_hazard(legs, brief.drift, brief.prior_particles)))
    rate = pos / max(clock - 1.0, 3.0)
    home = float(GLOBE.distance(plan[-1], base)) * EARTH_RADIUS_KM / 450.0
    overrun = max(clock + home - 5.0, 0.0)
    assert overrun > 0  # this plan cannot get home by 5 h: it pays for it
    assert float(acquisition(plan.unsqueeze(0))) == pytest.approx(rate - overrun, rel=1e-9)
    late, weights = _value(brief, SphereChart(), deadline=20.0, horizon=3.0)
    short = plan[:1].unsqueeze(0)  # a plan shorter than the horizon counts as lasting it
    times, hazard = late.sweeps(short)
    assert float(times[0, -1] - 1.0) < 3.0
    assert float(late(short)) == pytest.approx(
        float(weights @ -torch.expm1(-hazard.sum(-2)[0])) / 3.0, rel=1e-9
    )


@pytest.mark.parametrize("chart", ["sphere", "latlon"])
def test_the_planner_never_proposes_a_leg_beyond_the_endurance(brief, chart):
    planner = MultiLegPlanner(chart, num_particles=150, num_candidates=16, maxiter=3)
    planner.start(brief, seed=0)
    asset = brief.assets[0]
    gen = torch.Generator().manual_seed(2)
    for _ in range(6):
        far = destination(
            brief.datum,
            360 * float(torch.rand(1, generator=gen)),
            600 * float(torch.rand(1, generator=gen)),
        )
        home_h = float(asset.hours(far, asset.start))
        now = 9.0 - home_h - 0.1 - 0.6 * float(torch.rand(1, generator=gen))  # little slack left
        point = planner.propose(state(brief, 0, now, far, 9.0))
        assert float(asset.slack_h(far, point, now, 9.0)) >= -1e-9


def test_the_plan_is_a_joint_q_batch_no_worse_than_its_starts(brief):
    planner = MultiLegPlanner("sphere", legs=3, num_particles=200, num_candidates=16, maxiter=6)
    planner.start(brief, seed=1)
    decision = state(brief, 2, 0.0)
    acquisition = planner.acquisition(decision)
    starts = planner.starts(decision, acquisition)
    assert starts.shape == (3, 3, 3)
    first = planner.propose(decision)
    plan = planner.plans[2][0]
    assert plan.shape == (3, 3) and torch.allclose(
        plan.norm(dim=-1), torch.ones(3, dtype=plan.dtype)
    )
    assert float(acquisition(plan.unsqueeze(0))) >= float(acquisition(starts).max()) - 1e-9
    assert torch.equal(first, plan[0])  # the ship's first leg is within its (unbounded) endurance


def test_the_other_assets_legs_in_the_air_count_as_misses(brief):
    planner = MultiLegPlanner("sphere", num_particles=400)
    planner.start(brief, seed=0)
    datum = brief.datum
    sweep_line = [destination(datum, 270.0, 250.0), destination(datum, 90.0, 250.0)]
    here = sweep_line[0]  # aircraft 2 is where aircraft 1 started its sweep an hour ago
    alone = planner.acquisition(state(brief, 1, 2.0, here, 10.0))
    pending = Leg(0, sweep_line[0], sweep_line[1], 1.0, 2.1, SweepLaw(20.0))
    shared = planner.acquisition(state(brief, 1, 2.0, here, 10.0, pending=[pending]))
    plan = torch.stack([sweep_line[1], sweep_line[0]]).unsqueeze(0)
    parallel = torch.stack([destination(p, 0.0, 160.0) for p in sweep_line]).unsqueeze(0)
    # after the other aircraft's sweep, the same line is worth far less; a parallel one much less so
    assert float(shared(plan)) < 0.5 * float(alone(plan))
    assert float(shared(parallel)) > 0.8 * float(alone(parallel))


def test_bad_settings_are_refused():
    with pytest.raises(ConfigurationError, match="num_restarts"):
        MultiLegPlanner(num_restarts=0)
    with pytest.raises(ConfigurationError, match="chart"):
        MultiLegPlanner("mercator")
    with pytest.raises(ConfigurationError, match="horizon_km"):
        MultiLegPlanner(horizon_km=0.0)
