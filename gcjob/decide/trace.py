"""The steps of one decision: each rule's outcome and the evidence it read.

The sweep and `gcjob explain` run the very same rule functions; the sweep keeps only the
Verdict the last step reached, explain prints every step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from gcjob.model import Verdict
from gcjob.reasons import Reason


class StepOutcome(StrEnum):
    PASSED = "passed"
    HELD = "held back"
    UNKNOWN = "unknown"  # the rule could not be checked: a read it needs failed


@dataclass(frozen=True, slots=True)
class Step:
    rule: str
    outcome: StepOutcome
    evidence: str


@dataclass
class Trace:
    """Collects steps as the rules run, in the order they run."""

    steps: list[Step] = field(default_factory=list)

    def passed(self, rule: str, evidence: str) -> None:
        self.steps.append(Step(rule, StepOutcome.PASSED, evidence))

    def hold(self, rule: str, reason: Reason, detail: str) -> tuple[Reason, str]:
        """Record a rule that holds the object back; (reason, detail) for its Verdict."""
        self.held_at(rule, detail)
        return reason, detail

    def held_at(self, rule: str, evidence: str) -> None:
        """Record a rule that holds the object back, where the caller states the outcome."""
        self.steps.append(Step(rule, StepOutcome.HELD, evidence))

    def held(self, rule: str, evidence: str, verdict: Verdict) -> Verdict:
        self.steps.append(Step(rule, StepOutcome.HELD, evidence))
        return verdict

    def unknown(self, rule: str, evidence: str, verdict: Verdict) -> Verdict:
        self.steps.append(Step(rule, StepOutcome.UNKNOWN, evidence))
        return verdict
