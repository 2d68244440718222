"""An executor of one daemon thread per call, for ``manibo run --parallel``."""

from __future__ import annotations

import threading
from concurrent.futures import Executor, Future


class DaemonThreadExecutor(Executor):
    """Runs each submitted call at once in a thread of its own that does not keep the process
    alive.

    ``concurrent.futures.ThreadPoolExecutor`` joins its threads when the interpreter exits, so a
    command interrupted with Ctrl-C would wait for every evaluation in flight to return (an hour's
    simulation, say) before it ends. Here the interrupted process ends at once; the points in
    flight stay asked, not told, in the journal, and the resumed run evaluates them first. The
    caller bounds how many calls run together (``BayesianOptimizer.run``'s ``max_parallel``).
    """

    def __init__(self, name: str = "manibo-objective") -> None:
        self._name = name
        self._started = 0
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._lock = threading.Lock()

    def submit(self, fn, /, *args, **kwargs) -> Future:
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit a call after shutdown")
            self._started += 1
            number = self._started
        future: Future = Future()

        def call() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as error:  # SystemExit and KeyboardInterrupt too: the caller's
                future.set_exception(error)  # to raise
            else:
                future.set_result(result)

        thread = threading.Thread(target=call, name=f"{self._name}-{number}", daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Refuse further calls, and with ``wait`` wait for those under way to return. Every
        call starts when it is submitted, so ``cancel_futures`` finds none to cancel."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        if wait:
            for thread in threads:
                thread.join()
