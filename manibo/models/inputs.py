"""Input checks shared by the surrogates' ``posterior`` and ``condition_on_observations``: one
check, one error, for every model."""

from __future__ import annotations

import torch
from torch import Tensor

from manibo._validation import as_tensor_arg, check_finite
from manibo.exceptions import InputDataError
from manibo.spaces.base import Space
from manibo.spaces.categorical import Categorical
from manibo.spaces.integers import Integers


def check_points(space: Space, X: Tensor, name: str = "X", membership: bool = True) -> Tensor:
    """Return ``X`` if it holds finite points of ``space`` with a point dimension, shape
    ``(*batch, q, *point_shape)``, else raise :class:`~manibo.exceptions.InputDataError`
    (``membership=False``: finite coordinates of that shape, on the space or not)."""
    space.check(X, name, membership)
    if X.dim() < 1 + len(space.point_shape):
        raise InputDataError(
            f"`{name}` must have shape (*batch, q, {', '.join(map(str, space.point_shape))}), got "
            f"{tuple(X.shape)}. Use `{name}.unsqueeze(0)` for one point."
        )
    return X


def check_model_dtype(X: Tensor, reference: Tensor, name: str = "X") -> Tensor:
    """Return ``X`` if it has the dtype and device of the model's tensor ``reference``, else raise
    :class:`~manibo.exceptions.InputDataError` saying how to make them agree."""
    dtype = X.dtype != reference.dtype
    device = X.device != reference.device
    if dtype or device:
        to_model = ", ".join([f"'{reference.device}'"] * device + [str(reference.dtype)] * dtype)
        to_input = ", ".join([f"'{X.device}'"] * device + [str(X.dtype)] * dtype)
        raise InputDataError(
            f"the model is {reference.dtype} on {reference.device} but `{name}` is {X.dtype} on "
            f"{X.device}; pass `{name}.to({to_model})`, or convert the model with "
            f"`model.to({to_input})`."
        )
    return X


def check_observations(X: Tensor, Y: Tensor, num_outputs: int) -> None:
    """Raise :class:`~manibo.exceptions.InputDataError` unless ``Y`` holds finite outcomes of the
    ``n`` points ``X``.

    Args:
        X: inputs, shape ``(*batch, n, d)``.
        Y: outcomes, shape ``(*batch', n, num_outputs)``.
        num_outputs: the outputs each observation has.
    """
    as_tensor_arg("Y", Y)
    check_finite("Y", Y)
    n = X.shape[-2]
    if Y.dim() < 2 or Y.shape[-2:] != torch.Size([n, num_outputs]):
        raise InputDataError(
            f"`Y` must have shape (*batch, {n}, {num_outputs}) to match `X` {tuple(X.shape)}, "
            f"got {tuple(Y.shape)}."
        )


def indices_not_coordinates(surrogate: str, space: Space, advice: str) -> str | None:
    """Why ``surrogate``, which reads the coordinates of :meth:`~manibo.spaces.base.Space.embed`,
    cannot model ``space``: its points, or those of one of its factors, are vertex or node indices
    (a :class:`~manibo.spaces.Mesh`, a :class:`~manibo.spaces.Graph`), whose differences mean
    nothing, or the points of another finite space (integers, choices); None where it can.
    ``advice`` says what to use instead."""
    factors, finite = [space], None
    while factors and finite is None:
        factor = factors.pop(0)
        if factor.is_discrete:
            finite = factor
        factors += list(getattr(factor, "factors", ()))
    if finite is None:
        return None
    whose = f"{space}" if finite is space else f"{finite}, a factor of {space},"
    what = (
        "integers or choices of a finite set, which it does not model"
        if isinstance(finite, (Integers, Categorical))
        else "indices"
    )
    return (
        f"the {surrogate!r} surrogate needs coordinates, but the points of {whose} are {what}; "
        f"{advice}"
    )
