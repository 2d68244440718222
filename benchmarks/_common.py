"""Helpers shared by the benchmarks: environment record, timing, memory probes, workers, JSON.

Only the standard library is imported at module level, so that a benchmark's worker can import this
module from another virtualenv (one that has torch but not manibo, for example); torch and the other
packages are imported inside the functions that need them.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


def _machine_module():
    """``manibo/_machine.py`` of this checkout, loaded from its file: it imports only the standard
    library, so this works in a virtualenv without manibo too (a GeometricKernels worker)."""
    path = Path(__file__).resolve().parents[1] / "manibo" / "_machine.py"
    spec = importlib.util.spec_from_file_location("_manibo_machine", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_MACHINE = _machine_module()
CORE_PACKAGES = _MACHINE.CORE_PACKAGES
package_versions = _MACHINE.package_versions
cpu_model = _MACHINE.cpu_model

#: Environment variables that set the thread counts of OpenMP and the BLAS libraries.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

GIB = 1024**3
MIB = 1024**2


def count(number: int, noun: str) -> str:
    """``"1 seed"``, ``"5 seeds"``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


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


def run_setup() -> str:
    """This process's cores, torch threads and versions in one line, for each stored run of a
    campaign whose runs come from several machines and days."""
    import torch

    versions = ", ".join(f"{k} {v}" for k, v in package_versions().items() if k != "numpy")
    return (
        f"{usable_cores()} cores, {count(torch.get_num_threads(), 'torch thread')}, "
        f"Python {platform.python_version()}, {versions}"
    )


def environment(device: str = "cpu") -> dict:
    """Versions and hardware of this run, for the ``environment`` field of a benchmark's JSON.

    Args:
        device: the device the benchmark runs on; ``"cuda"`` adds the GPU's name and memory.

    Returns:
        A JSON-serialisable dict: package versions, Python, OS, CPU model, core count, physical
        memory, torch threads, GPU (or ``None``), the load average at the start (other processes
        competing for the CPU make timings noisy), the time of the run (UTC, ISO 8601) and the
        command that ran it (``python`` and its arguments, from the benchmarks folder's parent).
    """
    import torch

    gpu = None
    if device == "cuda" and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        gpu = {
            "name": props.name,
            "memory_bytes": props.total_memory,
            "cuda": torch.version.cuda,
        }
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
        "command": command_line(),
    }


def command_line() -> str:
    """``python`` and the arguments this process was started with, the script as a path from the
    checkout's root where it lies in it (``python benchmarks/regret.py --seeds 10``)."""
    if not sys.argv or not sys.argv[0]:
        return "python"
    script, *rest = sys.argv
    try:
        script = str(Path(script).resolve().relative_to(Path(__file__).resolve().parents[1]))
    except ValueError:
        pass
    return " ".join(["python", *(shlex.quote(a) for a in (script, *rest))])


def load_average() -> list[float] | None:
    """The system's load average over 1, 5 and 15 minutes (``None`` where unavailable)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def run_title(env: dict, devices: Sequence[str], load_start_end: Sequence, smoke: bool) -> str:
    """One line for figure titles: hardware (and GPU), versions, load average, smoke flag."""
    hardware = hardware_label(env, "cpu")
    if "cuda" in devices and env.get("gpu"):
        hardware += f"; GPU {env['gpu']['name']}"
    versions = f"manibo {env['versions']['manibo']}, torch {env['versions']['torch']}"
    start, end = load_start_end
    load = f"; load average {start[0]:g} at start, {end[0]:g} at end" if start and end else ""
    return f"{hardware}; {versions}{load}{' (smoke run)' if smoke else ''}"


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
) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU times of calls of ``fn``, each result dropped before the next call.

    Calls go on until there are ``repeats`` of them and together they took ``min_time_s`` (at most
    ``max_calls``): for fast work, samples spread over a longer time make the median robust to
    bursts of load from other processes. The CPU time (this process's user + system time, all
    threads) does not grow when other processes take the cores, so with one thread it is the
    load-independent cost of the work.

    Args:
        fn: the work; its return value is discarded at once, so two results never coexist in memory.
        repeats: the least number of timed calls (warm up separately).
        device: ``"cuda"`` synchronises before reading the clocks.
        min_time_s: the least total wall time of the timed calls, in seconds.
        max_calls: the most timed calls.

    Returns:
        ``(wall, cpu)``: the durations in seconds.
    """
    wall, cpu = [], []
    while len(wall) < repeats or (sum(wall) < min_time_s and len(wall) < max_calls):
        synchronize(device)
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        synchronize(device)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu


def synchronize(device: str) -> None:
    """Wait for queued work on ``device`` to finish (a no-op on the CPU)."""
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def summarise_times(times: Sequence[float], cpu_times: Sequence[float]) -> dict:
    """``time_s`` (median), ``time_min_s``, ``cpu_time_s`` (median) and the raw durations."""
    return {
        "time_s": statistics.median(times),
        "time_min_s": min(times),
        "cpu_time_s": statistics.median(cpu_times),
        "times_s": list(times),
        "cpu_times_s": list(cpu_times),
    }


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` as indented JSON, creating the parent directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def gather(
    jobs: Sequence[tuple],
    path_of: Callable[..., Path],
    run: Callable[..., dict],
    report_only: bool = False,
    workers: int = 1,
) -> list[dict]:
    """The records of ``jobs``: ``run(*job)`` for each (in ``workers`` processes), or with
    ``report_only`` the stored records at ``path_of(*job)`` that exist (nothing runs)."""
    if report_only:
        return [json.loads(path.read_text()) for job in jobs if (path := path_of(*job)).exists()]
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            return list(pool.map(run, *zip(*jobs, strict=True)))
    return [run(*job) for job in jobs]


def store_record(path: Path, record: dict, message: str) -> dict:
    """Write one run's ``record`` to ``path`` (JSON), print ``message`` and return the record."""
    write_json(path, record)
    print(message, flush=True)
    return record


def write_results(
    out: Path,
    stem: str,
    summary: dict,
    caption: str,
    draw: Callable[[Path, str], None],
    smoke: bool,
    load_start: Sequence[float] | None,
) -> dict:
    """Write a benchmark's ``<stem>.json`` and ``<stem>.png`` in ``out``.

    The JSON is ``summary`` with the environment (versions, hardware) and the load average at the
    start and now; the figure is drawn by ``draw(path, title)``, its title ``caption`` over the
    line of :func:`run_title`. Returns the JSON's content.
    """
    env = environment("cpu")
    load_end = load_average()
    data = {"environment": env, "load_average_start": load_start, "load_average_end": load_end}
    data.update(summary)
    write_json(out / f"{stem}.json", data)
    draw(
        out / f"{stem}.png", f"{caption}\n{run_title(env, ['cpu'], (load_start, load_end), smoke)}"
    )
    return data


def run_worker(
    command: Sequence[str], result_path: Path, timeout: float, env: dict | None = None
) -> dict:
    """Run a worker subprocess that writes its result as JSON to ``result_path``, and return it.

    Args:
        command: the worker's command line.
        result_path: where the worker writes its JSON result.
        timeout: seconds before the worker is killed.
        env: the worker's environment (default: this process's).

    Returns:
        The worker's JSON, or ``{"error": ...}`` when it failed, was killed (out of memory, for
        example) or timed out; the error carries the end of its stderr.
    """
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0 or not result_path.exists():
        tail = proc.stderr.strip().splitlines()[-5:]
        return {"error": f"exit status {proc.returncode}: " + " | ".join(tail)}
    return json.loads(result_path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------------------------
# devices
# --------------------------------------------------------------------------------------------
DEVICE_CHOICES = ("cpu", "cuda", "auto")


def resolve_devices(choice: str) -> list[str]:
    """The devices a benchmark runs on: the CPU always, and CUDA when asked for (or when present).

    Args:
        choice: ``"cpu"`` (the CPU only), ``"cuda"`` (the CPU and the GPU; an error without one) or
            ``"auto"`` (the CPU, and the GPU when torch sees one).

    Returns:
        ``["cpu"]`` or ``["cpu", "cuda"]``.

    Raises:
        SystemExit: ``choice`` is ``"cuda"`` and torch sees no CUDA device.
    """
    if choice not in DEVICE_CHOICES:
        raise SystemExit(f"--device must be one of {', '.join(DEVICE_CHOICES)}, got {choice!r}.")
    if choice == "cpu":
        return ["cpu"]
    import torch

    if torch.cuda.is_available():
        return ["cpu", "cuda"]
    if choice == "cuda":
        raise SystemExit(
            "--device cuda: torch sees no CUDA device on this machine. Use --device auto to run "
            "on the CPU here and on the GPU where there is one."
        )
    return ["cpu"]


def add_run_arguments(parser, out: Path, repeats: int) -> None:
    """The options every timing benchmark takes (and the internal ``--worker``/``--result``).

    Args:
        parser: an ``argparse.ArgumentParser``.
        out: the default output folder.
        repeats: the default least number of timed calls.
    """
    import argparse

    parser.add_argument(
        "--device",
        choices=DEVICE_CHOICES,
        default="cpu",
        help="cpu; cuda (the CPU and the GPU); auto (the GPU too where there is one)",
    )
    parser.add_argument("--out", type=Path, default=out, help="output directory")
    parser.add_argument("--repeats", type=int, default=repeats, help="least timed calls per case")
    parser.add_argument(
        "--case-budget",
        type=float,
        default=120.0,
        help="seconds of timed calls per case: slow cases get fewer calls (at least one)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        help="torch (and BLAS) threads in the workers (default: torch's)",
    )
    parser.add_argument(
        "--inline",
        action=argparse.BooleanOptionalAction,
        help="measure the cases in this process instead of a fresh one each (quick checks only: "
        "memory then carries what earlier cases left); default: only with --smoke",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)


def memory_note(inline: bool) -> str:
    """How the peak memory of the cases was measured, for the JSON's config."""
    where = "measured in the driver's process" if inline else "each case in a fresh subprocess"
    return f"peak memory added by the work, {where}"


def device_ratio(
    cpu_run: dict | None, device_run: dict | None, key: str = "time_s"
) -> float | None:
    """``cpu_run[key] / device_run[key]`` (how many times faster the device is), None if missing."""
    if not cpu_run or not device_run or "error" in cpu_run or "error" in device_run:
        return None
    if not device_run.get(key) or cpu_run.get(key) is None:
        return None
    return cpu_run[key] / device_run[key]


# --------------------------------------------------------------------------------------------
# one measured case, in a fresh process
# --------------------------------------------------------------------------------------------
@dataclass
class WorkerCase:
    """What a benchmark worker measures: built in the fresh process, after the imports.

    Attributes:
        compute: the work; one call is one sample (its result is dropped before the next call).
        versions: versions of the packages the work used (see :func:`package_versions`).
        inspect: called once on the warm-up call's result; returns extra fields for the record
            (an accuracy check, for example), or None.
        info: extra fields for the record (sizes, settings the builder chose).
    """

    compute: Callable[[], object]
    versions: dict[str, str | None]
    inspect: Callable[[object], dict] | None = None
    info: dict = field(default_factory=dict)


def measure(
    case: WorkerCase,
    repeats: int,
    device: str = "cpu",
    min_time_s: float = 0.0,
    budget_s: float | None = None,
) -> dict:
    """Time ``case.compute`` after one warm-up call, and probe the peak memory of both phases.

    Memory is probed twice: around the warm-up call (which also pays one-time costs such as thread
    pools and caches) and around the timed calls; ``peak_memory_bytes`` is the larger of the two.

    Args:
        case: the work.
        repeats: the least number of timed calls.
        device: ``"cpu"`` or ``"cuda"`` (synchronised around every call; CUDA memory counters).
        min_time_s: the least total time of the timed calls, in seconds.
        budget_s: when given, slow work gets fewer timed calls: as many as the warm-up call's time
            fits into ``budget_s``, at least one (``repeats_run`` records how many).

    Returns:
        The fields of :func:`summarise_times`, ``first_call_s``, the memory fields of
        :class:`PeakMemory` and whatever ``case.inspect`` returned.
    """
    probe = PeakMemory(device)
    synchronize(device)
    start = time.perf_counter()
    result = case.compute()
    synchronize(device)
    first_call_s = time.perf_counter() - start
    first = probe.stop()
    extra = case.inspect(result) if case.inspect else {}
    del result
    if budget_s is not None:
        repeats = max(1, min(repeats, int(budget_s // max(first_call_s, 1e-9))))
        min_time_s = min(min_time_s, budget_s)
    probe = PeakMemory(device)
    times, cpu_times = time_calls(case.compute, repeats, device, min_time_s=min_time_s)
    timed = probe.stop()
    return {
        **summarise_times(times, cpu_times),
        "repeats_run": len(times),
        "first_call_s": first_call_s,
        "peak_memory_bytes": max(first["peak_memory_bytes"], timed["peak_memory_bytes"]),
        "first_call_peak_memory_bytes": first["peak_memory_bytes"],
        "repeat_peak_memory_bytes": timed["peak_memory_bytes"],
        "baseline_bytes": first["baseline_bytes"],
        "memory_measure": first["memory_measure"],
        **extra,
    }


def measure_case(spec: dict, build: Callable[[dict], WorkerCase]) -> dict:
    """Build the case that ``spec`` describes, measure it and return its record.

    Args:
        spec: the case; ``device``, ``repeats``, ``min_time_s`` and ``budget_s`` (optional, see
            :func:`measure`) are read here, ``threads`` (optional) sets torch's thread count, the
            rest is for ``build``.
        build: turns the spec into a :class:`WorkerCase`; its time is recorded as ``setup_s``.

    Returns:
        The fields of :func:`measure`, ``setup_s``, ``device``, ``torch_threads``, the load average
        before and after, the versions and ``case.info``.
    """
    import torch

    if spec.get("threads"):
        torch.set_num_threads(spec["threads"])
    load_before = load_average()
    start = time.perf_counter()
    case = build(spec)
    setup_s = time.perf_counter() - start
    record = measure(
        case, spec["repeats"], spec["device"], spec["min_time_s"], spec.get("budget_s")
    )
    record.update(
        setup_s=setup_s,
        device=spec["device"],
        torch_threads=torch.get_num_threads(),
        load_average_before_after=[load_before, load_average()],
        versions=case.versions,
        **case.info,
    )
    return record


def serve_worker(spec_text: str, result_path: str, build: Callable[[dict], WorkerCase]) -> None:
    """The worker side of :func:`run_case`: measure the case given as JSON, write the record."""
    write_json(Path(result_path), measure_case(json.loads(spec_text), build))


def run_case(
    script: Path,
    spec: dict,
    build: Callable[[dict], WorkerCase],
    workdir: Path,
    python: Path | str = sys.executable,
    inline: bool = False,
    timeout: float = 3600,
) -> dict:
    """Measure one case of ``script``, in a new process (``script --worker SPEC --result PATH``).

    The script's ``main`` hands ``--worker`` and ``--result`` to :func:`serve_worker`. A fresh
    process per case keeps the peak-memory numbers of cases apart; ``inline`` measures in this
    process instead (quick checks: the memory numbers then carry what earlier cases left behind).
    With ``spec["threads"]``, the worker's OpenMP and BLAS libraries get that many threads too.

    Args:
        script: the benchmark script.
        spec: the case, JSON-serialisable (see :func:`measure_case`).
        build: the script's builder (used here when ``inline``, by the worker otherwise).
        workdir: a folder for the result file.
        python: the interpreter (another virtualenv's, for a competitor library).
        inline: measure in this process.
        timeout: seconds before the worker is killed.

    Returns:
        The record, or ``{"error": ...}`` when the worker failed (see :func:`run_worker`).
    """
    if inline:
        return measure_case(json.loads(json.dumps(spec)), build)
    result = Path(workdir) / f"result_{time.monotonic_ns()}.json"
    command = [
        str(python),
        str(script),
        "--worker",
        json.dumps(spec),
        "--result",
        str(result),
    ]
    env = None
    if spec.get("threads"):  # NumPy's and SciPy's BLAS too, not only torch's thread pool
        env = {**os.environ, **dict.fromkeys(THREAD_VARIABLES, str(spec["threads"]))}
    record = run_worker(command, result, timeout, env)
    result.unlink(missing_ok=True)
    return record
