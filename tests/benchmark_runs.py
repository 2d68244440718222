"""Running a benchmark script at smoke size (for tests/benchmarks)."""

import importlib
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"


def run_smoke(script: str, out: Path, *options: str, timeout: float = 300) -> None:
    """Run ``benchmarks/<script> --smoke --out <out> <options>`` in a subprocess; fail with its
    stderr."""
    command = [sys.executable, str(BENCHMARKS / script), "--smoke", "--out", str(out), *options]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]


def run_smoke_here(script: str, out: Path, *options: str) -> None:
    """``main(["--smoke", "--out", out, *options])`` of ``benchmarks/<script>`` in this process.

    The same run as :func:`run_smoke` without a fresh interpreter: its imports (torch, GPyTorch,
    scikit-learn, ...; seconds) are paid once per test process instead of once per run.
    """
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))  # the scripts import benchmarks/_common.py
    module = importlib.import_module(Path(script).stem)
    assert module.main(["--smoke", "--out", str(out), *options]) in (0, None)
