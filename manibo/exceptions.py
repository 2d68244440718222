"""The errors and warnings manibo raises, in one hierarchy.

Each is also a builtin, so callers can catch either.
"""


class ManiboError(Exception):
    """Base class of every error raised by manibo."""


class InputDataError(ManiboError, ValueError):
    """An argument has the wrong shape, dtype, device or value, or points lie off their space."""


class ConfigurationError(ManiboError, ValueError):
    """An option or hyperparameter is outside its valid range (for example ν ≤ 0)."""


class ManiboWarning(UserWarning):
    """Base class of every warning emitted by manibo."""


class TruncationWarning(ManiboWarning):
    """A spectral series was cut at its cap.

    The neglected mass is still above the tolerance.
    """
