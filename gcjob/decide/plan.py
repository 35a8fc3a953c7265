"""What follows from one judgement: the plan. From a verdict and the grace rule's next step
on it, the write the run makes (delete, mark, unmark; a wait or a keep writes nothing), the
action a dry run reports for it, its reason and its detail. The sweeps' writers act on it and
`gcjob explain` says it, so nothing else decides what is done with a judged object. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from gcjob.decide.grace import GraceCall, Next
from gcjob.model import Action, Verdict
from gcjob.reasons import Reason


@dataclass(frozen=True, slots=True)
class Plan:
    next: Next  # the write: DELETE, MARK, UNMARK; WAIT and NOTHING write nothing
    action: Action  # what a dry run reports (a --delete run reports what the write did)
    reason: Reason
    detail: str


def plan(verdict: Verdict, next_step: Next | None, why: str = "") -> Plan:
    """The plan for `verdict` once the grace rule named its next step (None: it had nothing
    to say). `why`: what the grace rule found, said before the verdict's detail for a mark or
    a wait (gcjob/decide/grace.py GraceCall.detail)."""
    if next_step is None or next_step is Next.NOTHING:
        action = Action.WOULD_DELETE if verdict.delete else Action.SKIPPED
        return Plan(Next.NOTHING, action, verdict.reason, verdict.detail)
    if next_step is Next.DELETE:
        return Plan(Next.DELETE, Action.WOULD_DELETE, verdict.reason, verdict.detail)
    if next_step is Next.UNMARK:
        return Plan(Next.UNMARK, Action.WOULD_UNMARK, verdict.reason, removal(verdict.detail))
    detail = f"{why}: {verdict.detail}" if why else verdict.detail
    if next_step is Next.WAIT:
        return Plan(Next.WAIT, Action.SKIPPED, Reason.GRACE_PERIOD, detail)
    return Plan(Next.MARK, Action.WOULD_MARK, verdict.reason, detail)


def graced_plan(verdict: Verdict, call: GraceCall | None) -> Plan:
    """The plan for an object the grace rule called (grace.py grace_call)."""
    return plan(verdict, None if call is None else call.next, "" if call is None else call.detail)


def removal(detail: str, *, dry_run: bool = True) -> str:
    """What the removal of a mark says: the object's own detail after it."""
    removed = "mark would be removed" if dry_run else "mark removed"
    return f"{removed}: {detail}" if detail else removed


NOT_ENFORCED = "not deleted: this sweep is not enforced"


def not_enforced(detail: str, sweep: str) -> str:
    """What a due orphan of a sweep that is not enforced (report-only) says, in a dry run and
    a --delete run alike, and in `gcjob explain`: it would go, and this sweep deletes nothing."""
    return f"{detail}; {NOT_ENFORCED} (--enforce {sweep})"
