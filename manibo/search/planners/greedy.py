"""Greedy Bayesian search: the next leg with the highest probability of success per hour."""

from __future__ import annotations

import torch
from torch import Tensor

from manibo.search.assets import MIN_LEG_HOURS
from manibo.search.planners.base import Planner, PlannerState, intercept
from manibo.search.sweep import leg_hazard


def leg_rates(state: PlannerState, brief, comoving: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """POS per hour of flying from the asset straight to where each water parcel will be.

    Args:
        state: the decision.
        brief: the mission brief.
        comoving: the parcels (comoving positions), ``(m, 3)``.

    Returns:
        ``(rates (m,), pos (m,), points (m, 3))``: the leg's probability of success under the exact
        posterior per hour of flight (at least :data:`~manibo.search.assets.MIN_LEG_HOURS`, the
        shortest leg the simulator charges), that probability, and where each leg ends.
    """
    asset = brief.assets[state.asset]
    points, hours = intercept(state.position, comoving, state.time_h, asset, brief.drift)
    start = brief.drift.to_comoving(state.position, state.time_h).expand_as(points)
    end = brief.drift.to_comoving(points, state.time_h + hours)
    hazard = leg_hazard(asset.sweep, state.belief.positions, start, end)
    pos = -torch.expm1(-hazard) @ state.belief.weights
    return pos / hours.clamp_min(MIN_LEG_HOURS), pos, points


class GreedyBayes(Planner):
    """Fly next to where the exact posterior gives the highest POS per hour of the leg.

    Candidate leg ends are where the water of particles drawn by posterior weight will be when
    the asset gets there; each candidate is scored by the probability of success of the straight
    leg to it (its sweep, on the exact posterior) divided by its hours, and the best one that
    leaves time to get home is flown. Without travel this is Stone's uniformly optimal greedy rule
    for exponential detection; here it is myopic in the path: one leg at a time, and blind to the
    legs of the other assets still in the air.

    Args:
        num_candidates: candidate leg ends per decision.
    """

    id = "greedy"

    def __init__(self, num_candidates: int = 128) -> None:
        self.num_candidates = num_candidates

    def propose(self, state: PlannerState) -> Tensor:
        """The candidate with the highest POS per hour among those within the endurance."""
        comoving = state.belief.positions[state.belief.sample(self.num_candidates, self.generator)]
        rates, _, points = leg_rates(state, self.brief, comoving)
        asset = self.brief.assets[state.asset]
        slack = asset.slack_h(state.position, points, state.time_h, state.deadline_h)
        if bool((slack >= 0).any()):
            rates = torch.where(slack >= 0, rates, torch.full_like(rates, -1.0))
            return points[int(torch.argmax(rates))]
        return self.within_endurance(state, points[int(torch.argmax(rates))])
