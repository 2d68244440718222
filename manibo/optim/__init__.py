"""Maximise any BoTorch acquisition function over a space: Riemannian multi-start or enumeration."""

from manibo.optim.initial_conditions import initial_conditions_on_space
from manibo.optim.optimize import optimize_acqf_on_space, reference_tensor
from manibo.optim.riemannian_lbfgs import LBFGSOptions, riemannian_lbfgs_ascent

__all__ = [
    "LBFGSOptions",
    "initial_conditions_on_space",
    "optimize_acqf_on_space",
    "reference_tensor",
    "riemannian_lbfgs_ascent",
]
