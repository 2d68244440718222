r"""The exact Bayesian belief over the object's position, on weighted particles (as SAROPS does).

Particles :math:`y_i` are drawn from the prior and kept in the comoving frame of the current (where
their water was at mission time 0; see :mod:`manibo.search.drift`), so the current never has to
be applied to them; only the diffusion moves them, each along its own path. Each particle carries
its prior weight :math:`w^0_i` and the hazard :math:`H_i` of every leg flown so far (all assets
together), so that

* the **unfound prior mass** is :math:`u_i = w^0_i e^{-H_i}` and the probability that the search so
  far has found the object is :math:`\mathrm{CumPOS} = 1 - \sum_i u_i`;
* the **posterior** given that it has not been found is :math:`w_i = u_i / \sum_j u_j`
  (:math:`p \propto p\,(1 - \mathrm{POD})`, one factor :math:`e^{-H}` per leg).

Found and unfound mass add up to 1 at all times; the diffusion moves particles and leaves every
weight alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.geo import check_points, pairwise_distance_km
from manibo.search.drift import Drift
from manibo.search.legs import Leg, total_hazard


class ParticleBelief:
    """Weighted particles in the water's frame, with the hazard each has been exposed to.

    Args:
        positions: comoving particle positions (where their water was at mission time 0), unit
            vectors ``(n, 3)``.
        weights: prior weights ``(n,)`` (non-negative, normalised here); uniform when None.
    """

    def __init__(self, positions: Tensor, weights: Tensor | None = None) -> None:
        check_points("positions", positions)
        if positions.dim() != 2 or positions.shape[0] == 0:
            raise InputDataError(
                f"`positions` must have shape (n, 3) with n >= 1, got {tuple(positions.shape)}."
            )
        n = positions.shape[0]
        if weights is None:
            weights = torch.full((n,), 1.0 / n, dtype=positions.dtype, device=positions.device)
        if weights.shape != (n,) or not torch.isfinite(weights).all() or (weights < 0).any():
            raise InputDataError(
                f"`weights` must be {n} finite non-negative numbers, got shape "
                f"{tuple(weights.shape)}."
            )
        total = weights.sum()
        if float(total) <= 0:
            raise InputDataError("`weights` sum to zero: the belief must hold some probability.")
        self.positions = positions
        self.prior = weights / total
        self.hazard = torch.zeros_like(self.prior)
        self.time_h = 0.0

    @property
    def unfound(self) -> Tensor:
        """Unfound prior mass per particle, :math:`w^0_i e^{-H_i}`, ``(n,)``."""
        return self.prior * torch.exp(-self.hazard)

    @property
    def weights(self) -> Tensor:
        """Posterior weights given that the object has not been found, ``(n,)`` (sum 1).

        When the legs have found all of the prior mass, the posterior is undefined and the prior
        weights are returned.
        """
        unfound = self.unfound
        total = unfound.sum()
        return unfound / total if float(total) > 0 else self.prior.clone()

    @property
    def cumulative_pos(self) -> float:
        """Probability that the legs flown so far have found the object."""
        return float(1 - self.unfound.sum())

    def copy(self) -> ParticleBelief:
        """An independent copy."""
        other = ParticleBelief.__new__(ParticleBelief)
        other.positions = self.positions.clone()
        other.prior = self.prior.clone()
        other.hazard = self.hazard.clone()
        other.time_h = self.time_h
        return other

    def advance(self, drift: Drift, to_h: float, generator: torch.Generator | None = None) -> None:
        """Let the particles diffuse from :attr:`time_h` to ``to_h`` (weights are unchanged)."""
        if to_h < self.time_h:
            raise ConfigurationError(
                f"the belief is at {self.time_h:.3f} h and cannot go back to {to_h:.3f} h."
            )
        self.positions = drift.diffuse(self.positions, to_h - self.time_h, generator)
        self.time_h = float(to_h)

    def observe_legs(self, legs: Sequence[Leg], drift: Drift) -> float:
        """Condition on the legs not having found the object; return their probability of success.

        The probability returned is that of finding the object on these legs given that the
        earlier legs did not, computed before the update.
        """
        if not legs:
            return 0.0
        before = self.unfound.sum()
        self.hazard = self.hazard + total_hazard(legs, drift, self.positions)
        after = self.unfound.sum()
        return float((before - after) / before) if float(before) > 0 else 0.0

    def present_positions(self, drift: Drift, time_h: float | None = None) -> Tensor:
        """Where the particles' water is at ``time_h`` (default :attr:`time_h`), ``(n, 3)``."""
        return drift.advect(self.positions, self.time_h if time_h is None else time_h)

    def mass_within(self, point: Tensor, radius_km: float) -> float:
        """Posterior probability within ``radius_km`` of a comoving ``point`` ``(3,)``."""
        if radius_km < 0:
            raise ConfigurationError(f"`radius_km` must be >= 0, got {radius_km!r}.")
        d = pairwise_distance_km(point.unsqueeze(0), self.positions)[0]
        return float(self.weights[d <= radius_km].sum())

    def mean_direction(self) -> Tensor:
        """Posterior mean position (comoving) projected onto the sphere, ``(3,)``."""
        mean = self.weights @ self.positions
        return mean / mean.norm()

    def sample(self, m: int, generator: torch.Generator) -> Tensor:
        """Indices of ``m`` particles drawn by posterior weight (with replacement), ``(m,)``."""
        index = torch.multinomial(self.weights.cpu(), m, replacement=True, generator=generator)
        return index.to(self.positions.device)
