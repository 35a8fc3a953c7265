"""Every write gcjob sends to the hub, one budget: paced and braked.

A mark, an unmark, a deletion, a binding's mark: each is one request taken from here before it
is sent. One limiter paces them all at `--write-qps` (the marker and the deleter share it, so
no kind of write can flood the API server beside another), and `--max-writes` ends the run's
writes once reached: the objects left are reported with reason `brake` (the write brake) and a
`--delete` run exits 4. Removing a mark is counted but never held back: a mark left on an object
in use could be counted from if it is found orphaned again (void marks, which count for nothing,
are never removed, so forged ones cost no write). Nothing content controls (forged labels or
marks on many objects) can make one run send more marks or deletions.

A dry run counts what it would send, so its report shows where the brake would engage, but
waits for nothing: nothing is sent.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gcjob.brakes import WriteBrake
from gcjob.budget import RunBudget


class Writes:
    def __init__(
        self,
        budget: RunBudget,
        *,
        qps: float,
        max_writes: int,
        said: str = "",
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.budget = budget
        self.brake = WriteBrake(max_writes, said=said)
        self._interval = 1.0 / qps if qps > 0 else 0.0
        self._clock = clock
        self._sleep = sleep
        self._last: float | None = None

    @property
    def counted(self) -> int:
        """Writes sent (a dry run: that it would send) this run."""
        return self.brake.counted

    def braked(self) -> str | None:
        """Why no further write may go out this run, or None (gcjob/brakes.py)."""
        return self.brake.holds()

    def take(self, *, send: bool, brakable: bool = True) -> str | None:
        """One write: None when it may go out (after its turn, when `send`), else why not.
        Not `brakable`: the removal of a mark, always paced and counted, never held back."""
        braked = self.braked() if brakable else None
        if braked is not None:
            return braked
        self.brake.count()
        if send:
            self._pace()
        return None

    def _pace(self) -> None:
        if self._interval <= 0:
            return
        now = self._clock()
        if self._last is not None:
            wait = self._last + self._interval - now
            if wait > 0:
                self.budget.sleep(wait, self._sleep)
        self._last = self._clock()
