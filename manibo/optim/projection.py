"""The Euclidean baseline's optimiser.

Box L-BFGS-B on ambient coordinates, then projection onto the space. Only for surrogates defined
off the space (a Euclidean kernel on ambient coordinates): the acquisition is evaluated at points
that do not lie on the space, which a geometric kernel rightly refuses.
"""

from __future__ import annotations

from botorch.acquisition import AcquisitionFunction
from botorch.optim import optimize_acqf
from torch import Tensor

from manibo.spaces.base import Space


def optimize_acqf_by_projection(
    acq_function: AcquisitionFunction,
    space: Space,
    q: int = 1,
    num_restarts: int = 8,
    raw_samples: int = 256,
    seed: int | None = None,
    maxiter: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Maximise over the ambient bounding box of ``space`` with BoTorch, then ``space.project``.

    ``maxiter`` caps the iterations of BoTorch's L-BFGS-B per restart (its default when None).

    Returns:
        ``(candidates (q, D), value)``, the value re-evaluated at the projected candidates.
    """
    bounds = space.ambient_bounds().to(next(acq_function.model.parameters()))
    candidates, value = optimize_acqf(
        acq_function,
        bounds=bounds,
        q=q,
        num_restarts=num_restarts,
        raw_samples=raw_samples,
        options={k: v for k, v in (("seed", seed), ("maxiter", maxiter)) if v is not None} or None,
        post_processing_func=space.project,
    )
    return candidates.detach(), value.detach()
