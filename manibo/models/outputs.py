"""Output selection and posterior moments shared by the surrogates: one check, one error, for
every model."""

from __future__ import annotations

import numbers

import numpy as np
import torch
from torch import Tensor

from manibo.exceptions import InputDataError


def check_output_indices(output_indices: list[int] | None, num_outputs: int) -> list[int]:
    """The outputs a posterior is asked for, checked against the model's outputs.

    Args:
        output_indices: None (every output) or distinct indices in ``0 .. num_outputs - 1``: a
            list, tuple or range, or a 1-D NumPy array or tensor of integers.
        num_outputs: the model's number of outputs.

    Returns:
        The indices as a list (every output for None).

    Raises:
        InputDataError: ``output_indices`` is not a non-empty list of distinct valid indices.
    """
    if output_indices is None:
        return list(range(num_outputs))
    indices = None
    if isinstance(output_indices, (list, tuple, range)):
        indices = list(output_indices)
    elif isinstance(output_indices, (np.ndarray, torch.Tensor)) and output_indices.ndim == 1:
        indices = output_indices.tolist()  # integers as Python ints; a float dtype is refused
    valid = (
        indices is not None
        and len(indices) > 0
        and all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in indices)
        and all(0 <= i < num_outputs for i in indices)
        and len(set(indices)) == len(indices)
    )
    if not valid:
        raise InputDataError(
            f"`output_indices` must be None or a list of distinct output indices in "
            f"0..{num_outputs - 1} (the model has {num_outputs} output"
            f"{'s' if num_outputs != 1 else ''}), got {output_indices!r}."
        )
    return [int(i) for i in indices]


class OneOutput:
    """Mixin of a BoTorch model of one output (``num_outputs == 1``): :meth:`subset_output`
    checks its indices as ``posterior`` checks ``output_indices`` (BoTorch's ``Model`` raised a
    bare ``NotImplementedError``, and an index beyond the output must say so)."""

    def subset_output(self, idcs: list[int]):
        """The model itself, for ``idcs == [0]``.

        Raises:
            InputDataError: ``idcs`` is anything else.
        """
        check_output_indices(idcs, 1)
        return self


def broadcast_moments(mean: Tensor, covariance: Tensor) -> tuple[Tensor, Tensor]:
    """A joint Gaussian's mean and covariance broadcast to one batch shape (also for no points).

    Args:
        mean: shape ``(*batch, q)``.
        covariance: shape ``(*batch', q, q)``.

    Returns:
        Shapes ``(*batch'', q)`` and ``(*batch'', q, q)``, ``batch''`` the broadcast of both.
    """
    batch = torch.broadcast_shapes(mean.shape[:-1], covariance.shape[:-2])
    return mean.expand(*batch, mean.shape[-1]), covariance.expand(*batch, *covariance.shape[-2:])
