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
