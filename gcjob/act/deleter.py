"""Turns a delete Verdict into an Outcome: dry run, stop requests, rate limit, preconditions."""

from __future__ import annotations

import time
from collections.abc import Callable

from gcjob.budget import RunBudget
from gcjob.kube.access import DeleteResult, KubeAccess
from gcjob.kube.errors import DeleteUncertain, KubeError, Stopped
from gcjob.kube.resources import Resource
from gcjob.model import Action, Outcome, Sweep, Verdict


class Deleter:
    def __init__(
        self,
        access: KubeAccess | None,
        *,
        dry_run: bool,
        budget: RunBudget,
        qps: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.access = access
        self.dry_run = dry_run
        self.budget = budget
        self._interval = 1.0 / qps if qps > 0 else 0.0
        self._clock = clock
        self._sleep = sleep
        self._last: float | None = None

    def stopped(self, sweep: Sweep, verdict: Verdict) -> Outcome | None:
        """An Outcome saying the run stopped before this object, if it has."""
        reason = self.budget.stop_reason()
        if reason is None:
            return None
        return Outcome.of(
            sweep, verdict, Action.SKIPPED, "stopped", f"left undone: run stopped ({reason})"
        )

    def delete(self, sweep: Sweep, verdict: Verdict, resource: Resource) -> Outcome:
        if self.dry_run:
            return Outcome.of(sweep, verdict, Action.WOULD_DELETE)
        stopped = self.stopped(sweep, verdict)
        if stopped is not None:
            return stopped
        assert self.access is not None, "deleting needs a live API"
        self._throttle()
        ref = verdict.ref
        try:
            result = self.access.delete(
                resource, ref.namespace, ref.name, ref.uid, ref.resource_version
            )
        except DeleteUncertain as exc:
            return Outcome.of(sweep, verdict, Action.FAILED, "delete-uncertain", str(exc))
        except Stopped as exc:
            return Outcome.of(sweep, verdict, Action.SKIPPED, "stopped", f"left undone: {exc}")
        except KubeError as exc:
            return Outcome.of(sweep, verdict, Action.FAILED, "delete-failed", str(exc))
        if result is DeleteResult.DELETED:
            return Outcome.of(sweep, verdict, Action.DELETED)
        if result is DeleteResult.GONE:
            return Outcome.already_gone(sweep, verdict)
        return Outcome.changed_since_observed(
            sweep, verdict, "409: uid or resourceVersion changed since it was observed"
        )

    def _throttle(self) -> None:
        if self._interval <= 0:
            return
        now = self._clock()
        if self._last is not None:
            wait = self._last + self._interval - now
            if wait > 0:
                self.budget.sleep(wait, self._sleep)
        self._last = self._clock()


def read_failure(sweep: Sweep, verdict: Verdict, what: str, exc: KubeError) -> Outcome:
    """A live re-read that could not be answered: never a reason to delete."""
    if isinstance(exc, Stopped):
        return Outcome.of(sweep, verdict, Action.SKIPPED, "stopped", f"left undone: {exc}")
    return Outcome.of(sweep, verdict, Action.SKIPPED, "lookup-failed", f"re-reading {what}: {exc}")
