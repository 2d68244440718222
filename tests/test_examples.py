"""Every script in examples/ runs and checks its own result.

At smoke size (``SMOKE_TEST=1``) in ``make test``, each in a fresh fork of one interpreter that has
imported manibo (tests/script_runner.py: the import took more time than most smoke runs); at full
size, as shipped, in a new ``python`` each, in ``make test-examples`` (the ``full_size`` marker,
which ``make test`` deselects).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from script_runner import ScriptRunner

EXAMPLES = sorted((Path(__file__).parents[1] / "examples").glob("*.py"))
FULL_SIZE_TIMEOUT_S = 1800


def _env(smoke: bool) -> dict[str, str]:
    # the test run's private cache (tests/conftest.py): what earlier tests built (the ocean mask,
    # fundamental systems) is reused instead of rebuilt by every example
    env = {k: v for k, v in os.environ.items() if k != "SMOKE_TEST"}
    if smoke:
        env["SMOKE_TEST"] = "1"
    return env


@pytest.fixture(scope="module")
def runner():
    runner = ScriptRunner(_env(smoke=False))
    yield runner
    runner.close()


def _run(script: Path, cwd: Path, smoke: bool, timeout: int) -> subprocess.CompletedProcess:
    env = _env(smoke)
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(script, tmp_path, runner):
    result = runner.run(script, tmp_path, _env(smoke=True), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.full_size
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_at_full_size(script, tmp_path):
    result = _run(script, tmp_path, smoke=False, timeout=FULL_SIZE_TIMEOUT_S)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]


def test_the_runner_runs_a_script_as_a_new_process_would(runner, tmp_path):
    folder = tmp_path / "scripts"
    folder.mkdir()
    script = folder / "script.py"
    script.write_text(
        "import os, sys\n"
        "assert __name__ == '__main__' and sys.argv == [__file__]\n"
        "assert sys.path[0] == os.path.dirname(__file__) and os.getcwd() == os.environ['CWD']\n"
        "assert 'SMOKE_TEST' not in os.environ and 'manibo.search' not in sys.modules\n"
        "print(os.environ['ONLY'], sorted(os.environ)); print('to stderr', file=sys.stderr)\n"
    )
    result = runner.run(script, tmp_path, {"ONLY": "this", "CWD": str(tmp_path)}, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "this ['CWD', 'ONLY']\n" and result.stderr == "to stderr\n"


@pytest.mark.parametrize(
    ("source", "returncode", "stderr"),
    [
        ("raise ValueError('boom')", 1, "ValueError: boom"),
        ("import sys; sys.exit(3)", 3, ""),
        ("import sys; sys.exit('stopped')", 1, "stopped"),
        ("torch.zeros(1)", 1, "NameError: name 'torch' is not defined"),  # the runner's imports
        ("import manibo; manibo.search.MissionSettings", 1, "has no attribute 'search'"),
        ("import os; os.kill(os.getpid(), 9)", -9, ""),
        ("import time; time.sleep(30)", -14, ""),  # killed at its timeout
    ],
)
def test_the_runner_reports_a_failing_script(runner, tmp_path, source, returncode, stderr):
    script = tmp_path / "script.py"
    script.write_text(source + "\n")
    result = runner.run(script, tmp_path, {}, timeout=1)
    assert result.returncode == returncode, result.stderr
    assert stderr in result.stderr
