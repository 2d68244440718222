r"""Points that a membership check accepted, moved onto their space before a series reads them.

:meth:`~manibo.spaces.base.Space.check` accepts points off their space by up to its tolerance
(1e-6 in float64, 1e-4 in float32), and a kernel series that reads an inner product of such points
reads an angle of about :math:`\sqrt{2\epsilon}`: 0.014 rad for a float32 unit vector whose norm
is off by 1e-4, which at lengthscale 0.05 took k(x, x) down to 0.945 on S². The maps here move
such points onto the space to rounding and leave the values of points already on it to rounding
(the tolerance :data:`ROUNDING_SLACK` times the dtype's machine epsilon) bit for bit: the choice
is made per point by ``torch.where``, without a host synchronisation. The derivative is the map's
everywhere (at a point of the space, the projection onto its tangent space), so that gradients
agree with finite differences, which step off the space.
"""

from __future__ import annotations

import torch
from torch import Tensor

ROUNDING_SLACK = 16
"""Points off their space by at most this many machine epsilons are left as they are."""

NEWTON_SCHULZ_STEPS = 2
r"""Newton–Schulz steps towards the polar factor: each squares the error of :math:`M^H M - I`
(about :math:`\tfrac{3}{4}e^2`), so float32's tolerance of 1e-4 ends below 1e-15 and float64's of
1e-6 below 1e-23."""


def rounding_slack(dtype: torch.dtype) -> float:
    """How far off its space a point of ``dtype`` may be and count as on it: :data:`ROUNDING_SLACK`
    machine epsilons (of the real dtype for a complex one)."""
    return ROUNDING_SLACK * torch.finfo(dtype).eps


def keep_on_space(x: Tensor, moved: Tensor, off: Tensor) -> Tensor:
    """``moved`` where ``off``; elsewhere the value of ``x`` bit for bit, with the derivative of
    ``moved`` only (``x + (moved - moved)``, ``x`` detached: the difference is exactly 0).
    ``off`` broadcasts."""
    return torch.where(off, moved, x.detach() + (moved - moved.detach()))


def onto_unit_norm(x: Tensor) -> Tensor:
    """Vectors ``(*batch, D)`` of norm about 1, scaled to norm 1 where they are off it by more
    than rounding."""
    squared = (x * x).sum(-1, keepdim=True)
    off = (squared - 1).abs() > rounding_slack(x.dtype)
    return keep_on_space(x, x / squared.sqrt(), off)


def off_orthonormal(m: Tensor) -> Tensor:
    """Whether the columns of matrices ``(*batch, n, k)`` are off orthonormal by more than
    rounding; shape ``(*batch, 1, 1)``."""
    eye = torch.eye(m.shape[-1], dtype=m.dtype, device=m.device)
    return (m.mH @ m - eye).abs().amax(dim=(-2, -1), keepdim=True) > rounding_slack(m.real.dtype)


def newton_schulz(m: Tensor) -> Tensor:
    r""":data:`NEWTON_SCHULZ_STEPS` steps of :math:`M \leftarrow M(3I - M^H M)/2` towards the
    polar factor of matrices ``(*batch, n, k)`` whose columns are nearly orthonormal (real or
    complex). The steps keep the determinant's sign, so rotations stay rotations."""
    eye = torch.eye(m.shape[-1], dtype=m.dtype, device=m.device)
    for _ in range(NEWTON_SCHULZ_STEPS):
        m = m @ (1.5 * eye - 0.5 * (m.mH @ m))
    return m


def onto_orthonormal(m: Tensor) -> Tensor:
    """Matrices ``(*batch, n, k)`` with nearly orthonormal columns, moved to their polar factor
    (the nearest matrix with orthonormal columns) where they are off it by more than rounding."""
    return keep_on_space(m, newton_schulz(m), off_orthonormal(m))
