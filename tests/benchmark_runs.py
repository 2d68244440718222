"""Running a benchmark script at smoke size (for tests/benchmarks)."""

import importlib
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"


def run_smoke_here(script: str, out: Path, *options: str) -> None:
    """``main(["--smoke", "--out", out, *options])`` of ``benchmarks/<script>`` in this process.

    The run ``python benchmarks/<script> --smoke ...`` makes, without a fresh interpreter: its
    imports (torch, GPyTorch, scikit-learn, ...; seconds) are paid once per test process instead
    of once per run.
    """
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))  # the scripts import benchmarks/_common.py
    module = importlib.import_module(Path(script).stem)
    assert module.main(["--smoke", "--out", str(out), *options]) in (0, None)
