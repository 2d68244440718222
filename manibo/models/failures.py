"""Which errors raised while fitting a model are numerical failures, which a restart from other
hyperparameters may avoid, and which are programming errors, which must surface at once."""

from __future__ import annotations

import torch
from botorch.exceptions.errors import ModelFittingError
from linear_operator.utils.errors import NanError, NotPSDError

from manibo.exceptions import NonPositiveLengthscaleError


def is_numerical_failure(error: Exception) -> bool:
    """Whether ``error``, raised while fitting, is one a restart from other hyperparameters may
    avoid: BoTorch's :class:`~botorch.exceptions.errors.ModelFittingError`, a failed Cholesky
    (``NotPSDError``) or decomposition (``torch.linalg.LinAlgError``), NaN reaching a solve
    (``NanError``), a lengthscale that underflowed to 0 (the kernel's
    :class:`~manibo.exceptions.NonPositiveLengthscaleError`, or GPyTorch's prior refusing it as
    outside a log-normal prior's support)."""
    numerical = (
        ModelFittingError,
        NotPSDError,
        NanError,
        torch.linalg.LinAlgError,
        NonPositiveLengthscaleError,
    )
    if isinstance(error, numerical):
        return True
    return isinstance(error, ValueError) and "within the support" in str(error)
