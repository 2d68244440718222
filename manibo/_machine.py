"""What a measurement ran on: package versions and the CPU, for the JSON that records it."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from importlib import metadata

CORE_PACKAGES = ("manibo", "torch", "gpytorch", "botorch", "numpy")
"""The packages whose versions every record names."""


def package_versions(names: Sequence[str] = CORE_PACKAGES) -> dict[str, str | None]:
    """Installed versions of ``names`` (``None`` for a package that is not installed)."""
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def cpu_model() -> str:
    """The CPU's model name, from ``/proc/cpuinfo`` on Linux, else from :mod:`platform`."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"
