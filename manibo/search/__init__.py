"""The lost-object search mission on the globe: the domain model, the planners and the metrics.

Modules, from the ground up:

* ``geography`` — the Earth as :math:`S^2` with radius 6371 km: lat/lon, great circles, rotations.
* ``ocean`` — the land/sea mask (from ``global-land-mask``, sampled once and cached).
* ``prior`` — the prior mixture (LKP blob, route corridor, reverse-drift sighting) over the ocean.
* ``sensor`` — detection probability against distance, false alarms, verification, reliability.
* ``drift`` — solid-body rotation about a tilted axis (exact, invertible) plus diffusion.
* ``assets`` — the search asset: speed, dwell, endurance.
* ``belief`` — the exact Bayesian belief on particles: p ∝ p(1 − POD), drift, cumulative POS.
* ``detection_gp`` — the GP of the detection field with the prior belief as its mean and scale.
* ``planners`` — one interface; the manibo GP planner and the baselines.
* ``mission`` — the simulator; ``scenarios`` — AF447-style and random missions; ``metrics``.
"""

from manibo.search.assets import Asset
from manibo.search.belief import ParticleBelief
from manibo.search.detection_gp import (
    DetectionFieldFeatures,
    correlation_kernel,
    detection_field_gp,
)
from manibo.search.drift import Drift
from manibo.search.geography import (
    EARTH_RADIUS_KM,
    distance_km,
    latlon,
    latlon_to_unit,
    offset,
    unit_to_latlon,
)
from manibo.search.metrics import (
    cumulative_pos,
    found_given_object,
    pos_against_effort,
    pos_against_time,
    regret,
    survival,
    time_to_detection,
    travel_share,
)
from manibo.search.mission import MissionRecord, Scenario, StepRecord, simulate
from manibo.search.ocean import OceanMask, ocean_mask
from manibo.search.planners import (
    ExpandingSquare,
    GPPlanner,
    GreedyBayes,
    MissionBrief,
    Planner,
    PlannerState,
    RandomSearch,
    TravelTimeAcquisition,
)
from manibo.search.prior import GaussianBlob, PriorMixture, RouteCorridor
from manibo.search.scenarios import MissionSettings, af447_scenario, random_scenario
from manibo.search.sensor import Outcome, Sensor

__all__ = [
    "EARTH_RADIUS_KM",
    "Asset",
    "DetectionFieldFeatures",
    "Drift",
    "ExpandingSquare",
    "GPPlanner",
    "GaussianBlob",
    "GreedyBayes",
    "MissionBrief",
    "MissionRecord",
    "MissionSettings",
    "OceanMask",
    "Outcome",
    "ParticleBelief",
    "Planner",
    "PlannerState",
    "PriorMixture",
    "RandomSearch",
    "RouteCorridor",
    "Scenario",
    "Sensor",
    "StepRecord",
    "TravelTimeAcquisition",
    "af447_scenario",
    "correlation_kernel",
    "cumulative_pos",
    "detection_field_gp",
    "distance_km",
    "found_given_object",
    "latlon",
    "latlon_to_unit",
    "ocean_mask",
    "offset",
    "pos_against_effort",
    "pos_against_time",
    "random_scenario",
    "regret",
    "simulate",
    "survival",
    "time_to_detection",
    "travel_share",
    "unit_to_latlon",
]
