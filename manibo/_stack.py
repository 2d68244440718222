"""Where a warning raised deep inside a kernel should point: at the user's code."""

from __future__ import annotations

import dataclasses
import os
import sys

import botorch
import gpytorch
import linear_operator
import torch

import manibo

#: folders of manibo and of the libraries that call its kernels on the user's behalf
_LIBRARY_FOLDERS = tuple(
    os.path.dirname(module.__file__) + os.sep
    for module in (manibo, gpytorch, botorch, linear_operator, torch)
)


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn``, called from the function that warns, that makes
    the warning point at the first frame outside manibo, GPyTorch, BoTorch, linear_operator and
    torch: the user's line that fitted the model or evaluated the kernel."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and _in_library(frame):
        frame, level = frame.f_back, level + 1
    return level


def _in_library(frame) -> bool:
    """Whether ``frame`` runs library code: in one of the library folders, in ``dataclasses``
    (``dataclasses.replace``), or an ``__init__`` that it generated (its file is ``"<string>"``;
    the class's ``__post_init__`` is what warns). The frame's locals are not read: that would
    keep them, an optimiser among them, alive with the frame."""
    name = frame.f_code.co_filename
    if name.startswith(_LIBRARY_FOLDERS) or name == dataclasses.__file__:
        return True
    return name == "<string>" and frame.f_code.co_name == "__init__"
