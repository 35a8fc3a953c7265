"""The run's time budget and stop requests (deadline, SIGTERM, SIGINT)."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable


class RunBudget:
    """Answers "may I start another request / deletion?" for the whole run."""

    TICK = 0.1  # how soon a sleeping run notices a stop request

    def __init__(self, timeout: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._deadline = None if timeout is None else clock() + timeout
        self._stop_reason: str | None = None

    def request_stop(self, reason: str) -> None:
        # Called from a signal handler: only set a flag; the request in flight completes.
        if self._stop_reason is None:
            self._stop_reason = reason

    def remaining(self) -> float | None:
        if self._deadline is None:
            return None
        return self._deadline - self._clock()

    def sleep(self, seconds: float, sleep: Callable[[float], None] = time.sleep) -> None:
        """Sleep, but wake within a tick of a stop request (SIGTERM must not wait out a
        backoff), and never past the deadline."""
        end = self._clock() + seconds
        while self.stop_reason() is None:
            left = end - self._clock()
            if left <= 0:
                return
            sleep(min(left, self.TICK))

    def stop_reason(self) -> str | None:
        if self._stop_reason is not None:
            return self._stop_reason
        remaining = self.remaining()
        if remaining is not None and remaining <= 0:
            return "deadline"
        return None


def stop_on_signals(budget: RunBudget) -> None:
    """SIGTERM and SIGINT ask the run to stop, as --timeout does. Installed before the run's
    modules are imported (most of a second, more on a loaded node): a signal that comes while
    they load must stop the run with its report, not kill the process (exit -15)."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda num, _frame: budget.request_stop(signal.Signals(num).name))
