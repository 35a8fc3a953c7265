"""`gcjob explain` on a companion, or on the binding named after one: the companion read by
name, judged by judge.py against a world that reads each referrer by name, and the rule for
its binding applied to the binding read by name, as act.py applies it."""

from __future__ import annotations

from collections.abc import Callable, Container
from typing import Any

from gcjob.decide.explanation import (
    NOT_FOUND,
    Conclusion,
    Explanation,
    Target,
    concluded,
    graced,
)
from gcjob.decide.grace import GraceCall, Next
from gcjob.decide.trace import Trace
from gcjob.domain import COMPANION_LABEL, binding_name
from gcjob.kube import reduce
from gcjob.kube.errors import KubeError
from gcjob.kube.reader import Reader
from gcjob.kube.resources import COMPANION_RESOURCES, RESOURCEBINDINGS, WORKLOADDEPLOYMENTS
from gcjob.marks import describe_mark
from gcjob.model import Binding, Companion, ObjectRef, Verdict
from gcjob.reasons import Reason
from gcjob.sweeps.companions.act import prove_secret_type
from gcjob.sweeps.companions.judge import (
    BindingCall,
    binding_plan,
    companion_binding,
    companion_bound_by,
    companion_left_scope,
    judge_companion,
)
from gcjob.sweeps.explaining import ExplainContext, out_of_scope

# What the bindings sweep makes of a companion's binding the companions sweep leaves to it
# (gcjob/sweeps/__init__.py passes it in: the sweeps do not import each other).
BindingsSweep = Callable[[Binding, str, Trace], Conclusion]


class WorkloadsByName:
    """The WorkloadDeployments of one namespace, as a container the companion rule asks
    `name in`: a GET of that name, so a failed read stops the rule that needed it."""

    def __init__(self, hub: Reader, namespace: str) -> None:
        self.hub = hub
        self.namespace = namespace

    def __contains__(self, name: object) -> bool:
        assert isinstance(name, str)
        return self.hub.get(WORKLOADDEPLOYMENTS, self.namespace, name, reduce.name_of) is not None


class CompanionByName:
    """explain's world for judge.py (CompanionWorld): every answer a read by name, filed
    under the rule it serves (`reads_for`)."""

    def __init__(
        self,
        ctx: ExplainContext,
        reads_for: str = "referrers-gone",
        proves_secret_type: bool = True,
    ) -> None:
        self.ctx = ctx
        self.reads_for = reads_for
        self.proves_secret_type = proves_secret_type

    def workloads_in(self, namespace: str) -> Container[str]:
        self.ctx.reads_for(self.reads_for)
        return WorkloadsByName(self.ctx.hub, namespace)

    def secret_type_unproven(self, orphan: Verdict) -> tuple[Reason, str] | None:
        """act.py's proof, the one it runs before it marks or deletes a Secret."""
        self.ctx.reads_for("secret-type-proven")
        unproven = prove_secret_type(orphan, self.ctx.hub)
        return None if unproven is None else (unproven.reason, unproven.detail)


def read_companion(ctx: ExplainContext, target: Target) -> tuple[str | None, Companion] | None:
    """The object and its companion label, by name; None when there is none."""
    resource = COMPANION_RESOURCES[target.kind]
    as_companion = reduce.companion(resource)

    def labelled(obj: dict[str, Any]) -> tuple[str | None, Companion]:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        label = labels.get(COMPANION_LABEL) if isinstance(labels, dict) else None
        return (label if isinstance(label, str) else None), as_companion(obj)

    return ctx.hub.get(resource, target.namespace, target.name, labelled)


def explain(
    ctx: ExplainContext, target: Target, out: Explanation, trace: Trace, bindings: BindingsSweep
) -> Verdict | None:
    """A ConfigMap or Secret: the companions sweep's judgement, then what the same run does
    to its binding (`bindings`: the bindings sweep's word, where this sweep leaves it)."""
    read = ctx.read_target(target, out, trace, lambda: read_companion(ctx, target))
    if read is None or isinstance(read, Verdict):
        return read
    label, companion = read
    call: GraceCall | None = None
    leaving = companion_left_scope(companion) if label != "true" else None
    if leaving is not None:  # the sweep removes the mark it left behind
        verdict, call = leaving.verdict, leaving.call
        trace.held_at("in-scope", f"{describe_mark(companion.ref.mark)}: {verdict.detail}")
    elif label != "true":
        detail = f"not labelled {COMPANION_LABEL}=true: not a companion"
        verdict = out_of_scope(target, detail, "in-scope", trace)
    else:
        trace.passed("in-scope", f"labelled {COMPANION_LABEL}=true in {target.namespace}")
        world = CompanionByName(ctx)
        judged = judge_companion(companion, world, ctx.now, ctx.min_age, ctx.grace, trace)
        verdict, call = judged.verdict, judged.call
    ctx.file(out, str(target), trace)
    out.verdict = graced(str(target), verdict, call)
    _its_binding(ctx, companion, verdict, call, out, bindings)
    return verdict


def _its_binding(
    ctx: ExplainContext,
    companion: Companion,
    verdict: Verdict,
    call: GraceCall | None,
    out: Explanation,
    bindings: BindingsSweep,
) -> None:
    """What the same run does to the companion's binding: this sweep's word when it acts on
    it (deletes, marks or unmarks it with its companion), else the bindings sweep's."""
    ref = companion.ref
    name = binding_name(ref.name, ref.kind)
    subject = f"ResourceBinding {ref.namespace}/{name}"
    trace = Trace()
    rule = "binding-names-companion" if verdict.delete else "in-scope"
    ctx.reads_for(rule)
    try:
        binding = ctx.hub.get(
            RESOURCEBINDINGS, ref.namespace, name, reduce.binding, metadata_only=False
        )
    except KubeError as exc:
        out.steps.append(ctx.failed_read(subject, exc))
        out.binding = Conclusion(subject, "unknown", Reason.LOOKUP_FAILED, str(exc))
        return
    if binding is None:
        detail = f"no ResourceBinding {name} in {ref.namespace}: nothing to delete"
        trace.hold(rule, Reason.NOT_FOUND, detail)
        ctx.file(out, subject, trace)
        out.binding = Conclusion(subject, NOT_FOUND, Reason.NOT_FOUND, detail)
        return
    followed = _follows(binding, ref, verdict, call, subject, trace)
    if followed is None:
        followed = bindings(binding, subject, trace)
    ctx.file(out, subject, trace)
    out.binding = followed


def _follows(
    binding: Binding,
    companion: ObjectRef,
    judged: Verdict,
    call: GraceCall | None,
    subject: str,
    trace: Trace,
) -> Conclusion | None:
    """The rule for a companion's binding (judge.py companion_binding), as a conclusion;
    None when this sweep leaves the binding to the bindings sweep."""
    follows = None if call is None else companion_binding(binding, companion, judged, call, trace)
    return None if follows is None else binding_conclusion(subject, follows)


def binding_conclusion(subject: str, follows: BindingCall) -> Conclusion:
    """What act.py does with the binding and reports, as explain says it: the same plan."""
    return concluded(subject, follows.verdict, binding_plan(follows))


def binding_of_companion(ctx: ExplainContext, binding: Binding, trace: Trace) -> Conclusion | None:
    """The companions sweep runs first: what it does to the binding named after a companion;
    None when it leaves the binding to the bindings sweep."""
    named = companion_bound_by(binding.ref.name)
    if named is None:
        return None
    kind, name = named
    rule = "companion-sweep-first"
    ctx.reads_for(rule)
    read = read_companion(ctx, Target(kind, binding.ref.namespace, name))
    subject = str(Target(RESOURCEBINDINGS.kind, binding.ref.namespace, binding.ref.name))
    if read is not None and read[0] != "true":
        leaving = companion_left_scope(read[1])
        if leaving is not None:  # the companions sweep removes its mark, and its binding's
            trace.passed(rule, f"{kind} {name} left the companions sweep: its mark goes")
            return _follows(binding, read[1].ref, leaving.verdict, leaving.call, subject, trace)
    if read is None or read[0] != "true":
        trace.passed(rule, f"{kind} {name} is not a companion: the bindings sweep decides")
        return None
    companion = read[1]
    silent = Trace()  # the companion's own steps are its explanation's, not this one's
    world = CompanionByName(ctx, reads_for=rule, proves_secret_type=False)
    judged = judge_companion(companion, world, ctx.now, ctx.min_age, ctx.grace, silent)
    verdict, call = judged.verdict, judged.call
    if verdict.delete and (call is None or call.next is Next.DELETE):
        acted = "deleted"
    else:
        acted = "kept" if call is None else f"grace rule: {call.next.value}"
    trace.passed(rule, f"companion {kind} {name}: {verdict.reason}, {acted} ({verdict.detail})")
    return _follows(binding, companion.ref, verdict, call, subject, trace)
