"""What `gcjob explain` found about one object: the steps of its judgement, each with the
reads behind it, and what the run would do to it (and to a companion's binding). Pure
records; gcjob/report/explain_output.py prints them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from gcjob.decide.grace import GraceCall, Next
from gcjob.decide.trace import Step
from gcjob.domain import JUDGED_KINDS
from gcjob.model import Sweep, Verdict
from gcjob.reasons import ERROR_REASONS, Reason

# explain's action for an object that does not exist (the others are the report's actions)
NOT_FOUND = "not-found"

# The sweep that judges each kind, by its kind (gcjob/domain.py JUDGED_KINDS).
SWEEP_OF = {k.kind: Sweep(k.sweep) for k in JUDGED_KINDS}


@dataclass(frozen=True)
class Target:
    kind: str
    namespace: str
    name: str

    @property
    def sweep(self) -> Sweep:
        return SWEEP_OF[self.kind]

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class TracedStep:
    subject: str  # the object the rule is about: the target, or its binding
    step: Step
    reads: tuple[str, ...]


@dataclass(frozen=True)
class Conclusion:
    subject: str
    action: str  # would-delete, skipped, not-found, unknown
    reason: Reason
    detail: str


@dataclass
class Explanation:
    target: Target
    source: str
    decided_at: datetime
    min_age: timedelta
    steps: list[TracedStep] = field(default_factory=list)
    verdict: Conclusion | None = None
    binding: Conclusion | None = None  # what happens to a companion's binding
    # The sweep whose judgement the verdict is, where it is not the kind's own: a ConfigMap or
    # Secret that is no companion but a copy or an anchor is the copies sweep's.
    judged_by: Sweep | None = None

    @property
    def sweep(self) -> Sweep:
        """The sweep that judges the target: the one whose rules the steps are."""
        return self.judged_by or self.target.sweep

    @property
    def known(self) -> bool:
        """False when a read failed: for the verdict, or for a companion's binding."""
        conclusions = [self.verdict, self.binding]
        return self.verdict is not None and all(
            c is None or c.action != "unknown" for c in conclusions
        )


def conclusion(subject: str, verdict: Verdict) -> Conclusion:
    if verdict.reason in ERROR_REASONS:
        action = "unknown"
    else:
        action = "would-delete" if verdict.delete else "skipped"
    return Conclusion(subject, action, verdict.reason, verdict.detail)


def graced(subject: str, verdict: Verdict, call: GraceCall | None) -> Conclusion:
    """The conclusion once the grace rule had its say, as the sweep would report it."""
    base = conclusion(subject, verdict)
    if call is None or base.action == "unknown":
        return base
    if call.next is Next.MARK:
        return Conclusion(subject, "would-mark", verdict.reason, f"{call.detail}: {verdict.detail}")
    if call.next is Next.WAIT:
        return Conclusion(
            subject, "skipped", Reason.GRACE_PERIOD, f"{call.detail}: {verdict.detail}"
        )
    if call.next is Next.UNMARK:
        return Conclusion(subject, "would-unmark", verdict.reason, verdict.detail)
    return base
