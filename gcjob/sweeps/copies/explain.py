"""`gcjob explain` on a downstream copy or an anchor: read by name, its owner's group read as
the sweep reads it, and judged by judge.py. The project calls rest on what the sweep rests on
(every project some copy names, and whether its control plane answered): explain reads them
all, as the sweep's first read does, so it reaches the sweep's verdict, brake included."""

from __future__ import annotations

from gcjob.decide.explanation import Explanation, Target, graced
from gcjob.decide.projects import answers_used
from gcjob.decide.trace import Trace
from gcjob.domain import sorted_names
from gcjob.enumerate.owners import OwnerLookups
from gcjob.marks import Rule
from gcjob.model import OwnerFacts, Verdict
from gcjob.sweeps.copies.act import SWEEP, first_read, named_by
from gcjob.sweeps.copies.judge import (
    Member,
    anchors_named,
    judge_group,
    plan_group,
    understand,
)
from gcjob.sweeps.copies.scan import (
    COPY_SELECTOR,
    Discovering,
    HubKinds,
    hub_kinds,
    replica,
)
from gcjob.sweeps.driver import Named
from gcjob.sweeps.explaining import ANSWERS_USED, ExplainContext, out_of_scope
from gcjob.sweeps.registry import Hand


def named(ctx: ExplainContext) -> Named | None:
    """The projects the copies name and which of their control planes answered, read as the
    sweep's first read and its owners' reads read them (sweep.py `named`), for the run's one
    judgement of projects when another sweep's object is explained; None when the sweep
    cannot read them here (no upstream, no discovery). Raises KubeError."""
    hub = ctx.hub
    if ctx.upstreams is None or not isinstance(hub, Discovering):
        return None
    wanted, _ = first_read(hub, hub_kinds(hub, ctx.drop_copy_kinds), ctx.scope)
    lookups = OwnerLookups(ctx.upstreams, read_secrets=ctx.read_upstream_secrets)
    lookups.load(wanted.owners)
    return named_by(wanted, lookups)


def explain(
    ctx: ExplainContext, target: Target, out: Explanation, trace: Trace, hand: Hand
) -> Verdict | None:
    """`hand`: the run's one judgement of projects (registry.py `Hand.project_calls`)."""
    hub = ctx.hub
    if ctx.upstreams is None or not isinstance(hub, Discovering):
        return out_of_scope(
            target,
            "the copies sweep needs the hub's discovery and an upstream (--upstream-kubeconfig)",
            "in-scope",
            trace,
        )
    ctx.reads_for("in-scope")
    kinds = hub_kinds(hub, ctx.drop_copy_kinds)
    resource = next((r for r in kinds.swept if r.kind == target.kind), None)
    if resource is None:
        return out_of_scope(
            target,
            f"{target.kind} is not a kind the copies sweep reads on this hub",
            "in-scope",
            trace,
        )
    found = ctx.read_target(
        target,
        out,
        trace,
        lambda: hub.get(resource, target.namespace, target.name, replica(resource)),
    )
    if found is None or isinstance(found, Verdict):
        return found
    member = understand(found, trace)
    if isinstance(member, Verdict):
        ctx.file(out, str(target), trace)
        out.verdict = graced(str(target), member, ctx.grace_call(member, Rule.COPY, None, trace))
        return member
    owner = member.owner
    ctx.reads_for("owner-group")
    wanted, named_elsewhere = first_read(hub, kinds, ctx.scope)
    group, named = _group(ctx, kinds, member)
    ctx.reads_for("owner-lookup")
    lookups = OwnerLookups(ctx.upstreams, read_secrets=ctx.read_upstream_secrets)
    owners = wanted.owners | {owner}
    lookups.load(owners)
    # The run's one judgement of projects, over what every sweep of the run names.
    calls = hand.project_calls(
        SWEEP, Named(sorted_names(o.cluster for o in owners), lookups.answered())
    )
    brake = calls.brake
    facts = OwnerFacts(calls[owner.cluster], lookups.read(owner))
    anchors = wanted.anchors_of(owner)
    judged = judge_group(owner, group, facts, anchors, ctx.now, ctx.min_age, ctx.clock_skew)
    trace.steps.extend(judged.traces[member.ref.uid].steps)
    trace.passed(
        ANSWERS_USED,
        answers_used(facts.project, facts.read.cluster_available, facts.read.cluster_detail),
    )
    if brake:
        trace.passed("projects-brake", brake)
    # The whole group planned as the sweep plans it (judge.py plan_group): an anchor named by
    # what stays is kept, and a due anchor waits for the copies it owns still in their grace.
    planned = plan_group(
        group,
        judged.verdicts,
        lambda uid: ("anchor", "", uid) in named_elsewhere or uid in named,
        ctx.now,
        ctx.grace,
        {member.ref.uid: trace},
    )
    mine = next(p for p in planned if p.member.ref.uid == member.ref.uid)
    verdict, call = mine.verdict, mine.call
    ctx.file(out, str(target), trace)
    out.verdict = graced(str(target), verdict, call)
    return verdict


def _group(ctx: ExplainContext, kinds: HubKinds, member: Member) -> tuple[list[Member], set[str]]:
    """The target's group as the sweep gathers it (every member of its owner in its
    namespace), and the anchors named by the namespace's other copies."""
    group: list[Member] = []
    named: set[str] = set()
    for resource in kinds.swept:
        for found in ctx.hub.list(
            resource,
            replica(resource),
            namespace=member.ref.namespace,
            label_selector=COPY_SELECTOR,
        ):
            other = understand(found)
            if isinstance(other, Member) and other.owner == member.owner:
                group.append(other)
            else:
                named.update(anchors_named(found.owners))
    if all(m.ref.uid != member.ref.uid for m in group):
        group.append(member)  # read by name, yet not listed: judged with what was listed
    return group, named
