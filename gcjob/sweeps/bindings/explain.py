"""`gcjob explain` on a ResourceBinding: read by name, judged by judge.py against a world
that reads the object it binds by name, after the companions sweep had its say."""

from __future__ import annotations

from collections.abc import Callable

from gcjob.decide.explanation import Conclusion, Explanation, Target, graced
from gcjob.decide.trace import Trace
from gcjob.kube import reduce
from gcjob.kube.errors import KubeError
from gcjob.kube.resources import RESOURCEBINDINGS
from gcjob.marks import Rule, describe_mark
from gcjob.model import Binding, Verdict
from gcjob.sweeps.bindings.judge import (
    LEFT_BINDING,
    Answered,
    Existence,
    binding_left_scope,
    judge_binding,
)
from gcjob.sweeps.bindings.scan import bound_object_exists
from gcjob.sweeps.explaining import ExplainContext

# What the companions sweep, which runs first, does to a binding named after a companion:
# None when it leaves it to this sweep (gcjob/sweeps/__init__.py passes it in).
CompanionsSweep = Callable[[Binding, Trace], Conclusion | None]


class ObjectsByName:
    """explain's world for judge.py (BoundObjects): a GET of that name, filed under
    `object-absent`."""

    def __init__(self, ctx: ExplainContext) -> None:
        self.ctx = ctx

    def presence(self, kind: str, namespace: str, name: str) -> tuple[Existence, str]:
        self.ctx.reads_for("object-absent")
        try:
            exists = bound_object_exists(self.ctx.hub, kind, namespace, name)
        except KubeError as exc:
            return Existence.UNKNOWN, str(exc)
        return (Existence.EXISTS if exists else Existence.ABSENT), ""


def explain(
    ctx: ExplainContext,
    target: Target,
    out: Explanation,
    trace: Trace,
    companions_first: CompanionsSweep,
) -> Verdict | None:
    binding = ctx.read_target(
        target,
        out,
        trace,
        lambda: ctx.hub.get(
            RESOURCEBINDINGS, target.namespace, target.name, reduce.binding, metadata_only=False
        ),
    )
    if binding is None or isinstance(binding, Verdict):
        return binding
    judged = judge_binding(binding, ObjectsByName(ctx), ctx.now, ctx.min_age, trace)
    verdict = judged.verdict
    if judged.target is None or judged.presence is Existence.EXISTS:
        # The companions sweep runs first, whatever the policy: what it does to the
        # companion it does to the binding named after it.
        followed = companions_first(binding, trace)
        if followed is not None:
            ctx.file(out, str(target), trace)
            out.verdict = followed
            return verdict
    if judged.target is None:
        leaving = binding_left_scope(binding)
        if leaving is not None:  # out of the sweep: its mark goes
            trace.held_at("in-scope", f"{describe_mark(binding.ref.mark)}: {LEFT_BINDING}")
            ctx.file(out, str(target), trace)
            out.verdict = graced(str(target), leaving.verdict, leaving.call)
            return leaving.verdict
        return verdict
    call = ctx.grace_call(verdict, Rule.BINDING, judged.evidence, trace)
    ctx.file(out, str(target), trace)
    out.verdict = graced(str(target), verdict, call)
    return verdict


def after_companion(
    ctx: ExplainContext, binding: Binding, subject: str, trace: Trace
) -> Conclusion:
    """A companion's binding the companions sweep leaves to this one: its object (the
    companion) exists."""
    leaving = binding_left_scope(binding)
    if leaving is not None:
        trace.held_at("in-scope", f"{describe_mark(binding.ref.mark)}: {LEFT_BINDING}")
        return graced(subject, leaving.verdict, leaving.call)
    kept = judge_binding(binding, Answered(Existence.EXISTS), ctx.now, ctx.min_age, trace).verdict
    return graced(subject, kept, ctx.grace_call(kept, Rule.BINDING, None, trace))
