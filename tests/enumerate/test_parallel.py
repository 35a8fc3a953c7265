"""gcjob/enumerate/parallel.py: bounded pools, results in the order asked for."""

from __future__ import annotations

import concurrent.futures
import threading
import time

import pytest

from gcjob.enumerate.parallel import QUEUED, ReadAhead, Reads, wait_all
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


def test_map_reads_each_item_in_order_and_makes_its_job_only_as_it_is_handed_over() -> None:
    reads = Reads(2, "test")
    asked: list[int] = []

    class Items(list[int]):
        def __getitem__(self, at):  # type: ignore[no-untyped-def, override]
            asked.append(at)
            return super().__getitem__(at)

    ahead: list[int] = []

    def read(i: int) -> int:
        ahead.append(len(asked) - i)  # items taken past this one when it runs
        time.sleep(0.01 * (i % 3))
        return i * i

    try:
        items = Items(range(40))
        assert reads.map(read, items) == [i * i for i in range(40)]
        assert asked == list(range(40))  # each item taken once, when its job is made
        assert max(ahead) <= reads.size * QUEUED
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


# -- ReadAhead: reads a few items ahead of a loop -----------------------------------------


class _Recorder:
    """A read that notes when each key was read, and how many reads were out at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.read: list[int] = []

    def __call__(self, key: int) -> str:
        with self.lock:
            self.read.append(key)
        if key == 13:
            raise Unavailable("key 13 cannot be read")
        return f"value {key}"


def test_read_ahead_gives_each_key_its_own_read_and_never_runs_past_its_window() -> None:
    reads = Reads(4, "test")
    recorder = _Recorder()
    try:
        ahead = ReadAhead(reads, list(range(20)), recorder, window=3)
        time.sleep(0.1)
        assert sorted(recorder.read) == [0, 1, 2]  # the window, before anything is taken
        for key in range(20):
            if key == 13:
                continue
            future = ahead.take(key)
            assert future is not None and future.result() == f"value {key}"
            time.sleep(0.01)
            # Read ahead: what was taken, plus at most the window (a passed-by key counts).
            assert max(recorder.read) <= key + 3
    finally:
        reads.close()


def test_read_ahead_drops_keys_the_loop_passed_by_and_returns_a_failed_read_as_raised() -> None:
    reads = Reads(2, "test")
    recorder = _Recorder()
    try:
        ahead = ReadAhead(reads, list(range(10, 20)), recorder, window=4)
        failed = ahead.take(13)  # 10, 11 and 12 passed by: dropped
        assert failed is not None
        with pytest.raises(Unavailable):
            failed.result()
        assert ahead.take(11) is None  # passed by: the loop reads it itself
        later = ahead.take(14)
        assert later is not None and later.result() == "value 14"
        assert ahead.take(99) is None  # never asked for: not read ahead
    finally:
        reads.close()


def test_read_ahead_on_a_pool_of_one_reads_nothing_ahead() -> None:
    recorder = _Recorder()
    ahead = ReadAhead(Reads(1, "test"), [1, 2, 3], recorder, window=8)
    assert ahead.take(1) is None  # the caller reads, in turn, as with no read-ahead
    assert recorder.read == []


def test_read_ahead_cancelled_by_close_is_taken_as_not_read() -> None:
    reads = Reads(2, "test")
    started = threading.Event()
    release = threading.Event()

    def slow(key: int) -> int:
        started.set()
        release.wait(5)
        return key

    ahead = ReadAhead(reads, [1, 2, 3, 4], slow, window=4)
    started.wait(5)
    reads.close()  # the run is ending: reads not yet started are cancelled
    release.set()
    assert ahead.take(4) is None


def test_read_ahead_never_starts_a_read_for_a_key_the_loop_has_passed() -> None:
    reads = Reads(2, "test")
    recorder = _Recorder()
    try:
        ahead = ReadAhead(reads, list(range(30)), recorder, window=2)
        time.sleep(0.05)
        later = ahead.take(20)  # 2 to 19 passed by: never read
        assert later is None  # not read ahead: the loop reads it itself
        for key in range(21, 30):
            future = ahead.take(key)
            assert future is not None and future.result() == f"value {key}"
        time.sleep(0.05)
        assert not [key for key in recorder.read if 2 <= key <= 20]
    finally:
        reads.close()


def test_wait_all_returns_once_every_job_ended_whatever_order_they_end_in() -> None:
    """Jobs ending last-first, one cancelled before it started: the wait ends when the last
    one does, not before (each future waited for in turn, in ticks)."""
    pool = concurrent.futures.ThreadPoolExecutor(4)
    gates = [threading.Event() for _ in range(4)]
    futures = [pool.submit(gate.wait, 5) for gate in gates]
    never = pool.submit(time.sleep, 0)  # queued behind 4 busy workers
    assert never.cancel()
    released: list[float] = []

    def release() -> None:
        for gate in reversed(gates):
            time.sleep(0.05)
            released.append(time.monotonic())  # before the job can end
            gate.set()

    releaser = threading.Thread(target=release)
    releaser.start()
    wait_all([*futures, never])
    ended = time.monotonic()
    releaser.join()
    assert all(future.done() for future in futures)
    assert len(released) == len(gates) and ended >= released[-1]
    pool.shutdown()


def test_a_few_jobs_a_worker_are_handed_over_at_a_time_and_a_slow_one_holds_none_back() -> None:
    """10,000 upstream clusters are not 10,000 futures at once (about 1.5 KiB each): at most
    QUEUED a worker are handed to the pool, the next as any one ends, so a slow (black-holed)
    cluster holds one worker, never the others' turns."""
    reads = Reads(2, "test")
    most_queued = 0
    ended: list[int] = []
    lock = threading.Lock()

    def job(i: int) -> int:
        nonlocal most_queued
        executor = reads._executor
        assert executor is not None
        with lock:
            most_queued = max(most_queued, executor._work_queue.qsize())
        time.sleep(0.6 if i == 0 else 0.01)
        with lock:
            ended.append(i)
        return i

    try:
        started = time.monotonic()
        assert reads.all([lambda i=i: job(i) for i in range(30)]) == list(range(30))
        elapsed = time.monotonic() - started
    finally:
        reads.close()
    assert most_queued <= 2 * QUEUED
    assert ended[-1] == 0  # the slow first job ended last: the others ran beside it
    assert elapsed < 0.6 + 0.5


def test_jobs_not_handed_over_when_the_pool_closes_are_stopped_and_no_pool_is_made_again() -> None:
    reads = Reads(2, "test")
    release = threading.Event()
    started: list[int] = []

    def job(i: int) -> int:
        started.append(i)
        release.wait(5)
        return i

    outcome: list[BaseException] = []

    def run() -> None:
        try:
            reads.all([lambda i=i: job(i) for i in range(20)])
        except BaseException as exc:
            outcome.append(exc)

    caller = threading.Thread(target=run)
    caller.start()
    time.sleep(0.2)
    reads.close()  # the run is ending
    release.set()
    caller.join(timeout=5)
    assert not caller.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], Stopped)
    assert len(started) <= 2 * QUEUED  # nothing more was run once it closed
    assert reads._executor is None
    with pytest.raises(Stopped):
        reads.start(lambda: 1)
