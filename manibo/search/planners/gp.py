r"""The manibo planner: a GP of the detection field on :math:`S^2`, a BoTorch acquisition per hour.

At each decision the planner

1. maps every past search to the comoving frame of the drift (where the water it searched was at
   mission time 0), so that one GP on :math:`S^2` describes a drifting problem: rotations are
   isometries, so the rotation-invariant correlation stays a valid kernel in space-time;
2. conditions the detection-field GP of :mod:`manibo.search.detection_gp` on the searches' outcomes
   (the prior belief enters as its prior mean and scale; nothing reads the object's position);
3. scores a candidate search point :math:`s` by :class:`TravelTimeAcquisition`: a BoTorch
   acquisition (the posterior mean by default, :class:`DetectionFieldMean`; an upper confidence
   bound for ``beta > 0``) of the GP at the comoving point the asset would search on arrival,
   divided by the transit plus search hours, so value is traded against travel time;
4. maximises that score on the sphere with :func:`~manibo.optim.optimize_acqf_on_space` (Riemannian
   L-BFGS), started from the best of a set of candidates drawn from the prior.

With ``correlation="latlon"`` the same planner uses a Euclidean squared exponential on
latitude/longitude instead: the baseline that ignores the sphere's geometry.
"""

from __future__ import annotations

import warnings

import torch
from botorch.acquisition import AcquisitionFunction, UpperConfidenceBound
from botorch.exceptions.warnings import BotorchWarning
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.optim import optimize_acqf_on_space
from manibo.optim.riemannian_lbfgs import LBFGSOptions
from manibo.search.assets import Asset
from manibo.search.detection_gp import (
    CORRELATIONS,
    DetectionFieldFeatures,
    correlation_kernel,
    detection_field_gp,
)
from manibo.search.drift import Drift
from manibo.search.geography import EARTH_RADIUS_KM, GLOBE, pairwise_distance_km
from manibo.search.planners.base import MissionBrief, Planner, PlannerState, intercept
from manibo.search.sensor import Outcome

_NAMES = {"sphere": "manibo GP (S²)", "latlon": "GP on lat/lon"}


class DetectionFieldMean(AcquisitionFunction):
    r"""The posterior mean of a :func:`~manibo.search.detection_gp.detection_field_gp`, cached.

    Equal to BoTorch's ``PosteriorMean`` on the same model, computed in closed form,
    :math:`\mu(x) = m(x) + a(x)\,c(x, X)\,w` with :math:`w = a(X) (K + \Sigma)^{-1} (z - m(X))`
    solved once per decision, so that each evaluation of the optimiser costs one row of the
    kernel instead of a pass through GPyTorch's prediction machinery (about three times faster).

    Args:
        model: the detection-field GP in eval mode (its training inputs carry the features).
    """

    def __init__(self, model) -> None:
        super().__init__(model=model)
        if model.train_inputs[0].shape[-1] != 5:
            raise ConfigurationError(
                "`DetectionFieldMean` needs a model from `detection_field_gp` in eval mode "
                f"(5 transformed input columns), got {model.train_inputs[0].shape[-1]} columns."
            )
        train = model.train_inputs[0].detach()
        if train.shape[0]:
            gram = model.covar_module.forward(train, train)
            gram = gram + torch.diag_embed(model.likelihood.noise.detach())
            chol = torch.linalg.cholesky(gram)
            residual = (model.train_targets.detach() - train[:, 3]).unsqueeze(-1)
            weights = torch.cholesky_solve(residual, chol).squeeze(-1)
        else:
            weights = train.new_zeros(0)
        self.train = train
        self.weights = weights

    def forward(self, X: Tensor) -> Tensor:
        """Posterior mean at comoving points ``(b, 1, 3)``; returns ``(b,)``."""
        return self.of_features(self.model.input_transform.transform(X[..., 0, :]))

    def of_features(self, features: Tensor) -> Tensor:
        """Posterior mean at points already transformed by the model's input transform.

        Args:
            features: ``(b, 5)``: each point followed by its prior mean and scale.

        Returns:
            ``(b,)``.
        """
        mean = features[..., 3]
        if self.weights.shape[0]:
            cross = self.model.covar_module.forward(features, self.train)
            mean = mean + cross @ self.weights
        return mean


class TravelTimeAcquisition(AcquisitionFunction):
    r"""Value of searching at :math:`s` per hour: ``inner(comoving(s, t + T(s))) / (T(s) + τ)``.

    :math:`T(s)` is the great-circle transit time from the asset's position, :math:`\tau` the search
    dwell, and ``comoving`` maps the searched point to where its water was at mission time 0.
    A search that cannot be completed within the endurance left (:math:`T(s) + \tau` beyond it)
    scores 0, below every search the asset can still make.

    Args:
        inner: a BoTorch acquisition on the GP over comoving points (e.g. ``UpperConfidenceBound``).
        position: the asset's position, ``(3,)``.
        time_h: mission time now.
        drift: the current model.
        asset: the search asset (its endurance bounds the reachable searches).
    """

    def __init__(
        self,
        inner: AcquisitionFunction,
        position: Tensor,
        time_h: float,
        drift: Drift,
        asset: Asset,
    ) -> None:
        super().__init__(model=inner.model)
        self.inner = inner
        self.position = position
        self.time_h = float(time_h)
        self.drift = drift
        self.asset = asset
        self.hours_left = asset.endurance_hours - self.time_h

    def transit_hours(self, X: Tensor) -> Tensor:
        """Transit hours to each point ``(*batch, 3)``; returns ``(*batch)`` (differentiable)."""
        flat = X.reshape(-1, 3)
        hours = pairwise_distance_km(flat, self.position.unsqueeze(0))[:, 0] / self.asset.speed_kmh
        return hours.reshape(X.shape[:-1])

    def forward(self, X: Tensor) -> Tensor:
        """Score candidate points ``(b, 1, 3)``; returns ``(b,)``."""
        if X.shape[-2] != 1:
            raise ConfigurationError(
                f"the search plans one point at a time (q = 1), got q = {X.shape[-2]}."
            )
        hours = self.transit_hours(X[..., 0, :])
        comoving = self.drift.to_comoving(X[..., 0, :], self.time_h + hours)
        return self.per_hour(self.inner(comoving.unsqueeze(-2)), hours)

    def per_hour(self, value: Tensor, hours: Tensor) -> Tensor:
        """``value / (hours + τ)``, or 0 where the search would end beyond the endurance.

        Args:
            value: the inner acquisition's value of each search, ``(b,)``.
            hours: transit hours to each search, ``(b,)``.

        Returns:
            ``(b,)``.
        """
        busy = hours + self.asset.search_hours
        rate = value / busy
        return torch.where(busy <= self.hours_left, rate, torch.zeros_like(rate))


class GPPlanner(Planner):
    """Search where a GP of the detection field promises the most per hour of travel and search.

    Args:
        correlation: ``"sphere"`` (manibo's planner) or ``"latlon"`` (the Euclidean baseline).
        beta: UCB's exploration weight (``mean + sqrt(beta) * sd``); 0 ranks by the posterior mean
            (the expected POS), which suits a search: the prior scale already makes unexplored,
            probable places valuable.
        num_gp_particles: prior particles used for the GP's prior moments; all of them (carried by
            the current to now) and the asset's position are the candidates scored to choose the
            optimiser's starts.
        num_restarts: starts of the Riemannian L-BFGS ascent.
        maxiter: L-BFGS iterations per start.
    """

    def __init__(
        self,
        correlation: str = "sphere",
        beta: float = 0.0,
        num_gp_particles: int = 600,
        num_restarts: int = 2,
        maxiter: int = 4,
    ) -> None:
        if correlation not in CORRELATIONS:
            raise ConfigurationError(
                f"`correlation` must be one of {CORRELATIONS}, got {correlation!r}."
            )
        if beta < 0:
            raise ConfigurationError(f"`beta` must be >= 0, got {beta!r}.")
        if not 1 <= num_restarts <= num_gp_particles:
            raise ConfigurationError(
                f"need 1 <= num_restarts <= num_gp_particles, got {num_restarts} and "
                f"{num_gp_particles}."
            )
        self.correlation = correlation
        self.name = _NAMES[correlation]
        self.beta = beta
        self.num_gp_particles = num_gp_particles
        self.num_restarts = num_restarts
        self.maxiter = maxiter

    def start(self, brief: MissionBrief, seed: int = 0) -> None:
        """Build the GP's prior moments from the prior particles (see :meth:`Planner.start`)."""
        super().start(brief, seed)
        particles = brief.prior_particles
        keep = torch.randperm(particles.shape[0], generator=self.generator)
        particles = particles[keep[: self.num_gp_particles].to(particles.device)]
        self.features = DetectionFieldFeatures(particles, brief.sensor)
        self.particle_features = self.features.transform(particles)
        self.kernel = correlation_kernel(
            self.correlation, brief.sensor, dtype=particles.dtype, device=particles.device
        )

    def model(self, state: PlannerState):
        """The GP conditioned on the searches of ``state.history`` (comoving frame); eval mode."""
        like = self.brief.prior_particles
        if state.history:
            points = torch.stack([r.point for r in state.history]).to(like)
            times = torch.tensor([r.time_h for r in state.history], dtype=like.dtype).to(
                like.device
            )
            comoving = self.brief.drift.to_comoving(points, times)
            found = [float(r.outcome == Outcome.FOUND) for r in state.history]
            confirm = max(self.brief.sensor.confirm_pod, 1e-12)
            z = torch.tensor(found, dtype=like.dtype).to(like.device) / confirm
        else:
            comoving, z = like.new_zeros(0, 3), like.new_zeros(0)
        return detection_field_gp(comoving, z, self.features, self.kernel)

    def acquisition(self, state: PlannerState) -> TravelTimeAcquisition:
        """The score of every search point at this decision (see :class:`TravelTimeAcquisition`)."""
        model = self.model(state)
        if self.beta == 0:  # the posterior mean; skips the variance that UCB would compute
            inner = DetectionFieldMean(model)
        else:
            inner = UpperConfidenceBound(model, beta=self.beta)
        return TravelTimeAcquisition(
            inner, state.position, state.time_h, self.brief.drift, self.brief.asset
        )

    def propose(self, state: PlannerState) -> Tensor:
        """Maximise the acquisition on the sphere from the best raw candidates.

        The raw candidates are the places where the asset would meet the water of each GP
        particle, and the asset's own position.
        """
        acq = self.acquisition(state)
        now = self.brief.drift.advect(self.features.particles, state.time_h)
        met, hours = intercept(state.position, now, self.brief)
        raw = torch.cat([met, state.position.unsqueeze(0)])
        with torch.no_grad():
            values = torch.cat(
                [self._meeting_values(acq, met, hours), acq(state.position.view(1, 1, 3))]
            )
        starts = raw[torch.topk(values, self.num_restarts).indices].unsqueeze(-2)
        options = LBFGSOptions(
            maxiter=self.maxiter, max_step=2 * self.brief.sensor.range_km / EARTH_RADIUS_KM
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BotorchWarning)
            point, _ = optimize_acqf_on_space(
                acq, GLOBE, q=1, batch_initial_conditions=starts, options=options
            )
        return point[0]

    def _meeting_values(self, acq: TravelTimeAcquisition, met: Tensor, hours: Tensor) -> Tensor:
        """Scores of searching where each GP particle's water is met, ``(num_gp_particles,)``.

        The water met at ``met[i]`` after ``hours[i]`` of transit is the water of particle ``i``,
        whose comoving point is the particle itself (to the intercept's fixed-point residual,
        centimetres at these speeds); with the posterior mean as the inner acquisition its
        features, computed once per mission in :meth:`start`, are reused instead of recomputing
        the prior moments of every candidate at every decision.
        """
        if isinstance(acq.inner, DetectionFieldMean):
            return acq.per_hour(acq.inner.of_features(self.particle_features), hours)
        return acq(met.unsqueeze(-2))
