"""`gcjob explain`: the decision trace of one object, read-only, live or from a snapshot.

It reads what the sweep would read for that one object (by name, with GETs), then runs the
sweep's own rule functions with a Trace: every step the sweep checks, in its order, each with
its outcome and the reads behind it, then the verdict the sweep would reach. Nothing here
decides anything on its own; it never takes the lock, deletes or writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from gcjob.decide.grace import GraceCall, Next, grace_rule, left_scope
from gcjob.decide.trace import Step, StepOutcome, Trace
from gcjob.domain import (
    COMPANION_LABEL,
    ORPHANED_LABEL,
    binding_name,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_reserved_namespace,
)
from gcjob.enumerate.scope import Scope
from gcjob.enumerate.upstream import UpstreamIndex, UpstreamSource, Wanted
from gcjob.kube import reduce
from gcjob.kube.access import Reduce, Sink
from gcjob.kube.errors import KubeError
from gcjob.kube.reader import Reader
from gcjob.kube.resources import (
    COMPANION_RESOURCES,
    HTTPROUTES,
    RESOURCEBINDINGS,
    WORKLOADDEPLOYMENTS,
    Resource,
)
from gcjob.marks import (
    Evidence,
    Rule,
    binding_evidence,
    companion_binding_evidence,
    companion_evidence,
    new_mark,
    route_evidence,
    rule_of,
)
from gcjob.model import (
    Binding,
    ClusterStatus,
    Companion,
    Mark,
    ObjectRef,
    Route,
    RouteTarget,
    Sweep,
    Verdict,
)
from gcjob.reasons import ERROR_REASONS, Reason
from gcjob.sweeps.bindings.judge import LEFT_BINDING, Presence, bound_target, decide_binding
from gcjob.sweeps.companions.act import (
    DELETABLE_SECRET_TYPES,
    companion_left_scope,
    prove_secret_type,
)
from gcjob.sweeps.companions.judge import (
    decide_companion,
    follow_binding,
)
from gcjob.sweeps.routes.judge import (
    LEFT_ROUTE,
    decide_route,
    in_scope,
    namespace_gone,
    route_target,
)
from gcjob.sweeps.routes.scan import read_routes

T = TypeVar("T")
S = TypeVar("S", bound=Sink)
R = TypeVar("R")

KINDS: dict[str, str] = {
    "configmap": "ConfigMap",
    "configmaps": "ConfigMap",
    "cm": "ConfigMap",
    "secret": "Secret",
    "secrets": "Secret",
    "resourcebinding": "ResourceBinding",
    "resourcebindings": "ResourceBinding",
    "rb": "ResourceBinding",
    "httproute": "HTTPRoute",
    "httproutes": "HTTPRoute",
}
KIND_RESOURCES = {
    **COMPANION_RESOURCES,
    "ResourceBinding": RESOURCEBINDINGS,
    "HTTPRoute": HTTPROUTES,
}
SWEEP_OF = {
    "ConfigMap": Sweep.COMPANIONS,
    "Secret": Sweep.COMPANIONS,
    "ResourceBinding": Sweep.BINDINGS,
    "HTTPRoute": Sweep.ROUTES,
}


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


def parse_target(text: str) -> Target:
    """KIND/NAMESPACE/NAME; raises ValueError saying what is wrong, in one line."""
    parts = text.split("/")
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"target {text!r} is not KIND/NAMESPACE/NAME (e.g. cm/ns-a/app-config)")
    kind, namespace, name = parts
    if kind.lower() not in KINDS:
        raise ValueError(
            f"target kind {kind!r} is not one of configmap (cm), secret, resourcebinding (rb), "
            "httproute"
        )
    if not is_dns1123_label(namespace):
        raise ValueError(f"target namespace {namespace!r} is not a namespace name (DNS-1123 label)")
    if not is_dns1123_subdomain(name):
        raise ValueError(f"target name {name!r} is not an object name (DNS-1123 subdomain)")
    return Target(KINDS[kind.lower()], namespace, name)


# -- the reads, recorded as evidence ----------------------------------------------------


@dataclass
class ReadLog:
    """Every read explain makes, filed under the rule it is evidence for."""

    rule: str = "object"
    reads: dict[str, list[str]] = field(default_factory=dict)

    def add(self, line: str) -> None:
        self.reads.setdefault(self.rule, []).append(line)


class RecordingReader:
    """A Reader that files each read and its answer in a ReadLog."""

    def __init__(self, inner: Reader, log: ReadLog, prefix: str = "") -> None:
        self.inner = inner
        self.log = log
        self.prefix = prefix

    @property
    def server(self) -> str:
        return self.inner.server

    def _read(self, what: str, read: Callable[[], R], answer: Callable[[R], str]) -> R:
        """Make one read and file it with its answer (or its error)."""
        try:
            result = read()
        except KubeError as exc:
            self.log.add(f"{self.prefix}{what} -> {exc}")
            raise
        self.log.add(f"{self.prefix}{what} -> {answer(result)}")
        return result

    def close_idle(self) -> None:
        self.inner.close_idle()

    def served(self, resource: Resource) -> bool:
        return self._read(
            f"discovery {resource.api_version} {resource.plural}",
            lambda: self.inner.served(resource),
            lambda served: "served" if served else "not served",
        )

    def list(
        self,
        resource: Resource,
        reduce: Reduce[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        metadata_only: bool = True,
        field_selector: str | None = None,
    ) -> list[T]:
        return self._read(
            f"LIST {resource.plural} in {namespace or 'all namespaces'}"
            + (f" where {field_selector}" if field_selector else ""),
            lambda: self.inner.list(
                resource,
                reduce,
                namespace=namespace,
                label_selector=label_selector,
                metadata_only=metadata_only,
                field_selector=field_selector,
            ),
            lambda items: f"{len(items)} items",
        )

    def fold(
        self,
        resource: Resource,
        reduce: Reduce[Any],
        start: Callable[[], S],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        metadata_only: bool = True,
        field_selector: str | None = None,
    ) -> S:
        return self._read(
            f"LIST {resource.plural} in {namespace or 'all namespaces'}"
            + (f" where {field_selector}" if field_selector else ""),
            lambda: self.inner.fold(
                resource,
                reduce,
                start,
                namespace=namespace,
                label_selector=label_selector,
                metadata_only=metadata_only,
                field_selector=field_selector,
            ),
            lambda _: "read",
        )

    def get(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        reduce: Reduce[T],
        *,
        metadata_only: bool = True,
    ) -> T | None:
        where = f" in {namespace}" if namespace else ""
        return self._read(
            f"GET {resource.plural}/{name}{where}",
            lambda: self.inner.get(resource, namespace, name, reduce, metadata_only=metadata_only),
            lambda found: "404 NotFound" if found is None else "found",
        )


class RecordingUpstreams:
    def __init__(self, inner: UpstreamSource, log: ReadLog) -> None:
        self.inner = inner
        self.log = log

    def reader_for(self, cluster: str) -> Reader:
        return RecordingReader(self.inner.reader_for(cluster), self.log, f"upstream {cluster}: ")


# -- the explanation ----------------------------------------------------------------------


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


def describe_mark(mark: Mark | None) -> str:
    if mark is None:
        return "no mark"
    return (
        f"{ORPHANED_LABEL}={mark.label}, orphaned-since {mark.since}, "
        f"orphaned-evidence {mark.evidence}"
    )


class Explainer:
    def __init__(
        self,
        hub: Reader,
        upstreams: UpstreamSource | None,
        now: datetime,
        min_age: timedelta,
        scope: Scope | None = None,
        suspect_min_routes: int = 0,
        grace: timedelta = timedelta(0),
    ) -> None:
        self.log = ReadLog()
        self.hub = RecordingReader(hub, self.log)
        self.upstreams = None if upstreams is None else RecordingUpstreams(upstreams, self.log)
        self.now = now
        self.min_age = min_age
        self.scope = scope if scope is not None else Scope()
        self.suspect_min_routes = suspect_min_routes
        self.grace = grace

    def explain(
        self, target: Target, check_hub: Callable[[Reader], str] | None = None
    ) -> Explanation:
        """check_hub: the sweep's own check that the hub is a Karmada hub (it raises
        ConfigError/NotAHub for a wrong hub, KubeError when it cannot ask); says what it saw."""
        out = Explanation(target, self.hub.server, self.now, self.min_age)
        subject = str(target)
        trace = Trace()
        try:
            if check_hub is not None:
                self.log.rule = "karmada-hub"
                trace.passed("karmada-hub", check_hub(self.hub))
                self._file(out, subject, trace)
            verdict = self._decide(target, out, trace)
        except KubeError as exc:
            # A read the verdict needs failed: what ran so far, then unknown and why.
            self._file(out, subject, trace)
            out.steps.append(self._failed_read(subject, exc))
            out.verdict = Conclusion(subject, "unknown", Reason.LOOKUP_FAILED, str(exc))
            return out
        if out.verdict is None and verdict is not None:
            self._file(out, subject, trace)
            out.verdict = conclusion(subject, verdict)
        return out

    def _grace(
        self, verdict: Verdict, rule: Rule, evidence: Evidence | None, trace: Trace
    ) -> GraceCall | None:
        """The sweep's grace rule over this verdict and the mark the object carries (a step
        of its own); None when it has nothing to say: a kept object with no mark this rule
        would remove, or a terminating one."""
        mark = verdict.ref.mark
        if verdict.reason == Reason.OUT_OF_SCOPE:
            return None  # not the sweep's to judge: its mark is not either
        if verdict.delete:
            assert evidence is not None  # an orphan's decision rests on evidence
            call = grace_rule(rule, evidence, verdict.ref, self.now, self.grace)
        else:
            if mark is None or verdict.ref.terminating:
                return None
            call = grace_rule(rule, None, verdict.ref, self.now, self.grace)
            if call.next is not Next.UNMARK:
                return None
        seen = describe_mark(mark) + (
            f"; now {evidence.on(verdict.ref.uid).digest}" if evidence else ""
        )
        text = f"{seen}; --grace {int(self.grace.total_seconds())}s: {call.detail}"
        if call.next is Next.DELETE:
            trace.passed("grace", text)
        else:
            trace.held_at("grace", text)
        return call

    def _failed_read(self, subject: str, exc: KubeError) -> TracedStep:
        """The rule whose read failed: unknown, with that read and its error."""
        rule = self.log.rule
        step = Step(rule, StepOutcome.UNKNOWN, f"read failed: {exc}")
        return TracedStep(subject, step, tuple(self.log.reads.pop(rule, [])))

    def _file(self, out: Explanation, subject: str, trace: Trace) -> None:
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

    def _decide(self, target: Target, out: Explanation, trace: Trace) -> Verdict | None:
        if target.kind in COMPANION_RESOURCES:
            return self._companion(target, out, trace)
        if target.kind == RESOURCEBINDINGS.kind:
            return self._binding(target, out, trace)
        return self._route(target, out, trace)

    def _not_found(self, target: Target, out: Explanation, trace: Trace) -> None:
        detail = f"no {target.kind} {target.name} in {target.namespace}"
        trace.hold("object", Reason.NOT_FOUND, f"{detail}: nothing to decide")
        self._file(out, str(target), trace)
        out.verdict = Conclusion(str(target), "not-found", Reason.NOT_FOUND, detail)

    def _outside_namespaces(self, target: Target, trace: Trace) -> Verdict:
        namespace = target.namespace
        if is_reserved_namespace(namespace):
            detail = f"namespace {namespace} is reserved and never swept"
        else:
            detail = f"namespace {namespace} is outside --namespace/--exclude-namespace"
        return self._out_of_scope(target, detail, "in-scope", trace)

    def _out_of_scope(self, target: Target, detail: str, rule: str, trace: Trace) -> Verdict:
        trace.hold(rule, Reason.OUT_OF_SCOPE, detail)
        ref = _unread(target)
        return Verdict(ref, False, Reason.OUT_OF_SCOPE, detail)

    # -- companions ----------------------------------------------------------------------

    def _read_companion(self, target: Target) -> tuple[str | None, Companion] | None:
        resource = COMPANION_RESOURCES[target.kind]
        as_companion = reduce.companion(resource)

        def labelled(obj: dict[str, Any]) -> tuple[str | None, Companion]:
            labels = (obj.get("metadata") or {}).get("labels") or {}
            label = labels.get(COMPANION_LABEL) if isinstance(labels, dict) else None
            return (label if isinstance(label, str) else None), as_companion(obj)

        return self.hub.get(resource, target.namespace, target.name, labelled)

    def _companion(self, target: Target, out: Explanation, trace: Trace) -> Verdict | None:
        self.log.rule = "object"
        read = self._read_companion(target)
        if read is None:
            self._not_found(target, out, trace)
            return None
        label, companion = read
        if not self.scope.allows(target.namespace):
            return self._outside_namespaces(target, trace)
        call: GraceCall | None = None
        leaving = companion_left_scope(companion) if label != "true" else None
        if leaving is not None:  # the sweep removes the mark it left behind
            verdict, call = leaving.verdict, leaving.call
            seen = describe_mark(companion.ref.mark)
            trace.held_at("in-scope", f"{seen}: {verdict.detail}")
        elif label != "true":
            verdict = self._out_of_scope(
                target, f"not labelled {COMPANION_LABEL}=true: not a companion", "in-scope", trace
            )
        else:
            trace.passed("in-scope", f"labelled {COMPANION_LABEL}=true in {target.namespace}")
            verdict = self._decide_companion(companion, trace)
            if verdict.delete and companion.ref.kind == "Secret":
                verdict = self._prove_secret_type(verdict, trace)
            call = self._companion_grace(companion, verdict, trace)
        self._file(out, str(target), trace)
        out.verdict = graced(str(target), verdict, call)
        self._companions_binding(companion, verdict, call, out)
        return verdict

    def _prove_secret_type(self, verdict: Verdict, trace: Trace) -> Verdict:
        """The sweep's proof, before it marks or deletes a Secret, that its type is one gcjob
        may delete (a metadata-only list the server filters on `type`)."""
        self.log.rule = rule = "secret-type-proven"
        unproven = prove_secret_type(verdict, self.hub)
        if unproven is None:
            trace.passed(rule, f"listed with {DELETABLE_SECRET_TYPES}")
            return verdict
        trace.hold(rule, unproven.reason, unproven.detail)
        return Verdict(
            verdict.ref, False, unproven.reason, unproven.detail, referrers=verdict.referrers
        )

    def _companion_grace(
        self, companion: Companion, verdict: Verdict, trace: Trace
    ) -> GraceCall | None:
        raw = companion.referrers_raw
        evidence = companion_evidence(raw) if verdict.delete and raw is not None else None
        return self._grace(verdict, Rule.COMPANION, evidence, trace)

    def _decide_companion(
        self, companion: Companion, trace: Trace, reads_for: str = "referrers-gone"
    ) -> Verdict:
        """The sweep's companion rules, each referrer read by name when the rule asks."""
        self.log.rule = reads_for
        live = WorkloadsByName(self.hub, companion.ref.namespace)
        return decide_companion(companion, live, self.now, self.min_age, trace)

    def _companions_binding(
        self, companion: Companion, verdict: Verdict, call: GraceCall | None, out: Explanation
    ) -> None:
        """What the same run does to the companion's binding: the companions sweep's word
        when it acts on it (deletes, marks or unmarks it with its companion), else the
        bindings sweep's, with its object present."""
        ref = companion.ref
        name = binding_name(ref.name, ref.kind)
        subject = f"ResourceBinding {ref.namespace}/{name}"
        trace = Trace()
        rule = self.log.rule = "binding-names-companion" if verdict.delete else "in-scope"
        try:
            binding = self.hub.get(
                RESOURCEBINDINGS, ref.namespace, name, reduce.binding, metadata_only=False
            )
        except KubeError as exc:
            self._binding_unread(subject, exc, out)
            return
        if binding is None:
            self._no_binding(name, subject, rule, out, trace)
            return
        followed = self._follow(binding, ref, verdict, call, subject, trace)
        leaving = left_scope(binding.ref, Rule.BINDING, LEFT_BINDING)
        if followed is None and bound_target(binding) is None and leaving is not None:
            trace.held_at("in-scope", f"{describe_mark(binding.ref.mark)}: {LEFT_BINDING}")
            followed = graced(subject, leaving.verdict, leaving.call)
        if followed is None:
            kept = decide_binding(binding, Presence.EXISTS, self.now, self.min_age, "", trace)
            followed = graced(subject, kept, self._grace(kept, Rule.BINDING, None, trace))
        self._file(out, subject, trace)
        out.binding = followed

    def _follow(
        self,
        binding: Binding,
        companion: ObjectRef,
        verdict: Verdict,
        call: GraceCall | None,
        subject: str,
        trace: Trace,
    ) -> Conclusion | None:
        """The companions sweep on the binding of a companion it decided (`verdict`, `call`):
        None when it leaves the binding to the bindings sweep."""
        if verdict.delete:
            followed = follow_binding(binding, companion, trace)
            if call is None or call.next is Next.DELETE or not followed.delete:
                return conclusion(subject, followed)
            evidence = companion_binding_evidence(companion).on(binding.ref.uid)
            if call.next is Next.WAIT and binding.ref.mark == new_mark(
                evidence, Reason.COMPANION_ORPHANED, call.since or self.now
            ):
                detail = "deleted with its companion"
                trace.hold(
                    "grace", Reason.GRACE_PERIOD, f"{describe_mark(binding.ref.mark)}: {detail}"
                )
                return Conclusion(subject, "skipped", Reason.GRACE_PERIOD, detail)
            detail = f"binds {companion.kind} {companion.name}, marked with it"
            trace.hold(
                "grace", Reason.COMPANION_ORPHANED, f"{describe_mark(binding.ref.mark)}: {detail}"
            )
            return Conclusion(subject, "would-mark", Reason.COMPANION_ORPHANED, detail)
        mark = binding.ref.mark
        unmarked = call is not None and call.next is Next.UNMARK
        if unmarked and mark is not None and rule_of(mark) == Rule.COMPANION_BINDING:
            detail = f"{companion.kind} {companion.name} is no orphan: {verdict.detail}"
            trace.held_at("grace", f"{describe_mark(mark)}: {detail}")
            return Conclusion(subject, "would-unmark", verdict.reason, detail)
        return None

    def _binding_unread(self, subject: str, exc: KubeError, out: Explanation) -> None:
        out.steps.append(self._failed_read(subject, exc))
        out.binding = Conclusion(subject, "unknown", Reason.LOOKUP_FAILED, str(exc))

    def _no_binding(
        self, name: str, subject: str, rule: str, out: Explanation, trace: Trace
    ) -> None:
        ref = out.target
        detail = f"no ResourceBinding {name} in {ref.namespace}: nothing to delete"
        trace.hold(rule, Reason.NOT_FOUND, detail)
        self._file(out, subject, trace)
        out.binding = Conclusion(subject, "not-found", Reason.NOT_FOUND, detail)

    # -- bindings ------------------------------------------------------------------------

    def _binding(self, target: Target, out: Explanation, trace: Trace) -> Verdict | None:
        self.log.rule = "object"
        binding = self.hub.get(
            RESOURCEBINDINGS, target.namespace, target.name, reduce.binding, metadata_only=False
        )
        if binding is None:
            self._not_found(target, out, trace)
            return None
        if not self.scope.allows(target.namespace):
            return self._outside_namespaces(target, trace)
        bound = bound_target(binding)
        presence, error = Presence.ABSENT, ""
        if bound is not None:
            kind, name = bound
            self.log.rule = "object-absent"
            try:
                found = self.hub.get(
                    COMPANION_RESOURCES[kind], target.namespace, name, reduce.name_of
                )
            except KubeError as exc:
                presence, error = Presence.UNKNOWN, str(exc)
            else:
                presence = Presence.EXISTS if found is not None else Presence.ABSENT
        verdict = decide_binding(binding, presence, self.now, self.min_age, error, trace)
        companion = companion_bound_by(binding.ref.name)
        if companion is not None and (bound is None or presence is Presence.EXISTS):
            # The companions sweep runs first, whatever the policy: what it does to the
            # companion it does to the binding named after it.
            followed = self._binding_of_companion(binding, companion, verdict, trace)
            if followed is not None:
                self._file(out, str(target), trace)
                out.verdict = followed
                return verdict
        if bound is None:
            leaving = left_scope(binding.ref, Rule.BINDING, LEFT_BINDING)
            if leaving is not None:  # out of the sweep: its mark goes
                trace.held_at("in-scope", f"{describe_mark(binding.ref.mark)}: {LEFT_BINDING}")
                self._file(out, str(target), trace)
                out.verdict = graced(str(target), leaving.verdict, leaving.call)
                return leaving.verdict
        if bound is not None:
            kind, name = bound
            evidence = binding_evidence(kind, name) if verdict.delete else None
            call = self._grace(verdict, Rule.BINDING, evidence, trace)
            self._file(out, str(target), trace)
            out.verdict = graced(str(target), verdict, call)
        return verdict

    def _binding_of_companion(
        self, binding: Binding, bound: tuple[str, str], verdict: Verdict, trace: Trace
    ) -> Conclusion | None:
        """The companions sweep runs first: None when it leaves this binding alone."""
        kind, name = bound
        rule = "companion-sweep-first"
        self.log.rule = rule
        read = self._read_companion(Target(kind, binding.ref.namespace, name))
        subject = str(Target(RESOURCEBINDINGS.kind, binding.ref.namespace, binding.ref.name))
        if read is not None and read[0] != "true":
            leaving = companion_left_scope(read[1])
            if leaving is not None:  # the companions sweep removes its mark, and its binding's
                trace.passed(rule, f"{kind} {name} left the companions sweep: its mark goes")
                return self._follow(
                    binding, read[1].ref, leaving.verdict, leaving.call, subject, trace
                )
        if read is None or read[0] != "true":
            trace.passed(rule, f"{kind} {name} is not a companion: the bindings sweep decides")
            return None
        companion = read[1]
        silent = Trace()  # the companion's own steps are its explanation's, not this one's
        companion_verdict = self._decide_companion(companion, silent, reads_for=rule)
        call = self._companion_grace(companion, companion_verdict, silent)
        if companion_verdict.delete and (call is None or call.next is Next.DELETE):
            acted = "deleted"
        else:
            acted = "kept" if call is None else f"grace rule: {call.next.value}"
        trace.passed(
            rule,
            f"companion {kind} {name}: {companion_verdict.reason}, {acted} "
            f"({companion_verdict.detail})",
        )
        return self._follow(binding, companion.ref, companion_verdict, call, subject, trace)

    # -- routes --------------------------------------------------------------------------

    def _route(self, target: Target, out: Explanation, trace: Trace) -> Verdict | None:
        self.log.rule = "object"
        route = self.hub.get(
            HTTPROUTES, target.namespace, target.name, reduce.route, metadata_only=False
        )
        if route is None:
            self._not_found(target, out, trace)
            return None
        if not self.scope.allows(target.namespace):
            return self._outside_namespaces(target, trace)
        if not in_scope(route, trace):
            leaving = left_scope(route.ref, Rule.ROUTE, LEFT_ROUTE)
            if leaving is None:
                return Verdict(route.ref, False, Reason.OUT_OF_SCOPE, "not a route NSO copied")
            trace.held_at("in-scope", f"{describe_mark(route.ref.mark)}: {LEFT_ROUTE}")
            self._file(out, str(target), trace)
            out.verdict = graced(str(target), leaving.verdict, leaving.call)
            return leaving.verdict
        shaped = route_target(route, trace)
        if isinstance(shaped, Verdict):
            call = self._grace(shaped, Rule.ROUTE, None, trace)
            self._file(out, str(target), trace)
            out.verdict = graced(str(target), shaped, call)
            return shaped
        assert self.upstreams is not None, "explaining a route needs an upstream"
        index = UpstreamIndex(self.upstreams)
        self.log.rule = "cluster-available"
        index.cluster(shaped.cluster)
        self.log.rule = "gateways-gone"
        index.load(Wanted.of([shaped]), suspect_min_routes=0)
        index = self._suspect_check(index, route, shaped)
        verdict = decide_route(route, shaped, index.view(shaped), self.now, self.min_age, trace)
        evidence = None
        if verdict.delete:
            t = shaped
            evidence = route_evidence(t.cluster, t.namespace, t.gateways, route.parent_refs)
        call = self._grace(verdict, Rule.ROUTE, evidence, trace)
        if verdict.delete and (call is None or call.next is Next.DELETE):
            verdict = self._upstream_namespace(verdict, shaped, index, trace)
        self._file(out, str(target), trace)
        out.verdict = graced(str(target), verdict, call)
        return verdict

    def _suspect_check(
        self, index: UpstreamIndex, route: Route, target: RouteTarget
    ) -> UpstreamIndex:
        """The sweep distrusts a cluster where --suspect-min-routes routes find no Gateway at
        all. When this route found none, load the cluster as the sweep does: with every
        in-scope route of the hub that hangs on it. Else the index as it is."""
        state = index.clusters[target.cluster]
        if (
            self.suspect_min_routes <= 0
            or state.status is not ClusterStatus.OK
            or state.gateways_found > 0
        ):
            return index
        assert self.upstreams is not None
        self.log.rule = "cluster-trusted"
        same_cluster = [target]
        for other in read_routes(self.hub, self.scope):
            if (other.ref.namespace, other.ref.name) == (route.ref.namespace, route.ref.name):
                continue
            shaped = route_target(other) if in_scope(other) else None
            if isinstance(shaped, RouteTarget) and shaped.cluster == target.cluster:
                same_cluster.append(shaped)
        if len(same_cluster) < self.suspect_min_routes:
            return index
        full = UpstreamIndex(self.upstreams)
        full.load(Wanted.of(same_cluster), self.suspect_min_routes)
        return full

    def _upstream_namespace(
        self, verdict: Verdict, target: RouteTarget, index: UpstreamIndex, trace: Trace
    ) -> Verdict:
        """As right before the sweep deletes: is the whole upstream namespace gone?"""
        self.log.rule = "upstream-namespace"
        exists = index.namespace_exists(target.cluster, target.namespace)
        where = f"namespace {target.namespace} on upstream cluster {target.cluster}"
        if exists is False:
            trace.passed("upstream-namespace", f"{where}: not found")
            return namespace_gone(verdict, target)
        trace.passed("upstream-namespace", f"{where}: " + ("exists" if exists else "not known"))
        return verdict


class WorkloadsByName:
    """The WorkloadDeployments of one namespace, as a container the companion rule asks
    `name in`: a GET of that name, so a failed read stops the rule that needed it."""

    def __init__(self, hub: Reader, namespace: str) -> None:
        self.hub = hub
        self.namespace = namespace

    def __contains__(self, name: object) -> bool:
        assert isinstance(name, str)
        return self.hub.get(WORKLOADDEPLOYMENTS, self.namespace, name, reduce.name_of) is not None


def companion_bound_by(binding: str) -> tuple[str, str] | None:
    """(kind, name) of the companion whose binding, by the companions sweep's naming, this is."""
    for kind in COMPANION_RESOURCES:
        suffix = binding_name("", kind)
        name = binding.removesuffix(suffix)
        if name != binding and name and binding_name(name, kind) == binding:
            return kind, name
    return None


def _unread(target: Target) -> ObjectRef:
    """The target as named, before (or without) reading it."""
    resource = KIND_RESOURCES[target.kind]
    return ObjectRef(resource.api_version, target.kind, target.namespace, target.name, "", "", None)
