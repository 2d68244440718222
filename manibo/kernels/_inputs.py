"""Input checks every manibo kernel runs in ``forward``.

They check flags, points, and parameters on the inputs' dtype/device.
"""

from __future__ import annotations

from torch import Tensor, nn

from manibo._validation import check_same_dtype_device
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.spaces.base import Space


def reject_last_dim_is_batch(flag: bool) -> None:
    """Raise: manibo inputs keep point coordinates in the trailing dimension."""
    if flag:
        raise InputDataError(
            "`last_dim_is_batch=True` is not supported: "
            "the trailing dimension holds point coordinates."
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
        raise ConfigurationError(
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
