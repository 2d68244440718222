r"""The mission simulator: a planner searches for a hidden drifting object until found or late.

One step: the planner proposes a search point; the asset transits there along a great circle while
the object and the belief drift; it searches (the outcome is drawn from the sensor model with the
true object); the exact belief is updated; a contact costs an investigation. The object's position
is used only to draw outcomes, never shown to the planner. The step also records, for the metrics,
the exact value (POS) of the chosen search and of the best candidate search at that decision.

The world is drawn with common random numbers (:mod:`manibo.search.truth`): the object's path and
the detection thresholds come from the scenario's seed and do not depend on the planner, so every
planner of a scenario searches for the same object with the same luck.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.search.assets import Asset
from manibo.search.belief import ParticleBelief
from manibo.search.drift import Drift
from manibo.search.geography import check_points, distance_km
from manibo.search.ocean import OceanMask
from manibo.search.planners.base import MissionBrief, Planner, PlannerState, SearchRecord
from manibo.search.planners.greedy import best_search_rate
from manibo.search.prior import PriorMixture
from manibo.search.sensor import Outcome, Sensor
from manibo.search.truth import DetectionDraws, ObjectTrack

DEFAULT_PARTICLES = 1500
REGRET_CANDIDATES = 128


@dataclass(frozen=True)
class Scenario:
    """A lost-object mission: the prior, the physics, the asset, and the hidden truth.

    Attributes:
        name: label.
        lkp: last known position ``(3,)``.
        origin: where the route came from ``(3,)`` (for maps).
        destination: where the route led ``(3,)``; the corridor runs towards it.
        sighting: the reverse-drifted debris sighting ``(3,)``.
        prior: the prior mixture (masked to the ocean).
        drift: the current that moves the object.
        sensor: the detection model.
        asset: the search asset.
        start: the asset's position at mission time 0, ``(3,)``.
        truth: the object's position at mission time 0, ``(3,)`` (drawn from the prior).
        mask: the ocean mask.
        seed: seed of everything random in the scenario.
    """

    name: str
    lkp: Tensor
    origin: Tensor
    destination: Tensor
    sighting: Tensor
    prior: PriorMixture
    drift: Drift
    sensor: Sensor
    asset: Asset
    start: Tensor
    truth: Tensor
    mask: OceanMask | None
    seed: int


@dataclass
class StepRecord:
    """One search of a mission.

    Attributes:
        index: 0 for the first search.
        point: where it searched ``(3,)``.
        depart_h: mission time when the asset left for it; ``arrive_h`` when the search began;
            ``end_h`` when the search (and any investigation) ended.
        transit_km: great-circle distance flown or sailed.
        outcome: what the search reported.
        pos: its probability of success given that earlier searches failed (unfound prior mass).
        cumulative_pos: probability that the searches so far found the object.
        value: POS of this search under the exact posterior at the decision.
        best_value: highest POS of a candidate search under the same posterior (travel ignored).
        best_rate: highest POS per hour (transit plus search) of a candidate search.
        truth_distance_km: distance from the searched point to the object (for narration only).
    """

    index: int
    point: Tensor
    depart_h: float
    arrive_h: float
    end_h: float
    transit_km: float
    outcome: Outcome
    pos: float
    cumulative_pos: float
    value: float
    best_value: float
    best_rate: float
    truth_distance_km: float


@dataclass
class MissionRecord:
    """The whole mission of one planner in one scenario.

    Attributes:
        scenario: scenario name; ``planner``: planner name.
        start: the asset's starting point ``(3,)``.
        steps: the searches, in order.
        found: whether the object was found; ``time_to_detection_h`` when (None if not).
        truth_track: the object's position at each search ``(len(steps), 3)``.
        belief: the exact belief at the end of the mission.
        endurance_h: the asset's endurance.
        search_hours: dwell per search.
    """

    scenario: str
    planner: str
    start: Tensor
    steps: list[StepRecord]
    found: bool
    time_to_detection_h: float | None
    truth_track: Tensor
    belief: ParticleBelief
    endurance_h: float
    search_hours: float


def prior_particles(scenario: Scenario, num_particles: int = DEFAULT_PARTICLES) -> Tensor:
    """The prior sample shared by every planner in ``scenario``, ``(num_particles, 3)``."""
    generator = torch.Generator().manual_seed(scenario.seed * 7919 + 1)
    return scenario.prior.sample(num_particles, generator)


def simulate(
    scenario: Scenario,
    planner: Planner,
    num_particles: int = DEFAULT_PARTICLES,
    on_step: Callable[[StepRecord, ParticleBelief], None] | None = None,
    max_steps: int = 10_000,
    stop_at_detection: bool = True,
) -> MissionRecord:
    """Run one mission.

    Every planner in a scenario sees the same prior particles and searches for the same object
    (its path and its detection draws are common random numbers, see :mod:`manibo.search.truth`):
    differences between planners come from their choices.

    Args:
        scenario: the mission.
        planner: chooses the search points.
        num_particles: particles of the exact belief (and of the prior told to the planner).
        on_step: called after each search with its record and the updated belief.
        max_steps: a safety cap on the number of searches.
        stop_at_detection: end the mission when the object is found (a real mission). False
            plays the whole plan for evaluation: a confirmed contact is recorded (the record's
            ``found`` and ``time_to_detection_h`` are the first one), but the planner and the
            belief are told that the contact was not confirmed, so the mission goes on as it would
            have without the detection, until the endurance runs out. The cumulative POS of such
            a record at time t is then the plan's probability of success by t, free of the luck of
            the detection draws.

    Returns:
        The mission record.
    """
    if num_particles < 10:
        raise ConfigurationError(f"`num_particles` must be at least 10, got {num_particles}.")
    particles = prior_particles(scenario, num_particles)
    belief = ParticleBelief(particles)
    brief = MissionBrief(
        lkp=scenario.lkp,
        prior_particles=particles.clone(),
        drift=scenario.drift,
        sensor=scenario.sensor,
        asset=scenario.asset,
        start=scenario.start,
        mask=scenario.mask,
    )
    planner.start(brief, seed=scenario.seed)
    world = ObjectTrack(scenario.truth, scenario.drift, seed=scenario.seed * 7919 + 2)
    draws = DetectionDraws(scenario.sensor, seed=scenario.seed * 7919 + 6)
    model = torch.Generator().manual_seed(scenario.seed * 7919 + 3)  # the belief's particles
    asset, sensor, drift = scenario.asset, scenario.sensor, scenario.drift
    time_h, position = 0.0, scenario.start
    steps, history, track, found_at = [], [], [], None
    for index in range(max_steps):
        point = planner.propose(PlannerState(time_h, position, belief, list(history)))
        check_points("the planner's proposal", point)
        transit = float(asset.transit_hours(position, point))
        if time_h + transit + asset.search_hours > asset.endurance_hours:
            break
        candidates = belief.sample_points(REGRET_CANDIDATES, model)
        rates, values, _ = best_search_rate(belief, position, brief, candidates)
        depart = time_h
        belief.drift(drift, transit, model)
        value_now = float(belief.probability_of_success(sensor, point.unsqueeze(0))[0])
        time_h += transit
        truth = world.position(time_h)
        true_distance = float(distance_km(point, truth))
        outcome = draws.outcome(true_distance)
        if outcome == Outcome.FOUND and found_at is None:
            found_at = time_h + asset.search_hours + asset.investigate_hours
        seen = Outcome.CONTACT if outcome == Outcome.FOUND and not stop_at_detection else outcome
        pos = belief.update(sensor, point, seen)
        dwell = asset.search_hours + (asset.investigate_hours if outcome != Outcome.NOTHING else 0)
        record = StepRecord(
            index=index,
            point=point,
            depart_h=depart,
            arrive_h=time_h,
            end_h=time_h + dwell,
            transit_km=transit * asset.speed_kmh,
            outcome=outcome,
            pos=pos,
            cumulative_pos=belief.cumulative_pos,
            value=max(value_now, 0.0),
            best_value=max(float(values.max()), value_now),
            best_rate=float(rates.max()),
            truth_distance_km=true_distance,
        )
        steps.append(record)
        track.append(truth)
        history.append(SearchRecord(point, time_h, seen))
        if on_step is not None:
            on_step(record, belief)
        if seen == Outcome.FOUND:
            break
        belief.drift(drift, dwell, model)
        time_h += dwell
        position = point
    return MissionRecord(
        scenario=scenario.name,
        planner=planner.name,
        start=scenario.start,
        steps=steps,
        found=found_at is not None,
        time_to_detection_h=found_at,
        truth_track=torch.stack(track) if track else scenario.truth.unsqueeze(0),
        belief=belief,
        endurance_h=asset.endurance_hours,
        search_hours=asset.search_hours,
    )
