r"""A scenario's hidden world, shared by every planner: the object's path and its detection luck.

Planners are compared with **common random numbers**: everything random about the world is drawn
from the scenario's seed, independently of what the planners do, so that two planners differ only
by their choices, not by their luck. Each planner's own outcome distribution is exactly the one of
the sensor model (:mod:`manibo.search.sensor`).

**The object's path** (:class:`ObjectTrack`). The current's rotation commutes with isotropic
diffusion, so the object is a Brownian path :math:`y(t)` in the comoving frame of the drift, carried
by the rotation: :math:`X(t) = R(t)\,y(t)`. The path :math:`y` is drawn once per scenario on knots
every ``knot_hours`` (geodesic steps of :meth:`~manibo.search.drift.Drift.diffuse`) and joined by
great-circle arcs, so the object is where it is whenever and however often a planner looks.

**Detection** (:class:`DetectionDraws`). A search at distance :math:`d_k` from the object makes
the object cause a contact with probability :math:`b_k = b(d_k)`, independently of the earlier
searches. Instead of one coin per search, the scenario draws thresholds
:math:`E_1, E_2, \dots \sim \mathrm{Exp}(1)` and the object causes its :math:`j`-th contact at the
first search where the hazard accumulated since its previous contact,
:math:`H = \sum_k -\log(1 - b_k)`, exceeds :math:`E_j`. By the memorylessness of the exponential,
given that :math:`E_j` exceeds the hazard :math:`H` so far, the next search exceeds it with
probability :math:`1 - e^{-h_k} = b_k`: each search's contact is a Bernoulli(:math:`b_k`) given the
past, so the law of every planner's outcomes is unchanged; in particular
:math:`P(\text{no contact in } K \text{ searches}) = P(E_1 \ge H_K) = \prod_k (1 - b_k)`. The rest
of the sensor model uses its own common numbers: the :math:`j`-th contact the object causes is
confirmed (the object is found) when :math:`U_j < c`; a search at which the object causes no
contact reports a false contact when :math:`V_k < \alpha`, with :math:`V_k` the uniform of the
:math:`k`-th search; the sensor's reliability :math:`q` is part of :math:`b` and so of the hazard.

Planners are therefore compared on the same luck: the same :math:`E_1` for all of them, so the one
whose searches pile up hazard on the object faster finds it sooner, and two planners that make the
same searches get identical outcomes and the same time to detection.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.search.drift import Drift
from manibo.search.geography import check_points, move_fraction
from manibo.search.sensor import Outcome, Sensor

#: Spacing of the knots of the object's diffusion path, in hours.
KNOT_HOURS = 0.5


class ObjectTrack:
    r"""The hidden object's path: drawn once per scenario, identical for every planner.

    Args:
        start: the object's position at mission time 0, ``(3,)``.
        drift: the current (rotation) and diffusion that move it.
        seed: seeds the diffusion path.
        knot_hours: spacing of the path's knots; between knots the comoving path follows the
            great-circle arc (the Brownian bridge's wiggle left out, :math:`\sqrt{D\,\Delta t / 2}`
            per direction at mid-knot, is 0.6 km for :math:`D = 30` km²/day).
    """

    def __init__(
        self, start: Tensor, drift: Drift, seed: int, knot_hours: float = KNOT_HOURS
    ) -> None:
        check_points("start", start)
        if not (math.isfinite(knot_hours) and knot_hours > 0):
            raise ConfigurationError(f"`knot_hours` must be positive, got {knot_hours!r}.")
        self.drift = drift
        self.knot_hours = float(knot_hours)
        self._generator = torch.Generator().manual_seed(int(seed))
        self._knots = [start]

    def position(self, hours: float) -> Tensor:
        """Where the object is at mission time ``hours`` (>= 0); shape ``(3,)``."""
        if not (math.isfinite(hours) and hours >= 0):
            raise ConfigurationError(f"`hours` must be a time >= 0, got {hours!r}.")
        index = int(hours // self.knot_hours)
        while len(self._knots) < index + 2:
            self._knots.append(
                self.drift.diffuse(self._knots[-1], self.knot_hours, self._generator)
            )
        fraction = hours / self.knot_hours - index
        a, b = self._knots[index], self._knots[index + 1]
        comoving = a if fraction == 0 or torch.equal(a, b) else move_fraction(a, b, fraction)
        return self.drift.advect(comoving, hours)


class DetectionDraws:
    """Outcomes of one mission's searches from the scenario's common random numbers.

    Create one per mission with the scenario's seed (the draws are consumed as the mission goes);
    see the module docstring for why each planner's outcome law is exactly the sensor's.

    Args:
        sensor: the detection model.
        seed: the scenario's seed for detection.
    """

    def __init__(self, sensor: Sensor, seed: int) -> None:
        self.sensor = sensor
        self._contacts = torch.Generator().manual_seed(int(seed))  # (E_j, U_j) per caused contact
        self._looks = torch.Generator().manual_seed(int(seed) + 1)  # V_k per search
        self.hazard = 0.0
        self._next_contact()

    def _next_contact(self) -> None:
        u = torch.rand(2, generator=self._contacts, dtype=torch.float64)
        self.threshold = -math.log1p(-float(u[0]))  # Exp(1)
        self.confirm_draw = float(u[1])
        self.hazard = 0.0

    def outcome(self, distance_km: float) -> Outcome:
        """What the next search reports with the object at ``distance_km`` (a float) from it."""
        distance = torch.tensor(float(distance_km), dtype=torch.float64)
        b = float(self.sensor.detection_probability(distance))
        false_draw = float(torch.rand(1, generator=self._looks, dtype=torch.float64))
        self.hazard += math.inf if b >= 1 else -math.log1p(-b)
        if self.hazard > self.threshold:  # the object causes a contact
            confirmed = self.confirm_draw < self.sensor.confirm_pod
            self._next_contact()
            return Outcome.FOUND if confirmed else Outcome.CONTACT
        return Outcome.CONTACT if false_draw < self.sensor.false_alarm else Outcome.NOTHING
