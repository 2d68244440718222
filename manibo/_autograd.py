"""Gradients on where manibo differentiates (fitting a surrogate, ascending an acquisition), also
inside a caller's ``torch.no_grad()`` or ``torch.inference_mode()``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import Tensor


@contextlib.contextmanager
def autograd_on() -> Iterator[None]:
    """Within the block, autograd records as outside any ``no_grad`` or ``inference_mode``."""
    with torch.inference_mode(False), torch.enable_grad():
        yield


def usable_in_autograd(tensor: Tensor) -> Tensor:
    """``tensor``, or a copy of it where it was made under ``torch.inference_mode()`` (such a
    tensor cannot be saved for a backward pass); call it within :func:`autograd_on`."""
    return tensor.clone() if isinstance(tensor, Tensor) and tensor.is_inference() else tensor
