"""Turns a delete Verdict into an Outcome: dry run, stop requests, the write budget (pace and
brake, shared with the marker: gcjob/act/writes.py), preconditions."""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from gcjob.act.writes import Writes
from gcjob.budget import RunBudget
from gcjob.decide.plan import not_enforced
from gcjob.kube.access import DeleteResult, KubeAccess
from gcjob.kube.errors import DeleteUncertain, KubeError, Stopped
from gcjob.kube.resources import Resource
from gcjob.model import Action, Looked, Outcome, SecondLook, Sweep, Verdict
from gcjob.reasons import Reason

if TYPE_CHECKING:
    from gcjob.act.record import DeletionRecord


class Deleter:
    def __init__(
        self,
        access: KubeAccess | None,
        *,
        dry_run: bool,
        budget: RunBudget,
        writes: Writes | None = None,
        qps: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        record: DeletionRecord | None = None,
        enforced: bool = True,
    ) -> None:
        """`writes`: the run's write budget, shared with the marker; without one, a budget of
        its own paced at `qps` and never braked. `record`: each object is recorded before its
        delete goes out, and not deleted when it cannot be (--record-deletions). Not
        `enforced`: for a sweep not in --enforce, deletes nothing (`report_only`)."""
        self.access = access
        self.record = record
        self.dry_run = dry_run
        self.enforced = enforced
        self.budget = budget
        self.writes = writes or Writes(
            budget, qps=qps, max_writes=sys.maxsize, clock=clock, sleep=sleep
        )

    def report_only(self) -> Deleter:
        """This deleter for a sweep that is not enforced (not in --enforce), as the driver
        hands it to that sweep's writes (gcjob/sweeps/driver.py `deleter_for`): every delete
        is said, `would-delete`, never sent, in a dry run and a --delete run alike, and
        spends no write of the run's budget."""
        said = copy.copy(self)
        said.enforced = False
        return said

    def stopped(self, sweep: Sweep, verdict: Verdict) -> Outcome | None:
        """An Outcome saying the run stopped before this object, if it has."""
        reason = self.budget.stop_reason()
        if reason is None:
            return None
        return Outcome.of(
            sweep, verdict, Action.SKIPPED, Reason.STOPPED, f"left undone: run stopped ({reason})"
        )

    def held(self, sweep: Sweep, verdict: Verdict) -> Outcome | None:
        """An Outcome saying this object's deletion cannot go out, if it cannot (the run
        stopped, or the write brake engaged): checked before the reads a deletion needs, so
        they stop with the writes they serve."""
        stopped = self.stopped(sweep, verdict)
        if stopped is not None:
            return stopped
        braked = self.writes.braked()
        if braked is not None:
            return Outcome.of(sweep, verdict, Action.WOULD_DELETE, Reason.BRAKE, braked)
        return None

    def delete(self, sweep: Sweep, verdict: Verdict, resource: Resource) -> Outcome:
        if not self.enforced:
            detail = not_enforced(verdict.detail, sweep.value)
            return Outcome.of(sweep, verdict, Action.WOULD_DELETE, detail=detail)
        if self.dry_run:
            braked = self.writes.take(send=False)
            if braked is not None:
                return Outcome.of(sweep, verdict, Action.WOULD_DELETE, Reason.BRAKE, braked)
            return Outcome.of(sweep, verdict, Action.WOULD_DELETE)
        stopped = self.stopped(sweep, verdict)
        if stopped is not None:
            return stopped
        assert self.access is not None, "deleting needs a live API"
        braked = self.writes.take(send=True)
        if braked is not None:
            return Outcome.of(sweep, verdict, Action.WOULD_DELETE, Reason.BRAKE, braked)
        if self.record is None:
            return self._send(sweep, verdict, resource)
        held = self.record.before(self.access, sweep, verdict, resource)
        if held is not None:
            return held
        outcome = self._send(sweep, verdict, resource)
        self.record.after(outcome)
        return outcome

    def _send(self, sweep: Sweep, verdict: Verdict, resource: Resource) -> Outcome:
        """The pinned delete, its answer as an Outcome."""
        assert self.access is not None, "deleting needs a live API"
        ref = verdict.ref
        try:
            result = self.access.delete(
                resource, ref.namespace, ref.name, ref.uid, ref.resource_version
            )
        except DeleteUncertain as exc:
            return Outcome.of(sweep, verdict, Action.FAILED, Reason.DELETE_UNCERTAIN, str(exc))
        except Stopped as exc:
            return Outcome.of(sweep, verdict, Action.SKIPPED, Reason.STOPPED, f"left undone: {exc}")
        except KubeError as exc:
            return Outcome.of(sweep, verdict, Action.FAILED, Reason.DELETE_FAILED, str(exc))
        if result is DeleteResult.DELETED:
            return Outcome.of(sweep, verdict, Action.DELETED)
        if result is DeleteResult.GONE:
            return Outcome.already_gone(sweep, verdict)
        return Outcome.changed_since_observed(
            sweep, verdict, "409: uid or resourceVersion changed since it was observed"
        )


def read_failure(sweep: Sweep, verdict: Verdict, what: str, exc: KubeError) -> Outcome:
    """A live re-read that could not be answered: never a reason to delete."""
    if isinstance(exc, Stopped):
        return Outcome.of(sweep, verdict, Action.SKIPPED, Reason.STOPPED, f"left undone: {exc}")
    return Outcome.of(
        sweep, verdict, Action.SKIPPED, Reason.LOOKUP_FAILED, f"re-reading {what}: {exc}"
    )


def second_look(sweep: Sweep, verdict: Verdict, look: SecondLook) -> Outcome | None:
    """None while the live second look before a delete still proves the orphan's reason;
    else what keeps it. Only a read that answered says something happened (`owner-appeared`);
    a read that failed, was refused or ran out of its budget is a lookup failure."""
    if look.found is Looked.PROVEN:
        return None
    if look.found is Looked.NO_LONGER:
        return Outcome.of(sweep, verdict, Action.SKIPPED, Reason.OWNER_APPEARED, look.detail)
    if look.found is Looked.STOPPED:
        detail = f"left undone: {look.detail}"
        return Outcome.of(sweep, verdict, Action.SKIPPED, Reason.STOPPED, detail)
    detail = f"not read again before the delete: {look.detail}"
    return Outcome.of(sweep, verdict, Action.SKIPPED, Reason.LOOKUP_FAILED, detail)
