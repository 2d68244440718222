"""Greedy Bayesian search: the highest probability of success per hour on the exact belief."""

from __future__ import annotations

import torch
from torch import Tensor

from manibo.search.belief import ParticleBelief
from manibo.search.planners.base import MissionBrief, Planner, PlannerState, intercept


def best_search_rate(
    belief: ParticleBelief, position: Tensor, brief: MissionBrief, candidates: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """POS per hour (transit plus search) of searching at each candidate, met where it drifts to.

    The POS of a candidate is evaluated on the belief now, at the candidate's present position: the
    rotation moves the belief and the candidate together, so this equals the POS at arrival (up to
    the diffusion during transit).

    Args:
        belief: the exact posterior now.
        position: the asset now, ``(3,)``.
        brief: the mission brief.
        candidates: water parcels' positions now, ``(m, 3)``.

    Returns:
        ``(rates (m,), pos (m,), points (m, 3))``: POS per hour, POS, and where to search.
    """
    points, hours = intercept(position, candidates, brief)
    pos = belief.probability_of_success(brief.sensor, candidates)
    return pos / (hours + brief.asset.search_hours), pos, points


class GreedyBayes(Planner):
    """Search next where the exact posterior gives the highest POS per hour of transit and search.

    With no travel cost this is Stone's uniformly optimal greedy plan for exponential detection;
    here the POS of each candidate is divided by its transit plus search time. Candidates are
    particles drawn by posterior weight.

    Args:
        num_candidates: candidate points per decision.
    """

    name = "greedy Bayes"

    def __init__(self, num_candidates: int = 256) -> None:
        self.num_candidates = num_candidates

    def propose(self, state: PlannerState) -> Tensor:
        """The candidate with the highest POS per hour."""
        candidates = state.belief.sample_points(self.num_candidates, self.generator)
        rates, _, points = best_search_rate(state.belief, state.position, self.brief, candidates)
        return points[int(torch.argmax(rates))]
