"""Input checks shared by every public entry point.

They cover shapes, finiteness, dtype and device agreement, and device names.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError, InputDataError


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` for an error message, cut to ``limit`` characters (a tensor given where a
    number belongs would otherwise print every entry)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 5]}...{text[-2:]}"


def described(value: object) -> str:
    """What arrived, for an error message: ``a torch.int64 tensor of shape (1, 2)`` for a tensor,
    else the name of its type (``list``)."""
    if isinstance(value, Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    return type(value).__name__


def type_name(value: object) -> str:
    """``float``, ``numpy.bool``, ``torch.Tensor``: the type of ``value`` as people name it."""
    kind = type(value)
    module = kind.__module__.split(".")[0]
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def as_points(name: str, value: object) -> Tensor:
    """The points given as ``name``: a tensor as it is, a NumPy array as a tensor of its values
    and dtype (a copy); anything else (a list, None) or an array of strings or objects gets an
    ``InputDataError``."""
    if isinstance(value, np.ndarray):
        if not np.issubdtype(value.dtype, np.floating):
            raise InputDataError(
                f"`{name}` must hold floating-point numbers, got a NumPy array of dtype "
                f"{value.dtype}. Convert it with {name}.astype(numpy.float64)."
            )
        return torch.tensor(value)
    if not isinstance(value, Tensor):
        raise InputDataError(
            f"`{name}` must be a torch.Tensor or a NumPy array, got {type_name(value)}. Convert "
            "it with torch.as_tensor(..., dtype=torch.float64)."
        )
    return value


def as_tensor_arg(name: str, value: object) -> Tensor:
    """Return ``value`` if it is a floating tensor, otherwise raise a clear ``InputDataError``."""
    if not isinstance(value, Tensor):
        raise InputDataError(
            f"`{name}` must be a torch.Tensor, got {type(value).__name__}. "
            "Convert it with torch.as_tensor(..., dtype=torch.float64)."
        )
    if not value.is_floating_point():
        raise InputDataError(
            f"`{name}` must have a floating dtype, got {value.dtype}. "
            "Cast it with .to(torch.float64) (graph and mesh indices are stored as floats)."
        )
    return value


def check_trailing_shape(
    name: str,
    x: Tensor,
    point_shape: tuple[int, ...],
    space: str,
    matrix_shape: tuple[int, int] | None = None,
    advice: str | None = None,
) -> None:
    """Raise unless ``x`` has shape ``(*batch, *point_shape)``; where the points are matrices
    ``matrix_shape`` flattened row-major (SO(n), SPD, Grassmann frames) and ``x`` ends in that
    shape, the message says how to flatten them. ``advice``, where given, replaces the message's
    advice (a space that recognises what ``x`` holds says how to convert it)."""
    k = len(point_shape)
    if x.dim() < k or tuple(x.shape[x.dim() - k :]) != tuple(point_shape):
        size = math.prod(point_shape)
        if advice is None and matrix_shape is not None and x.shape[-2:] == matrix_shape:
            advice = (
                f"Points are flattened row-major: `{name}.reshape(*{name}.shape[:-2], {size})` "
                f"(for one matrix, `{name}.reshape({size})`)."
            )
        if advice is None:
            advice = _other_size_advice(x, matrix_shape)
        if advice is None:
            advice = "Stack points along the leading dimensions."
        raise InputDataError(
            f"`{name}` must have shape (*batch, {', '.join(map(str, point_shape))}) for points of "
            f"{space}, got {tuple(x.shape)}. {advice}"
        )


def _other_size_advice(x: Tensor, matrix_shape: tuple[int, int] | None) -> str | None:
    """Where a space's points are square matrices ``matrix_shape`` and ``x`` ends in square
    matrices of another size ``s >= 3`` (``(s, s)``, or ``s * s`` numbers; smaller shapes are
    ambiguous: 4 numbers may be a quaternion, ``(2, 2)`` two points), a message that says so;
    None otherwise."""
    if matrix_shape is None or matrix_shape[0] != matrix_shape[1] or x.dim() == 0:
        return None
    if x.dim() >= 2 and x.shape[-1] == x.shape[-2]:
        size = x.shape[-1]
    else:
        size = math.isqrt(x.shape[-1])
        size = size if size * size == x.shape[-1] else None
    if size is None or size < 3 or size == matrix_shape[0]:  # (2, 2): two points of two numbers?
        return None
    m = matrix_shape[0]
    return (
        f"That looks like {size}x{size} matrices, but this space's points are {m}x{m} "
        f"matrices ({m * m} numbers each): use the space of {size}x{size} matrices, or "
        f"pass {m}x{m} ones."
    )


def check_finite(name: str, x: Tensor) -> None:
    """Raise if ``x`` holds NaN or infinite entries."""
    if not torch.isfinite(x).all():
        bad = int((~torch.isfinite(x)).sum())
        raise InputDataError(
            f"`{name}` contains {bad} NaN or infinite entries. "
            "Remove or impute them before calling."
        )


def check_same_dtype_device(**tensors: Tensor) -> None:
    """Raise if the given tensors do not share one dtype and one device."""
    items = [(k, v) for k, v in tensors.items() if v is not None]
    if not items:
        return
    name0, t0 = items[0]
    for name, t in items[1:]:
        if t.dtype != t0.dtype:
            raise InputDataError(
                f"`{name}` has dtype {t.dtype} but `{name0}` has {t0.dtype}; manibo does not mix "
                f"dtypes. Cast both, e.g. `{name} = {name}.to({name0}.dtype)`."
            )
        if t.device != t0.device:
            raise InputDataError(
                f"`{name}` is on {t.device} but `{name0}` is on {t0.device}; "
                f"move both to one device with `.to(device)`."
            )


def default_tolerance(dtype: torch.dtype) -> float:
    """Tolerance for membership checks (unit norm, orthogonality) in ``dtype``."""
    return 1e-6 if dtype == torch.float64 else 1e-4 if dtype == torch.float32 else 1e-2


def checked_device(device: str | torch.device | None) -> torch.device:
    """The torch device named by ``device`` (None: CPU), refused with a clear error when it is not
    a device name or names CUDA on a machine where torch sees none."""
    try:
        device = torch.device("cpu" if device is None else device)
    except (RuntimeError, TypeError) as err:
        raise ConfigurationError(
            f"`device` must name a torch device such as 'cpu' or 'cuda', got {device!r}."
        ) from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigurationError(
            f"`device` is {str(device)!r} but torch sees no CUDA device here; use device='cpu' "
            "(`--device cpu` for manibo run) or install a CUDA build of torch on a machine with "
            "a GPU."
        )
    return device


def check_int(
    name: str, value: object, minimum: int | None = None, maximum: int | None = None
) -> int:
    """``value`` as an ``int``, refused with a ``ConfigurationError`` unless it is an integer in
    ``[minimum, maximum]`` (a bool, a string or a fractional float is refused; ``3.0`` is 3)."""
    integral = isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer()
    )
    if isinstance(value, bool) or not integral:
        raise ConfigurationError(
            f"`{name}` must be an integer, got {shown(value)} ({type(value).__name__})."
        )
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        low = "" if minimum is None else f">= {minimum}"
        high = "" if maximum is None else f"<= {maximum}"
        raise ConfigurationError(
            f"`{name}` must be an integer {' and '.join(filter(None, (low, high)))}, got {value}."
        )
    return value


def check_real(name: str, value: object, minimum: float | None = None, what: str = "") -> float:
    """``value`` as a ``float``, refused with a ``ConfigurationError`` unless it is a finite real
    number ``>= minimum`` (a bool or a string is refused); ``what`` says what it is for."""
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not real or not math.isfinite(value) or (minimum is not None and value < minimum):
        bound = "" if minimum is None else f" >= {minimum:g}"
        raise ConfigurationError(
            f"`{name}` must be a finite real number{bound}{what}, got {shown(value)} "
            f"({type(value).__name__})."
        )
    return float(value)


def check_seed(name: str, value: object) -> int:
    """``value`` as a seed for ``torch.Generator.manual_seed``, refused with a
    ``ConfigurationError`` unless it is an integer in ``[0, 2**64 - 1]`` (a bool or a float is
    refused; so is a NumPy generator)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= value < 2**64:
        raise ConfigurationError(
            f"`{name}` must be a torch.Generator, an integer seed in [0, 2**64 - 1] or None, got "
            f"{shown(value)} ({type(value).__name__}). Pass e.g. {name}=0 or "
            f"{name}=torch.Generator().manual_seed(0)."
        )
    return int(value)


def check_bool(name: str, value: object) -> bool:
    """``value`` if it is a bool, else a ``ConfigurationError`` (``minimize="no"`` is not False)."""
    if not isinstance(value, bool):
        raise ConfigurationError(
            f"`{name}` must be True or False, got {shown(value)} ({type(value).__name__})."
        )
    return value


def as_seconds(name: str, value: object) -> float | None:
    """A duration as a ``float`` (None stays None), refused with an ``InputDataError`` unless it
    is a finite real number ``>= 0``; a NumPy scalar or a 0-d tensor of a real dtype counts (a
    bool, a string or a complex number does not)."""
    if value is None:
        return None
    scalar = getattr(value, "shape", None) == () and hasattr(value, "item")
    number = value.item() if scalar else value  # NumPy scalars and 0-d arrays or tensors
    try:
        real = isinstance(number, numbers.Real) and not isinstance(number, bool)
        seconds = float(number) if real else math.nan
    except OverflowError:  # an integer beyond float: 10**400
        seconds = math.inf
    if not (math.isfinite(seconds) and seconds >= 0):
        raise InputDataError(
            f"`{name}` must be a finite number of seconds >= 0 or None, got "
            f"{type(value).__name__} {shown(value)}."
        )
    return seconds


def as_values(name: str, value: object) -> Tensor:
    """Observed values as a float64 CPU tensor of shape ``(n,)``.

    Accepts a real number, a sequence of them, a NumPy array or a tensor; anything else (a string,
    None, nested records) gets an ``InputDataError`` that shows what arrived.
    """
    if isinstance(value, (str, bytes)) or value is None:
        raise InputDataError(
            f"`{name}` must hold real numbers (a float, a list of floats or a tensor), got "
            f"{type(value).__name__} {shown(value)}."
        )
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        value = value.copy()  # torch warns of a tensor over read-only memory (pandas' .values)
    try:
        try:
            kind = torch.as_tensor(value).dtype  # what arrived: True is not 1.0, 1+2j is not 1.0
        except (OverflowError, RuntimeError, ValueError):  # an integer beyond int64: 10**20
            kind = torch.float64
        if kind == torch.bool or kind.is_complex:
            raise InputDataError(
                f"`{name}` must hold real numbers (a float, a list of floats or a tensor), got "
                f"{'booleans' if kind == torch.bool else 'complex numbers'}: {shown(value)}. "
                "Convert them yourself if that is what you mean (`float(...)`, `.real`)."
            )
        values = torch.as_tensor(value, dtype=torch.float64)
    except InputDataError:
        raise
    except (TypeError, ValueError, RuntimeError) as err:
        raise InputDataError(
            f"`{name}` must hold real numbers (a float, a list of floats or a tensor), got "
            f"{type(value).__name__} {shown(value)} ({err})."
        ) from err
    return values.detach().cpu().reshape(-1)
