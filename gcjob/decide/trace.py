"""The steps of one decision: each rule's outcome and the evidence it read.

The sweep and `gcjob explain` run the very same rule functions; the sweep keeps only the
Verdict the last step reached, explain prints every step.
"""

from __future__ import annotations

from collections.abc import Callable
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


Evidence = str | Callable[[], str]
"""A step's evidence, or how to write it. The sweep judges every object and reads no step:
rules that run for every object pass a callable, so only explain pays for the sentence."""


@dataclass
class Trace:
    """Collects steps as the rules run, in the order they run. One that does not `record`
    (what a rule gets when its caller passes no trace: the sweep) keeps nothing."""

    steps: list[Step] = field(default_factory=list)
    record: bool = True

    def passed(self, rule: str, evidence: Evidence) -> None:
        self._add(rule, StepOutcome.PASSED, evidence)

    def hold(self, rule: str, reason: Reason, detail: str) -> tuple[Reason, str]:
        """Record a rule that holds the object back; (reason, detail) for its Verdict."""
        self.held_at(rule, detail)
        return reason, detail

    def held_at(self, rule: str, evidence: Evidence) -> None:
        """Record a rule that holds the object back, where the caller states the outcome."""
        self._add(rule, StepOutcome.HELD, evidence)

    def held(self, rule: str, evidence: Evidence, verdict: Verdict) -> Verdict:
        self._add(rule, StepOutcome.HELD, evidence)
        return verdict

    def unknown(self, rule: str, evidence: Evidence, verdict: Verdict) -> Verdict:
        self._add(rule, StepOutcome.UNKNOWN, evidence)
        return verdict

    def _add(self, rule: str, outcome: StepOutcome, evidence: Evidence) -> None:
        if self.record:
            text = evidence if isinstance(evidence, str) else evidence()
            self.steps.append(Step(rule, outcome, text))


# What every rule the sweep runs is given: it records nothing, so one serves every object.
_NOT_RECORDED = Trace(record=False)


def given(trace: Trace | None) -> Trace:
    """The trace a rule was given, or one that keeps nothing (the sweep passes none)."""
    return trace if trace is not None else _NOT_RECORDED
