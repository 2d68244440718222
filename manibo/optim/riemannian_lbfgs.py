r"""Batched Riemannian L-BFGS ascent.

Every restart of an acquisition optimisation advances in one tensor. Each restart is a point of
the product manifold :math:`\mathcal{M}^q` (``q`` points of a space). The search direction is the
L-BFGS two-loop recursion on Riemannian gradients, with stored pairs carried to the new point by
projection onto its tangent space; steps are retractions, accepted by an Armijo backtracking test
evaluated for all restarts in one batched call, so candidates never leave the space.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable
from dataclasses import dataclass, fields

import torch
from torch import Tensor

from manibo._autograd import autograd_on
from manibo._validation import check_int
from manibo.exceptions import ConfigurationError, NonFiniteGradientWarning
from manibo.spaces.base import Space

_REAL_FIELDS: dict[str, tuple[str, Callable[[float], bool]]] = {
    "gtol": (">= 0", lambda v: v >= 0),
    "ftol": (">= 0", lambda v: v >= 0),
    "max_step": ("> 0", lambda v: v > 0),
    "armijo": ("in (0, 1)", lambda v: 0 < v < 1),
}


@dataclass
class LBFGSOptions:
    """Settings of :func:`riemannian_lbfgs_ascent`.

    Attributes:
        maxiter: iterations per restart.
        history: number of stored (s, y) pairs.
        gtol: stop a restart when its Riemannian gradient norm falls below this.
        ftol: stop a restart when one step improves its value by less than ``ftol * (1 + |f|)``.
        max_step: length of the first step, in the space's units (radians on spheres and SO(3)).
        armijo: sufficient-increase constant of the line search.
        max_backtracks: halvings of the step before a restart is declared converged.
    """

    maxiter: int = 50
    history: int = 10
    gtol: float = 1e-7
    ftol: float = 1e-10
    max_step: float = 0.5
    armijo: float = 1e-4
    max_backtracks: int = 12

    def __post_init__(self) -> None:
        for name in ("maxiter", "history", "max_backtracks"):
            check_int(name, getattr(self, name), minimum=1)
        for name, (rule, ok) in _REAL_FIELDS.items():
            value = getattr(self, name)
            real = isinstance(value, numbers.Real) and not isinstance(value, bool)
            if not real or not math.isfinite(value) or not ok(value):
                raise ConfigurationError(f"`{name}` must be a finite number {rule}, got {value!r}.")

    @classmethod
    def from_options(cls, options: dict) -> LBFGSOptions:
        """Build from a dict of fields, refusing unknown names with the list of valid ones."""
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ConfigurationError(
                f"unknown optimizer option(s) {', '.join(map(repr, unknown))}; the Riemannian "
                f"optimiser takes {', '.join(known)}."
            )
        return cls(**options)


def _value_and_riemannian_grad(
    objective: Callable[[Tensor], Tensor], space: Space, x: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """Values ``(b,)``, Riemannian gradients ``(b, ...)`` and which rows are finite ``(b,)``.

    A row whose gradient is not finite, or whose value is NaN (a chart's singularity, say the
    infinite slope of a latitude at a pole), gets a zero gradient, so that it is never moved off
    its point.
    """
    with autograd_on():  # also inside a caller's torch.no_grad() or inference_mode()
        x = x.detach().clone().requires_grad_(True)  # a clone: not an inference-mode tensor
        value = objective(x)
        (grad,) = torch.autograd.grad(value.sum(), x)
    grad = space.to_tangent(x.detach(), grad)
    finite = ~torch.isnan(value.detach()) & torch.isfinite(grad).flatten(1).all(-1)
    return value.detach(), torch.where(_rows(finite, grad), grad, torch.zeros_like(grad)), finite


def _dot(a: Tensor, b: Tensor) -> Tensor:
    return (a * b).flatten(1).sum(-1)


def _rows(v: Tensor, like: Tensor) -> Tensor:
    return v.reshape(-1, *([1] * (like.dim() - 1)))


def _two_loop(grad: Tensor, pairs: list[tuple[Tensor, Tensor, Tensor]], gamma: Tensor) -> Tensor:
    """Ascent direction H g from stored pairs (s, y, rho = 1/<s, y>) and initial scaling ``gamma``.

    Rows keep their own histories: a pair with ``rho = 0`` (and zero vectors) is absent for that
    row.
    """
    q = grad.clone()
    alphas = []
    for s, y, rho in reversed(pairs):
        alpha = rho * _dot(s, q)
        q = q - _rows(alpha, q) * y
        alphas.append(alpha)
    q = q * _rows(gamma, q)
    for (s, y, rho), alpha in zip(pairs, reversed(alphas), strict=True):
        beta = rho * _dot(y, q)
        q = q + _rows(alpha - beta, q) * s
    return q


def riemannian_lbfgs_ascent(
    objective: Callable[[Tensor], Tensor],
    space: Space,
    x0: Tensor,
    options: LBFGSOptions | None = None,
) -> tuple[Tensor, Tensor]:
    """Maximise ``objective`` over ``b`` restarts of ``q`` points of ``space`` at once.

    Args:
        objective: maps points ``(b, q, *point_shape)`` to values ``(b,)``, differentiable.
        space: the space the points live on.
        x0: starting points ``(b, q, *point_shape)`` on the space.
        options: solver settings.

    Returns:
        ``(x, values)``: the final points ``(b, q, *point_shape)``, on the space, and their values
        ``(b,)``.

    A restart whose value or gradient is not finite, at its start or at a point it reached, stops
    there; one :class:`~manibo.exceptions.NonFiniteGradientWarning` says how many did.
    """
    opts = options or LBFGSOptions()
    x = x0.detach().clone()
    value, grad, active = _value_and_riemannian_grad(objective, space, x)
    stuck_at_start = ~active
    stuck = stuck_at_start.clone()
    pairs: list[tuple[Tensor, Tensor, Tensor]] = []
    gamma = torch.full_like(value, float("nan"))  # H0 = gamma * I, from the newest valid pair
    for _ in range(opts.maxiter):
        gnorm = _dot(grad, grad).sqrt()
        active &= gnorm > opts.gtol
        if not active.any():
            break
        first_step = opts.max_step / gnorm.clamp_min(torch.finfo(gnorm.dtype).tiny)
        direction = _two_loop(grad, pairs, torch.where(gamma.isnan(), first_step, gamma))
        slope = _dot(direction, grad)
        bad = slope <= 0
        if bad.any():  # not an ascent direction: restart those rows from a scaled gradient
            direction = torch.where(
                _rows(bad, direction), grad * _rows(first_step, grad), direction
            )
            slope = torch.where(bad, gnorm**2 * first_step, slope)
        direction = torch.where(_rows(active, direction), direction, torch.zeros_like(direction))
        step = torch.ones_like(value)
        accepted = ~active
        x_new, value_new = x.clone(), value.clone()
        for _ in range(opts.max_backtracks):
            trial = space.retract(x, direction * _rows(step, direction))
            with torch.no_grad():
                trial_value = objective(trial)
            ok = (~accepted) & (trial_value >= value + opts.armijo * step * slope)
            x_new = torch.where(_rows(ok, x), trial, x_new)
            value_new = torch.where(ok, trial_value, value_new)
            accepted |= ok
            if accepted.all():
                break
            step = torch.where(accepted, step, step / 2)
        moved = accepted & active
        active &= accepted  # rows whose line search failed have converged as far as we can tell
        new_value, new_grad, finite = _value_and_riemannian_grad(objective, space, x_new)
        improvement = new_value - value
        active &= finite & (improvement > opts.ftol * (1 + value.abs()))
        stuck |= ~finite
        s = space.to_tangent(x_new, direction * _rows(step, direction))
        y = new_grad - space.to_tangent(x_new, grad)
        sy = _dot(s, y)
        curvature_ok = moved & (sy < -1e-12 * _dot(s, s))  # ascent: y·s < 0 for a concave model
        pairs = [
            (space.to_tangent(x_new, ps), space.to_tangent(x_new, py), pr) for ps, py, pr in pairs
        ]
        if curvature_ok.any():
            # maximisation = minimising -f: store the pair for -f, i.e. (s, -y)
            rho = torch.where(curvature_ok, 1.0 / (-sy).clamp_min(1e-300), torch.zeros_like(sy))
            pairs.append((s * _rows(curvature_ok, s), -y * _rows(curvature_ok, y), rho))
            pairs = pairs[-opts.history :]
            gamma = torch.where(curvature_ok, -sy / _dot(y, y).clamp_min(1e-300), gamma)
        x, value, grad = x_new, new_value, new_grad
    if stuck.any():
        warnings.warn(
            NonFiniteGradientWarning(
                f"{int(stuck.sum())} of {len(stuck)} restart(s) of the acquisition ascent stopped "
                "where the acquisition's value or gradient was not finite (NaN or infinite), "
                f"{int(stuck_at_start.sum())} of them at their start: the model or the "
                "acquisition is not differentiable there (a singularity of a chart, a NaN in the "
                "model), so those restarts kept the point reached and were not optimised further; "
                "the answer is the best finite value of all restarts."
            ),
            stacklevel=2,
        )
    return x.detach(), value
