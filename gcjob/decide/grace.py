"""The grace rule: what to do with an object this run, given whether the rules find it an
orphan, on what evidence, and the mark it carries (gcjob/marks.py). Pure: `now` is passed in
(the hub's clock in a live run)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Generic, TypeVar

from gcjob.decide.trace import Trace
from gcjob.marks import (
    Evidence,
    MarkState,
    Rule,
    counts_for_nothing,
    describe_mark,
    read_mark,
    rule_of,
    since_value,
)
from gcjob.model import ObjectRef, Verdict
from gcjob.reasons import Reason

T = TypeVar("T")

LATEST = datetime.max.replace(tzinfo=UTC)


class Next(StrEnum):
    """What the grace rule says to do with one object this run."""

    DELETE = "delete"  # an orphan on the same evidence, marked at least `grace` ago
    MARK = "mark"  # an orphan with no mark, a void or legacy one, or changed evidence: (re)start
    WAIT = "wait"  # an orphan on the same evidence, marked less than `grace` ago
    UNMARK = "unmark"  # not an orphan (any more), and carries this rule's mark
    NOTHING = "nothing"  # not an orphan, and no mark of this rule to remove


@dataclass(frozen=True, slots=True)
class GraceCall:
    next: Next
    detail: str
    since: datetime | None = None  # orphaned since: the mark's time (now, for a new mark)
    due: datetime | None = None  # when it may be deleted
    # A MARK that only rewrites a well-formed mark of an older gcjob (before marks named their
    # object): not a new orphan, so kept out of the marks brake's count.
    upgrade: bool = False


def later(moment: datetime, span: timedelta) -> datetime:
    """`moment + span`, or the latest time there is: a huge --grace must not overflow."""
    try:
        return moment + span
    except OverflowError:
        return LATEST


def grace_rule(
    rule: Rule,
    evidence: Evidence | None,
    ref: ObjectRef,
    now: datetime,
    grace: timedelta,
) -> GraceCall:
    """`evidence`: what an orphan's decision rested on this run; None when the rules did not
    find an orphan (for whatever reason, a failed read included: the mark then goes, and the
    grace period starts again the next time it is found). `ref`: the object, with its mark.

    A mark is only trusted whole, on this very object (marks.read_mark), on this very
    evidence; a void one is reported and replaced, never deleted on."""
    mark = ref.mark
    if evidence is None:
        if mark is None:
            return GraceCall(Next.NOTHING, "")
        owner = rule_of(mark)
        if owner is not None and owner != rule:
            return GraceCall(Next.NOTHING, f"marked by the {owner} rule: left to it")
        if counts_for_nothing(mark, ref.uid, ref.created):
            # Removing it would spend a write on nothing: forged marks must not be able to use
            # up the run's write brake before the removals of real marks.
            return GraceCall(Next.NOTHING, "a void mark: left, it counts for nothing")
        return GraceCall(Next.UNMARK, "no longer an orphan: its mark goes")
    reading = read_mark(mark, ref.uid, ref.created, now)
    if grace <= timedelta(0):
        return GraceCall(Next.DELETE, "no grace period", reading.since, now)
    upgrade = False
    # Each `why` says what the rule found, never that a mark was written: the action does
    # (`marked`, or `would-mark` in a dry run, which writes nothing).
    if reading.state is MarkState.ABSENT:
        why = "found orphaned"
    elif reading.state is MarkState.VOID:
        why = f"{reading.why}: grace starts over"
    elif reading.evidence != evidence.facts_digest:
        why = "evidence changed since it was marked: grace starts over"
    elif reading.state is MarkState.LEGACY:
        # A mark of an older gcjob names no object: a copied one would look the same, so its
        # time is not trusted; the grace period starts again, once, from now.
        why = "mark of an older gcjob, not bound to this object: grace starts over"
        upgrade = True
    else:
        why = ""
    if why:
        # Never before the object was created: the hub's Date counts whole seconds, so `now`
        # can be a moment behind a creationTimestamp it stamped, and such a mark reads void
        # ("a copied mark") the next run. The later time only makes the grace period longer.
        starts = now if ref.created is None else max(now, ref.created)
        due = later(starts, grace)
        return GraceCall(Next.MARK, f"{why}; {due_by(due)}", starts, due, upgrade)
    since = reading.since
    assert since is not None  # a bound mark has its time
    due = later(since, grace)
    if now >= due:
        return GraceCall(Next.DELETE, f"orphaned since {since_value(since)}", since, due)
    return GraceCall(Next.WAIT, f"orphaned since {since_value(since)}; {due_by(due)}", since, due)


def due_by(due: datetime) -> str:
    """When an orphan is deleted if it stays orphaned, as every detail and trace says it:
    the same words in a dry run, a --delete run and explain, none of which it claims."""
    return f"due for deletion at {since_value(due)} if still orphaned"


def due_if_enforced(due: datetime, sweep: str) -> str:
    """`due_by` for an orphan of a sweep that is not enforced (report-only): no run deletes
    it until an operator enforces that sweep."""
    return (
        f"would be due for deletion at {since_value(due)} if still orphaned, were this sweep "
        f"enforced (--enforce {sweep})"
    )


def deletes_at(call: GraceCall, now: datetime) -> datetime | None:
    """When an orphan the grace rule called goes if it stays orphaned (a report's
    `would_delete_at`): its grace period's end, or `now` once that passed; None for an
    object the rule does not see on its way out (unmark, nothing)."""
    if call.next not in (Next.DELETE, Next.MARK, Next.WAIT) or call.due is None:
        return None
    return max(call.due, now)


def grace_call(
    rule: Rule,
    verdict: Verdict,
    evidence: Evidence | None,
    now: datetime,
    grace: timedelta,
    trace: Trace | None = None,
) -> GraceCall | None:
    """The grace rule over one judged object (`evidence`: what an orphan's verdict rests on),
    traced as a step of its own; None when it has nothing to say: a kept object with no mark
    of this rule to remove, a terminating one, or one a patch could not be pinned to."""
    ref = verdict.ref
    if verdict.delete:
        assert evidence is not None  # an orphan's decision rests on evidence
        call = grace_rule(rule, evidence, ref, now, grace)
    else:
        if ref.mark is None or ref.terminating or not ref.uid or not ref.resource_version:
            # Nothing to remove; a terminating object is on its way out anyway; a patch is
            # never sent unpinned.
            return None
        call = grace_rule(rule, None, ref, now, grace)
        if call.next is not Next.UNMARK:
            return None
    if trace is not None:
        seen = describe_mark(ref.mark) + (
            f"; now {evidence.on(ref.uid).digest}" if evidence else ""
        )
        text = f"{seen}; --grace {int(grace.total_seconds())}s: {call.detail}"
        if call.next is Next.DELETE:
            trace.passed("grace", text)
        else:
            trace.held_at("grace", text)
    return call


def left_scope(ref: ObjectRef, rule: Rule, detail: str) -> Graced[None] | None:
    """An object carrying `rule`'s mark that its sweep no longer selects: the mark goes, so
    that if it comes back the grace period starts afresh, never from a time the sweep did not
    watch it. None: nothing to remove (no mark of this rule: a void one counts for nothing
    anyway; terminating; or a patch that could not be pinned)."""
    # As the sweep lists them: labelled `orphaned`; a void mark counts for nothing anyway.
    if ref.mark is None or ref.mark.label is None or rule_of(ref.mark) != rule:
        return None
    if counts_for_nothing(ref.mark, ref.uid, ref.created):
        return None
    if ref.terminating or not ref.uid or not ref.resource_version:
        return None
    verdict = Verdict(ref, False, Reason.LEFT_SCOPE, detail)
    return Graced(verdict, GraceCall(Next.UNMARK, detail), None, None)


@dataclass(frozen=True, slots=True)
class Graced(Generic[T]):
    """One object's verdict, what the grace rule makes of it, and what acting on it needs
    (`evidence` bound to the object: the mark written from it names its uid)."""

    verdict: Verdict
    call: GraceCall
    evidence: Evidence | None
    target: T


@dataclass
class GraceSort(Generic[T]):
    """Sorts one sweep's verdicts by the grace rule: due deletions, new marks, waits, marks to
    remove. What it does not take is reported as the verdict says, as without marks."""

    rule: Rule
    now: datetime
    grace: timedelta
    due: list[Graced[T]] = field(default_factory=list)
    to_mark: list[Graced[T]] = field(default_factory=list)
    waiting: list[Graced[T]] = field(default_factory=list)
    to_unmark: list[Graced[T]] = field(default_factory=list)

    def take(
        self, verdict: Verdict, evidence: Evidence | None, call: GraceCall | None, target: T
    ) -> bool:
        """A judged object, filed by the grace rule's `call` on it (grace_call): True when it
        took it; False when there is nothing to do but report it as the verdict says."""
        if call is None or call.next is Next.NOTHING:
            return False
        bound = evidence.on(verdict.ref.uid) if evidence is not None else None
        lists = {
            Next.DELETE: self.due,
            Next.MARK: self.to_mark,
            Next.WAIT: self.waiting,
            Next.UNMARK: self.to_unmark,
        }
        lists[call.next].append(Graced(verdict, call, bound, target))
        return True

    def orphan(self, verdict: Verdict, evidence: Evidence, target: T) -> None:
        """A verdict to delete, resting on `evidence`."""
        call = grace_call(self.rule, verdict, evidence, self.now, self.grace)
        assert call is not None  # the grace rule always has its say on an orphan
        self.take(verdict, evidence, call, target)

    def not_orphan(self, verdict: Verdict, target: T) -> bool:
        """A verdict to keep: True when it took it, a mark of this rule to remove."""
        return self.take(
            verdict, None, grace_call(self.rule, verdict, None, self.now, self.grace), target
        )

    @property
    def new_marks(self) -> list[Graced[T]]:
        """The marks the marks brake counts: new orphans, not rewritten older marks."""
        return [g for g in self.to_mark if not g.call.upgrade]

    @property
    def upgrades(self) -> list[Graced[T]]:
        return [g for g in self.to_mark if g.call.upgrade]
