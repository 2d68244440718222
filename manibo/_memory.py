"""Memory: the machine's physical memory, for refusing sizes that cannot fit before they are
allocated, and what the C allocator holds, freed, given back to the system during long CPU
loops."""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from collections.abc import Callable

TRIM_EVERY = 100
"""Iterations of a CPU training loop between two calls of :func:`release_freed_memory`: a GPNet
fit of 10,000 iterations on UCI Concrete (927 training points, M = 100, 1000 features, float64,
one thread) grew to 7.3 GB resident without them, and stayed within 0.41-0.59 GB over 600
iterations with them, at the same 0.1 s per iteration."""


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (macOS, Windows, musl)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None).malloc_trim  # the C library this process already runs on
    except (OSError, AttributeError):
        return None


def release_freed_memory() -> bool:
    """Return the free pages of the C allocator's heaps to the system; whether it could.

    A training loop on the CPU allocates and frees matrices of many sizes at every iteration;
    glibc keeps what is freed in fragmented heaps, so the process's resident size grows with the
    iterations although no tensor outlives its iteration (see :data:`TRIM_EVERY`). Dask's workers
    call ``malloc_trim`` for the same reason. A no-op (False) where the C library has no
    ``malloc_trim``.
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def physical_memory_bytes() -> int | None:
    """The machine's physical memory in bytes, or None where it cannot be read (Windows)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
