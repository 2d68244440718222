"""Search planners behind one interface: the manibo multi-leg planner and the baselines, by id."""

from manibo.search.planners.base import MissionBrief, Planner, PlannerState, intercept
from manibo.search.planners.charts import LatLonChart, SphereChart, make_chart
from manibo.search.planners.greedy import GreedyBayes, leg_rates
from manibo.search.planners.multileg import MultiLegPlanner, PlanValue
from manibo.search.planners.pattern import ExpandingSquare, ParallelSweep, expanding_square_offsets
from manibo.search.planners.random_search import RandomSearch
from manibo.search.planners.registry import COMPARED, PLANNERS, PlannerSpec, make_planner

__all__ = [
    "COMPARED",
    "PLANNERS",
    "ExpandingSquare",
    "GreedyBayes",
    "LatLonChart",
    "MissionBrief",
    "MultiLegPlanner",
    "ParallelSweep",
    "PlanValue",
    "Planner",
    "PlannerSpec",
    "PlannerState",
    "RandomSearch",
    "SphereChart",
    "expanding_square_offsets",
    "intercept",
    "leg_rates",
    "make_chart",
    "make_planner",
]
