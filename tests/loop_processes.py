"""Real processes for the journal's and the loop's crash and concurrency tests.

Starting Python, importing manibo and running a first fit take seconds. :class:`ForkServer`
does it once in a subprocess, then forks a fresh child per request: a test can start, ``SIGKILL``
and restart twenty real processes in a few seconds. A child runs a snippet of code with ``args``
bound; its stdout is discarded and its stderr goes to a file. :func:`shared_fork_server` hands
every test of a test process the same server (the server itself never runs a test's code: each
child starts from the same warmed-up state).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

_SERVER = r"""
import io, json, os, sys, traceback
import torch
torch.set_num_threads(1)
import manibo.cli, manibo.journal, manibo.loop, manibo.problems, manibo.spaces  # for every child
from manibo.loop import BayesianOptimizer
from manibo.spaces import Sphere
# a few steps load what the first fit and acquisition load lazily, once for all children, and
# a figure loads matplotlib and its fonts for the children that run `manibo run`
warm_up = BayesianOptimizer(Sphere(2), initial_design=2, num_restarts=2, raw_samples=16)
for _ in range(3):
    x = warm_up.ask()
    warm_up.tell(x, [float(x[0, 0])])
warm_up.result().plot(io.BytesIO())
del warm_up
finished = {}  # pid -> exit status of children reaped by "poll"
for line in sys.stdin:
    command = json.loads(line)
    if command["op"] == "poll":
        pid, status = os.waitpid(command["pid"], os.WNOHANG)
        if pid:
            finished[pid] = os.waitstatus_to_exitcode(status)
        print(json.dumps(finished.get(command["pid"])), flush=True)
    elif command["op"] == "start":
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
                os.dup2(os.open(command["stderr"], os.O_WRONLY | os.O_CREAT | os.O_APPEND), 2)
                exec(command["code"], {"__name__": "__child__", "args": command["args"]})
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                sys.stderr.flush()
                os._exit(code)
        print(json.dumps(pid), flush=True)
    elif command["pid"] in finished:
        print(json.dumps(finished.pop(command["pid"])), flush=True)
    else:
        _, status = os.waitpid(command["pid"], 0)
        print(json.dumps(os.waitstatus_to_exitcode(status)), flush=True)
"""


class ForkServer:
    """A subprocess with manibo imported that forks children on request.

    Args:
        folder: where the children's stderr files go.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        self._server = subprocess.Popen(
            [sys.executable, "-c", _SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def _ask(self, command: dict) -> int:
        self._server.stdin.write(json.dumps(command) + "\n")
        self._server.stdin.flush()
        line = self._server.stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server died (status {self._server.poll()})")
        return json.loads(line)

    def start(self, code: str, *args) -> int:
        """Fork a child that runs ``code`` with ``args``; returns its pid."""
        stderr = self.folder / "children.stderr"
        return self._ask({"op": "start", "code": code, "args": list(args), "stderr": str(stderr)})

    def wait(self, pid: int) -> int:
        """Wait for a child; its exit status (``-9`` after ``SIGKILL``)."""
        return self._ask({"op": "wait", "pid": pid})

    def poll(self, pid: int) -> int | None:
        """A child's exit status if it has ended (:meth:`wait` then returns it too), else None."""
        return self._ask({"op": "poll", "pid": pid})

    def kill(self, pid: int) -> int:
        """``SIGKILL`` a child (it may have finished already) and wait for it."""
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return self.wait(pid)

    def stderr(self) -> str:
        path = self.folder / "children.stderr"
        return path.read_text() if path.exists() else ""

    def close(self) -> None:
        self._server.stdin.close()
        self._server.wait(timeout=30)
        self._server.stdout.close()

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


_SHARED: ForkServer | None = None


def shared_fork_server(folder: Path) -> ForkServer:
    """The test process's fork server (started on first use, closed at exit), its children's
    stderr going to ``folder`` from now on."""
    global _SHARED
    if _SHARED is None or _SHARED._server.poll() is not None:
        _SHARED = ForkServer(folder)
        atexit.register(_SHARED.close)
    _SHARED.folder = Path(folder)
    _SHARED.folder.mkdir(parents=True, exist_ok=True)
    return _SHARED
