r"""The manibo planner: each asset's next legs chosen jointly on the sphere, receding horizon.

At each decision for an asset the planner

1. conditions the exact posterior on the legs the *other* assets are flying and plan to fly (their
   sweeps are counted as misses, as BoTorch counts pending points), so that assets share the work
   instead of sweeping the same water;
2. scores a plan of ``legs`` waypoints :math:`w_1, \dots, w_k` (a q-batch on the sphere) by
   :class:`PlanValue`: the probability that the plan's sweeps find the object (the exact sweep
   model on the posterior's particles, in the water's frame), per hour of the plan, with a plan
   shorter than the horizon counted as lasting the horizon, and the way home (for an aircraft)
   within the endurance; near the end of an aircraft's sortie, the probability of success of the
   rest of the sortie, the way home included;
3. maximises that value with :func:`~manibo.optim.optimize_acqf_on_space` (Riemannian L-BFGS on
   :math:`(S^2)^k`), started from a greedy rollout (legs chosen one at a time, each counted as a
   miss before the next), from its previous plan carried on, and from the best of a set of
   straight candidate plans through the posterior;
4. flies the first leg only and plans again when it ends (receding horizon).

With ``chart="latlon"`` the same planner draws and scores its legs on a latitude/longitude chart
(:mod:`manibo.search.planners.charts`): the baseline that isolates the sphere's geometry.
"""

from __future__ import annotations

import math
import warnings

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.exceptions.warnings import BotorchWarning
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.geo import EARTH_RADIUS_KM
from manibo.optim import optimize_acqf_on_space
from manibo.optim.riemannian_lbfgs import LBFGSOptions
from manibo.search.assets import Asset
from manibo.search.drift import Drift
from manibo.search.legs import Leg, total_hazard
from manibo.search.planners.base import Planner, PlannerState, intercept
from manibo.search.planners.charts import make_chart

#: Value lost per hour by which a plan overruns the endurance (far above any POS per hour).
OVERRUN_PENALTY = 1.0


class PlanValue(AcquisitionFunction):
    r"""Probability of success per hour of a plan of ``k`` legs from the asset's position.

    For waypoints :math:`w_1..w_k` (a q-batch ``(b, k, d)`` in the chart's coordinates) the asset
    flies :math:`p \to w_1 \to \dots \to w_k` (and, with ``homeward``, on to its base), reaching
    :math:`w_j` at :math:`t_j`; each leg, carried to the water's frame, sweeps the particles
    :math:`y_i` with hazard :math:`H_{ij}` (smoothed for a definite-range law), and

    .. math::
        V = \frac{\sum_i \omega_i\,(1 - e^{-\sum_j H_{ij}})}{\max(t_{\mathrm{last}} - t_0,
            \ T_h)} - \lambda\,[t_{\mathrm{home}} - t_{\mathrm{end}}]_+,

    the plan's probability of success per hour, counting a plan shorter than the horizon
    :math:`T_h` as lasting :math:`T_h` (so that a plan uses its horizon), minus a penalty for
    overrunning the deadline :math:`t_{\mathrm{end}}` (for an aircraft, :math:`t_{\mathrm{home}}`
    includes the way home). ``homeward`` is the end of a sortie: the way home is a leg of the plan,
    its sweep counts, and :math:`T_h = t_{\mathrm{end}} - t_0` (the value is the probability of
    success of the rest of the sortie).

    Args:
        geometry: the chart (:class:`~manibo.search.planners.charts.SphereChart` or
            :class:`~manibo.search.planners.charts.LatLonChart`).
        points: the particles in the water's frame, in chart coordinates ``(n, d)``.
        weights: their weights ``(n,)``.
        asset: the asset (speed, sweep, base).
        position: its position now, in chart coordinates ``(d,)``.
        time_h: mission time now.
        deadline_h: when it must be home (or its time on scene ends).
        horizon_h: :math:`T_h` (ignored with ``homeward``).
        drift: the current.
        homeward: the plan ends with the way home (an aircraft's last legs of a sortie).
    """

    def __init__(
        self,
        geometry,
        points: Tensor,
        weights: Tensor,
        asset: Asset,
        position: Tensor,
        time_h: float,
        deadline_h: float,
        horizon_h: float,
        drift: Drift,
        homeward: bool = False,
    ) -> None:
        super().__init__(model=None)
        if homeward and not asset.returns_to_base:
            raise ConfigurationError(f"asset {asset.name!r} has no base to head home to.")
        self.geometry = geometry
        self.points, self.weights = points, weights
        self.asset, self.position = asset, position
        self.time_h, self.deadline_h, self.horizon_h = float(time_h), deadline_h, horizon_h
        self.drift, self.homeward = drift, homeward
        self.home = geometry.from_sphere(asset.start.to(points)) if asset.returns_to_base else None
        if homeward:
            self.horizon_h = max(deadline_h - self.time_h, 1e-6)

    def forward(self, X: Tensor) -> Tensor:
        """Values of plans ``(b, k, d)``; returns ``(b,)``."""
        times, hazard = self.sweeps(X)
        pos = -torch.expm1(-hazard.sum(-2)) @ self.weights
        value = pos / (times[:, -1] - self.time_h).clamp_min(self.horizon_h)
        end = times[:, -1]
        if self.home is not None and not self.homeward:
            end = end + self.geometry.distance_km(X[:, -1], self.home) / self.asset.speed_kmh
        return value - OVERRUN_PENALTY * (end - self.deadline_h).clamp_min(0)

    def sweeps(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Arrival times ``(b, m + 1)`` (now first) and each leg's hazard ``(b, m, n)``, with
        ``m = k`` legs (``k + 1`` with the way home)."""
        parts = [self.position.expand(X.shape[0], 1, -1), X]
        if self.homeward:
            parts.append(self.home.expand(X.shape[0], 1, -1))
        path = torch.cat(parts, dim=-2)
        hours = self.geometry.distance_km(path[:, :-1], path[:, 1:]) / self.asset.speed_kmh
        times = self.time_h + torch.cat([hours.new_zeros(X.shape[0], 1), hours.cumsum(-1)], -1)
        water = self.geometry.comoving(path, times, self.drift)
        return times, self.geometry.hazard(
            self.asset.sweep, self.points, water[:, :-1], water[:, 1:]
        )

    def after(self, point: Tensor, hours: float, hazard: Tensor) -> PlanValue:
        """The same value (not homeward) for plans starting from ``point`` ``(d,)`` ``hours``
        later, given that a leg of ``hazard`` ``(n,)`` to it missed (a fantasised miss)."""
        weights = self.weights * torch.exp(-hazard)
        total = weights.sum()
        return PlanValue(
            self.geometry,
            self.points,
            weights / total if float(total) > 0 else self.weights,
            self.asset,
            point,
            self.time_h + hours,
            self.deadline_h,
            self.horizon_h,
            self.drift,
        )


class MultiLegPlanner(Planner):
    """Plan each asset's next ``legs`` legs jointly; fly the first; plan again (see module doc).

    Args:
        chart: ``"sphere"`` (manibo's planner) or ``"latlon"`` (the same planner on a chart).
        legs: waypoints per plan (the q of the q-batch).
        horizon_km: a plan counts as lasting at least this distance's hours (for each asset its
            own speed), capped at ``max_horizon_h``.
        max_horizon_h: cap of the horizon in hours (for slow assets).
        num_particles: particles of the posterior the plans are scored on (drawn by weight);
            None: all of them, with their weights.
        endgame: an aircraft plans the rest of its sortie, the way home included
            (:class:`PlanValue`'s ``homeward``), once the time it can spare before heading home
            falls below this many horizons.
        num_candidates: candidate plans scored to choose the optimiser's starts.
        num_restarts: L-BFGS starts (the previous plan is always one of them).
        maxiter: L-BFGS iterations.
    """

    def __init__(
        self,
        chart: str = "sphere",
        legs: int = 3,
        horizon_km: float = 600.0,
        max_horizon_h: float = 10.0,
        num_particles: int | None = 600,
        endgame: float = 1.0,
        num_candidates: int = 64,
        num_restarts: int = 3,
        maxiter: int = 10,
    ) -> None:
        if legs < 1 or num_restarts < 1 or num_candidates < num_restarts:
            raise ConfigurationError(
                f"need legs >= 1 and 1 <= num_restarts <= num_candidates, got legs={legs}, "
                f"num_restarts={num_restarts}, num_candidates={num_candidates}."
            )
        if not (horizon_km > 0 and max_horizon_h > 0 and endgame >= 0) or (
            num_particles is not None and num_particles < 10
        ):
            raise ConfigurationError(
                "need horizon_km > 0, max_horizon_h > 0, endgame >= 0 and num_particles None or "
                f">= 10, got {horizon_km}, {max_horizon_h}, {endgame} and {num_particles}."
            )
        self.geometry = make_chart(chart)
        self.id = "manibo" if chart == "sphere" else "latlon"
        self.legs, self.horizon_km, self.max_horizon_h = legs, horizon_km, max_horizon_h
        self.num_particles, self.num_candidates = num_particles, num_candidates
        self.endgame = endgame
        self.num_restarts, self.maxiter = num_restarts, maxiter

    def start(self, brief, seed: int = 0) -> None:
        """Receive the brief; forget earlier plans (see :meth:`Planner.start`)."""
        super().start(brief, seed)
        self.plans: dict[int, tuple[Tensor, Tensor]] = {}  # asset -> (waypoints (k, 3), first)

    def horizon_h(self, asset: Asset) -> float:
        """The plan horizon :math:`T_h` of ``asset`` in hours."""
        return min(self.horizon_km / asset.speed_kmh, self.max_horizon_h)

    def propose(self, state: PlannerState) -> Tensor:
        """The first waypoint of the best plan found, clipped to the endurance."""
        acquisition = self.acquisition(state)
        starts = self.starts(state, acquisition)
        step = self._step_km(acquisition) / EARTH_RADIUS_KM  # radians (sphere and chart alike)
        options = LBFGSOptions(maxiter=self.maxiter, max_step=step)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BotorchWarning)
            best, _ = optimize_acqf_on_space(
                acquisition,
                self.geometry.space,
                q=self.legs,
                batch_initial_conditions=starts,
                options=options,
            )
        plan = self.geometry.to_sphere(best.detach())
        first = self.within_endurance(state, plan[0])
        self.plans[state.asset] = (plan, first)
        return first

    def acquisition(self, state: PlannerState) -> PlanValue:
        """The value of every plan at this decision, on the posterior after the other assets'
        pending and planned legs, drawn down to :attr:`num_particles` particles."""
        belief, drift = state.belief, self.brief.drift
        others = list(state.pending) + self._planned_legs(state)
        weights = belief.weights
        if others:
            weights = weights * torch.exp(-total_hazard(others, drift, belief.positions))
        weights = weights / weights.sum() if float(weights.sum()) > 0 else belief.weights
        if self.num_particles is None:
            points = self.geometry.from_sphere(belief.positions)
        else:
            index = _systematic(weights, self.num_particles, self.generator)
            points = self.geometry.from_sphere(belief.positions[index])
            weights = torch.full((index.shape[0],), 1.0 / index.shape[0], dtype=points.dtype)
        asset = self.brief.assets[state.asset]
        left = state.deadline_h - state.time_h
        homeward = asset.returns_to_base and (
            left - float(asset.hours(state.position, asset.start))
            < self.endgame * self.horizon_h(asset)
        )
        return PlanValue(
            self.geometry,
            points,
            weights.to(points),
            asset,
            self.geometry.from_sphere(state.position),
            state.time_h,
            state.deadline_h,
            self.horizon_h(asset),
            drift,
            homeward,
        )

    def starts(self, state: PlannerState, acquisition: PlanValue) -> Tensor:
        """Starts of the optimiser ``(r, k, d)``: a greedy rollout, the previous plan carried on,
        and the best of straight lines through particles drawn by weight on random headings."""
        geometry, asset = self.geometry, self.brief.assets[state.asset]
        legs = self.legs
        draw = torch.randint(
            acquisition.points.shape[0], (self.num_candidates,), generator=self.generator
        )
        water = geometry.to_sphere(acquisition.points[draw.to(acquisition.points.device)])
        fixed = [self._rollout(state, acquisition, water, legs)]
        carried = self._carried_plan(state, acquisition, legs)
        if carried is not None:
            fixed.append(carried)
        met, _ = intercept(state.position, water, state.time_h, asset, self.brief.drift)
        heading = 2 * math.pi * torch.rand(self.num_candidates, generator=self.generator)
        step = torch.full_like(heading, self._step_km(acquisition) * 3).to(met)
        waypoints = [geometry.from_sphere(met)]
        if legs > 1:
            waypoints.append(geometry.towards(waypoints[0], heading.to(met), step))
        for _ in range(2, legs):
            waypoints.append(geometry.step_km(waypoints[-2], waypoints[-1], step))
        lines = torch.stack(waypoints, dim=1)
        with torch.no_grad():
            values = acquisition(lines)
        best = torch.topk(values, max(self.num_restarts - len(fixed), 0)).indices
        return torch.cat([torch.stack(fixed), lines[best]])

    def _rollout(
        self, state: PlannerState, acquisition: PlanValue, water: Tensor, legs: int
    ) -> Tensor:
        """The greedy plan: ``legs`` times, the leg to the candidate water (comoving ``(m, 3)``)
        with the highest POS per hour (legs shorter than a share of the horizon counted as
        that long), each leg's sweep counted as a miss before the next; ``(legs, d)``."""
        value = PlanValue(
            acquisition.geometry,
            acquisition.points,
            acquisition.weights,
            acquisition.asset,
            acquisition.position,
            acquisition.time_h,
            acquisition.deadline_h,
            acquisition.horizon_h / legs,
            acquisition.drift,
        )
        asset, plan = self.brief.assets[state.asset], []
        for _ in range(legs):
            here = self.geometry.to_sphere(value.position)
            met, _ = intercept(here, water, value.time_h, asset, self.brief.drift)
            ends = self.geometry.from_sphere(met).unsqueeze(-2)
            with torch.no_grad():
                best = ends[int(torch.argmax(value(ends)))]
                times, hazard = value.sweeps(best.unsqueeze(0))
            plan.append(best[0])
            value = value.after(best[0], float(times[0, -1]) - value.time_h, hazard[0, 0])
        return torch.stack(plan)

    def _step_km(self, acquisition: PlanValue) -> float:
        """A third of the plan's mean leg: the optimiser's first step and the lines' spacing."""
        return acquisition.asset.speed_kmh * acquisition.horizon_h / self.legs / 3

    def _carried_plan(
        self, state: PlannerState, acquisition: PlanValue, legs: int
    ) -> Tensor | None:
        """The asset's previous plan, its flown first waypoint dropped, cut or continued to
        ``legs`` waypoints (continued straight on, or, heading home, by a leg of length 0)."""
        previous = self.plans.get(state.asset)
        if previous is None or not torch.equal(previous[1], state.position):
            return None
        plan = self.geometry.from_sphere(previous[0])[1:]
        if plan.shape[0] == 0:
            return None
        while plan.shape[0] < legs:
            if acquisition.homeward or plan.shape[0] < 2:
                extra = plan[-1]
            else:
                step = plan.new_tensor(self._step_km(acquisition) * 3)
                extra = self.geometry.step_km(plan[-2], plan[-1], step)
            plan = torch.cat([plan, extra.unsqueeze(0)])
        return plan[:legs]

    def _planned_legs(self, state: PlannerState) -> list[Leg]:
        """The other assets' planned legs after the ones they are flying now."""
        legs = []
        for leg in state.pending:
            plan = self.plans.get(leg.asset)
            if plan is None or not torch.equal(plan[1], leg.end):
                continue  # not a leg of this planner's plan (e.g. the way home)
            asset, time_h, position = self.brief.assets[leg.asset], leg.arrive_h, leg.end
            for waypoint in plan[0][1:]:
                hours = float(asset.hours(position, waypoint))
                legs.append(Leg(leg.asset, position, waypoint, time_h, time_h + hours, asset.sweep))
                time_h, position = time_h + hours, waypoint
        return legs


def _systematic(weights: Tensor, count: int, generator: torch.Generator) -> Tensor:
    """Indices of ``count`` draws by ``weights`` with systematic resampling, ``(count,)``."""
    cumulative = weights.double().cpu().cumsum(0)
    cumulative = cumulative / cumulative[-1]
    u = (torch.rand(1, generator=generator, dtype=torch.float64) + torch.arange(count)) / count
    index = torch.searchsorted(cumulative, u).clamp(max=weights.shape[0] - 1)
    return index.to(weights.device)
