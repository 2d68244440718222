"""The lost-object search mission on the globe: the domain model, the planners and the metrics.

Modules, from the ground up:

* ``sweep`` — lateral range curves (definite range, inverse cube), sweep width, hazard of a leg.
* ``ocean`` — the land/sea mask (from ``global-land-mask``, sampled once and cached).
* ``prior`` — prior components (last known position, route corridor, satellite arc) at sea.
* ``drift`` — solid-body rotation about a tilted axis (exact, invertible) plus diffusion.
* ``assets`` — aircraft flying sorties from a base, vessels on scene; their endurance.
* ``legs`` — legs in space and time, and their hazard in the water's frame.
* ``belief`` — the exact Bayesian belief on particles: p ∝ p·exp(−H), cumulative POS.
* ``planners`` — one interface and a registry by id: the manibo multi-leg planner and baselines.
* ``mission`` — the simulator; ``scenarios`` — arcs, routes, AF447-style.
* ``evaluation`` — a plan against hidden objects: expected fraction found, realised detections.
* ``metrics`` — summaries over scenarios; ``figures`` — the search's own maps and curves.
"""

from manibo.search.assets import Asset
from manibo.search.belief import ParticleBelief
from manibo.search.drift import Drift
from manibo.search.evaluation import Evaluation, HiddenObjects, evaluate, scenario_objects
from manibo.search.legs import Leg, total_hazard
from manibo.search.mission import MissionRecord, Scenario, prior_particles, simulate
from manibo.search.ocean import OceanMask, ocean_mask
from manibo.search.planners import (
    COMPARED,
    PLANNERS,
    ExpandingSquare,
    GreedyBayes,
    MissionBrief,
    MultiLegPlanner,
    ParallelSweep,
    Planner,
    PlannerSpec,
    PlannerState,
    PlanValue,
    RandomSearch,
    make_planner,
)
from manibo.search.prior import ArcBand, GaussianBlob, PriorMixture, RouteCorridor
from manibo.search.scenarios import (
    FAMILIES,
    MissionSettings,
    af447_scenario,
    arc_scenario,
    route_scenario,
    scenario,
)
from manibo.search.sweep import SweepLaw, leg_coordinates, leg_hazard

__all__ = [
    "COMPARED",
    "FAMILIES",
    "PLANNERS",
    "ArcBand",
    "Asset",
    "Drift",
    "Evaluation",
    "ExpandingSquare",
    "GaussianBlob",
    "GreedyBayes",
    "HiddenObjects",
    "Leg",
    "MissionBrief",
    "MissionRecord",
    "MissionSettings",
    "MultiLegPlanner",
    "OceanMask",
    "ParallelSweep",
    "ParticleBelief",
    "PlanValue",
    "Planner",
    "PlannerSpec",
    "PlannerState",
    "PriorMixture",
    "RandomSearch",
    "RouteCorridor",
    "Scenario",
    "SweepLaw",
    "af447_scenario",
    "arc_scenario",
    "evaluate",
    "leg_coordinates",
    "leg_hazard",
    "make_planner",
    "ocean_mask",
    "prior_particles",
    "route_scenario",
    "scenario",
    "scenario_objects",
    "simulate",
    "total_hazard",
]
