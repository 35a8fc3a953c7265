"""The grace rule: what to do with an object this run, given whether the rules find it an
orphan, on what evidence, and the mark it carries (gcjob/marks.py). Pure: `now` is passed in."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Generic, TypeVar

from gcjob.marks import Evidence, Rule, mark_since, rule_of, since_value
from gcjob.model import Mark, Verdict

T = TypeVar("T")


class Next(StrEnum):
    """What the grace rule says to do with one object this run."""

    DELETE = "delete"  # an orphan on the same evidence, marked at least `grace` ago
    MARK = "mark"  # an orphan with no mark, a broken one, or changed evidence: (re)start
    WAIT = "wait"  # an orphan on the same evidence, marked less than `grace` ago
    UNMARK = "unmark"  # not an orphan (any more), and carries this rule's mark
    NOTHING = "nothing"  # not an orphan, and no mark of this rule to remove


@dataclass(frozen=True, slots=True)
class GraceCall:
    next: Next
    detail: str
    since: datetime | None = None  # orphaned since: the mark's time (now, for a new mark)
    due: datetime | None = None  # when it may be deleted


def grace_rule(
    rule: Rule,
    evidence: Evidence | None,
    mark: Mark | None,
    now: datetime,
    grace: timedelta,
) -> GraceCall:
    """`evidence`: what an orphan's decision rested on this run; None when the rules did not
    find an orphan (for whatever reason, a failed read included: the mark then goes, and the
    grace period starts again the next time it is found).

    A mark is only trusted whole: the label, a readable time, and this very evidence."""
    if evidence is None:
        if mark is None:
            return GraceCall(Next.NOTHING, "")
        owner = rule_of(mark)
        if owner is not None and owner != rule:
            return GraceCall(Next.NOTHING, f"marked by the {owner} rule: left to it")
        return GraceCall(Next.UNMARK, "no longer an orphan: mark removed")
    if grace <= timedelta(0):
        return GraceCall(Next.DELETE, "no grace period", mark_since(mark), now)
    since = mark_since(mark)
    if mark is None:
        why = "found orphaned: marked"
    elif since is None:
        why = "mark incomplete or unreadable: marked again"
    elif mark.evidence != evidence.digest:
        why = "evidence changed since it was marked: grace restarts"
    else:
        why = ""
    if why:
        due = now + grace
        return GraceCall(
            Next.MARK, f"{why}; deleted from {since_value(due)} if still orphaned", now, due
        )
    assert since is not None
    due = since + grace
    if now >= due:
        return GraceCall(Next.DELETE, f"orphaned since {since_value(since)}", since, due)
    return GraceCall(
        Next.WAIT,
        f"orphaned since {since_value(since)}; deleted from {since_value(due)} if still orphaned",
        since,
        due,
    )


@dataclass(frozen=True, slots=True)
class Graced(Generic[T]):
    """One object's verdict, what the grace rule makes of it, and what acting on it needs."""

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

    def orphan(self, verdict: Verdict, evidence: Evidence, target: T) -> None:
        """A verdict to delete, resting on `evidence`."""
        call = grace_rule(self.rule, evidence, verdict.ref.mark, self.now, self.grace)
        graced = Graced(verdict, call, evidence, target)
        {Next.DELETE: self.due, Next.MARK: self.to_mark, Next.WAIT: self.waiting}[call.next].append(
            graced
        )

    def not_orphan(self, verdict: Verdict, target: T) -> bool:
        """A verdict to keep: True when it took it, a mark of this rule to remove."""
        ref = verdict.ref
        if ref.mark is None or ref.terminating or not ref.uid or not ref.resource_version:
            # Nothing to remove; a terminating object is on its way out anyway; a patch is
            # never sent unpinned.
            return False
        call = grace_rule(self.rule, None, verdict.ref.mark, self.now, self.grace)
        if call.next is not Next.UNMARK:
            return False
        self.to_unmark.append(Graced(verdict, call, None, target))
        return True
