"""Search planners by id: the one lookup the demo, the benchmark and user code share.

Each entry is a :class:`PlannerSpec`: a stable id (what code and command lines use), a display
label and a colour (what tables and figures show), and a factory. A user adds a planner with
``PLANNERS.register("my-id", PlannerSpec(...))``, in their code or from a plug-in module declared
in the ``manibo.plugins`` entry-point group (see :mod:`manibo.registry`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from manibo.registry import Registry
from manibo.search.planners.base import Planner
from manibo.search.planners.greedy import GreedyBayes
from manibo.search.planners.multileg import MultiLegPlanner
from manibo.search.planners.pattern import ExpandingSquare, ParallelSweep
from manibo.search.planners.random_search import RandomSearch


@dataclass(frozen=True)
class PlannerSpec:
    """A registered planner.

    Attributes:
        label: its name in tables and legends.
        color: its colour in figures.
        factory: makes a fresh planner (one per mission).
    """

    label: str
    color: str
    factory: Callable[[], Planner]


PLANNERS: Registry[PlannerSpec] = Registry(
    "search planner",
    advice="add one with manibo.search.planners.PLANNERS.register('id', PlannerSpec(...))",
)
PLANNERS.register(
    "manibo", PlannerSpec("manibo (S², 3 legs)", "#1f5fbf", lambda: MultiLegPlanner("sphere"))
)
PLANNERS.register(
    "latlon", PlannerSpec("same on lat/lon chart", "#e08a1e", lambda: MultiLegPlanner("latlon"))
)
PLANNERS.register("greedy", PlannerSpec("greedy Bayes", "#2e9e4f", GreedyBayes))
PLANNERS.register("parallel-sweep", PlannerSpec("parallel sweep", "#8e44ad", ParallelSweep))
PLANNERS.register("expanding-square", PlannerSpec("expanding square", "#c43b3b", ExpandingSquare))
PLANNERS.register("random", PlannerSpec("random", "#7f7f7f", RandomSearch))

#: The planners the demo and the benchmark compare, headline first.
COMPARED = ("manibo", "latlon", "greedy", "parallel-sweep", "expanding-square", "random")


def make_planner(planner_id: str) -> Planner:
    """A fresh planner registered as ``planner_id`` (its id set to that id)."""
    planner = PLANNERS.get(planner_id).factory()
    planner.id = planner_id
    return planner
