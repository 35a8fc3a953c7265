"""gcjob/enumerate/parallel.py: bounded pools, results in the order asked for."""

from __future__ import annotations

import threading
import time

import pytest

from gcjob.enumerate.parallel import Reads
from gcjob.kube.errors import Stopped, Unavailable


def test_results_come_in_the_order_asked_whatever_finishes_first() -> None:
    reads = Reads(4, "test")
    try:

        def job(i: int) -> int:
            time.sleep(0.05 * (4 - i))  # the last asked finishes first
            return i

        assert reads.all([lambda i=i: job(i) for i in range(4)]) == [0, 1, 2, 3]
    finally:
        reads.close()


def test_at_most_size_jobs_run_at_once() -> None:
    reads = Reads(3, "test")
    running = 0
    most = 0
    lock = threading.Lock()

    def job() -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)
        with lock:
            running -= 1

    try:
        started = time.monotonic()
        reads.all([job] * 9)
        elapsed = time.monotonic() - started
    finally:
        reads.close()
    assert most == 3
    assert elapsed >= 0.15  # three rounds of three


def test_the_first_failure_in_order_is_raised_after_every_job_ended() -> None:
    reads = Reads(4, "test")
    ended: list[str] = []

    def slow_failure() -> None:
        time.sleep(0.2)
        ended.append("slow")
        raise Unavailable("first asked, last to fail")

    def fast_failure() -> None:
        ended.append("fast")
        raise Stopped("second asked, first to fail")

    def fine() -> str:
        time.sleep(0.1)
        ended.append("fine")
        return "ok"

    try:
        with pytest.raises(Unavailable, match="first asked"):
            reads.all([slow_failure, fast_failure, fine])
    finally:
        reads.close()
    assert sorted(ended) == ["fast", "fine", "slow"]


def test_size_one_runs_in_the_callers_thread() -> None:
    threads: list[str] = []
    Reads(1, "test").all([lambda: threads.append(threading.current_thread().name)] * 2)
    assert threads == [threading.current_thread().name] * 2


def test_reads_cancelled_by_close_end_the_wait_with_a_stop() -> None:
    """The run's end closes the pools while the routes read-ahead still waits on one (a stop,
    say stdout closed): jobs never started are cancelled, and the wait must end with them.
    It used to wait forever for a cancelled job, and the process never exited."""
    reads = Reads(2, "test")
    release = threading.Event()
    outcome: list[BaseException | list[int]] = []

    def blocked() -> int:
        release.wait(timeout=10)
        return 0

    def waiter() -> None:
        try:
            outcome.append(reads.all([blocked, blocked, lambda: 2]))  # the third never starts
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=waiter, daemon=True)
    thread.start()
    time.sleep(0.2)  # both workers busy, the third job queued
    reads.close()
    release.set()
    thread.join(timeout=5)

    assert not thread.is_alive(), "the wait outlived the cancelled job"
    (result,) = outcome
    assert isinstance(result, Stopped)
    assert "not started" in str(result)
