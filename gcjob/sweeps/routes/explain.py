"""`gcjob explain` on an HTTPRoute: read by name, judged by judge.py against a world that
loads what the sweep would have asked its upstream cluster for this one route, and the
namespace check act.py makes right before it deletes (not for a route whose project or
upstream HTTPRoute is proven gone: act.py rereads those instead)."""

from __future__ import annotations

from dataclasses import replace

from gcjob.decide.explanation import Explanation, Target, graced
from gcjob.decide.grace import Next
from gcjob.decide.projects import check_project_api, judge_project, project_calls
from gcjob.decide.trace import Trace
from gcjob.enumerate.owners import OwnerLookups
from gcjob.enumerate.upstream import UpstreamIndex, Wanted
from gcjob.kube import reduce
from gcjob.kube.resources import HTTPROUTES
from gcjob.marks import describe_mark
from gcjob.model import (
    ClusterStatus,
    ProjectAnswer,
    ProjectCall,
    Route,
    RouteTarget,
    UpstreamView,
    Verdict,
)
from gcjob.reasons import Reason
from gcjob.sweeps.explaining import ExplainContext
from gcjob.sweeps.routes.judge import (
    LEFT_ROUTE,
    before_delete,
    in_scope,
    judge_route,
    route_left_scope,
    route_target,
)
from gcjob.sweeps.routes.scan import listed_routes, load_owners, project_answers


class UpstreamByName:
    """explain's world for judge.py (UpstreamWorld): the route's cluster probed and its
    Gateways looked up as the sweep would; when they found none, the cluster loaded again as
    the sweep loads it, with every in-scope route of the hub that hangs on it (the suspect
    rule counts them)."""

    def __init__(self, ctx: ExplainContext, route: Route) -> None:
        assert ctx.upstreams is not None, "explaining a route needs an upstream"
        self.ctx = ctx
        self.route = route
        self.index = UpstreamIndex(ctx.upstreams)

    def view(self, target: RouteTarget) -> UpstreamView:
        project = self._project(target.cluster)
        self.ctx.reads_for("cluster-available")
        self.index.cluster(target.cluster)
        self.ctx.reads_for("gateways-gone")
        self.index.load(Wanted.of([target]), suspect_min_routes=0)
        self.index = self._as_the_sweep_loads(target)
        owner = None
        if target.owner is not None:
            assert self.ctx.upstreams is not None
            self.ctx.reads_for("upstream-route")
            lookups = OwnerLookups(self.ctx.upstreams)
            load_owners(self.index, [target], lookups)
            owner = lookups.read(target.owner)
        return replace(self.index.view(target), project=project, owner=owner)

    def _project(self, cluster: str) -> ProjectCall | None:
        """The project's call as the sweep makes it: its own answer; for a NotFound, whether
        the Project API found every project whose control plane answered, which the sweep
        learns from every route's cluster (read here as it reads them)."""
        ctx = self.ctx
        if ctx.projects is None or not ctx.is_project(cluster):
            return None
        ctx.reads_for("project-live")
        projects = ctx.project_reads()
        answer = projects.answers([cluster])[cluster]
        if answer is not ProjectAnswer.NOT_FOUND:
            untrusted = check_project_api({}, [])
            return judge_project(cluster, True, answer, untrusted)
        assert ctx.upstreams is not None
        targets = [
            shaped
            for other in listed_routes(ctx.hub, ctx.scope)
            if in_scope(other) and isinstance(shaped := route_target(other), RouteTarget)
        ]
        every = UpstreamIndex(ctx.upstreams)
        every.load(Wanted.of(targets), ctx.suspect_min_routes)
        answers, answered = project_answers(every, projects)
        calls, _ = project_calls(
            every.clusters, ctx.is_project, answers, answered, ctx.max_projects_gone
        )
        return calls.get(cluster)

    def _as_the_sweep_loads(self, target: RouteTarget) -> UpstreamIndex:
        ctx, index = self.ctx, self.index
        state = index.clusters[target.cluster]
        if (
            ctx.suspect_min_routes <= 0
            or state.status is not ClusterStatus.OK
            or state.gateways_found > 0
        ):
            return index
        assert ctx.upstreams is not None
        ctx.reads_for("cluster-trusted")
        route = self.route.ref
        same_cluster = [target]
        for other in listed_routes(ctx.hub, ctx.scope):
            if (other.ref.namespace, other.ref.name) == (route.namespace, route.name):
                continue
            shaped = route_target(other) if in_scope(other) else None
            if isinstance(shaped, RouteTarget) and shaped.cluster == target.cluster:
                same_cluster.append(shaped)
        if len(same_cluster) < ctx.suspect_min_routes:
            return index
        full = UpstreamIndex(ctx.upstreams)
        full.load(Wanted.of(same_cluster), ctx.suspect_min_routes)
        return full

    def namespace_exists(self, target: RouteTarget) -> bool | None:
        self.ctx.reads_for("upstream-namespace")
        return self.index.namespace_exists(target.cluster, target.namespace)


def explain(ctx: ExplainContext, target: Target, out: Explanation, trace: Trace) -> Verdict | None:
    route = ctx.read_target(
        target,
        out,
        trace,
        lambda: ctx.hub.get(
            HTTPROUTES, target.namespace, target.name, reduce.route, metadata_only=False
        ),
    )
    if route is None or isinstance(route, Verdict):
        return route
    if not in_scope(route, trace):
        leaving = route_left_scope(route.ref)
        if leaving is None:
            return Verdict(route.ref, False, Reason.OUT_OF_SCOPE, "not a route NSO copied")
        trace.held_at("in-scope", f"{describe_mark(route.ref.mark)}: {LEFT_ROUTE}")
        ctx.file(out, str(target), trace)
        out.verdict = graced(str(target), leaving.verdict, leaving.call)
        return leaving.verdict
    world = UpstreamByName(ctx, route)
    judged = judge_route(route, world, ctx.now, ctx.min_age, ctx.grace, trace)
    verdict, call = judged.verdict, judged.call
    deleting = verdict.delete and (call is None or call.next is Next.DELETE)
    if (
        judged.target is not None
        and deleting
        and verdict.reason not in (Reason.PROJECT_GONE, Reason.OWNER_GONE)
    ):
        # As right before the sweep deletes (act.py): is the whole upstream namespace gone?
        verdict = before_delete(
            verdict, judged.target, world.namespace_exists(judged.target), trace
        )
    ctx.file(out, str(target), trace)
    out.verdict = graced(str(target), verdict, call)
    return verdict
