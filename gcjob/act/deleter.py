"""Turns a delete Verdict into an Outcome: dry run, stop requests, the write budget (pace and
brake, shared with the marker: gcjob/act/writes.py), preconditions."""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from gcjob.act.writes import Writes
from gcjob.budget import RunBudget
from gcjob.decide.plan import not_enforced
from gcjob.kube.access import (
    DeleteResult,
    HeldBy,
    KubeAccess,
    Lingering,
    admission_refuser,
    holding,
    lingering,
)
from gcjob.kube.errors import MAX_MESSAGE_CHARS, ApiError, DeleteUncertain, KubeError, Stopped
from gcjob.kube.resources import Resource
from gcjob.model import Action, Looked, Outcome, SecondLook, Sweep, Verdict
from gcjob.reasons import Reason
from gcjob.redact import redact
from gcjob.visible import clip

if TYPE_CHECKING:
    from gcjob.act.record import DeletionRecord

# How long after a delete held by a finalizer goes out it is read again: Karmada's binding
# controller lets its finalizer go about 0.1 s after the delete, the garbage collector its
# `orphan` as soon; a finalizer still there a second later is reported as holding it.
SETTLE_AFTER = 1.0
# The most the settle phase (its wait and its reads) takes as a whole, or the run's remaining
# time if less: what is left unread then is reported held, as the delete's answer said.
SETTLE_AT_MOST = 10.0


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
        self.clock = clock
        self.sleep = sleep
        # Deletes the server accepted with the object still held by a finalizer other than
        # `orphan`, by uid: what to read again (`settle`), and when each went out.
        self._held: dict[str, tuple[Resource, float]] = {}

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
        except ApiError as exc:
            if exc.admission:
                return refused_by_admission(sweep, verdict, exc, resource)
            return Outcome.of(sweep, verdict, Action.FAILED, Reason.DELETE_FAILED, str(exc))
        except KubeError as exc:
            return Outcome.of(sweep, verdict, Action.FAILED, Reason.DELETE_FAILED, str(exc))
        if isinstance(result, HeldBy):
            self._held[ref.uid] = (resource, self.clock())
            return Outcome.of(
                sweep, verdict, Action.DELETE_HELD, detail=held_detail(result, verdict)
            )
        if result is DeleteResult.DELETED:
            return Outcome.of(sweep, verdict, Action.DELETED)
        if result is DeleteResult.GONE:
            return Outcome.already_gone(sweep, verdict)
        return Outcome.changed_since_observed(
            sweep, verdict, "409: uid or resourceVersion changed since it was observed"
        )

    def settle(self, held: list[Outcome]) -> list[Outcome]:
        """`held` (outcomes `delete-held` of deletes this deleter sent), each read again once,
        at least SETTLE_AFTER after the last of them went out: what each is now (`settled`).
        One wait for them all, never one for each delete (thousands are paced). Nothing is
        read after the run's stop, nor past SETTLE_AT_MOST (or the run's remaining time):
        what is left unread stays `delete-held`, as the delete's answer named it."""
        remaining = self.budget.remaining()
        at_most = SETTLE_AT_MOST if remaining is None else max(min(SETTLE_AT_MOST, remaining), 0)
        end = self.clock() + at_most
        sent = [self._held[o.ref.uid][1] for o in held if o.ref.uid in self._held]
        if sent and self.budget.stop_reason() is None:
            wait = min(max(sent) + SETTLE_AFTER, end) - self.clock()
            if wait > 0:
                self.budget.sleep(wait, self.sleep)
        return [self._settle_one(outcome, end) for outcome in held]

    def _settle_one(self, outcome: Outcome, end: float) -> Outcome:
        """One held delete, read again unless the run stopped or the phase's time is up; an
        unexpected failure is that item's alone (`lookup-failed`), never the others'."""
        stop = self.budget.stop_reason()
        why = f"run stopped ({stop})" if stop is not None else ""
        if not why and self.clock() >= end:
            why = f"settling ran out of its time ({SETTLE_AT_MOST:g} s at most)"
        if why:
            self._held.pop(outcome.ref.uid, None)
            return not_read_again(outcome, why)
        try:
            return self._read_again(outcome)
        except Exception as exc:  # one item's failure is reported, never the others' loss
            self._held.pop(outcome.ref.uid, None)
            return settled(outcome, None, f"{type(exc).__name__}: {clip(redact(str(exc)), 200)}")

    def _read_again(self, outcome: Outcome) -> Outcome:
        """One metadata GET (once, even after a stop request) of an object whose delete a
        finalizer held, and what it says (`settled`)."""
        ref = outcome.ref
        pending = self._held.pop(ref.uid, None)
        if pending is None or self.access is None:
            return outcome
        resource = pending[0]
        try:
            seen = self.access.get(resource, ref.namespace or None, ref.name, lingering, final=True)
        except KubeError as exc:
            return settled(outcome, None, str(exc))
        return settled(outcome, seen, "")


def not_read_again(outcome: Outcome, why: str) -> Outcome:
    """A `delete-held` outcome left as the delete's answer named it: not read again (`why`)."""
    names, sep, rest = outcome.detail.partition("]: ")
    if not sep:
        return replace(outcome, detail=f"not read again: {why}: {outcome.detail}")
    return replace(outcome, detail=f"{names}]; not read again: {why}: {rest}")


def held_detail(held: HeldBy, verdict: Verdict) -> str:
    """What a delete's answer said of an object a finalizer still holds."""
    names = ", ".join(held.finalizers) or "none readable in the answer"
    return f"delete sent, the object held by finalizers [{names}]: {verdict.detail}"


def settled(outcome: Outcome, seen: Lingering | None, error: str) -> Outcome:
    """A `delete-held` outcome, once the object was read again (`seen`: what the read found;
    None: proven gone; `error`: why it could not be read). Gone, another object under its
    name (the old one went), or Terminating held only by `orphan` (the garbage collector
    lets it go): `deleted`. Still held: `delete-held`, naming what holds it. Its uid and not
    Terminating: the delete did not take, `failed`/`delete-uncertain` (exit 1). Not read, or
    an answer naming no uid: its state is unknown, `delete-held`/`lookup-failed` (exit 1),
    never `deleted`."""
    if error:
        detail = (
            f"delete sent and held by a finalizer; reading it again failed, its state is "
            f"unknown: {error}"
        )
        return replace(outcome, reason=Reason.LOOKUP_FAILED, detail=detail)
    if seen is not None and not seen.uid:
        detail = (
            "delete sent and held by a finalizer; read again, the answer named no uid: its "
            "state is unknown"
        )
        return replace(outcome, reason=Reason.LOOKUP_FAILED, detail=detail)
    if seen is None or seen.uid != outcome.ref.uid:
        return replace(outcome, action=Action.DELETED, detail=_released(outcome.detail))
    if not seen.terminating:
        detail = (
            "the delete was accepted, yet read again the object is there with its uid and not "
            "terminating: the delete did not take"
        )
        return replace(outcome, action=Action.FAILED, reason=Reason.DELETE_UNCERTAIN, detail=detail)
    held = holding(seen.finalizers)
    if not held:
        return replace(outcome, action=Action.DELETED, detail=_released(outcome.detail))
    names = ", ".join(held)
    _, _, rest = outcome.detail.partition("]: ")
    return replace(
        outcome, detail=f"delete sent, the object still held by finalizers [{names}]: {rest}"
    )


def _released(detail: str) -> str:
    _, _, rest = detail.partition("]: ")
    return f"its finalizers let it go (read again): {rest}" if rest else detail


def refused_by_admission(
    sweep: Sweep, verdict: Verdict, exc: ApiError, resource: Resource
) -> Outcome:
    """A delete an admission webhook or a ValidatingAdmissionPolicy refused: the object kept,
    the server's message said (redacted, bounded), `admission-refused`. For a sensitive
    resource (a Secret) only who refused is named: a policy engine may quote the object."""
    if resource.sensitive:
        said = admission_refuser(exc.said) or "admission (its message not quoted for a Secret)"
    else:
        said = redact(" ".join(exc.said.split()))[:MAX_MESSAGE_CHARS]
    detail = f"kept: the delete was refused by admission (HTTP {exc.status}): {said}"
    return Outcome.of(sweep, verdict, Action.SKIPPED, Reason.ADMISSION_REFUSED, detail)


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
