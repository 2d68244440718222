"""Run Python scripts as ``python script.py`` runs them, without paying the imports per script.

Starting Python and importing torch and manibo takes about three seconds, more than many of the
smoke-size examples and documentation pages take to run. :class:`ScriptRunner` starts one fresh
interpreter that imports them once, then runs each script in a fork of it: a fresh process per
script, with the script as ``__main__`` (``runpy.run_path``), its own working directory,
environment, ``sys.argv`` and ``sys.path[0]``, its stdout and stderr captured, and its exit status
returned as a :class:`subprocess.CompletedProcess`. The interpreter holds only what ``import
manibo`` loads (which any script that imports from manibo loads first) and the torch module that
torch's optimisers import on first use, so a script's missing import still fails. Fresh entropy
seeds Python's and NumPy's global generators in each child, as a new interpreter would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_SERVER = r"""
import json, os, random, runpy, signal, sys, traceback
import numpy
import torch
import manibo
import torch._dynamo  # what torch.optim imports on its first optimiser
print("ready", flush=True)
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            signal.alarm(request["timeout"])  # SIGALRM ends the child, as subprocess's timeout
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
            os.dup2(os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.argv = [request["script"]]
            sys.path[0] = os.path.dirname(request["script"])
            random.seed()
            numpy.random.seed()
            runpy.run_path(request["script"], run_name="__main__")
            code = 0
        except SystemExit as stop:
            if stop.code is None or isinstance(stop.code, int):
                code = stop.code or 0
            else:
                print(stop.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                import atexit

                atexit._run_exitfuncs()
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    _, status = os.waitpid(pid, 0)
    print(json.dumps(os.waitstatus_to_exitcode(status)), flush=True)
"""


class ScriptRunner:
    """One import server; :meth:`run` runs a script in a fresh fork of it."""

    def __init__(self, env: dict[str, str] | None = None):
        self._folder = Path(tempfile.mkdtemp(prefix="script-runner-"))
        self._log = open(self._folder / "server.log", "w")  # noqa: SIM115 (closed by close)
        self._server = subprocess.Popen(
            [sys.executable, "-c", _SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=dict(os.environ if env is None else env),
            text=True,
        )
        if self._server.stdout.readline() != "ready\n":
            raise RuntimeError(f"the script runner did not start:\n{self._server_log()}")

    def _server_log(self) -> str:
        return (self._folder / "server.log").read_text()[-3000:]

    def run(
        self, script: Path, cwd: Path, env: dict[str, str], timeout: int
    ) -> subprocess.CompletedProcess:
        """Run ``script`` in ``cwd`` with exactly the environment ``env``, as a new process.

        A run longer than ``timeout`` seconds is killed (return code -14, SIGALRM).
        """
        out, err = self._folder / "stdout", self._folder / "stderr"
        request = {
            "script": str(Path(script).resolve()),
            "cwd": str(cwd),
            "env": dict(env),
            "stdout": str(out),
            "stderr": str(err),
            "timeout": int(timeout),
        }
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        line = self._server.stdout.readline()
        if not line:
            raise RuntimeError(f"the script runner stopped:\n{self._server_log()}")
        stdout, stderr = out.read_text(), err.read_text()
        out.unlink()
        err.unlink()
        return subprocess.CompletedProcess([str(script)], json.loads(line), stdout, stderr)

    def close(self) -> None:
        self._server.stdin.close()
        self._server.wait()
        self._server.stdout.close()
        self._log.close()
        shutil.rmtree(self._folder, ignore_errors=True)
