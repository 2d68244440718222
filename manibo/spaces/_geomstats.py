"""The one door to geomstats.

Picks its PyTorch backend, and undoes the global dtype change it makes.

geomstats chooses its backend from ``GEOMSTATS_BACKEND`` at first import and, with the PyTorch
backend, sets torch's default dtype to float64. manibo never relies on the user's environment and
never changes global torch state, so every use of geomstats goes through
:func:`geomstats_module` here.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from types import ModuleType

import torch

from manibo.exceptions import ManiboError


def geomstats_module(name: str) -> ModuleType:
    """Import ``geomstats.<name>`` with the PyTorch backend.

    Torch's default dtype is left as it was.

    Args:
        name: a submodule path such as ``"geometry.hypersphere"``.

    Raises:
        ManiboError: geomstats was already imported with a backend other than PyTorch.
    """
    backend = sys.modules.get("geomstats.backend")
    if backend is not None and "pytorch" not in backend.__name__:
        raise ManiboError(
            f"geomstats was imported with its {backend.__name__!r} backend "
            "before manibo needed it; manibo needs the PyTorch backend. "
            "Import manibo's geometry first, or start Python with GEOMSTATS_BACKEND=pytorch."
        )
    default_dtype = torch.get_default_dtype()
    previous = os.environ.get("GEOMSTATS_BACKEND")
    os.environ["GEOMSTATS_BACKEND"] = "pytorch"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ImportWarning)  # geomstats' backend importer is dated
            return importlib.import_module(f"geomstats.{name}")
    finally:
        torch.set_default_dtype(default_dtype)
        if previous is None:
            os.environ.pop("GEOMSTATS_BACKEND", None)
        else:
            os.environ["GEOMSTATS_BACKEND"] = previous
