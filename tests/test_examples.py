"""Every script in examples/ runs at smoke size and exits cleanly (each asserts its own result)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parents[1] / "examples").glob("*.py"))


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(script, tmp_path):
    # the session's private cache (tests/conftest.py): what earlier tests built (the ocean mask,
    # fundamental systems) is reused instead of rebuilt by every example
    env = {**os.environ, "SMOKE_TEST": "1"}
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
