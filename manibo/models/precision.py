"""BoTorch's advice to fit in double precision, given once per surrogate.

``SingleTaskGP`` checks its inputs before and after its transforms and advises float64 each time,
and a surrogate with several outputs, or with a pretraining step, builds several such models.
"""

from __future__ import annotations

import warnings

import torch
from botorch.exceptions.warnings import InputDataWarning

from manibo._stack import user_stacklevel

_ADVICE = "The model inputs are of type"
"""How BoTorch's advice begins (the filter that silences it matches on it)."""

_OPEN: list[Float64AdviceOnce] = []
"""The contexts entered and not yet left, innermost last."""


class Float64AdviceOnce:
    """Context manager that gives the single-precision advice at most once for what it encloses.

    Inside, BoTorch's own advice is silenced. On a normal exit, the advice is due if this context
    was made for single-precision model inputs or an enclosed one was; it is then handed to the
    enclosing context, or, for the outermost, given as one ``InputDataWarning`` that points at the
    user's line. A context made with ``dtype=None`` (a registry building whatever surrogate was
    asked for) gives the advice only for the BoTorch models built inside it.

    Args:
        dtype: the dtype of the inputs of the BoTorch model built inside, or None.
    """

    def __init__(self, dtype: torch.dtype | None = None) -> None:
        self.due = None if dtype in (None, torch.float64) else dtype
        self._filters = warnings.catch_warnings()

    def __enter__(self) -> None:
        self._filters.__enter__()
        warnings.filterwarnings("ignore", message=_ADVICE, category=InputDataWarning)
        _OPEN.append(self)

    def __exit__(self, kind, error, traceback) -> None:
        _OPEN.remove(self)
        self._filters.__exit__(kind, error, traceback)
        if kind is not None or self.due is None:
            return
        if _OPEN:
            _OPEN[-1].due = self.due
            return
        warnings.warn(
            f"{_ADVICE} {self.due}: the surrogate is fitted in single precision, which manibo "
            "supports but which is less precise and less stable than float64 (BoTorch "
            "recommends float64). Pass float64 tensors (`X.double()`, `Y.double()`) unless "
            "memory or speed requires float32.",
            InputDataWarning,
            stacklevel=user_stacklevel(),
        )
