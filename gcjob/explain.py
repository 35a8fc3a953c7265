"""`gcjob explain`: the decision trace of one object, read-only, live or from a snapshot.

A driver: it parses the target, records every read (gcjob/enumerate/recording.py), and asks
the sweeps (gcjob/sweeps/__init__.py explain, in their order) for the object's judgement
with a Trace: each sweep's explain part reads by name what its batch run reads by list, and
runs the sweep's own judgement and the rules its act step applies. gcjob/report/explain_output.py
prints the result. It never takes the lock, deletes or writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

from gcjob import sweeps
from gcjob.decide.explanation import Conclusion, Explanation, Target, conclusion
from gcjob.decide.plan import not_enforced
from gcjob.decide.projects import never_a_project
from gcjob.decide.trace import Trace
from gcjob.domain import TARGET_KINDS, is_dns1123_label, is_dns1123_subdomain, target_kinds_said
from gcjob.enumerate.recording import ReadLog, RecordingReader, RecordingUpstreams
from gcjob.enumerate.scope import Scope
from gcjob.enumerate.upstream import UpstreamSource
from gcjob.kube.errors import KubeError
from gcjob.kube.reader import Reader
from gcjob.model import Action
from gcjob.reasons import Reason
from gcjob.settings import Settings
from gcjob.sweeps.driver import stalled_verdict
from gcjob.sweeps.explaining import ExplainContext
from gcjob.times import HubClock

__all__ = ["Explainer", "Explanation", "Target", "parse_target"]


def parse_target(text: str) -> Target:
    """KIND/NAMESPACE/NAME, KIND any name of gcjob/domain.py TARGET_KINDS in any case (explain's
    and restore's targets); raises ValueError saying what is wrong, in one line."""
    parts = text.split("/")
    if len(parts) == 2 and TARGET_KINDS.get(parts[0].lower()) == "Namespace" and parts[1]:
        # A namespace is named `ns/NAME`: its own namespace is itself.
        parts = [parts[0], parts[1], parts[1]]
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"target {text!r} is not KIND/NAMESPACE/NAME (e.g. cm/ns-a/app-config)")
    kind, namespace, name = parts
    if kind.lower() not in TARGET_KINDS:
        raise ValueError(
            f"target kind {kind!r} is not one of {target_kinds_said()} (or a plural of one)"
        )
    if not is_dns1123_label(namespace):
        raise ValueError(f"target namespace {namespace!r} is not a namespace name (DNS-1123 label)")
    if not is_dns1123_subdomain(name):
        raise ValueError(f"target name {name!r} is not an object name (DNS-1123 subdomain)")
    return Target(TARGET_KINDS[kind.lower()], namespace, name)


class Explainer:
    def __init__(
        self,
        hub: Reader,
        upstreams: UpstreamSource | None,
        clock: HubClock,
        min_age: timedelta,
        scope: Scope | None = None,
        suspect_min_routes: int = 0,
        grace: timedelta = timedelta(0),
        *,
        settings: Settings | None = None,
        projects: Reader | None = None,
        is_project: Callable[[str], bool] | None = None,
    ) -> None:
        """`settings`, `projects`, `is_project`: what the copies sweep reads by (its flags,
        Milo's Project API, which clusters are projects)."""
        log = ReadLog()
        copies = settings if settings is not None else Settings()
        self.enforce = copies.enforce
        self.deletion_stalled_after = copies.deletion_stalled_after
        self.ctx = ExplainContext(
            log,
            RecordingReader(hub, log),
            None if upstreams is None else RecordingUpstreams(upstreams, log),
            clock,
            min_age,
            grace,
            scope if scope is not None else Scope(),
            suspect_min_routes,
            projects=None if projects is None else RecordingReader(projects, log, "projects: "),
            is_project=is_project or never_a_project,
            drop_copy_kinds=copies.drop_copy_kinds,
            read_upstream_secrets=copies.read_upstream_secrets,
            max_projects_gone=copies.max_projects_gone,
            clock_skew=copies.clock_skew,
        )

    @property
    def clock(self) -> HubClock:
        return self.ctx.clock

    @clock.setter
    def clock(self, clock: HubClock) -> None:
        """The hub's clock, once its check has read it."""
        self.ctx.clock = clock

    def explain(
        self, target: Target, check_hub: Callable[[Reader], str] | None = None
    ) -> Explanation:
        """check_hub: the sweep's own check that the hub is a Karmada hub (it raises
        ConfigError/NotAHub for a wrong hub, KubeError when it cannot ask); says what it saw."""
        ctx = self.ctx
        out = Explanation(target, ctx.hub.server, ctx.now, ctx.min_age)
        subject = str(target)
        trace = Trace()
        try:
            if check_hub is not None:
                ctx.reads_for("karmada-hub")
                trace.passed("karmada-hub", check_hub(ctx.hub))
                out.decided_at = ctx.clock.at  # the hub's, as a run's decided_at
                ctx.file(out, subject, trace)
            verdict = sweeps.explain(ctx, target, out, trace)
        except KubeError as exc:
            # A read the verdict needs failed: what ran so far, then unknown and why.
            ctx.file(out, subject, trace)
            out.steps.append(ctx.failed_read(subject, exc))
            out.verdict = Conclusion(subject, "unknown", Reason.LOOKUP_FAILED, str(exc))
            return out
        if out.verdict is None and verdict is not None:
            ctx.file(out, subject, trace)
            out.verdict = conclusion(subject, verdict)
        kept = (
            None
            if verdict is None
            else stalled_verdict(verdict, ctx.now, self.deletion_stalled_after)
        )
        if kept is not None:
            # As the driver keeps it, whatever its sweep's judgement said (`stalled`).
            trace.held_at("deletion-not-stalled", kept.detail)
            ctx.file(out, subject, trace)
            out.verdict = conclusion(subject, kept)
        said = out.verdict
        if (
            said is not None
            and said.action == Action.WOULD_DELETE
            and out.sweep not in self.enforce
        ):
            # As the sweep's run says it: a sweep not enforced deletes nothing.
            out.verdict = replace(said, detail=not_enforced(said.detail, out.sweep.value))
        return out
