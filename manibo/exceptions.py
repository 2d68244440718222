"""The errors and warnings manibo raises, in one hierarchy.

Each is also a builtin, so callers can catch either.
"""


class ManiboError(Exception):
    """Base class of every error raised by manibo."""


class InputDataError(ManiboError, ValueError):
    """An argument has the wrong shape, dtype, device or value, or points lie off their space."""


class ConfigurationError(ManiboError, ValueError):
    """An option or hyperparameter is outside its valid range (for example ν ≤ 0)."""


class NonPositiveLengthscaleError(ConfigurationError):
    """A kernel was evaluated at a lengthscale of 0 or below. Set by hand, it is a configuration
    error; reached by a marginal-likelihood optimiser (a lengthscale that underflowed to 0), it is
    a numerical failure, which :func:`~manibo.models.fit_with_retries` restarts from."""


class ManiboWarning(UserWarning):
    """Base class of every warning emitted by manibo."""


class TruncationWarning(ManiboWarning):
    """A spectral series was cut at its cap.

    The neglected mass is still above the tolerance.
    """


class NonFiniteGradientWarning(ManiboWarning):
    """Restarts of an acquisition ascent stopped where the acquisition's value or gradient was not
    finite (NaN or infinite), so they were not optimised from there; the answer comes from the
    best finite value of all restarts. Also issued when raw samples of the starts had a NaN or
    -inf acquisition value: they were not used as starts.
    """


class NonFiniteAcquisitionError(ManiboError, ValueError):
    """The acquisition was NaN or -inf at every raw sample drawn for the starts of its ascent, so
    there is no point to start from (a NaN in the model, or an acquisition finite only on a region
    too small for the raw samples to hit: pass starts there).
    """


class NoEvaluationSucceededWarning(ManiboWarning):
    """Every evaluation of a run failed, so its result has no best point (``best_x``,
    ``best_y`` and ``recommended_x`` are None). The failures stay in the result and the journal.
    """


class EvaluationFailed(ManiboError):
    """Raise it from an objective to declare that this evaluation failed.

    ``BayesianOptimizer.run`` records the point as a failed evaluation, with the message, and goes
    on; any other exception from the objective (a ``NameError``, a ``TypeError`` ...) is treated
    as a programming error and stops the run at once, with its traceback.
    """


class ObjectiveError(ManiboError, TypeError):
    """An objective returned something other than one real number (a tuple, None, a string ...)."""


class ObjectiveExitedError(RuntimeError):
    """The objective, or its module when imported, called ``sys.exit()`` under ``manibo run``: a
    ``SystemExit`` that would end the run with the objective's status (0 for ``sys.exit(0)``) and
    no message or results, as if it had succeeded. It ends the run with status 1 and the
    traceback, as an error of the objective's code does (so it is no :class:`ManiboError`, whose
    errors of settings end it with status 2); an objective must return a number or raise."""


class ProposalWarningSummary(ManiboWarning):
    """The warnings BoTorch and GPyTorch issued while a run proposed its points, counted by kind.

    ``BayesianOptimizer.run`` gathers them and issues this one warning at the end of the run, so
    that they do not break the progress bar line by line.
    """


class StaleModelError(ManiboError, RuntimeError):
    """A posterior or a fantasy model was read after the model it came from changed (a fit step,
    ``load_state_dict``, a move to another dtype or device): it would mix the old state with the
    new. Take a new posterior, or condition the changed model again."""
