import threading
import time

import pytest

from manibo._threads import DaemonThreadExecutor


def test_calls_run_together_in_daemon_threads_and_return_through_their_futures():
    executor = DaemonThreadExecutor(name="probe")
    barrier = threading.Barrier(4, timeout=10)  # broken unless all four calls run at once

    def call(i):
        barrier.wait()
        thread = threading.current_thread()
        return i * i, thread.daemon, thread.name

    futures = [executor.submit(call, i) for i in range(4)]
    results = [future.result(timeout=10) for future in futures]
    assert [r[0] for r in results] == [0, 1, 4, 9]
    assert all(daemon for _, daemon, _ in results)
    assert {name for _, _, name in results} == {"probe-1", "probe-2", "probe-3", "probe-4"}


@pytest.mark.parametrize("error", [ValueError("bad"), SystemExit(3), KeyboardInterrupt()])
def test_what_a_call_raises_is_raised_by_its_future(error):
    def call():
        raise error

    future = DaemonThreadExecutor().submit(call)
    with pytest.raises(type(error)):
        future.result(timeout=10)


def test_shutdown_waits_for_the_calls_under_way_and_refuses_new_ones():
    executor = DaemonThreadExecutor()
    done = []
    executor.submit(lambda: (time.sleep(0.3), done.append(1)))
    executor.shutdown(wait=True)
    assert done == [1]
    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(print)
