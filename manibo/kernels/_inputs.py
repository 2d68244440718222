"""Input checks every manibo kernel runs in ``forward``.

They check flags, points, and parameters on the inputs' dtype/device.
"""

from __future__ import annotations

import math
import numbers

from torch import Tensor, nn

from manibo._validation import as_tensor_arg, check_same_dtype_device, check_trailing_shape
from manibo.exceptions import ConfigurationError, InputDataError, NonPositiveLengthscaleError
from manibo.spaces.base import Space


class ChecksInputShape:
    """Mixin of every manibo kernel, listed before GPyTorch's ``Kernel`` in its bases: ``__call__``
    refuses ``x1`` or ``x2`` whose trailing shape is not one input's (:meth:`_input_shape`) with
    manibo's :class:`~manibo.exceptions.InputDataError`, naming the argument, the expected shape
    and the shape that arrived. GPyTorch's ``Kernel.__call__`` runs before ``forward`` and its
    checks, and would otherwise raise its own ``RuntimeError`` ("x1_ and x2_ must have the same
    number of dimensions!") for inputs of different trailing sizes.

    A one-dimensional input is what GPyTorch reads as points of one coordinate: refused unless
    one input has one coordinate. Kernels with ``active_dims`` select coordinates before
    ``forward``: their inputs are left to GPyTorch and ``forward``.
    """

    def _input_shape(self) -> tuple[tuple[int, ...], str]:
        """The trailing shape of one input and what the inputs are (for the message): by default
        the points of the kernel's ``space`` (flattened: matrices have ``point_shape (n * n,)``,
        points of a product space are their factors' points concatenated)."""
        return self.space.point_shape, repr(self.space)

    def __call__(self, x1: Tensor, x2: Tensor | None = None, diag: bool = False, **params):
        if self.active_dims is None:
            shape, what = self._input_shape()
            for name, x in (("x1", x1), ("x2", x2)):
                if x is None:
                    continue
                if as_tensor_arg(name, x).dim() >= 2:
                    check_trailing_shape(name, x, shape, what)
                elif tuple(shape) != (1,):
                    raise InputDataError(
                        f"`{name}` must have shape (*batch, n, {', '.join(map(str, shape))}) for "
                        f"points of {what}, got {tuple(x.shape)} (GPyTorch reads a "
                        f"one-dimensional tensor as points of one coordinate). Use "
                        f"`{name}.unsqueeze(0)` for one point."
                    )
        return super().__call__(x1, x2, diag=diag, **params)


def reject_last_dim_is_batch(flag: bool) -> None:
    """Raise: manibo inputs keep point coordinates in the trailing dimension."""
    if flag:
        raise InputDataError(
            "`last_dim_is_batch=True` is not supported: "
            "the trailing dimension holds point coordinates."
        )


def reject_ard_num_dims(kernel: str, options: dict, allowed: int | None = None) -> None:
    """Raise for ``ard_num_dims`` among a kernel's GPyTorch ``options`` (its ``**kwargs``),
    at construction: GPyTorch would accept it and make a lengthscale ``(*batch_shape, 1, D)``
    that the kernel's formulas cannot use. ``allowed``: the one value a kernel with one
    lengthscale per coordinate takes (its number of coordinates); None refuses every value.

    Raises:
        ConfigurationError: naming the kernel, the value, and what the kernel has instead.
    """
    value = options.get("ard_num_dims")
    if value is None or value == allowed:
        return
    if allowed is None:
        raise ConfigurationError(
            f"{kernel}: `ard_num_dims` is not supported, got {value!r}: a geometric kernel has one "
            "lengthscale (its distances are on the space, not per coordinate). For one "
            "lengthscale per factor of a product space use a FactorProductKernel "
            "(`manibo.kernels.matern_kernel(space)` builds one)."
        )
    raise ConfigurationError(
        f"{kernel}: `ard_num_dims` must be {allowed} or left out, got {value!r}: the kernel has "
        f"one lengthscale per coordinate of its {allowed} coordinates already."
    )


def check_point_pair(space: Space, x1: Tensor, x2: Tensor) -> None:
    """Both inputs are points of ``space`` with one dtype and one device."""
    space.check(x1, "x1")
    if x2 is not x1:
        space.check(x2, "x2")
    check_same_dtype_device(x1=x1, x2=x2)


def check_parameters_match(kernel: nn.Module, x: Tensor) -> None:
    """The kernel's parameters share the dtype and device of the inputs ``x``."""
    parameter = next(kernel.parameters(), None)
    if parameter is not None and (parameter.dtype != x.dtype or parameter.device != x.device):
        raise InputDataError(
            f"the kernel's parameters are {parameter.dtype} on {parameter.device} "
            f"but the inputs are {x.dtype} on {x.device}; "
            "move the kernel with `kernel.to(x)` (BoTorch models do this for you)."
        )


def check_lengthscale(kernel: nn.Module, lengthscale: Tensor) -> None:
    """No lengthscale is zero or negative (that would make the Gram matrix NaN).

    NaN passes: optimisers that try a NaN step handle the NaN loss themselves.
    """
    if bool((lengthscale <= 0).any()):
        bad = lengthscale.detach().reshape(-1)
        bad = bad[bad <= 0].tolist()[:5]
        raise NonPositiveLengthscaleError(
            f"{type(kernel).__name__}: lengthscales must be positive, got {bad}. Set a positive "
            "value (e.g. `kernel.lengthscale = 0.5`), or keep the default positive constraint and "
            "a lengthscale prior when fitting."
        )


def check_forward(kernel: nn.Module, x1: Tensor, x2: Tensor, last_dim_is_batch: bool) -> None:
    """Every check of a space kernel's ``forward``: the flag, the points, the parameters, a
    positive lengthscale."""
    reject_last_dim_is_batch(last_dim_is_batch)
    check_point_pair(kernel.space, x1, x2)
    check_parameters_match(kernel, x1)
    check_lengthscale(kernel, kernel.lengthscale)


def check_smoothness(nu: object, allowed: tuple[float, ...] | None = None, what: str = "") -> float:
    """``nu`` as a float: a Matérn smoothness ``> 0`` or ``math.inf`` (the heat kernel), one of
    ``allowed`` where the kernel takes only those; a bool or a string is refused rather than read
    as a number (``nu=True`` is not 1.0).

    Raises:
        ConfigurationError: naming what arrived and what to use.
    """
    real = isinstance(nu, numbers.Real) and not isinstance(nu, bool)
    if real and allowed is not None and float(nu) in allowed:
        return float(nu)
    if allowed is not None:
        choices = ", ".join("math.inf" if math.isinf(a) else f"{a:g}" for a in allowed)
        raise ConfigurationError(f"`nu` must be one of {choices}{what}, got {nu!r}.")
    if not real or math.isnan(nu) or not nu > 0:
        raise ConfigurationError(
            f"`nu` must be a real number > 0 (or math.inf for the heat kernel), got {nu!r} "
            f"({type(nu).__name__}). Common choices are 0.5, 1.5 and 2.5."
        )
    return float(nu)
