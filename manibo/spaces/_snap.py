r"""Points that a membership check accepted, moved onto their space before a series reads them.

:meth:`~manibo.spaces.base.Space.check` accepts points off their space by up to its tolerance
(1e-6 in float64, 1e-4 in float32), and a kernel series that reads an inner product of such points
reads an angle of about :math:`\sqrt{2\epsilon}` between a point and itself: 0.013 rad for a
float32 unit vector whose norm is off by 4.5e-5 (0.02 rad at the tolerance of 1e-4), which took
the chordal Matérn-5/2 k(x, x) down to 0.945 at lengthscale 0.05 on S². The maps here move
such points onto the space to rounding and leave the values of points already on it to rounding
(:func:`rounding_slack`) bit for bit: the choice is made per point by ``torch.where``, without a
host synchronisation. The derivative is the map's everywhere (at a point of the space, the
projection onto its tangent space), so that gradients agree with finite differences, which step
off the space. Points further off than :data:`MAX_SNAPPED_ERROR`, which no check accepts and
where Newton–Schulz steps need not converge, are left as they are.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from manibo._validation import default_tolerance

ROUNDING_SLACK = 16
"""Points off their space by at most this many machine epsilons are left as they are (fewer in
float16 and bfloat16, see :func:`rounding_slack`)."""

MAX_SNAPPED_ERROR = 0.1
r"""Points off their space by more than this (in :math:`|x \cdot x - 1|` or the entries of
:math:`M^H M - I`) are left as they are: far beyond every dtype's membership tolerance, and where
two Newton–Schulz steps no longer land near the space (at 1.8 times a rotation they gave a matrix
of determinant -0.03)."""

NEWTON_SCHULZ_STEPS = 2
r"""Newton–Schulz steps towards the polar factor: each squares the error of :math:`M^H M - I`
(about :math:`\tfrac{3}{4}e^2`), so float32's tolerance of 1e-4 ends below 1e-15 and float64's of
1e-6 below 1e-23."""


def rounding_slack(dtype: torch.dtype) -> float:
    """How far off its space a point of ``dtype`` may be and count as on it: :data:`ROUNDING_SLACK`
    machine epsilons (of the real dtype for a complex one), at most a tenth of the membership
    tolerance (in float16 and bfloat16 sixteen epsilons exceed it)."""
    return min(ROUNDING_SLACK * torch.finfo(dtype).eps, default_tolerance(dtype) / 10)


def snapped(x: Tensor, error: Tensor, onto: Callable[[Tensor], Tensor], anchor: Tensor) -> Tensor:
    """``x`` moved by ``onto`` where its ``error`` off the space (broadcasting against ``x``) is
    above rounding and at most :data:`MAX_SNAPPED_ERROR`; where it is within rounding, the value
    of ``x`` bit for bit with the derivative of ``onto`` (``x + (moved - moved)``, ``x``
    detached: the difference is exactly 0); further off, ``x`` as it is. ``onto`` never sees
    those far points (``anchor``, a point of the space, stands in for them), so a zero or
    infinite vector gives no NaN, in the values or the gradients."""
    far = error > MAX_SNAPPED_ERROR
    moved = onto(torch.where(far, anchor, x))
    near = error <= rounding_slack(error.dtype)
    return torch.where(far, x, torch.where(near, x.detach() + (moved - moved.detach()), moved))


def onto_unit_norm(x: Tensor) -> Tensor:
    """Vectors ``(*batch, D)`` of norm about 1, scaled to norm 1 where they are off it by more
    than rounding (:func:`snapped`)."""
    squared = (x * x).sum(-1, keepdim=True)
    anchor = torch.zeros(x.shape[-1], dtype=x.dtype, device=x.device)
    anchor[0] = 1
    return snapped(x, (squared - 1).abs(), lambda v: v / v.norm(dim=-1, keepdim=True), anchor)


def orthonormality_error(m: Tensor) -> Tensor:
    """The largest entry of :math:`|M^H M - I|` of matrices ``(*batch, n, k)``, real, shape
    ``(*batch, 1, 1)``."""
    eye = torch.eye(m.shape[-1], dtype=m.dtype, device=m.device)
    return (m.mH @ m - eye).abs().amax(dim=(-2, -1), keepdim=True)


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
    (the nearest matrix with orthonormal columns) where they are off it by more than rounding
    (:func:`snapped`)."""
    anchor = torch.eye(m.shape[-2], m.shape[-1], dtype=m.dtype, device=m.device)
    return snapped(m, orthonormality_error(m), newton_schulz, anchor)
