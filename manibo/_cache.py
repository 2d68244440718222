"""Where manibo keeps what it computes once (fundamental systems of spherical harmonics) on disk."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

CACHE_ENV_VAR = "MANIBO_CACHE_DIR"


def cache_dir() -> Path:
    """The cache folder: ``$MANIBO_CACHE_DIR`` if set, else the user's cache folder plus ``manibo``.

    The user's cache folder is ``$XDG_CACHE_HOME`` (default ``~/.cache``), or ``%LOCALAPPDATA%`` on
    Windows. The folder is created on first write, not here.
    """
    override = os.environ.get(CACHE_ENV_VAR)
    if override:
        return Path(override).expanduser()
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "manibo"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "manibo"


def save_npz_atomically(path: Path, **arrays: np.ndarray) -> None:
    """Write ``arrays`` to ``path`` via a temporary file and a rename (never half a file on disk).

    Raises:
        OSError: when the folder cannot be created or written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
