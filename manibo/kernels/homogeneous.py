r"""The homogeneous lift of a zonal kernel to inputs in :math:`\mathbb R^D` (VISH, Dutordoir 2020).

An input :math:`x \in \mathbb R^D` becomes :math:`\tilde x = [x/\ell, b] \in \mathbb R^{D+1}` (ARD
lengthscales :math:`\ell`, bias :math:`b \ge 0`), with radius :math:`r = \|\tilde x\|` and direction
:math:`z = \tilde x / r \in S^D`, and

.. math::
    k(x, x') = r\, r'\, \kappa(z \cdot z') = \sum_n \lambda_n \sum_k r Y_{nk}(z)\; r' Y_{nk}(z'),

the kernel of the functions :math:`g(\tilde x) = \|\tilde x\| f(\tilde x / \|\tilde x\|)` with
:math:`f` in the zonal kernel's RKHS. With the order-1 arc-cosine kernel this is the covariance of
one infinitely wide ReLU layer; with :math:`b = 0` it is positively homogeneous of degree 1 in each
argument.
"""

from __future__ import annotations

import torch
from gpytorch.constraints import Interval, Positive
from gpytorch.kernels import Kernel
from gpytorch.priors import Prior
from torch import Tensor

from manibo._validation import (
    as_tensor_arg,
    check_finite,
    check_same_dtype_device,
    check_trailing_shape,
)
from manibo.exceptions import ConfigurationError
from manibo.kernels._batch import IndexesBatch
from manibo.kernels._inputs import (
    ChecksInputShape,
    check_parameters_match,
    reject_ard_num_dims,
    reject_last_dim_is_batch,
)
from manibo.kernels.zonal import ZonalKernel


class HomogeneousLiftKernel(ChecksInputShape, IndexesBatch, Kernel):
    r"""A zonal kernel on :math:`S^D` lifted to :math:`\mathbb R^D`: :math:`r r' \kappa(z\cdot z')`.

    Args:
        base_kernel: a :class:`~manibo.kernels.ZonalKernel` (or
            :class:`~manibo.kernels.ArcCosineKernel`, :class:`~manibo.kernels.ChordalMaternKernel`)
            on ``Sphere(input_dim)``; its parameters train with this kernel's.
        input_dim: ``D``, the number of input coordinates.
        bias: initial bias :math:`b \ge 0` appended to the scaled input. ``bias=0`` gives the purely
            homogeneous kernel; its raw parameter is then :math:`-\infty`, so freeze it
            (``kernel.raw_bias.requires_grad_(False)``) before fitting with L-BFGS.
        bias_prior: optional prior on the bias.
        bias_constraint: constraint on the bias (default :class:`gpytorch.constraints.Positive`).
        **kwargs: passed to :class:`gpytorch.kernels.Kernel` (``batch_shape``,
            ``lengthscale_prior``, ``lengthscale_constraint``, ...). The lengthscale has shape
            ``(*batch_shape, 1, D)``.

    Inputs have shape ``(*batch, n, D)``; outputs ``(*batch, n, m)``, or ``(*batch, n)`` with
    ``diag``.
    """

    has_lengthscale = True

    def __init__(
        self,
        base_kernel: ZonalKernel,
        input_dim: int,
        bias: float = 1.0,
        bias_prior: Prior | None = None,
        bias_constraint: Interval | None = None,
        **kwargs,
    ) -> None:
        if not isinstance(base_kernel, ZonalKernel):
            raise ConfigurationError(
                "`base_kernel` must be a ZonalKernel (ZonalKernel, ChordalMaternKernel, "
                f"ArcCosineKernel), got {type(base_kernel).__name__}."
            )
        if isinstance(input_dim, bool) or int(input_dim) != input_dim or input_dim < 1:
            raise ConfigurationError(f"`input_dim` must be an integer >= 1, got {input_dim!r}.")
        if base_kernel.sphere.dim != input_dim:
            raise ConfigurationError(
                f"inputs in R^{input_dim} are lifted to Sphere({input_dim}) in R^{input_dim + 1}, "
                f"but `base_kernel` lives on {base_kernel.sphere!r}. Build it on "
                f"Sphere({input_dim})."
            )
        if not float(bias) >= 0:
            raise ConfigurationError(f"`bias` must be >= 0, got {bias!r}.")
        reject_ard_num_dims(type(self).__name__, kwargs, int(input_dim))
        kwargs["ard_num_dims"] = int(input_dim)
        super().__init__(**kwargs)
        self.base_kernel = base_kernel
        self.input_dim = int(input_dim)
        self.register_parameter("raw_bias", torch.nn.Parameter(torch.zeros(*self.batch_shape, 1)))
        self.register_constraint("raw_bias", bias_constraint or Positive())
        if bias_prior is not None:
            self.register_prior(
                "bias_prior", bias_prior, lambda m: m.bias, lambda m, v: m._set_bias(v)
            )
        self._set_bias(bias)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_kernel!r}, input_dim={self.input_dim})"

    @property
    def bias(self) -> Tensor:
        """The bias :math:`b`, shape ``(*batch_shape, 1)``."""
        return self.raw_bias_constraint.transform(self.raw_bias)

    @bias.setter
    def bias(self, value: float | Tensor) -> None:
        self._set_bias(value)

    def _set_bias(self, value: float | Tensor) -> None:
        value = torch.as_tensor(value, dtype=self.raw_bias.dtype, device=self.raw_bias.device)
        self.initialize(raw_bias=self.raw_bias_constraint.inverse_transform(value))

    def _input_shape(self) -> tuple[tuple[int, ...], str]:
        # checked by ChecksInputShape.__call__, before GPyTorch's ARD check
        return (self.input_dim,), f"R^{self.input_dim}"

    def _check_inputs(self, x1: Tensor, x2: Tensor) -> None:
        for name, x in (("x1", x1), ("x2", x2)):
            as_tensor_arg(name, x)
            check_trailing_shape(name, x, (self.input_dim,), f"R^{self.input_dim}")
            check_finite(name, x)
        check_same_dtype_device(x1=x1, x2=x2)
        check_parameters_match(self, x1)

    def lift(self, x: Tensor) -> tuple[Tensor, Tensor]:
        r"""Radius and direction of :math:`\tilde x = [x/\ell, b]`.

        Args:
            x: inputs, shape ``(*batch, n, D)``.

        Returns:
            ``(r, z)`` with ``r`` of shape ``(*batch, n)`` and unit ``z`` of shape
            ``(*batch, n, D+1)`` (where ``r = 0``, possible only when ``b = 0`` and ``x = 0``, ``z``
            is the north pole).
        """
        scaled = x / self.lengthscale
        bias = self.bias.unsqueeze(-1).expand(*scaled.shape[:-1], 1)
        lifted = torch.cat([scaled, bias], dim=-1)
        radius = lifted.norm(dim=-1)
        positive = (radius > 0).unsqueeze(-1)
        direction = lifted / torch.where(positive, radius.unsqueeze(-1), torch.ones_like(bias))
        north = torch.zeros_like(direction)
        north[..., -1] = 1
        return radius, torch.where(positive, direction, north)

    def forward(
        self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params
    ) -> Tensor:
        reject_last_dim_is_batch(last_dim_is_batch)
        self._check_inputs(x1, x2)
        r1, z1 = self.lift(x1)
        r2, z2 = (r1, z1) if x2 is x1 else self.lift(x2)
        if diag:
            return r1 * r2 * self.base_kernel.forward(z1, z2, diag=True)
        return r1.unsqueeze(-1) * r2.unsqueeze(-2) * self.base_kernel.forward(z1, z2)

    def feature_map(self, x: Tensor, num_levels: int | None = None) -> Tensor:
        r"""Explicit features :math:`\Phi = r(x) \sqrt{\lambda_n} Y_{nk}(z(x))`, so that
        :math:`K \approx \Phi\Phi^\top`.

        Args:
            x: inputs, shape ``(*batch, n, D)``.
            num_levels: levels of the base kernel's features (default: its ``num_levels``).

        Returns:
            Shape ``(*batch, n, M)``, ``M`` the number of harmonics in the base kernel's levels.
        """
        self._check_inputs(x, x)
        radius, direction = self.lift(x)
        return radius.unsqueeze(-1) * self.base_kernel.feature_map(direction, num_levels)
