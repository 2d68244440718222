r"""Arc-cosine kernels of order 0 and 1 on spheres (Cho & Saul), with closed-form eigenvalues.

Normalised so that :math:`\kappa(1) = 1`, with :math:`\theta = \arccos t`:

.. math::
    \kappa_0(t) = 1 - \frac{\theta}{\pi}, \qquad
    \kappa_1(t) = \frac{\sqrt{1-t^2} + (\pi - \theta)\, t}{\pi},

the covariances :math:`2\,\mathbb E_w[\mathbb 1(w^\top x > 0)\, \mathbb 1(w^\top y > 0)]` and
:math:`2\,\mathbb E_w[\mathrm{ReLU}(w^\top x)\, \mathrm{ReLU}(w^\top y)]` of one infinitely wide
layer with :math:`w \sim \mathcal N(0, I)`, for unit ``x`` and ``y``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.harmonics.funk_hecke import arc_cosine_eigenvalues
from manibo.kernels.zonal import ZonalKernel
from manibo.spaces.sphere import Sphere


class _ArcCosineOrder1(torch.autograd.Function):
    r""":math:`\kappa_1` with its exact derivative :math:`\kappa_1'(t) = 1 - \arccos(t)/\pi`.

    The derivative is finite at ±1. (Autograd through the formula would add the two infinite
    derivatives of :math:`\sqrt{1-t^2}` and :math:`t\arccos t` at :math:`t = \pm 1`, which cancel
    analytically, and return NaN.)
    """

    @staticmethod
    def forward(ctx, t: Tensor) -> Tensor:
        ctx.save_for_backward(t)
        return (torch.sqrt((1 - t * t).clamp(min=0)) + (math.pi - torch.acos(t)) * t) / math.pi

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        (t,) = ctx.saved_tensors
        return grad * (1 - torch.acos(t) / math.pi)


class _ArcCosineOrder0(torch.autograd.Function):
    r""":math:`\kappa_0` with derivative :math:`1/(\pi\sqrt{\max(1-t^2, \epsilon)})`.

    :math:`\epsilon` is the dtype's machine epsilon. The true derivative is infinite at
    :math:`t = \pm 1` (the kernel is Lipschitz in the angle, like the Laplace kernel); the floor
    caps it where ``t`` is within rounding of ±1 (about 2e7 in float64, 1e3 in float32).
    """

    @staticmethod
    def forward(ctx, t: Tensor) -> Tensor:
        ctx.save_for_backward(t)
        return 1 - torch.acos(t) / math.pi

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        (t,) = ctx.saved_tensors
        floor = torch.finfo(t.dtype).eps
        return grad / (math.pi * torch.sqrt((1 - t * t).clamp(min=floor)))


def arc_cosine_shape(t: Tensor, order: int) -> Tensor:
    r"""The arc-cosine shape function :math:`\kappa_{\mathrm{order}}(t)`, with finite gradients.

    Args:
        t: inner products in :math:`[-1, 1]`, any shape.
        order: 0 or 1.

    Returns:
        Shape of ``t``.
    """
    if order == 1:
        return _ArcCosineOrder1.apply(t)
    if order == 0:
        return _ArcCosineOrder0.apply(t)
    raise ConfigurationError(f"`order` of the arc-cosine kernel must be 0 or 1, got {order!r}.")


class ArcCosineKernel(ZonalKernel):
    r"""The arc-cosine kernel :math:`k(x, y) = \kappa_{\mathrm{order}}(x \cdot y)` on a sphere.

    Its eigenvalues are closed forms (:func:`~manibo.harmonics.funk_hecke.arc_cosine_eigenvalues`):
    order 1 has :math:`\lambda_n = 0` for odd :math:`n \ge 3`, order 0 for even :math:`n \ge 2`,
    exactly. The kernel has no parameters; wrap it in :class:`gpytorch.kernels.ScaleKernel` for a
    variance, or in :class:`~manibo.kernels.HomogeneousLiftKernel` for inputs in
    :math:`\mathbb R^D`.

    Args:
        sphere: the sphere.
        order: 0 (step activation) or 1 (ReLU activation).
        num_levels: levels for :meth:`eigenvalues` and :meth:`feature_map`.
        **kwargs: passed to :class:`gpytorch.kernels.Kernel`.
    """

    def __init__(self, sphere: Sphere, order: int = 1, num_levels: int = 10, **kwargs) -> None:
        if isinstance(order, bool) or order not in (0, 1):
            raise ConfigurationError(
                f"`order` of the arc-cosine kernel must be 0 (step) or 1 (ReLU), got {order!r}."
            )
        super().__init__(sphere, None, num_levels, **kwargs)
        self.order = int(order)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.sphere!r}, order={self.order})"

    def shape_function(self, t: Tensor) -> Tensor:
        return arc_cosine_shape(t, self.order)

    def eigenvalues(self, num_levels: int | None = None) -> Tensor:
        """Closed-form eigenvalues, float64 of shape ``(L,)`` (default ``L``: ``num_levels``)."""
        levels = self.num_levels if num_levels is None else num_levels
        return arc_cosine_eigenvalues(self.sphere.dim + 1, levels, self.order)
