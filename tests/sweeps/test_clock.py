"""Issue 46 item 4: each sweep judges at the hub's time once the reads it rests on came back,
not at the run's start. Over the demo, every answer of the hub comes back a minute after the
one before (a fake monotonic clock, advanced as each read is answered): every new mark is
dated no earlier than the answer of its own kind's list, and a companion's no earlier than
the WorkloadDeployments index it was judged by."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from gcjob.kube.resources import Resource
from gcjob.model import Sweep
from gcjob.sweeps import execute
from gcjob.times import HubClock, parse_time
from testbed.runs import snapshot_run

# The copies sweep is not swept from a snapshot (it needs discovery): its groups are judged
# once its second read and its owners' answers are all in (Candidates), at run.now then.
SWEEPS = (Sweep.COMPANIONS, Sweep.BINDINGS, Sweep.ROUTES)
A_MINUTE = 60.0


class Tick:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.value = 0.0

    def __call__(self) -> float:
        return self.value


class SlowHub:
    """The snapshot's hub, each answer a minute after the one before; when each kind's first
    list answer came back (`listed`, monotonic seconds)."""

    def __init__(self, inner: Any, tick: Tick) -> None:
        self.inner, self.tick = inner, tick
        self.listed: dict[str, float] = {}
        self.lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _answer(self, resource: Resource, listed: bool) -> None:
        with self.lock:  # the answer comes back now: what is read from it is read after
            self.tick.value += A_MINUTE
            if listed:
                self.listed.setdefault(resource.kind, self.tick.value)

    def list(self, resource: Resource, *args: Any, **kwargs: Any) -> Any:
        self._answer(resource, True)
        return self.inner.list(resource, *args, **kwargs)

    def fold(self, resource: Resource, *args: Any, **kwargs: Any) -> Any:
        self._answer(resource, True)
        return self.inner.fold(resource, *args, **kwargs)

    def get(self, resource: Resource, *args: Any, **kwargs: Any) -> Any:
        self._answer(resource, False)
        return self.inner.get(resource, *args, **kwargs)


def test_every_new_mark_is_dated_after_the_reads_it_rests_on() -> None:
    ran = snapshot_run(*SWEEPS, grace=timedelta(days=1))
    run, tick = ran.run, Tick()
    slow = SlowHub(run.context.hub, tick)
    run.context = replace(run.context, hub=slow)
    start: datetime = run.clock.at
    run.clock = HubClock(start, tick(), monotonic=tick)

    execute(run)

    def answered(kind: str) -> datetime:
        return start + timedelta(seconds=slow.listed[kind])

    marked = [i for i in ran.items() if i["action"] == "would-mark"]
    assert {i["sweep"] for i in marked} == {s.value for s in SWEEPS}, marked
    for item in marked:
        since = parse_time(item["orphaned_since"])
        assert since is not None and since > start, item
        if item["sweep"] == Sweep.COMPANIONS.value:
            assert since >= answered("WorkloadDeployment"), item
            if item["kind"] == "ResourceBinding":
                continue  # a companion's binding carries its companion's time: read by name
        assert since >= answered(item["kind"]), item
    # The run's decided_at is the hub's time when it began; the marks are all later.
    assert run.summary(run.exit_code())["decided_at"] == start.isoformat().replace("+00:00", "Z")
