"""The manibo planner: the plan value by hand, endurance always kept, pending legs, the chart."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.geo import EARTH_RADIUS_KM, GLOBE, destination, latlon
from manibo.search.legs import Leg, total_hazard
from manibo.search.planners import LatLonChart, MultiLegPlanner, PlanValue, SphereChart
from manibo.search.sweep import SweepLaw, leg_hazard
from tests.search.planners.conftest import state


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


def test_the_latlon_chart_stretches_east_west_by_one_over_cos_latitude():
    chart, sphere = LatLonChart(), SphereChart()
    a, b = latlon(60.0, 10.0), latlon(60.0, 11.0)
    ratio = chart.distance_km(chart.from_sphere(a), chart.from_sphere(b)) / sphere.distance_km(a, b)
    assert float(ratio) == pytest.approx(1 / math.cos(math.radians(60.0)), rel=1e-3)
    # a northbound leg and an object 10 km east of it: the chart sees it 20 km away
    start, end = latlon(59.0, 10.0), latlon(61.0, 10.0)
    obj = destination(latlon(60.0, 10.0), 90.0, 10.0).unsqueeze(0)
    sweep = SweepLaw(20.0)
    on_sphere = leg_hazard(sweep, obj, start.view(1, 3), end.view(1, 3))
    on_chart = chart.hazard(
        sweep,
        chart.from_sphere(obj),
        chart.from_sphere(start).view(1, 2),
        chart.from_sphere(end).view(1, 2),
    )
    expected = sweep.hazard(
        torch.tensor(20.0, dtype=torch.float64),
        torch.tensor(111.2 * 1.0, dtype=torch.float64),
        torch.tensor(222.4, dtype=torch.float64),
    )
    assert float(on_chart) == pytest.approx(float(expected), rel=0.02)
    assert float(on_sphere) == pytest.approx(4 * float(on_chart), rel=0.03)  # H ~ 1/x²
    # and it is cut at the antimeridian: 2 degrees apart on the globe, 358 on the chart
    west, east = chart.from_sphere(latlon(50.0, 179.0)), chart.from_sphere(latlon(50.0, -179.0))
    assert float(chart.distance_km(west, east)) > 100 * float(
        sphere.distance_km(latlon(50.0, 179.0), latlon(50.0, -179.0))
    )


def test_bad_settings_are_refused():
    with pytest.raises(ConfigurationError, match="num_restarts"):
        MultiLegPlanner(num_restarts=0)
    with pytest.raises(ConfigurationError, match="chart"):
        MultiLegPlanner("mercator")
    with pytest.raises(ConfigurationError, match="horizon_km"):
        MultiLegPlanner(horizon_km=0.0)
