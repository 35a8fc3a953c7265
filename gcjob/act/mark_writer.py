"""Writes and removes marks (gcjob/marks.py) as conditional JSON Patches; turns each into an
Outcome: dry run, stop requests, conflicts.

Live, a patch goes to the hub. Over a --snapshot it is applied to the loaded objects (so a dry
run over a dump proves the very patch a live run would send); a live dry run writes nothing.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from gcjob.act.writes import Writes
from gcjob.brakes import MarksBrake
from gcjob.budget import RunBudget
from gcjob.decide.grace import Next
from gcjob.decide.plan import plan, removal
from gcjob.kube import reduce
from gcjob.kube.access import Patched, PatchResult
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.resources import Resource
from gcjob.marks import Evidence, mark_patch, new_mark, unmark_patch
from gcjob.model import Action, ObjectRef, Outcome, Sweep, Verdict
from gcjob.reasons import Reason

# A mark being removed is always the safe direction: when the object changed since it was
# read, read it again and remove the mark from what is there, this many times.
UNMARK_ATTEMPTS = 3


class Patchable(Protocol):
    def patch(
        self, resource: Resource, namespace: str | None, name: str, ops: list[dict[str, Any]]
    ) -> PatchResult: ...

    def get(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        reduce: Any,
        *,
        metadata_only: bool = True,
    ) -> Any: ...


class Marker:
    def __init__(
        self,
        target: Patchable | None,
        *,
        dry_run: bool,
        budget: RunBudget,
        writes: Writes | None = None,
        max_marks: int = sys.maxsize,
        marks_said: str = "",
    ) -> None:
        """`target`: where patches go (the hub, or a snapshot's loaded objects); None for a
        live dry run, which writes nothing. `writes`: the run's write budget, shared with the
        deleter (without one: unpaced, unbraked). `max_marks`: the marks brake, every mark
        counted (a companion's binding too); `marks_said`: how its limit is named."""
        self.target = target
        self.dry_run = dry_run
        self.budget = budget
        self.writes = writes or Writes(budget, qps=0, max_writes=sys.maxsize)
        self.brake = MarksBrake(max_marks, said=marks_said)

    def marks_braked(self, *, upgrade: bool = False) -> str | None:
        """Why no further mark may be written this run, or None. `upgrade`: the rewrite of an
        older gcjob's mark, no new orphan: outside the marks brake, inside the write brake."""
        return (None if upgrade else self.brake.holds()) or self.writes.braked()

    def _take(self, *, brakable: bool = True) -> str | None:
        """One write, paced when it goes to a server: None, or why it may not go out."""
        send = not self.dry_run and self.target is not None
        return self.writes.take(send=send, brakable=brakable)

    def mark(
        self,
        sweep: Sweep,
        verdict: Verdict,
        resource: Resource,
        evidence: Evidence,
        since: datetime,
        why: str = "",
        reason: str | None = None,
        *,
        upgrade: bool = False,
    ) -> Outcome:
        """Mark `verdict.ref` orphaned since `since`, on `evidence`; `why` leads the detail.
        `upgrade`: it rewrites an older gcjob's mark (see marks_braked)."""
        mark = new_mark(evidence, reason or verdict.reason, since)
        done = Action.WOULD_MARK if self.dry_run else Action.MARKED
        stopped = self._stopped(sweep, verdict)
        if stopped is not None:
            return stopped
        braked = self.marks_braked(upgrade=upgrade) or self._take()
        if braked is not None:
            return Outcome.of(sweep, verdict, Action.WOULD_MARK, Reason.BRAKE, braked)
        detail = plan(verdict, Next.MARK, why).detail
        if self.target is None:
            self._count(upgrade)
            return Outcome.of(sweep, verdict, done, detail=detail, orphaned_since=since)
        ref = verdict.ref
        try:
            result = self.target.patch(
                resource, ref.namespace, ref.name, mark_patch(ref, mark, evidence)
            )
        except Stopped as exc:
            return Outcome.of(sweep, verdict, Action.SKIPPED, Reason.STOPPED, f"left undone: {exc}")
        except KubeError as exc:
            failed = Outcome.of(sweep, verdict, Action.FAILED, Reason.MARK_FAILED, str(exc))
            return self._drop_old_mark(sweep, verdict, resource, failed)
        if result.outcome is Patched.APPLIED:
            self._count(upgrade)
            return Outcome.of(sweep, verdict, done, detail=detail, orphaned_since=since)
        skipped = _not_patched(sweep, verdict, result, "mark")
        if result.outcome is Patched.GONE:
            return skipped
        return self._drop_old_mark(sweep, verdict, resource, skipped)

    def _count(self, upgrade: bool) -> None:
        if not upgrade:  # an older gcjob's mark rewritten is no new mark
            self.brake.count()

    def _drop_old_mark(
        self, sweep: Sweep, verdict: Verdict, resource: Resource, outcome: Outcome
    ) -> Outcome:
        """A new mark that could not replace an old one (other evidence, a broken mark): the
        old one must not stay, or evidence that changes and changes back would find it again
        and count from its time. Remove it (safe, and retried); if that fails, the item fails."""
        if verdict.ref.mark is None:
            return outcome
        removed = self._unmark(sweep, verdict, resource)
        if removed.action is Action.FAILED or removed.reason == Reason.BRAKE:
            return removed
        return replace(outcome, detail=f"{outcome.detail}; the old mark was removed")

    def unmark(self, sweep: Sweep, verdict: Verdict, resource: Resource) -> Outcome:
        """Remove gcjob's mark from `verdict.ref`: it is no orphan (now) for `verdict.reason`.
        An object in use whose mark is removed is reported one by one, not only counted."""
        return replace(self._unmark(sweep, verdict, resource), healthy=False)

    def _unmark(self, sweep: Sweep, verdict: Verdict, resource: Resource) -> Outcome:
        done = Action.WOULD_UNMARK if self.dry_run else Action.UNMARKED
        # A dry run removes nothing, and says so.
        detail = removal(verdict.detail, dry_run=self.dry_run)
        stopped = self._stopped(sweep, verdict)
        if stopped is not None:
            return stopped
        if self.target is None:
            self._take(brakable=False)
            return Outcome.of(sweep, verdict, done, detail=detail)
        ref: ObjectRef | None = verdict.ref
        result = PatchResult(Patched.CONFLICT)
        for _ in range(UNMARK_ATTEMPTS):
            if ref is None:
                return _not_patched(sweep, verdict, PatchResult(Patched.GONE), "unmark")
            if ref.mark is None:
                return Outcome.of(sweep, verdict, done, detail=f"{detail} (by someone else)")
            # Paced and counted, never held back by the write brake: a mark left in place
            # could be counted from if the object is found orphaned again.
            self._take(brakable=False)
            try:
                result = self.target.patch(resource, ref.namespace, ref.name, unmark_patch(ref))
                if result.outcome is not Patched.CONFLICT:
                    break
                ref = self.target.get(resource, ref.namespace, ref.name, reduce.ref_of(resource))
            except Stopped as exc:
                return Outcome.of(
                    sweep, verdict, Action.SKIPPED, Reason.STOPPED, f"left undone: {exc}"
                )
            except KubeError as exc:
                return Outcome.of(sweep, verdict, Action.FAILED, Reason.UNMARK_FAILED, str(exc))
        if result.outcome is Patched.APPLIED:
            return Outcome.of(sweep, verdict, done, detail=detail)
        if result.outcome is Patched.CONFLICT:
            # Changed under every attempt: the mark may stay, so this run failed at it.
            return Outcome.of(
                sweep,
                verdict,
                Action.FAILED,
                Reason.UNMARK_FAILED,
                f"changed under each of {UNMARK_ATTEMPTS} attempts: {result.detail}",
            )
        return _not_patched(sweep, verdict, result, "unmark")

    def _stopped(self, sweep: Sweep, verdict: Verdict) -> Outcome | None:
        reason = self.budget.stop_reason()
        if reason is None:
            return None
        return Outcome.of(
            sweep, verdict, Action.SKIPPED, Reason.STOPPED, f"left undone: run stopped ({reason})"
        )


def waiting(sweep: Sweep, verdict: Verdict, detail: str, since: datetime | None) -> Outcome:
    """An orphan on the same evidence, marked less than the grace period ago: kept, for now
    (`detail`: why it waits, before the verdict's)."""
    waits = plan(verdict, Next.WAIT, detail)
    return Outcome.of(sweep, verdict, waits.action, waits.reason, waits.detail, since)


def _not_patched(sweep: Sweep, verdict: Verdict, result: PatchResult, what: str) -> Outcome:
    if result.outcome is Patched.GONE:
        return Outcome.already_gone(sweep, verdict)
    return Outcome.changed_since_observed(
        sweep,
        verdict,
        f"{what} not written: a test failed, it changed since it was observed ({result.detail})",
    )
