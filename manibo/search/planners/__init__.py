"""Search planners behind one interface: the manibo GP planner and the baselines."""

from manibo.search.planners.base import MissionBrief, Planner, PlannerState, SearchRecord, intercept
from manibo.search.planners.gp import GPPlanner, TravelTimeAcquisition
from manibo.search.planners.greedy import GreedyBayes, best_search_rate
from manibo.search.planners.pattern import ExpandingSquare, expanding_square_offsets
from manibo.search.planners.random_search import RandomSearch

__all__ = [
    "ExpandingSquare",
    "GPPlanner",
    "GreedyBayes",
    "MissionBrief",
    "Planner",
    "PlannerState",
    "RandomSearch",
    "SearchRecord",
    "TravelTimeAcquisition",
    "best_search_rate",
    "expanding_square_offsets",
    "intercept",
]
