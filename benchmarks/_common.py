"""Helpers shared by the benchmarks: environment record, timing, memory probes, workers, JSON.

Only the standard library is imported at module level, so that a benchmark's worker can import this
module from another virtualenv (one that has torch but not manibo, for example); torch and the other
packages are imported inside the functions that need them.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

#: Packages whose versions every benchmark records.
CORE_PACKAGES = ("manibo", "torch", "gpytorch", "botorch", "numpy")

GIB = 1024**3
MIB = 1024**2


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


def usable_cores() -> int:
    """Number of CPU cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def total_memory_bytes() -> int | None:
    """Physical memory of the machine in bytes, or ``None`` where it cannot be read."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def available_memory_bytes(device: str = "cpu") -> int | None:
    """Memory that a new computation can still use on ``device``, in bytes (``None`` if unknown).

    Args:
        device: ``"cpu"`` (``MemAvailable`` from ``/proc/meminfo``) or ``"cuda"`` (free memory
            of the current CUDA device).
    """
    if device == "cuda":
        import torch

        return torch.cuda.mem_get_info()[0]
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def environment(device: str = "cpu") -> dict:
    """Versions and hardware of this run, for the ``environment`` field of a benchmark's JSON.

    Args:
        device: the device the benchmark runs on; ``"cuda"`` adds the GPU's name and memory.

    Returns:
        A JSON-serialisable dict: package versions, Python, OS, CPU model, core count, physical
        memory, torch threads, GPU (or ``None``), the load average at the start (other processes
        competing for the CPU make timings noisy) and the time of the run (UTC, ISO 8601).
    """
    import torch

    gpu = None
    if device == "cuda" and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        gpu = {"name": props.name, "memory_bytes": props.total_memory, "cuda": torch.version.cuda}
    return {
        "versions": package_versions(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_cores": usable_cores(),
        "memory_bytes": total_memory_bytes(),
        "torch_threads": torch.get_num_threads(),
        "gpu": gpu,
        "load_average_1_5_15_min": load_average(),
        "timestamp_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def load_average() -> list[float] | None:
    """The system's load average over 1, 5 and 15 minutes (``None`` where unavailable)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def hardware_label(env: dict, device: str) -> str:
    """One line on the hardware for plot titles, e.g. ``"AMD EPYC, 2 cores, 2 torch threads"``."""
    if device == "cuda" and env.get("gpu"):
        return env["gpu"]["name"]
    return f"{env['cpu_model']}, {env['cpu_cores']} cores, {env['torch_threads']} torch threads"


def current_rss_bytes() -> int:
    """Resident set size of this process now, in bytes (``VmRSS``; else the peak so far)."""
    try:
        with open("/proc/self/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return peak_rss_bytes()


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (``ru_maxrss``), in bytes."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports KiB, macOS bytes


def reset_peak_rss() -> bool:
    """Reset this process's peak RSS (``ru_maxrss``) to its current RSS; True where the OS allows.

    Linux resets the high-water mark when ``5`` is written to ``/proc/self/clear_refs``.
    """
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    return True


class PeakMemory:
    """Peak memory that a piece of work adds on top of what the process held at the probe's start.

    On the CPU it is ``ru_maxrss`` at :meth:`stop` minus the RSS at construction. The peak is reset
    at construction where Linux allows it; elsewhere an earlier peak (imports, setup) would leak
    into the number. Either way, run each case in a fresh subprocess so that cases do not pollute
    each other. On CUDA it is ``torch.cuda.max_memory_allocated`` minus the memory allocated at
    construction.

    Args:
        device: ``"cpu"`` or ``"cuda"``.
    """

    def __init__(self, device: str = "cpu") -> None:
        self.device = device
        if device == "cuda":
            import torch

            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self.baseline = torch.cuda.memory_allocated()
        else:
            self.peak_was_reset = reset_peak_rss()
            self.baseline = current_rss_bytes()

    def stop(self) -> dict[str, int | str]:
        """The measurement, as a dict.

        Returns:
            ``peak_memory_bytes`` (the increment), ``baseline_bytes``, ``peak_bytes`` and
            ``memory_measure`` (how the numbers were taken).
        """
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated()
            how = "torch.cuda.max_memory_allocated() - memory_allocated() before the work"
        else:
            peak = peak_rss_bytes()
            reset = ", peak reset before the work" if self.peak_was_reset else ""
            how = f"ru_maxrss - RSS before the work (fresh subprocess{reset})"
        return {
            "peak_memory_bytes": max(0, peak - self.baseline),
            "baseline_bytes": self.baseline,
            "peak_bytes": peak,
            "memory_measure": how,
        }


def save_figure(fig, path: Path, dpi: int = 110) -> None:
    """Save a matplotlib figure to ``path`` (creating its folder) and close it."""
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def time_calls(
    fn: Callable[[], object],
    repeats: int,
    device: str = "cpu",
    min_time_s: float = 0.0,
    max_calls: int = 200,
) -> list[float]:
    """Wall-clock times of calls of ``fn``, each result dropped before the next call.

    Calls go on until there are ``repeats`` of them and together they took ``min_time_s`` (at most
    ``max_calls``): for fast work, samples spread over a longer time make the median robust to
    bursts of load from other processes.

    Args:
        fn: the work; its return value is discarded at once, so two results never coexist in memory.
        repeats: the least number of timed calls (warm up separately).
        device: ``"cuda"`` synchronises before reading the clock.
        min_time_s: the least total time of the timed calls, in seconds.
        max_calls: the most timed calls.

    Returns:
        The durations in seconds.
    """
    times = []
    while len(times) < repeats or (sum(times) < min_time_s and len(times) < max_calls):
        synchronize(device)
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return times


def synchronize(device: str) -> None:
    """Wait for queued work on ``device`` to finish (a no-op on the CPU)."""
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def summarise_times(times: Sequence[float]) -> dict[str, float | list[float]]:
    """``time_s`` (median), ``time_min_s`` and the raw ``times_s`` of a list of durations."""
    return {"time_s": statistics.median(times), "time_min_s": min(times), "times_s": list(times)}


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` as indented JSON, creating the parent directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def run_worker(command: Sequence[str], result_path: Path, timeout: float) -> dict:
    """Run a worker subprocess that writes its result as JSON to ``result_path``, and return it.

    Args:
        command: the worker's command line.
        result_path: where the worker writes its JSON result.
        timeout: seconds before the worker is killed.

    Returns:
        The worker's JSON, or ``{"error": ...}`` when it failed, was killed (out of memory, for
        example) or timed out; the error carries the end of its stderr.
    """
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0 or not result_path.exists():
        tail = proc.stderr.strip().splitlines()[-5:]
        return {"error": f"exit status {proc.returncode}: " + " | ".join(tail)}
    return json.loads(result_path.read_text(encoding="utf-8"))
