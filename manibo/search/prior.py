r"""The prior on the object's position: a mixture of scenario components on :math:`S^2`, at sea.

Real search planning (Stone et al. 2014 for AF447; USCG SAROPS) builds the prior as a weighted
mixture of scenarios. The components here are

* :class:`GaussianBlob` — a circular normal around a point: the tangent-plane Gaussian pushed onto
  the sphere by the exponential map (for the last known position, or for a reverse-drifted debris
  sighting);
* :class:`RouteCorridor` — the object flew on along the great-circle route ahead of the last known
  position: along-track distance uniform on :math:`[0, L]`, cross-track distance normal;
* :class:`ArcBand` — a band along an arc of a *small* circle, as a satellite's range measurement
  gives (the MH370 "seventh arc": the aircraft was at a known distance from the satellite's
  sub-point): along-arc position uniform or normal, distance across the arc normal.

:class:`PriorMixture` draws samples (the particles of the exact belief) and keeps only those over
the ocean, component by component: each component is conditioned on the ocean and keeps its weight,
so the density is :math:`p_0(x) = \sum_j w_j\, \mathbb{1}\{\text{ocean}(x)\}\, p_j(x) / Z_j`
with :math:`Z_j` the probability that component :math:`j` lies over the ocean. The weights are the
probabilities of the scenarios as the analyst gave them, and within each scenario the object is at
sea. (Conditioning the whole mixture on the ocean instead would reweight scenario :math:`j` by
:math:`Z_j`, e.g. shrink a route corridor that runs mostly over land.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.geo import EARTH_RADIUS_KM, check_points, offset
from manibo.search.ocean import OceanMask


class PriorComponent(Protocol):
    """A component of the prior mixture: something that draws points on the globe."""

    name: str

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        """Draw ``n`` points, shape ``(n, 3)``, with the CPU ``generator``."""


def _positive(name: str, value: float) -> float:
    if not (math.isfinite(value) and value > 0):
        raise ConfigurationError(f"`{name}` must be a positive number of km, got {value!r}.")
    return float(value)


class GaussianBlob:
    """Circular normal of standard deviation ``sigma_km`` around ``center``, optionally truncated.

    Args:
        center: unit vector ``(3,)``.
        sigma_km: standard deviation of each tangent coordinate.
        max_km: samples farther than this from ``center`` are redrawn (None: no truncation).
        name: label used in reports.
    """

    def __init__(
        self, center: Tensor, sigma_km: float, max_km: float | None = None, name: str = "blob"
    ) -> None:
        check_points("center", center)
        self.center = center
        self.sigma_km = _positive("sigma_km", sigma_km)
        self.max_km = None if max_km is None else _positive("max_km", max_km)
        self.name = name

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        """Draw ``n`` points, shape ``(n, 3)``, in the dtype and device of ``center``."""
        parts, have = [], 0
        while have < n:
            z = torch.randn(2 * (n - have) + 8, 2, generator=generator, dtype=self.center.dtype)
            z = z * self.sigma_km
            if self.max_km is not None:
                z = z[z.norm(dim=-1) <= self.max_km]
            parts.append(z)
            have += z.shape[0]
        z = torch.cat(parts)[:n].to(self.center.device)
        return offset(self.center, z[:, 0], z[:, 1])


class RouteCorridor:
    """Along-track uniform on ``[0, length_km]`` from ``start`` to ``toward``; cross-track normal.

    The corridor follows the great circle through ``start`` and ``toward``.

    Args:
        start: unit vector ``(3,)``, the last known position.
        toward: unit vector ``(3,)``, a point ahead on the route (the destination).
        length_km: how far the aircraft may have flown on.
        cross_sigma_km: cross-track standard deviation.
        name: label used in reports.
    """

    def __init__(
        self,
        start: Tensor,
        toward: Tensor,
        length_km: float,
        cross_sigma_km: float,
        name: str = "corridor",
    ) -> None:
        check_points("start", start)
        check_points("toward", toward)
        pole = torch.linalg.cross(start, toward, dim=-1)
        if float(pole.norm()) < 1e-9:
            raise ConfigurationError(
                "`start` and `toward` are equal or antipodal: they do not define a route."
            )
        self.start, self.pole = start, pole / pole.norm()
        self.heading = torch.linalg.cross(self.pole, start, dim=-1)  # direction of travel at start
        self.length_km = _positive("length_km", length_km)
        self.cross_sigma_km = _positive("cross_sigma_km", cross_sigma_km)
        self.name = name

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        """Draw ``n`` points, shape ``(n, 3)``, in the dtype and device of ``start``."""
        dtype, device = self.start.dtype, self.start.device
        along = torch.rand(n, generator=generator, dtype=dtype).to(device) * self.length_km
        cross = torch.randn(n, generator=generator, dtype=dtype).to(device) * self.cross_sigma_km
        a = (along / EARTH_RADIUS_KM).unsqueeze(-1)
        c = (cross / EARTH_RADIUS_KM).unsqueeze(-1)
        on_route = torch.cos(a) * self.start + torch.sin(a) * self.heading
        return torch.cos(c) * on_route + torch.sin(c) * self.pole


class ArcBand:
    r"""A band along an arc of the small circle of angular radius ``radius_deg`` around ``pole``.

    The arc is centred on ``middle`` (a point of the circle) and spans ``length_km`` along the
    circle; a sample's position along the arc is uniform, or normal with ``along_sigma_km`` around
    ``along_offset_km`` from ``middle`` (then truncated to the arc), and its distance across the
    arc (radially, along the great circle through the pole) is normal with ``cross_sigma_km``.
    Points are :math:`\cos\psi\,c + \sin\psi\,(\cos\alpha\,e_1 + \sin\alpha\,e_2)` with
    :math:`c` the pole, :math:`\psi = \theta + \delta / R` and :math:`\alpha = s / (R\sin\theta)`
    for an along-arc distance :math:`s` and a cross-arc distance :math:`\delta`.

    Args:
        pole: the circle's centre (e.g. the satellite's sub-point), unit vector ``(3,)``.
        middle: a point at angular distance ``radius_deg`` from ``pole``, ``(3,)``.
        radius_deg: the circle's angular radius, in (0, 90].
        length_km: length of the arc along the circle.
        cross_sigma_km: standard deviation across the arc.
        along_sigma_km: standard deviation along the arc (None: uniform along it).
        along_offset_km: centre of the along-arc normal, from ``middle`` (counter-clockwise about
            ``pole`` is positive).
        name: label used in reports.
    """

    def __init__(
        self,
        pole: Tensor,
        middle: Tensor,
        radius_deg: float,
        length_km: float,
        cross_sigma_km: float,
        along_sigma_km: float | None = None,
        along_offset_km: float = 0.0,
        name: str = "arc",
    ) -> None:
        check_points("pole", pole)
        check_points("middle", middle)
        if not 0 < radius_deg <= 90:
            raise ConfigurationError(f"`radius_deg` must lie in (0, 90], got {radius_deg!r}.")
        theta = math.radians(radius_deg)
        if abs(float(pole @ middle) - math.cos(theta)) > 1e-6:
            raise ConfigurationError(
                f"`middle` must lie {radius_deg}° from `pole`, got "
                f"{math.degrees(math.acos(max(-1.0, min(1.0, float(pole @ middle))))):.6g}°."
            )
        self.length_km = _positive("length_km", length_km)
        if self.length_km >= 2 * math.pi * EARTH_RADIUS_KM * math.sin(theta):
            raise ConfigurationError(
                f"`length_km` = {length_km} exceeds the whole circle of radius {radius_deg}°."
            )
        self.cross_sigma_km = _positive("cross_sigma_km", cross_sigma_km)
        self.along_sigma_km = (
            None if along_sigma_km is None else _positive("along_sigma_km", along_sigma_km)
        )
        self.along_offset_km = float(along_offset_km)
        self.pole, self.theta, self.name = pole, theta, name
        first = middle - (middle @ pole) * pole
        self.first = first / first.norm()
        self.second = torch.linalg.cross(pole, self.first, dim=-1)

    def point(self, along_km: Tensor, cross_km: Tensor) -> Tensor:
        """Points at along-arc and cross-arc distances (km, ``(*batch)``); ``(*batch, 3)``."""
        alpha = (along_km / (EARTH_RADIUS_KM * math.sin(self.theta))).unsqueeze(-1)
        psi = (self.theta + cross_km / EARTH_RADIUS_KM).unsqueeze(-1)
        around = torch.cos(alpha) * self.first + torch.sin(alpha) * self.second
        return torch.cos(psi) * self.pole + torch.sin(psi) * around

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        """Draw ``n`` points, shape ``(n, 3)``, in the dtype and device of ``pole``."""
        dtype, device = self.pole.dtype, self.pole.device
        half = self.length_km / 2
        if self.along_sigma_km is None:
            along = (2 * torch.rand(n, generator=generator, dtype=dtype) - 1) * half
        else:
            parts, have = [], 0
            while have < n:
                z = torch.randn(2 * (n - have) + 8, generator=generator, dtype=dtype)
                z = self.along_offset_km + self.along_sigma_km * z
                parts.append(z[z.abs() <= half])
                have += parts[-1].shape[0]
            along = torch.cat(parts)[:n]
        cross = torch.randn(n, generator=generator, dtype=dtype) * self.cross_sigma_km
        return self.point(along.to(device), cross.to(device))


class PriorMixture:
    """Weighted mixture of components, each restricted to the ocean by rejection.

    Component :math:`j` keeps its weight :math:`w_j` whatever share of it lies over land (see the
    module docstring).

    Args:
        components: the components (:class:`GaussianBlob`, :class:`RouteCorridor`, ...).
        weights: non-negative mixture weights, one per component (normalised here).
        mask: ocean mask; samples over land are redrawn. None keeps every sample.
    """

    def __init__(
        self,
        components: Sequence[PriorComponent],
        weights: Sequence[float],
        mask: OceanMask | None = None,
    ) -> None:
        if len(components) == 0 or len(components) != len(weights):
            raise ConfigurationError(
                f"need one weight per component, got {len(components)} components and "
                f"{len(weights)} weights."
            )
        w = torch.tensor([float(v) for v in weights], dtype=torch.float64)
        if not torch.isfinite(w).all() or (w < 0).any() or float(w.sum()) <= 0:
            raise ConfigurationError(
                f"`weights` must be non-negative with a positive sum, got {list(weights)}."
            )
        self.components = list(components)
        self.weights = w / w.sum()
        self.mask = mask

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        """Draw ``n`` points over the ocean, shape ``(n, 3)``, with the CPU ``generator``.

        Each component is drawn with a multinomial count; its land samples are redrawn.

        Raises:
            ConfigurationError: when a component lies almost entirely on land (fewer than 1 in 1000
                of its samples over the ocean).
        """
        if int(n) != n or n < 1:
            raise ConfigurationError(f"`n` must be a positive integer, got {n!r}.")
        counts = torch.multinomial(self.weights, int(n), replacement=True, generator=generator)
        counts = torch.bincount(counts, minlength=len(self.components))
        parts = [
            self._sample_component(component, int(count), generator)
            for component, count in zip(self.components, counts, strict=True)
            if int(count) > 0
        ]
        points = torch.cat(parts)
        order = torch.randperm(points.shape[0], generator=generator).to(points.device)
        return points[order]

    def _sample_component(
        self, component: PriorComponent, n: int, generator: torch.Generator
    ) -> Tensor:
        if self.mask is None:
            return component.sample(n, generator)
        kept, have, drawn = [], 0, 0
        while drawn < 1000 or have >= drawn / 1000:  # ends: have >= n, or the acceptance falls
            batch = component.sample(max(2 * (n - have), 16), generator)
            drawn += batch.shape[0]
            batch = batch[self.mask.is_ocean(batch)]
            kept.append(batch)
            have += batch.shape[0]
            if have >= n:
                return torch.cat(kept)[:n]
        raise ConfigurationError(
            f"the prior component {component.name!r} puts almost all of its mass on land "
            f"({have} of {drawn} samples over the ocean). Move it offshore or drop it."
        )
