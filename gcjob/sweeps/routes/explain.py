"""`gcjob explain` on an HTTPRoute: read by name, judged by judge.py against a world that
loads what the sweep would have asked its upstream cluster for this one route, and the
namespace check act.py makes right before it deletes (not for a route whose project or
upstream HTTPRoute is proven gone: act.py rereads those instead)."""

from __future__ import annotations

from dataclasses import replace

from gcjob.decide.explanation import Explanation, Target, graced
from gcjob.decide.grace import Next
from gcjob.decide.projects import answers_used
from gcjob.decide.trace import Trace
from gcjob.domain import sorted_names
from gcjob.enumerate.owners import OwnerLookups
from gcjob.enumerate.upstream import UpstreamIndex, Wanted
from gcjob.kube import reduce
from gcjob.kube.resources import HTTPROUTES
from gcjob.marks import describe_mark
from gcjob.model import (
    ClusterStatus,
    ProjectCall,
    Route,
    RouteTarget,
    UpstreamView,
    Verdict,
)
from gcjob.reasons import Reason
from gcjob.sweeps.driver import Named
from gcjob.sweeps.explaining import ANSWERS_USED, ExplainContext
from gcjob.sweeps.registry import Hand
from gcjob.sweeps.routes.act import SWEEP
from gcjob.sweeps.routes.judge import (
    LEFT_ROUTE,
    before_delete,
    in_scope,
    judge_route,
    route_left_scope,
    route_target,
)
from gcjob.sweeps.routes.scan import answered_clusters, listed_routes, load_owners


class UpstreamByName:
    """explain's world for judge.py (UpstreamWorld): the route's cluster probed and its
    Gateways looked up as the sweep would; when they found none, the cluster loaded again as
    the sweep loads it, with every in-scope route of the hub that hangs on it (the suspect
    rule counts them)."""

    def __init__(self, ctx: ExplainContext, route: Route, hand: Hand) -> None:
        assert ctx.upstreams is not None, "explaining a route needs an upstream"
        self.ctx = ctx
        self.route = route
        self.hand = hand
        self.index = UpstreamIndex(ctx.upstreams)
        self.used = ""  # which answers its judgement rests on (decide/projects.py)

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
        view = replace(self.index.view(target), project=project, owner=owner)
        answered = view.cluster_status in (ClusterStatus.OK, ClusterStatus.SUSPECT)
        self.used = answers_used(project, answered, view.cluster_detail)
        return view

    def _project(self, cluster: str) -> ProjectCall | None:
        """The project's call as the run makes it: the round's one judgement of projects
        (registry.py `Hand.project_calls`), over every route's cluster (read as the sweep
        reads them) and what every other sweep of the run names."""
        ctx = self.ctx
        if ctx.projects is None or not ctx.is_project(cluster):
            return None
        ctx.reads_for(ANSWERS_USED)
        routes = named(ctx)
        calls = self.hand.project_calls(
            SWEEP, Named(sorted_names([*routes.clusters, cluster]), routes.answered)
        )
        return calls[cluster]

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


def named(ctx: ExplainContext) -> Named:
    """The projects the routes name and which of their control planes answered, read as
    the sweep's read ahead reads them (sweep.py `named`): every in-scope route's cluster.
    Raises KubeError."""
    assert ctx.upstreams is not None, "the routes' clusters are read upstream"
    targets = [
        shaped
        for other in listed_routes(ctx.hub, ctx.scope)
        if in_scope(other) and isinstance(shaped := route_target(other), RouteTarget)
    ]
    every = UpstreamIndex(ctx.upstreams)
    every.load(Wanted.of(targets), ctx.suspect_min_routes)
    return Named(sorted_names(every.clusters), answered_clusters(every))


def explain_named(ctx: ExplainContext) -> Named | None:
    """`named`, for explaining another sweep's object: none without an upstream."""
    return None if ctx.upstreams is None else named(ctx)


def explain(
    ctx: ExplainContext, target: Target, out: Explanation, trace: Trace, hand: Hand
) -> Verdict | None:
    """`hand`: the run's one judgement of projects (registry.py `Hand.project_calls`)."""
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
    world = UpstreamByName(ctx, route, hand)
    judged = judge_route(route, world, ctx.now, ctx.min_age, ctx.grace, trace)
    if world.used:
        trace.passed(ANSWERS_USED, world.used)
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
