"""`gcjob explain ns/NAME`: one hub namespace read by name, its upstream Namespace and its
project looked up as the sweep looks them up, its contents listed, and judged by judge.py's
`judge_namespace`, the sweep's own judgement."""

from __future__ import annotations

from gcjob.decide.common import hold_back
from gcjob.decide.explanation import Explanation, Target, graced
from gcjob.decide.grace import GraceCall, Next
from gcjob.decide.projects import ProjectCalls, project_calls
from gcjob.decide.trace import Trace
from gcjob.enumerate.owners import OwnerLookups
from gcjob.model import Holdings, HubNamespace, OwnerFacts, Propagation, UpstreamOwner, Verdict
from gcjob.sweeps.explaining import ExplainContext, out_of_scope
from gcjob.sweeps.namespaces.act import NO_MARK
from gcjob.sweeps.namespaces.judge import (
    NO_PROJECTS_BRAKE,
    judge_namespace,
    upstream_of,
)
from gcjob.sweeps.namespaces.scan import (
    NamespacedDiscovery,
    holdings,
    propagations,
    read_namespace,
    scan_namespaces,
    what_it_deletes,
)


class ByName:
    """explain's world for judge.py: the upstream Namespace and its project read for this one
    namespace, its contents listed when the judgement asks."""

    def __init__(self, ctx: ExplainContext, lookups: OwnerLookups, calls: ProjectCalls) -> None:
        self.ctx = ctx
        self.lookups = lookups
        self.calls = calls

    def facts(self, owner: UpstreamOwner) -> OwnerFacts:
        return OwnerFacts(self.calls[owner.cluster], self.lookups.read(owner))

    def holdings(self, namespace: HubNamespace) -> Holdings | None:
        self.ctx.reads_for("holds-nothing")
        kinds, undiscovered = what_it_deletes(self.ctx.hub)
        return holdings(self.ctx.hub, namespace.ref.name, kinds, undiscovered)

    def propagation(self, namespace: HubNamespace) -> Propagation:
        works = propagations(self.ctx.hub)
        if isinstance(works, str):
            return Propagation(unknown=works)
        return works.get(namespace.ref.uid, Propagation())


def explain(ctx: ExplainContext, target: Target, out: Explanation, trace: Trace) -> Verdict | None:
    hub = ctx.hub
    if ctx.upstreams is None or not isinstance(hub, NamespacedDiscovery):
        return out_of_scope(
            target,
            "the namespaces sweep needs the hub's discovery and an upstream "
            "(--upstream-kubeconfig)",
            "in-scope",
            trace,
        )
    found = ctx.read_target(target, out, trace, lambda: read_namespace(hub, target.name))
    if found is None or isinstance(found, Verdict):
        return found
    owner = upstream_of(found)
    lookups = OwnerLookups(ctx.upstreams, identity=True)
    clusters: set[str] = set()
    if isinstance(owner, UpstreamOwner):
        # Every candidate's upstream namespace, as the sweep reads them: whose control planes
        # answered is what vouches for the Project API (its trust rule), as in the run.
        ctx.reads_for("owner-lookup")
        owners = {owner} | {
            other
            for namespace in scan_namespaces(hub)
            if ctx.scope.allows(namespace.ref.name)
            and hold_back(namespace.ref, ctx.now, ctx.min_age, namespace.protect) is None
            for other in [upstream_of(namespace)]
            if isinstance(other, UpstreamOwner)
        }
        lookups.load(owners)
        clusters = {o.cluster for o in owners}
    answers = ctx.project_reads().answers(clusters)
    calls, brake = project_calls(  # as the sweep: no projects brake, it deletes nothing
        clusters, ctx.is_project, answers, lookups.answered(), NO_PROJECTS_BRAKE
    )
    verdict = judge_namespace(
        found, ByName(ctx, lookups, calls), ctx.now, ctx.min_age, ctx.clock_skew, trace
    )
    if brake:
        trace.passed("projects-brake", brake)
    ctx.file(out, str(target), trace)
    call = GraceCall(Next.DELETE, NO_MARK) if verdict.delete else None
    out.verdict = graced(str(target), verdict, call)
    return verdict
