"""The shared benchmark helpers: timing, memory probes, device choice and ratios, case workers."""

import sys
import time
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

from _common import (  # noqa: E402
    WorkerCase,
    command_line,
    device_ratio,
    environment,
    measure,
    resolve_devices,
    run_worker,
    time_calls,
)


def test_time_calls_counts_wall_and_cpu_time():
    wall, cpu = time_calls(lambda: time.sleep(0.02), repeats=3)
    assert len(wall) == len(cpu) == 3
    assert min(wall) >= 0.02
    assert max(cpu) < 0.015  # sleeping costs wall time, not CPU time


def test_time_calls_keeps_calling_until_the_minimum_time():
    wall, _ = time_calls(lambda: time.sleep(0.01), repeats=1, min_time_s=0.05, max_calls=50)
    # calls go on until they add up to the minimum time, and stop there (a sleep may take longer
    # than asked on a loaded machine, so the count is not fixed)
    assert sum(wall) >= 0.05 and sum(wall[:-1]) < 0.05 and len(wall) >= 2


_MEASURE_40_MB = """
import json, sys, torch
sys.path.insert(0, sys.argv[1])
from _common import WorkerCase, measure
calls = []
def compute():
    calls.append(1)
    return torch.ones(5 * 10**6, dtype=torch.float64)
record = measure(WorkerCase(compute, {"torch": "x"}, inspect=lambda r: {"first": float(r[0])}), 2)
print(json.dumps({**record, "calls": len(calls)}))
"""


def test_measure_records_time_memory_and_inspection():
    """In a fresh process, as the benchmarks measure (a long-lived process such as a test worker
    may reuse resident memory that earlier work freed, so its peak need not grow)."""
    import json
    import subprocess

    benchmarks = str(Path(__file__).parents[2] / "benchmarks")
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE_40_MB, benchmarks],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    record = json.loads(done.stdout.splitlines()[-1])
    assert record["calls"] == 3  # the warm-up call and two timed calls
    assert record["repeats_run"] == 2 and len(record["times_s"]) == 2
    assert record["first"] == 1.0
    assert record["time_min_s"] <= record["time_s"]
    if sys.platform.startswith("linux"):  # the peak of ru_maxrss can be reset there
        assert record["peak_memory_bytes"] >= 0.9 * 40 * 10**6


def test_measure_gives_slow_work_fewer_calls_within_the_budget():
    case = WorkerCase(lambda: time.sleep(0.05), {})
    record = measure(case, repeats=10, budget_s=0.12)
    # as many calls as the warm-up call's time fits into the budget: 2 when it took 0.05-0.06 s,
    # 1 when the machine's load stretched it beyond 0.06 s
    assert record["repeats_run"] == max(1, int(0.12 // record["first_call_s"])) <= 2


def test_device_ratio():
    assert device_ratio({"time_s": 2.0}, {"time_s": 0.5}) == 4.0
    assert device_ratio({"time_s": 2.0}, {"error": "out of memory"}) is None
    assert device_ratio(None, {"time_s": 0.5}) is None
    assert (
        device_ratio({"peak_memory_bytes": 10}, {"peak_memory_bytes": 5}, "peak_memory_bytes") == 2
    )


def test_resolve_devices():
    assert resolve_devices("cpu") == ["cpu"]
    expected = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    assert resolve_devices("auto") == expected
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit, match="no CUDA device"):
            resolve_devices("cuda")
    with pytest.raises(SystemExit, match="--device"):
        resolve_devices("tpu")


def test_run_worker_reports_failures(tmp_path):
    result = tmp_path / "result.json"
    failed = run_worker([sys.executable, "-c", "raise SystemExit('boom')"], result, timeout=60)
    assert "exit status 1" in failed["error"] and "boom" in failed["error"]
    slow = run_worker([sys.executable, "-c", "import time; time.sleep(5)"], result, timeout=0.5)
    assert slow["error"].startswith("timed out")


def test_the_environment_records_the_command_that_ran_the_benchmark(monkeypatch):
    # No JSON said how it was made: the command is what a reader needs to run it again.
    script = Path(__file__).parents[2] / "benchmarks" / "regret.py"
    monkeypatch.setattr(sys, "argv", [str(script), "--seeds", "3", "--out", "my results"])
    assert command_line() == "python benchmarks/regret.py --seeds 3 --out 'my results'"
    assert environment()["command"] == command_line()
