"""Charts: the sphere measures legs as the assets fly them; the lat/lon chart stretches east-west
by 1/cos(latitude) and is cut at the antimeridian."""

import math

import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.geo import destination, distance_km, latlon
from manibo.search.planners import LatLonChart, SphereChart, make_chart
from manibo.search.sweep import SweepLaw, leg_hazard


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


def test_steps_continue_legs_in_each_chart():
    sphere, chart = SphereChart(), LatLonChart()
    a = latlon(-40.0, 100.0)
    b = destination(a, 70.0, 300.0)
    c = sphere.step_km(a, b, torch.tensor(200.0, dtype=torch.float64))
    assert float(distance_km(a, c)) == pytest.approx(500.0, rel=1e-9)  # on the same great circle
    north = sphere.towards(
        a, torch.tensor(0.0, dtype=torch.float64), torch.tensor(100.0, dtype=torch.float64)
    )
    assert float(distance_km(north, destination(a, 0.0, 100.0))) < 1e-6
    p, q = chart.from_sphere(a), chart.from_sphere(b)
    r = chart.step_km(p, q, torch.tensor(200.0, dtype=torch.float64))
    assert torch.allclose(r - q, (q - p) / (q - p).norm() * 200.0 / 6371.0)
    edge = chart.towards(
        torch.tensor([1.5, 3.1], dtype=torch.float64),
        torch.tensor(0.5, dtype=torch.float64),
        torch.tensor(900.0, dtype=torch.float64),
    )
    assert float(edge[0]) <= math.pi / 2 and float(edge[1]) <= math.pi  # kept in the chart
    assert make_chart("sphere").name == "sphere"
    with pytest.raises(ConfigurationError, match="chart"):
        make_chart("mercator")
