"""What `gcjob explain` found about one object: the steps of its judgement, each with the
reads behind it, and what the run would do to it (and to a companion's binding). Pure
records; gcjob/report/explain_output.py prints them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from gcjob.decide.grace import GraceCall
from gcjob.decide.plan import Plan, graced_plan, plan
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


def concluded(subject: str, verdict: Verdict, planned: Plan) -> Conclusion:
    """What explain says the run does with `verdict`: the plan the sweep acts on
    (gcjob/decide/plan.py), as a dry run reports it; `unknown` when a read it needs failed."""
    if verdict.reason in ERROR_REASONS:
        return Conclusion(subject, "unknown", verdict.reason, verdict.detail)
    return Conclusion(subject, planned.action.value, planned.reason, planned.detail)


def conclusion(subject: str, verdict: Verdict) -> Conclusion:
    """The conclusion of a verdict the grace rule has nothing to say about."""
    return concluded(subject, verdict, plan(verdict, None))


def graced(subject: str, verdict: Verdict, call: GraceCall | None) -> Conclusion:
    """The conclusion once the grace rule had its say: the sweep's plan for it."""
    return concluded(subject, verdict, graced_plan(verdict, call))
