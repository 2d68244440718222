r"""The exact Bayesian belief over the object's position, on weighted particles (as SAROPS does).

Particles :math:`x_i` drawn from the prior carry two weight vectors:

* the **posterior** :math:`w_i`, multiplied by the likelihood of every search outcome and normalised
  (after a search with no contact: :math:`w_i \leftarrow w_i (1 - b(d(s, x_i)))`, i.e.
  :math:`p \propto p(1 - \mathrm{POD})`); the planners that use the exact belief read it;
* the **unfound prior mass** :math:`u_i = w^0_i \prod_k (1 - P_k(\text{found} \mid x_i))`, never
  normalised: the cumulative probability of success of the searches so far is
  :math:`1 - \sum_i u_i`, and the probability of success of search :math:`k` is
  :math:`\mathrm{POS}_k = \sum_i u_i P_k(\text{found}\mid x_i) / \sum_i u_i`, so that
  :math:`\mathrm{CumPOS}_K = 1 - \prod_k (1 - \mathrm{POS}_k)`.

Drift moves the particles (each along its own diffusion path); weights are untouched, so drift
preserves total probability exactly.
"""

from __future__ import annotations

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.search.drift import Drift
from manibo.search.geography import check_points, pairwise_distance_km
from manibo.search.sensor import Outcome, Sensor

_CHUNK_ELEMENTS = 1 << 21


class ParticleBelief:
    """Weighted particles on the globe with a posterior and an unfound-mass weight vector.

    Args:
        positions: particle positions, unit vectors ``(n, 3)``.
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
        self.weights = weights / total
        self.unfound = self.weights.clone()

    @property
    def cumulative_pos(self) -> float:
        """Probability that the searches so far would have found the object (under the prior)."""
        return float(1 - self.unfound.sum())

    def copy(self) -> ParticleBelief:
        """An independent copy (positions and both weight vectors)."""
        other = ParticleBelief.__new__(ParticleBelief)
        other.positions = self.positions.clone()
        other.weights = self.weights.clone()
        other.unfound = self.unfound.clone()
        return other

    def drift(self, drift: Drift, hours: float, generator: torch.Generator | None = None) -> None:
        """Move every particle with ``drift`` for ``hours`` (weights are unchanged)."""
        self.positions = drift.step(self.positions, hours, generator)

    def probability_of_success(
        self, sensor: Sensor, points: Tensor, weights: Tensor | None = None
    ) -> Tensor:
        r"""POS of one search at each of ``points``: :math:`\sum_i w_i P(\text{found} \mid x_i)`.

        Args:
            sensor: the detection model.
            points: search points, shape ``(m, 3)``.
            weights: particle weights ``(n,)`` to use (default: the posterior).

        Returns:
            Shape ``(m,)``.
        """
        check_points("points", points)
        weights = self.weights if weights is None else weights
        n = self.positions.shape[0]
        rows = max(1, _CHUNK_ELEMENTS // (3 * n))
        values = []
        for start in range(0, points.shape[0], rows):
            d = pairwise_distance_km(points[start : start + rows], self.positions)
            values.append(sensor.likelihood(Outcome.FOUND, d) @ weights)
        return torch.cat(values)

    def update(self, sensor: Sensor, point: Tensor, outcome: Outcome) -> float:
        """Condition on the outcome of a search at ``point`` (shape ``(3,)``); return its POS.

        The POS returned is that of this search given that the earlier ones did not find the
        object, computed before the update.

        Raises:
            InputDataError: when ``outcome`` has probability 0 under the belief (impossible data).
        """
        check_points("point", point)
        d = pairwise_distance_km(point.unsqueeze(0), self.positions)[0]
        found = sensor.likelihood(Outcome.FOUND, d)
        remaining = self.unfound.sum()
        pos = float((self.unfound @ found) / remaining) if float(remaining) > 0 else 0.0
        self.unfound = self.unfound * (1 - found)
        posterior = self.weights * sensor.likelihood(outcome, d)
        total = posterior.sum()
        if float(total) <= 0:
            raise InputDataError(
                f"the outcome {outcome.name} has probability 0 under the belief at this point; "
                "the data contradict the prior or the sensor model."
            )
        self.weights = posterior / total
        return pos

    def mass_within(self, point: Tensor, radius_km: float) -> float:
        """Posterior probability within ``radius_km`` of ``point`` (shape ``(3,)``)."""
        if radius_km < 0:
            raise ConfigurationError(f"`radius_km` must be >= 0, got {radius_km!r}.")
        d = pairwise_distance_km(point.unsqueeze(0), self.positions)[0]
        return float(self.weights[d <= radius_km].sum())

    def mean_direction(self) -> Tensor:
        """Posterior mean position projected onto the sphere (the 'datum'), shape ``(3,)``."""
        mean = self.weights @ self.positions
        return mean / mean.norm()

    def sample_points(self, m: int, generator: torch.Generator) -> Tensor:
        """``m`` particle positions drawn by posterior weight (with replacement), ``(m, 3)``."""
        index = torch.multinomial(self.weights.cpu(), m, replacement=True, generator=generator)
        return self.positions[index.to(self.positions.device)]
