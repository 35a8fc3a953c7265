"""`gcjob explain` on a downstream copy or an anchor: read by name, its owner's group read as
the sweep reads it, and judged by judge.py. The project calls rest on what the sweep rests on
(every project some copy names, and whether its control plane answered): explain reads them
all, as the sweep's first read does, so it reaches the sweep's verdict, brake included."""

from __future__ import annotations

from gcjob.decide.explanation import Explanation, Target, graced
from gcjob.decide.projects import project_calls
from gcjob.decide.trace import Trace
from gcjob.enumerate.owners import OwnerLookups
from gcjob.marks import Rule
from gcjob.model import OwnerFacts, Verdict
from gcjob.sweeps.copies.act import first_read
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
from gcjob.sweeps.explaining import ExplainContext, out_of_scope


def explain(ctx: ExplainContext, target: Target, out: Explanation, trace: Trace) -> Verdict | None:
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
    clusters = {o.cluster for o in owners}
    answers = ctx.project_reads().answers(clusters)
    calls, brake = project_calls(
        clusters,
        ctx.is_project,
        answers,
        lookups.answered(),
        ctx.max_projects_gone,
    )
    facts = OwnerFacts(calls[owner.cluster], lookups.read(owner))
    anchors = wanted.anchors_of(owner)
    judged = judge_group(owner, group, facts, anchors, ctx.now, ctx.min_age, ctx.clock_skew)
    trace.steps.extend(judged.traces[member.ref.uid].steps)
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
