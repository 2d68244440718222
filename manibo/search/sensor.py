r"""The search sensor: detection probability against great-circle distance, false alarms, checks.

One *search* is a look at a point :math:`s` for a fixed dwell. With the object at :math:`x`, at
great-circle distance :math:`d = d(s, x)` km:

* the object causes a contact with probability :math:`b(d) = q\,p_{\max} \exp(-\tfrac12 (d/\rho)^k)`
  (the lateral-range curve; :math:`q` is the probability that the sensor works on this look);
* a false contact appears with probability :math:`\alpha`, independently;
* every contact is investigated; the object is *found* when it caused the contact and the
  investigation confirms it (probability :math:`c`).

So the three outcomes have likelihoods

.. math::
    P(\text{found}\mid x) = b c,\quad
    P(\text{contact, not confirmed}\mid x) = b(1-c) + (1-b)\alpha,\quad
    P(\text{nothing}\mid x) = (1-b)(1-\alpha),

and an unsuccessful search with no contact updates a belief by :math:`p \propto p(1 - b)`
(the constant :math:`1-\alpha` cancels). "Not seen" is not "absent" as long as :math:`b < 1`.
The simulator draws the outcomes from this model with common random numbers
(:class:`manibo.search.truth.DetectionDraws`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError


class Outcome(IntEnum):
    """What one search reports."""

    NOTHING = 0
    CONTACT = 1  # a contact that the investigation did not confirm
    FOUND = 2


@dataclass(frozen=True)
class Sensor:
    r"""Detection model of one search (see the module docstring for the likelihoods).

    Attributes:
        range_km: :math:`\rho`, the distance at which the detection probability has fallen to
            :math:`e^{-1/2}` of its peak (for ``shape = 2``).
        max_pod: :math:`p_{\max}`, the detection probability on top of the object.
        shape: :math:`k`; 2 is a Gaussian beam, large values approach a definite-range sensor.
        false_alarm: :math:`\alpha`, probability of a false contact per search.
        confirm_pod: :math:`c`, probability that investigating a contact caused by the object
            confirms it.
        reliability: :math:`q`, probability that the sensor works on a given search (the AF447
            lesson: a sensor that may have failed makes a negative search weaker evidence).
    """

    range_km: float = 30.0
    max_pod: float = 0.85
    shape: float = 2.0
    false_alarm: float = 0.03
    confirm_pod: float = 0.95
    reliability: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.range_km) and self.range_km > 0):
            raise ConfigurationError(
                f"`range_km` must be a positive distance, got {self.range_km!r}."
            )
        if not (math.isfinite(self.shape) and self.shape > 0):
            raise ConfigurationError(
                f"`shape` must be positive (2 = Gaussian beam), got {self.shape!r}."
            )
        for name in ("max_pod", "confirm_pod", "reliability"):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise ConfigurationError(f"`{name}` is a probability in [0, 1], got {value!r}.")
        if not 0 <= self.false_alarm < 1:
            raise ConfigurationError(
                f"`false_alarm` is a probability in [0, 1), got {self.false_alarm!r}."
            )

    @property
    def sweep_width_km(self) -> float:
        r"""Sweep width :math:`W = \int b(r)\,dr = 2 q p_{\max} \rho\, 2^{1/k}\Gamma(1 + 1/k)`."""
        k = self.shape
        return (
            2
            * self.reliability
            * self.max_pod
            * self.range_km
            * 2 ** (1 / k)
            * math.gamma(1 + 1 / k)
        )

    def detection_probability(self, distance_km: Tensor) -> Tensor:
        r""":math:`b(d)`: probability that the object at ``distance_km`` causes a contact.

        Args:
            distance_km: great-circle distances, any shape.

        Returns:
            Same shape, dtype and device.
        """
        peak = self.reliability * self.max_pod
        if self.shape == 2:  # the Gaussian beam, in three operations (the planners' hot path)
            return peak * torch.exp(distance_km.square() * (-0.5 / self.range_km**2))
        return peak * torch.exp(-0.5 * (distance_km / self.range_km).abs() ** self.shape)

    def likelihood(self, outcome: Outcome, distance_km: Tensor) -> Tensor:
        """Probability of ``outcome`` with the object ``distance_km`` from the searched point."""
        b = self.detection_probability(distance_km)
        if outcome == Outcome.FOUND:
            return b * self.confirm_pod
        if outcome == Outcome.CONTACT:
            return b * (1 - self.confirm_pod) + (1 - b) * self.false_alarm
        return (1 - b) * (1 - self.false_alarm)
