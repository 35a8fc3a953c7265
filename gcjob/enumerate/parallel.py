"""Independent reads at once, on bounded pools, with results in the order they were asked for
whatever order they finish in (so the report does not depend on which answer came first).

Only threads that are not pool workers wait on a pool (the run's main thread, the routes
read-ahead): a worker waiting on its own pool could wait for a free worker forever.
"""

from __future__ import annotations

import concurrent.futures
import queue
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Sequence
from functools import partial
from typing import Generic, TypeVar

from gcjob.kube.errors import Stopped

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
Item = TypeVar("Item")

WAIT_TICK = 0.1  # the waiting (main) thread wakes this often, so signal handlers run
QUEUED = 2  # jobs handed to a pool at a time, a worker: none waits for its next job


class Reads:
    """A bounded pool of reader threads; `size` 1 reads one after another in the caller."""

    def __init__(self, size: int, name: str) -> None:
        self.size = max(1, size)
        self._name = name
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False

    def all(self, jobs: Sequence[Callable[[], T]]) -> list[T]:
        """Every job's result, in the order of `jobs`. When jobs fail, all of them are still
        run and waited for (a job keeps its sink until it ends), and the first failure in the
        order of `jobs` is raised: the same one whatever finished first. At most QUEUED jobs a
        worker are handed to the pool at a time, the next as each one ends (whichever): a
        future is about 1.5 KiB, and 10,000 upstream clusters handed over at once held
        10,000 of them. A job not handed over when the pool closed (the run is ending) is
        Stopped, as one the pool cancelled."""
        return self.map(_call, jobs)

    def map(self, read: Callable[[Item], T], items: Sequence[Item]) -> list[T]:
        """`read` of every item, as `all` runs jobs: each job made as it is handed over, not
        one each held for the whole read (a job was about 250 bytes an upstream cluster)."""
        if self.size == 1 or len(items) <= 1:
            return [read(item) for item in items]
        what = f"{self._name} read"
        # Results in one list, failures apart: a (result, error) pair each was 56 bytes an
        # upstream cluster, held to the end of the read.
        results: list[T | None] = [None] * len(items)
        failures: dict[int, BaseException] = {}
        finished: queue.SimpleQueue[concurrent.futures.Future[T]] = queue.SimpleQueue()
        handed: dict[concurrent.futures.Future[T], int] = {}
        following = 0
        while following < len(items) or handed:
            while following < len(items) and len(handed) < self.size * QUEUED:
                try:
                    future = self._pool().submit(read, items[following])
                except (Stopped, RuntimeError):  # closed (RuntimeError: as it closed)
                    failures[following] = Stopped(f"{what} not started: the run is ending")
                else:
                    handed[future] = following
                    future.add_done_callback(finished.put)  # a cancelled one's too
                following += 1
            if not handed:
                continue
            try:
                done = finished.get(timeout=WAIT_TICK)  # a tick: signal handlers run
            except queue.Empty:
                continue
            at = handed.pop(done)
            if done.cancelled():
                failures[at] = Stopped(f"{what} not started: the run is ending")
            elif (error := done.exception()) is not None:
                failures[at] = error
            else:
                results[at] = done.result()
        if failures:
            raise failures[min(failures)]  # the first in the order of `items`
        return results  # type: ignore[return-value]

    def start(self, job: Callable[[], T]) -> concurrent.futures.Future[T]:
        return self._pool().submit(job)

    def close(self) -> None:
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._closed:  # never a new pool once the run closed its pools
            raise Stopped(f"{self._name} reads closed: the run is ending")
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                self.size, thread_name_prefix=f"gcjob-{self._name}"
            )
        return self._executor


SERIAL = Reads(1, "serial")


def _call(job: Callable[[], T]) -> T:
    return job()


def result_of(future: concurrent.futures.Future[T], what: str) -> T:
    """A job's result once it ends (waited for in ticks), or the error it raised; Stopped
    when close() cancelled it before it started (the run is ending)."""
    wait_all([future])
    if future.cancelled():
        raise Stopped(f"{what} not started: the run is ending")
    return future.result()


class ReadAhead(Generic[K, T]):
    """Reads that run a few items ahead of a loop over `keys`, on a pool: the loop `take`s each
    key's result in turn instead of reading it then. At most `window` are read and not yet
    taken, so what is taken is a moment old, not as old as the loop is long. A key the loop
    passed by is dropped; one never read ahead (or whose read was cancelled: the run is
    ending) is `take`n as None, for the loop to read itself."""

    def __init__(
        self, reads: Reads, keys: Sequence[K], read: Callable[[K], T], window: int
    ) -> None:
        self._reads = reads
        self._read = read
        self._window = window if reads.size > 1 else 0  # size 1: the caller reads, in turn
        self._order = {key: n for n, key in enumerate(keys)}
        self._pending = deque(keys)
        self._started: OrderedDict[K, concurrent.futures.Future[T]] = OrderedDict()
        self._passed = -1  # the order of the last key taken: none before it is read any more
        self._fill()

    def take(self, key: K) -> concurrent.futures.Future[T] | None:
        """`key`'s read, done (its result, or the error it raised); None if it was not read
        ahead."""
        at = self._order.get(key)
        if at is not None:
            self._passed = max(self._passed, at)
        while self._started and at is not None:
            first = next(iter(self._started))
            if self._order[first] >= at:
                break
            self._started.pop(first).cancel()  # passed by: never taken
        future = self._started.pop(key, None)
        self._fill()
        if future is None:
            return None
        wait_all([future])
        return None if future.cancelled() else future

    def _fill(self) -> None:
        while self._pending and len(self._started) < self._window:
            key = self._pending.popleft()
            if self._order[key] > self._passed and key not in self._started:
                self._started[key] = self._reads.start(partial(self._read, key))


def wait_all(futures: Sequence[concurrent.futures.Future[T]]) -> None:
    """Waits in ticks: a main thread blocked in one long wait would run no signal handler,
    and a stop (SIGTERM) is what ends the reads (their transports give up within a tick).
    Asks each future whether it is done: concurrent.futures.wait() never counts a job that
    close() cancelled before a worker took it, and would wait for it forever. One future at
    a time, in order: a tick's wait on every pending future took each one's lock three times,
    ten times a second (at 10,000 upstream clusters, seconds of CPU and of the GIL)."""
    for future in futures:
        while not future.done():
            concurrent.futures.wait((future,), timeout=WAIT_TICK)
