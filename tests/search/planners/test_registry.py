"""Planners by id: every compared id is registered with a label and a colour; unknown ids fail."""

import pytest

from manibo.exceptions import ConfigurationError
from manibo.search.planners import COMPARED, PLANNERS, PlannerSpec, make_planner


def test_every_compared_planner_is_made_by_id():
    assert COMPARED[0] == "manibo" and len(set(COMPARED)) == len(COMPARED)
    labels = set()
    for planner_id in COMPARED:
        spec = PLANNERS.get(planner_id)
        assert spec.color.startswith("#") and spec.label not in labels
        labels.add(spec.label)
        assert make_planner(planner_id).id == planner_id
    assert make_planner("latlon").geometry.name == "latlon"


def test_unknown_ids_are_listed_and_taken_ids_refused():
    with pytest.raises(ConfigurationError, match="unknown search planner 'manibo GP'.*greedy"):
        PLANNERS.get("manibo GP")
    with pytest.raises(ConfigurationError, match="already registered"):
        PLANNERS.register("greedy", PlannerSpec("other", "#000000", lambda: None))
