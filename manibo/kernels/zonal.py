r"""Zonal kernels :math:`k(x, y) = \kappa(x \cdot y)` on spheres, their spectra and feature maps.

A zonal kernel is evaluated exactly from its shape function :math:`\kappa`; its Mercer expansion
:math:`\kappa(x\cdot y) = \sum_n \lambda_n \sum_k Y_{nk}(x) Y_{nk}(y)` (Funk–Hecke eigenvalues
:math:`\lambda_n`, orthonormal spherical harmonics :math:`Y_{nk}`) gives the explicit features
:math:`\Phi(x) = [\sqrt{\lambda_n} Y_{nk}(x)]` over the first ``num_levels`` levels, with
:math:`\Phi\Phi^\top \to K` as levels are added; the truncation error is at most
:math:`\kappa(1) - \sum_{n<L} \lambda_n N(d, n)` entrywise.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.harmonics.funk_hecke import DEFAULT_NUM_NODES, funk_hecke
from manibo.harmonics.gegenbauer import harmonic_dimension
from manibo.harmonics.spherical_harmonics import harmonic_level_index
from manibo.kernels._batch import IndexesBatch
from manibo.kernels._inputs import (
    ChecksInputShape,
    check_parameters_match,
    check_point_pair,
    check_smoothness,
    reject_ard_num_dims,
    reject_last_dim_is_batch,
)
from manibo.spaces.base import safe_sqrt
from manibo.spaces.sphere import Sphere


def _check_positive_int(name: str, value: int) -> None:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ConfigurationError(f"`{name}` must be an integer >= 1, got {value!r}.")


def _sqrt_eigenvalues(eigenvalues: Tensor, d: int) -> Tensor:
    r""":math:`\sqrt{\lambda_n}`, with round-off negatives set to 0 and real negatives rejected.

    Args:
        eigenvalues: shape ``(*batch, L)``.
        d: ambient dimension of the sphere.

    Returns:
        Shape ``(*batch, L)``.

    Raises:
        ConfigurationError: when some
            :math:`\lambda_n < -\sqrt{\epsilon} \sum_m |\lambda_m| N(d, m)` (the shape function is
            not positive definite on the sphere).
    """
    sizes = torch.tensor(
        [float(harmonic_dimension(d, n)) for n in range(eigenvalues.shape[-1])],
        dtype=eigenvalues.dtype,
        device=eigenvalues.device,
    )
    scale = (eigenvalues.detach().abs() * sizes).sum(-1, keepdim=True)
    tol = math.sqrt(torch.finfo(eigenvalues.dtype).eps) * scale
    negative = (eigenvalues.detach() < -tol).reshape(-1, eigenvalues.shape[-1]).any(0)
    if negative.any():
        level = int(negative.nonzero()[0])
        raise ConfigurationError(
            f"the shape function has a negative Funk–Hecke eigenvalue at level {level} "
            f"({float(eigenvalues.detach()[..., level].min()):.3g}), so it is not a "
            f"positive-definite kernel on S^{d - 1}. Use a positive-definite shape function (all "
            "eigenvalues >= 0)."
        )
    return safe_sqrt(eigenvalues)


class ZonalKernel(ChecksInputShape, IndexesBatch, Kernel):
    r"""The zonal kernel :math:`k(x, y) = \kappa(x \cdot y)` on a sphere, from a shape function.

    Args:
        sphere: the :class:`~manibo.spaces.Sphere` (``Sphere(dim)`` lives in ``R^(dim+1)``).
        shape_fn: :math:`\kappa`, a torch callable applied elementwise to inner products in
            :math:`[-1, 1]`; it must be positive definite on the sphere (all Funk–Hecke eigenvalues
            :math:`\ge 0`). Subclasses override :meth:`shape_function` instead and pass None.
        num_levels: number of levels ``L`` used by :meth:`eigenvalues` and :meth:`feature_map` (the
            kernel itself is exact).
        num_nodes: Gauss–Gegenbauer nodes for the eigenvalues (see
            :func:`~manibo.harmonics.funk_hecke.funk_hecke` for the accuracy).
        **kwargs: passed to :class:`gpytorch.kernels.Kernel` (``batch_shape``, ...).

    Inputs are unit vectors of shape ``(*batch, n, dim+1)``; outputs ``(*batch, n, m)`` (or
    ``(*batch, n)`` with ``diag=True``), ``batch`` broadcast with ``batch_shape`` (a kernel
    without parameters gives every batch member the same values). Wrap it in
    :class:`gpytorch.kernels.ScaleKernel` for a trainable variance.
    """

    def __init__(
        self,
        sphere: Sphere,
        shape_fn: Callable[[Tensor], Tensor] | None = None,
        num_levels: int = 10,
        num_nodes: int = DEFAULT_NUM_NODES,
        **kwargs,
    ) -> None:
        if not isinstance(sphere, Sphere):
            raise ConfigurationError(
                f"`sphere` must be a manibo.spaces.Sphere, got {type(sphere).__name__}. "
                "For inputs in R^D use HomogeneousLiftKernel(ZonalKernel(Sphere(D), ...), D)."
            )
        if shape_fn is None and type(self).shape_function is ZonalKernel.shape_function:
            raise ConfigurationError(
                "`shape_fn` is required: pass a torch callable kappa(t), for example "
                "`lambda t: torch.exp(t - 1)`."
            )
        if shape_fn is not None and not callable(shape_fn):
            raise ConfigurationError(f"`shape_fn` must be callable, got {type(shape_fn).__name__}.")
        _check_positive_int("num_levels", num_levels)
        _check_positive_int("num_nodes", num_nodes)
        reject_ard_num_dims(type(self).__name__, kwargs)
        super().__init__(**kwargs)
        self.sphere = sphere
        self.shape_fn = shape_fn
        self.num_levels = int(num_levels)
        self.num_nodes = int(num_nodes)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.sphere!r})"

    def shape_function(self, t: Tensor) -> Tensor:
        r"""The shape function :math:`\kappa(t)`.

        Args:
            t: inner products in :math:`[-1, 1]`, shape ``(*batch, n, m)``; parameters of shape
                ``(*batch_shape, 1, 1)`` broadcast against it.

        Returns:
            Shape ``broadcast((*batch, n, m), (*batch_shape, 1, 1))``.
        """
        return self.shape_fn(t)

    def _dtype_device(self) -> tuple[torch.dtype, torch.device]:
        parameter = next(self.parameters(), None)
        if parameter is None:
            return torch.float64, torch.device("cpu")
        return parameter.dtype, parameter.device

    def eigenvalues(self, num_levels: int | None = None) -> Tensor:
        r"""Funk–Hecke eigenvalues :math:`\lambda_n` by quadrature, differentiable in parameters.

        Args:
            num_levels: number of levels (default: the kernel's ``num_levels``).

        Returns:
            Shape ``(*batch_shape, L)`` in the parameters' dtype and device (float64 on the CPU for
            a kernel without parameters).
        """
        dtype, device = self._dtype_device()
        return funk_hecke(
            lambda t: self.shape_function(t.unsqueeze(-1)).squeeze(-1),
            self.sphere.dim + 1,
            self.num_levels if num_levels is None else num_levels,
            self.num_nodes,
            dtype=dtype,
            device=device,
        )

    def _input_shape(self) -> tuple[tuple[int, ...], str]:
        return self.sphere.point_shape, repr(self.sphere)

    def _check_inputs(self, x1: Tensor, x2: Tensor) -> None:
        check_point_pair(self.sphere, x1, x2)
        check_parameters_match(self, x1)

    def forward(
        self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params
    ) -> Tensor:
        reject_last_dim_is_batch(last_dim_is_batch)
        self._check_inputs(x1, x2)
        # unit vectors within the check's tolerance, scaled to norm 1: an inner product of
        # vectors off by 1e-4 in norm reads an angle of 0.02 rad where they coincide
        snapped = self.sphere.snap(x1)
        x1, x2 = snapped, snapped if x2 is x1 else self.sphere.snap(x2)
        if diag:
            t = (x1 * x2).sum(-1).clamp(-1, 1)
            return self._with_batch(self.shape_function(t.unsqueeze(-1)).squeeze(-1), 1)
        return self._with_batch(self.shape_function((x1 @ x2.transpose(-1, -2)).clamp(-1, 1)), 2)

    def _with_batch(self, value: Tensor, point_dims: int) -> Tensor:
        """``value`` ``(*batch, n, m)`` (``point_dims`` 2) or ``(*batch, n)`` (1) expanded (a view)
        to ``(*broadcast(batch, batch_shape), ...)``: a shape function without batched parameters
        returns no batch dimensions of its own."""
        batch = torch.broadcast_shapes(value.shape[: value.dim() - point_dims], self.batch_shape)
        return value.expand(*batch, *value.shape[value.dim() - point_dims :])

    def feature_map(self, x: Tensor, num_levels: int | None = None) -> Tensor:
        r"""Explicit features :math:`\Phi(x) = [\sqrt{\lambda_n}\, Y_{nk}(x)]`, so that
        :math:`K \approx \Phi\Phi^\top`.

        Uses the first ``L`` levels; :math:`|K - \Phi\Phi^\top|` is at most
        :math:`\kappa(1) - \sum_{n<L}\lambda_n N(d, n)` entrywise (plus the eigenvalues' quadrature
        error).

        Args:
            x: unit vectors, shape ``(*batch, n, dim+1)``.
            num_levels: ``L`` (default: the kernel's ``num_levels``).

        Returns:
            Shape ``(*batch, n, M)`` with ``M = sum_{n<L} N(dim+1, n)``, in ``x``'s dtype and
            device.
        """
        self._check_inputs(x, x)
        levels = self.num_levels if num_levels is None else num_levels
        _check_positive_int("num_levels", levels)
        d = self.sphere.dim + 1
        roots = _sqrt_eigenvalues(self.eigenvalues(levels).to(x), d)
        index = harmonic_level_index(d, levels).to(x.device)
        return self.sphere.eigenfunctions(x, levels) * roots[..., index].unsqueeze(-2)


class ChordalMaternKernel(ZonalKernel):
    r"""Euclidean Matérn-:math:`\nu` on the chord :math:`r = \|x - y\| = \sqrt{2 - 2t}`.

    :math:`\kappa(t) = (1 + s + s^2/3)e^{-s}` for :math:`\nu = 5/2`, :math:`(1+s)e^{-s}` for 3/2 and
    :math:`e^{-s}` for 1/2, with :math:`s = \sqrt{2\nu}\, r/\ell` and a trainable lengthscale
    :math:`\ell`; :math:`\nu = \infty` gives :math:`e^{-r^2/2\ell^2} = e^{-(1-t)/\ell^2}`. A
    Euclidean kernel restricted to the sphere is positive definite, so all eigenvalues are positive;
    they are differentiable in :math:`\ell`.

    Args:
        sphere: the sphere.
        nu: 0.5, 1.5, 2.5 or ``math.inf``.
        num_levels: levels for :meth:`eigenvalues` and :meth:`feature_map`.
        num_nodes: quadrature nodes for the eigenvalues.
        **kwargs: passed to :class:`gpytorch.kernels.Kernel` (``batch_shape``,
            ``lengthscale_prior``, ``lengthscale_constraint``, ...).

    The gradient of :math:`r` is taken as 0 at :math:`r = 0` exactly, where the kernel (for
    :math:`\nu = 1/2`) is not differentiable; elsewhere gradients are exact.
    """

    has_lengthscale = True

    def __init__(
        self,
        sphere: Sphere,
        nu: float = 2.5,
        num_levels: int = 10,
        num_nodes: int = DEFAULT_NUM_NODES,
        **kwargs,
    ) -> None:
        nu = check_smoothness(nu, (0.5, 1.5, 2.5, math.inf), " for the chordal Matérn kernel")
        super().__init__(sphere, None, num_levels, num_nodes, **kwargs)
        self.nu = nu

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.sphere!r}, nu={self.nu})"

    def shape_function(self, t: Tensor) -> Tensor:
        lengthscale = self.lengthscale
        if math.isinf(self.nu):
            return torch.exp(-(1 - t) / lengthscale**2)
        s = math.sqrt(2 * self.nu) * safe_sqrt(2 - 2 * t) / lengthscale
        if self.nu == 0.5:
            return torch.exp(-s)
        if self.nu == 1.5:
            return (1 + s) * torch.exp(-s)
        return (1 + s + s**2 / 3) * torch.exp(-s)
