r"""The polar factor of a square matrix, with a derivative that exists on the group itself.

For :math:`M = W\Sigma V^H` the (unitary) polar factor is :math:`Q = WV^H`, the nearest unitary
matrix in Frobenius norm; with ``rotation=True`` (real :math:`M`) the last singular pair is
flipped when :math:`\det(WV^\top) = -1`, giving the nearest rotation. Autograd through
``torch.linalg.svd`` divides by :math:`\sigma_i^2 - \sigma_j^2`, which is zero for every point of
the group (all :math:`\sigma = 1`), so it returns NaN exactly where the projection is used most.
The differential of the polar factor has no such term: with :math:`X = W^H\,dM\,V`,

.. math::
    dQ = W K V^H, \qquad K_{ij} = \frac{X_{ij} - \overline{X_{ji}}}{\sigma_i + \sigma_j},

so the backward pass is :math:`\bar M = W C V^H`, :math:`C = (B - B^H) / (\sigma_i + \sigma_j)`,
:math:`B = W^H \bar Q V`; at a point of the group it is the projection onto the tangent space.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable


class _PolarFactor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, m: Tensor, rotation: bool) -> Tensor:
        w, s, vh = torch.linalg.svd(m)
        if rotation:
            sign = torch.linalg.det(w @ vh)[..., None]
            w = torch.cat([w[..., :-1], w[..., -1:] * sign[..., None]], dim=-1)
            s = torch.cat([s[..., :-1], s[..., -1:] * sign], dim=-1)
        ctx.save_for_backward(w, s, vh)
        return w @ vh

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:
        w, s, vh = ctx.saved_tensors
        b = w.mH @ grad @ vh.mH
        c = (b - b.mH) / (s.unsqueeze(-1) + s.unsqueeze(-2))
        return w @ c @ vh, None


def polar_factor(m: Tensor, rotation: bool = False) -> Tensor:
    """The polar factor of square matrices ``m`` ``(*batch, n, n)`` (real or complex).

    Args:
        m: the matrices.
        rotation: for real matrices, the nearest rotation (determinant +1) instead of the nearest
            orthogonal matrix.

    Returns:
        Shape ``(*batch, n, n)``, differentiable (once) in ``m`` wherever ``m`` is invertible.
    """
    return _PolarFactor.apply(m, rotation)
