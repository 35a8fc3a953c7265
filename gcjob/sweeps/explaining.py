"""What every sweep's explain part (gcjob/sweeps/<sweep>/explain.py) shares: the hub and
upstreams read by name and recorded, the run's clock and settings, and filing a judgement's
steps with the reads made for each."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from gcjob.decide.explanation import NOT_FOUND, Conclusion, Explanation, Target, TracedStep
from gcjob.decide.grace import GraceCall, grace_call
from gcjob.decide.projects import never_a_project
from gcjob.decide.trace import Step, StepOutcome, Trace
from gcjob.domain import is_reserved_namespace
from gcjob.enumerate.owners import ProjectReads
from gcjob.enumerate.recording import ReadLog, RecordingReader, RecordingUpstreams
from gcjob.enumerate.scope import Scope
from gcjob.kube.errors import KubeError
from gcjob.kube.reader import Reader
from gcjob.kube.resources import JUDGED_RESOURCES
from gcjob.marks import Evidence, Rule
from gcjob.model import ObjectRef, Verdict
from gcjob.reasons import Reason
from gcjob.settings import CLOCK_SKEW
from gcjob.times import HubClock

T = TypeVar("T")

KIND_RESOURCES = JUDGED_RESOURCES
# The step that says which answers a judgement of an object upstream rests on (the Project
# API's, its control plane's, or both: decide/projects.py `answers_used`), and under which
# the reads made for the run's one judgement of projects are filed.
ANSWERS_USED = "answers-used"


@dataclass
class ExplainContext:
    """One explanation's reads and settings, as the sweep's run would have them."""

    log: ReadLog
    hub: RecordingReader
    upstreams: RecordingUpstreams | None
    clock: HubClock  # the hub's: `now` reads it afresh, after the reads made so far
    min_age: timedelta
    grace: timedelta
    scope: Scope
    suspect_min_routes: int
    # The copies sweep's settings and its Project API (gcjob/sweeps/copies/explain.py).
    projects: Reader | None = None
    is_project: Callable[[str], bool] = never_a_project
    drop_copy_kinds: tuple[str, ...] = ()
    read_upstream_secrets: bool = False
    max_projects_gone: int = 3
    clock_skew: timedelta = CLOCK_SKEW
    _project_reads: ProjectReads | None = field(default=None, repr=False)

    @property
    def now(self) -> datetime:
        """The hub's time now, as a run's judgement reads it (run.Run.now)."""
        return self.clock.now()

    def project_reads(self) -> ProjectReads:
        """Milo's Project API, listed once for this explanation, as once for a run."""
        if self._project_reads is None:
            self._project_reads = ProjectReads(self.projects, self.is_project)
        return self._project_reads

    def reads_for(self, rule: str) -> None:
        """File the reads that follow under `rule`."""
        self.log.rule = rule

    def grace_call(
        self, verdict: Verdict, rule: Rule, evidence: Evidence | None, trace: Trace
    ) -> GraceCall | None:
        """The sweep's grace rule over this verdict, on this run's clock and --grace."""
        if verdict.reason == Reason.OUT_OF_SCOPE:
            return None  # not the sweep's to judge: its mark is not either
        return grace_call(rule, verdict, evidence, self.now, self.grace, trace)

    def file(self, out: Explanation, subject: str, trace: Trace) -> None:
        """Move a trace's steps into the explanation, each with the reads made for it."""
        if "object" in self.log.reads and not any(s.rule == "object" for s in trace.steps):
            out.steps.append(
                TracedStep(
                    subject,
                    Step("object", StepOutcome.PASSED, "it exists"),
                    tuple(self.log.reads.pop("object")),
                )
            )
        for step in trace.steps:
            out.steps.append(TracedStep(subject, step, tuple(self.log.reads.pop(step.rule, []))))
        trace.steps.clear()

    def failed_read(self, subject: str, exc: KubeError) -> TracedStep:
        """The rule whose read failed: unknown, with that read and its error."""
        rule = self.log.rule
        step = Step(rule, StepOutcome.UNKNOWN, f"read failed: {exc}")
        return TracedStep(subject, step, tuple(self.log.reads.pop(rule, [])))

    def read_target(
        self, target: Target, out: Explanation, trace: Trace, read: Callable[[], T | None]
    ) -> T | Verdict | None:
        """The target, read by name (`read`): None when there is none (said in `out`); a
        Verdict when the run's namespaces leave it out; else what was read."""
        self.reads_for("object")
        found = read()
        if found is None:
            self.not_found(target, out, trace)
            return None
        if not self.scope.allows(target.namespace):
            return self.outside_namespaces(target, trace)
        return found

    def not_found(self, target: Target, out: Explanation, trace: Trace) -> None:
        detail = f"no {target.kind} {target.name} in {target.namespace}"
        trace.hold("object", Reason.NOT_FOUND, f"{detail}: nothing to decide")
        self.file(out, str(target), trace)
        out.verdict = Conclusion(str(target), NOT_FOUND, Reason.NOT_FOUND, detail)

    def outside_namespaces(self, target: Target, trace: Trace) -> Verdict:
        namespace = target.namespace
        if is_reserved_namespace(namespace):
            detail = f"namespace {namespace} is reserved and never swept"
        else:
            detail = f"namespace {namespace} is outside --namespace/--exclude-namespace"
        return out_of_scope(target, detail, "in-scope", trace)


def out_of_scope(target: Target, detail: str, rule: str, trace: Trace) -> Verdict:
    trace.hold(rule, Reason.OUT_OF_SCOPE, detail)
    return Verdict(unread(target), False, Reason.OUT_OF_SCOPE, detail)


def unread(target: Target) -> ObjectRef:
    """The target as named, before (or without) reading it."""
    resource = KIND_RESOURCES[target.kind]
    return ObjectRef(resource.api_version, target.kind, target.namespace, target.name, "", "", None)
