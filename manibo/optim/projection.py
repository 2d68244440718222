"""The Euclidean baseline's optimiser.

Box L-BFGS-B on ambient coordinates, then projection onto the space. Only for surrogates defined
off the space (a Euclidean kernel on ambient coordinates): the acquisition is evaluated at points
that do not lie on the space, which a geometric kernel rightly refuses.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.optim import optimize_acqf
from torch import Tensor

from manibo._autograd import autograd_on
from manibo._random import seeded_global_generators
from manibo._validation import check_int
from manibo.exceptions import InputDataError
from manibo.optim.optimize import reference_tensor
from manibo.spaces.base import Space

NUDGE = 1e-6
"""Relative size of the perturbation of a degenerate ambient optimum (see :func:`projector`)."""


def optimize_acqf_by_projection(
    acq_function: AcquisitionFunction,
    space: Space,
    q: int = 1,
    num_restarts: int = 8,
    raw_samples: int = 256,
    seed: int | None = None,
    maxiter: int | None = None,
    reference: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Maximise over the ambient bounding box of ``space`` with BoTorch, then ``space.project``.

    ``maxiter`` caps the iterations of BoTorch's L-BFGS-B per restart (its default when None).
    The candidates take the dtype and device of ``reference``, or where None those that
    :func:`~manibo.optim.optimize.reference_tensor` reads from the acquisition. ``seed`` seeds
    the raw samples and the selection of the starts; with one, torch's generators (CUDA's
    included) are left as they were, as by :func:`~manibo.optim.optimize_acqf_on_space`.

    Raises:
        ConfigurationError: ``q``, ``num_restarts`` or ``raw_samples`` is not an integer, or
            not ``1 <= num_restarts <= raw_samples``.

    Returns:
        ``(candidates (q, D), value)``, the value re-evaluated at the projected candidates.
    """
    q = check_int("q", q, minimum=1)
    num_restarts = check_int("num_restarts", num_restarts, minimum=1)
    raw_samples = check_int("raw_samples", raw_samples, minimum=num_restarts)
    ref = reference if reference is not None else reference_tensor(acq_function)
    bounds = space.ambient_bounds().to(ref)
    # BoTorch's Boltzmann selection of the starts draws from torch's global generator: with a
    # seed, it is forked and seeded, so the answer is the seed's and the caller's state is kept
    # BoTorch's ascent differentiates the acquisition, also inside a caller's torch.no_grad()
    with seeded_global_generators(seed, ref.device), autograd_on():
        candidates, value = optimize_acqf(
            acq_function,
            bounds=bounds,
            q=q,
            num_restarts=num_restarts,
            raw_samples=raw_samples,
            options={k: v for k, v in (("seed", seed), ("maxiter", maxiter)) if v is not None}
            or None,
            post_processing_func=projector(space, bounds, seed),
        )
    return candidates.detach(), value.detach()


def projector(space: Space, bounds: Tensor, seed: int | None) -> Callable[[Tensor], Tensor]:
    """``space.project``, made total for the optimiser's candidates.

    Box L-BFGS-B ends at corners of the ambient box, some of which project nowhere: a ``4 x 2``
    frame of the Grassmannian with two equal columns spans no plane, and ``project`` rightly
    refuses it. Such a batch is moved by a seeded Gaussian step of :data:`NUDGE` times the box's
    widths (far above the rank tolerance, far below any lengthscale) and projected again.

    Args:
        space: the space.
        bounds: the ambient box ``(2, D)``.
        seed: seed of the step (0 when None).

    Returns:
        A function of candidates ``(*batch, q, D)`` returning points of ``space``.
    """

    def project(X: Tensor) -> Tensor:
        try:
            return space.project(X)
        except InputDataError:
            generator = torch.Generator().manual_seed(0 if seed is None else seed)
            step = torch.randn(X.shape, generator=generator, dtype=torch.float64).to(X)
            return space.project(X + NUDGE * (bounds[1] - bounds[0]) * step)

    return project
