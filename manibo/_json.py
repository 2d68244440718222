"""Standard JSON for values that hold non-finite floats (``nu = inf``, a NaN in a result).

Python's ``json`` writes ``inf`` as the token ``Infinity``, which is not JSON: other readers
(``jq``, JavaScript, most languages' parsers) refuse the file. Here a non-finite float is written
as the one-key object ``{"$float": "inf"}`` (or ``"-inf"``, ``"nan"``) and read back as the float;
every other value is plain JSON. The key ``"$float"`` is reserved: a dict that holds only that key
cannot be written.
"""

from __future__ import annotations

import json
import math
from typing import Any

NONFINITE_KEY = "$float"
_NAMES = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def encode(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``{"$float": "inf" | "-inf" | "nan"}``.

    Tuples become lists, as ``json`` writes them.

    Raises:
        ValueError: a dict holds only the reserved key ``"$float"``.
    """
    if isinstance(value, float) and not math.isfinite(value):
        name = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return {NONFINITE_KEY: name}
    if isinstance(value, dict):
        if set(value) == {NONFINITE_KEY}:
            raise ValueError(
                f"the key {NONFINITE_KEY!r} is reserved for non-finite numbers; rename it in "
                f"{value!r}."
            )
        return {key: encode(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(item) for item in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """Standard JSON text of ``value`` (see :func:`encode`); ``options`` go to ``json.dumps``.

    Raises:
        TypeError: a value is not JSON (a tensor, an object).
        ValueError: a dict holds only the reserved key ``"$float"``.
    """
    return json.dumps(encode(value), allow_nan=False, **options)


def loads(text: str | bytes) -> Any:
    """The value of JSON ``text``, with ``{"$float": ...}`` objects read back as floats.

    The non-standard tokens ``Infinity``, ``-Infinity`` and ``NaN`` that Python's ``json`` writes
    are read as well (journals of format 2 hold them).
    """
    return json.loads(text, object_hook=_decode)


def _decode(record: dict[str, Any]) -> Any:
    name = record.get(NONFINITE_KEY) if len(record) == 1 else None
    return _NAMES[name] if isinstance(name, str) and name in _NAMES else record
