"""Every script in examples/ runs and checks its own result.

At smoke size (``SMOKE_TEST=1``) in ``make test``; at full size, as shipped, in
``make test-examples`` (the ``full_size`` marker, which ``make test`` deselects).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parents[1] / "examples").glob("*.py"))
FULL_SIZE_TIMEOUT_S = 1800


def _run(script: Path, cwd: Path, smoke: bool, timeout: int) -> subprocess.CompletedProcess:
    # the test run's private cache (tests/conftest.py): what earlier tests built (the ocean mask,
    # fundamental systems) is reused instead of rebuilt by every example
    env = {k: v for k, v in os.environ.items() if k != "SMOKE_TEST"}
    if smoke:
        env["SMOKE_TEST"] = "1"
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(script, tmp_path):
    result = _run(script, tmp_path, smoke=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.full_size
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_at_full_size(script, tmp_path):
    result = _run(script, tmp_path, smoke=False, timeout=FULL_SIZE_TIMEOUT_S)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
