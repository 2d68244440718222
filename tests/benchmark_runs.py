"""Running a benchmark script at smoke size in a subprocess (for tests/benchmarks)."""

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"


def run_smoke(script: str, out: Path, *options: str, timeout: float = 300) -> None:
    """Run ``benchmarks/<script> --smoke --out <out> <options>``; fail with its stderr."""
    command = [sys.executable, str(BENCHMARKS / script), "--smoke", "--out", str(out), *options]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
