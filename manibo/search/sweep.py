r"""Detection along a track: lateral range curves, sweep width, and the hazard of a straight leg.

A search asset detects continuously while it moves. Seen from the object, a straight track at
closest approach :math:`x` (the *lateral range*) detects it with probability :math:`p(x)`, the
*lateral range curve*; its integral is the *sweep width* :math:`W = \int p(x)\,dx` (Koopman 1946;
the IAMSAR manual tabulates :math:`W` by sensor, object and weather). Two laws are modelled:

* **definite range** ("cookie cutter"): the object is detected when it passes within :math:`W/2`
  abeam of the track, :math:`p(x) = \mathbb 1\{|x| \le W/2\}`;
* **inverse cube** (Koopman's law for a searcher looking down at the sea): the instantaneous
  detection rate at range :math:`r` is proportional to :math:`r^{-3}`, so a straight pass has
  :math:`p(x) = 1 - \exp(-W^2 / (4\pi x^2))`.

For a leg of finite length the detection is written as a *hazard* :math:`H` (the integral of the
detection rate along the leg), :math:`P(\text{detect}) = 1 - e^{-H}`. Hazards of several legs and
several assets add, which is how the belief combines independent looks: :math:`P(\text{missed by
all}) = \prod_k e^{-H_k}`. For the inverse-cube law, an object at cross-track distance :math:`x`
and along-track position :math:`u` of a leg :math:`[0, L]` has

.. math::
    H = \frac{W^2}{8\pi} \int_{-u}^{L-u} \frac{ds}{(x^2 + s^2)^{3/2}},

which tends to :math:`W^2 / (4\pi x^2)` for an infinitely long leg. For the definite-range law the
hazard is infinite for an object abeam of the leg (:math:`0 \le u \le L`) within :math:`W/2` and 0
elsewhere. Random search with either law gives Koopman's exponential detection function
:math:`1 - \exp(-WL/A)` (tested).

On the globe a leg is an arc of a great circle: the cross-track distance is
:math:`R \arcsin(y \cdot n)` with :math:`n` the arc's pole, and the along-track position is the
angle from the arc's start measured along the great circle; the planar formulas above are applied
to these coordinates (exact to :math:`O((x/R)^2)`, below :math:`10^{-4}` relative at 60 km).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.geo import EARTH_RADIUS_KM

SWEEP_LAWS = ("inverse-cube", "definite-range")
#: The widest sweep modelled (km). The planar formulas err by about (x/R)² at lateral range x
#: (2.5% at 1000 km); search sensors sweep tens of km, so a wider width is most likely in metres.
MAX_SWEEP_WIDTH_KM = 1000.0
#: Squared cross-track distance (km²) below which an object counts as on the track line: keeps
#: the inverse-cube hazard finite (then about 10⁷ W² / km², i.e. certain detection).
_MIN_CROSS_SQUARED_KM2 = 1e-6
#: Width (in units of W) of the logistic edges of the smoothed definite-range sweep.
_SMOOTH_EDGE = 0.05


@dataclass(frozen=True)
class SweepLaw:
    """A sensor's lateral range curve: its sweep width and law.

    Attributes:
        width_km: the sweep width :math:`W` (km), the integral of the lateral range curve; at
            most :data:`MAX_SWEEP_WIDTH_KM`.
        law: ``"inverse-cube"`` (Koopman's law, smooth) or ``"definite-range"`` (cookie cutter).
    """

    width_km: float
    law: str = "inverse-cube"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.width_km) and self.width_km > 0):
            raise ConfigurationError(
                f"`width_km` must be a positive sweep width in km, got {self.width_km!r}."
            )
        if self.width_km > MAX_SWEEP_WIDTH_KM:
            raise ConfigurationError(
                f"`width_km` is the sweep width in km, and {self.width_km!r} km is wider than the "
                f"{MAX_SWEEP_WIDTH_KM:.0f} km the lateral range model holds for (search sensors "
                f"sweep tens of km). If it was given in metres, pass "
                f"{float(self.width_km) / 1000!r}."
            )
        if self.law not in SWEEP_LAWS:
            raise ConfigurationError(f"`law` must be one of {SWEEP_LAWS}, got {self.law!r}.")

    def lateral_range(self, cross_km: Tensor) -> Tensor:
        r"""Detection probability :math:`p(x)` of an infinitely long straight pass at ``cross_km``.

        Args:
            cross_km: lateral ranges (km), any shape.

        Returns:
            Same shape, dtype and device.
        """
        if self.law == "definite-range":
            return (cross_km.abs() <= self.width_km / 2).to(cross_km.dtype)
        x2 = (cross_km * cross_km).clamp_min(_MIN_CROSS_SQUARED_KM2)
        return -torch.expm1(-(self.width_km**2 / (4 * math.pi)) / x2)

    def hazard(self, cross_km: Tensor, along_km: Tensor, length_km: Tensor) -> Tensor:
        r"""Hazard :math:`H` of a straight leg ``[0, length_km]`` for objects at (cross, along).

        Args:
            cross_km: cross-track distances (km), shape ``(*batch)``.
            along_km: along-track positions from the leg's start (km), shape ``(*batch)``.
            length_km: leg lengths (km), broadcastable to ``(*batch)``.

        Returns:
            ``(*batch)``: :math:`H \ge 0` (``inf`` inside a definite-range sweep), so that the leg
            detects with probability :math:`1 - e^{-H}`.
        """
        if self.law == "definite-range":
            inside = (cross_km.abs() <= self.width_km / 2) & (along_km >= 0)
            inside = inside & (along_km <= length_km) & (length_km > 0)
            zero = torch.zeros_like(cross_km)
            return torch.where(inside, torch.full_like(cross_km, math.inf), zero)
        return self._inverse_cube(cross_km, along_km, length_km)

    def smooth_hazard(self, cross_km: Tensor, along_km: Tensor, length_km: Tensor) -> Tensor:
        r"""A hazard differentiable in the leg, for planners; shapes as in :meth:`hazard`.

        The inverse-cube hazard is smooth already and is returned as is. The definite-range sweep
        becomes :math:`-\log(1 - \sigma(\tfrac{W/2 - |x|}{\delta})[\sigma(\tfrac{u}{\delta}) -
        \sigma(\tfrac{u - L}{\delta})])` with :math:`\delta = 0.05 W`: the same sweep with logistic
        edges, which still vanishes for a leg of length 0.
        """
        if self.law == "inverse-cube":
            return self._inverse_cube(cross_km, along_km, length_km)
        edge = _SMOOTH_EDGE * self.width_km
        across = torch.sigmoid((self.width_km / 2 - cross_km.abs()) / edge)
        window = torch.sigmoid(along_km / edge) - torch.sigmoid((along_km - length_km) / edge)
        return -torch.log1p(-(across * window).clamp(0.0, 1 - 1e-6))

    def _inverse_cube(self, cross: Tensor, along: Tensor, length: Tensor) -> Tensor:
        # I = int_{-u}^{L-u} (x² + s²)^(-3/2) ds = T(-u) - T(L - u) with the tail T(z) = int_z^inf
        # = [z < 0] 2/x² ± 1 / (r (r + |z|)) (+ for z >= 0), r = sqrt(x² + z²): written so, the
        # 2/x² terms cancel exactly (their coefficient is 0 or 1) and nothing else cancels
        x2 = (cross * cross).clamp_min(_MIN_CROSS_SQUARED_KM2)
        low, high = -along, length - along
        r_low, r_high = (x2 + low * low).sqrt(), (x2 + high * high).sqrt()
        if x2.dtype == torch.float64:
            # I = (z/r)|_low^high / x²: for an object far off a leg's end on its line the two
            # terms cancel, but the error, 1e-16 / x² <= 1e-10 hazard units, is negligible
            return (self.width_km**2 / (8 * math.pi)) * (high / r_high - low / r_low) / x2
        behind_low, behind_high = (low < 0).to(x2.dtype), (high < 0).to(x2.dtype)
        tails = (1 - 2 * behind_low) / (r_low * (r_low + low.abs()))
        tails = tails - (1 - 2 * behind_high) / (r_high * (r_high + high.abs()))
        abeam = behind_low - behind_high
        return (self.width_km**2 / (8 * math.pi)) * (abeam * (2 / x2) + tails)


def leg_coordinates(points: Tensor, start: Tensor, end: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    r"""Cross-track distance, along-track position and length of great-circle legs, in km.

    Args:
        points: unit vectors ``(n, 3)`` (the objects, or particles).
        start: legs' first ends, unit vectors ``(*batch, m, 3)``.
        end: legs' last ends, same shape.

    Returns:
        ``(cross (*batch, m, n), along (*batch, m, n), length (*batch, m))``. Differentiable in
        ``start`` and ``end`` everywhere, also for legs of length 0 (whose hazard is 0 under
        either law).
    """
    pole = torch.linalg.cross(start, end, dim=-1)
    sine = (pole * pole).sum(-1, keepdim=True).clamp_min(torch.finfo(pole.dtype).tiny).sqrt()
    pole = pole / sine.clamp_min(1e-15)
    heading = torch.linalg.cross(pole, start, dim=-1)  # direction of travel at the start
    length = EARTH_RADIUS_KM * torch.atan2(sine.squeeze(-1), (start * end).sum(-1))
    cross = EARTH_RADIUS_KM * torch.asin((pole @ points.T).clamp(-1.0, 1.0))
    along = EARTH_RADIUS_KM * torch.atan2(heading @ points.T, start @ points.T)
    return cross, along, length


def leg_hazard(
    sweep: SweepLaw, points: Tensor, start: Tensor, end: Tensor, smooth: bool = False
) -> Tensor:
    """Hazard of great-circle legs for points: :meth:`SweepLaw.hazard` on :func:`leg_coordinates`.

    Args:
        sweep: the sensor's law.
        points: unit vectors ``(n, 3)``.
        start: legs' first ends ``(*batch, m, 3)``.
        end: legs' last ends, same shape.
        smooth: use :meth:`SweepLaw.smooth_hazard` (for planners' gradients).

    Returns:
        ``(*batch, m, n)``.
    """
    cross, along, length = leg_coordinates(points, start, end)
    law = sweep.smooth_hazard if smooth else sweep.hazard
    return law(cross, along, length.unsqueeze(-1))
