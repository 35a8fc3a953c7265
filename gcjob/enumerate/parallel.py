"""Independent reads at once, on bounded pools, with results in the order they were asked for
whatever order they finish in (so the report does not depend on which answer came first).

Only threads that are not pool workers wait on a pool (the run's main thread, the routes
read-ahead): a worker waiting on its own pool could wait for a free worker forever.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from typing import TypeVar

from gcjob.kube.errors import Stopped

T = TypeVar("T")

WAIT_TICK = 0.1  # the waiting (main) thread wakes this often, so signal handlers run


class Reads:
    """A bounded pool of reader threads; `size` 1 reads one after another in the caller."""

    def __init__(self, size: int, name: str) -> None:
        self.size = max(1, size)
        self._name = name
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    def all(self, jobs: Sequence[Callable[[], T]]) -> list[T]:
        """Every job's result, in the order of `jobs`. When jobs fail, all of them are still
        waited for (a job keeps its sink until it ends), and the first failure in the order of
        `jobs` is raised: the same one whatever finished first."""
        if self.size == 1 or len(jobs) <= 1:
            return [job() for job in jobs]
        futures = [self._pool().submit(job) for job in jobs]
        wait_all(futures)
        for future in futures:
            if future.cancelled():  # close() came first: the run is ending
                raise Stopped(f"{self._name} read not started: the run is ending")
            error = future.exception()
            if error is not None:
                raise error
        return [future.result() for future in futures]

    def start(self, job: Callable[[], T]) -> concurrent.futures.Future[T]:
        return self._pool().submit(job)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                self.size, thread_name_prefix=f"gcjob-{self._name}"
            )
        return self._executor


SERIAL = Reads(1, "serial")


def wait_all(futures: Sequence[concurrent.futures.Future[T]]) -> None:
    """Waits in ticks: a main thread blocked in one long wait would run no signal handler,
    and a stop (SIGTERM) is what ends the reads (their transports give up within a tick).
    Asks each future whether it is done: concurrent.futures.wait() never counts a job that
    close() cancelled before a worker took it, and would wait for it forever."""
    pending = set(futures)
    while pending:
        concurrent.futures.wait(pending, timeout=WAIT_TICK)
        pending = {future for future in pending if not future.done()}
