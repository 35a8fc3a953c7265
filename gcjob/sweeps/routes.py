"""Sweep 3: downstream HTTPRoutes whose upstream Gateways are all proven gone."""

from __future__ import annotations

from gcjob.act.routes import delete_route
from gcjob.decide.grace import Graced, GraceSort
from gcjob.decide.routes import RouteTarget, decide_route, in_scope, route_target
from gcjob.enumerate.hub import read_routes
from gcjob.enumerate.upstream import UpstreamIndex
from gcjob.exitcodes import ExitCode
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.resources import HTTPROUTES
from gcjob.logs import log
from gcjob.marks import Rule, route_evidence
from gcjob.model import Outcome, Route, Sweep, Verdict
from gcjob.run import Run
from gcjob.sweeps import grace

SWEEP = Sweep.ROUTES


def sweep(run: Run) -> None:
    state = run.sweeps[SWEEP]
    if run.upstreams is None:
        state.status = "not-configured"
        state.detail = "no upstream configured (--upstream-kubeconfig)"
        log.warning("routes sweep not configured: %s", state.detail)
        return None
    try:
        if not run.hub.served(HTTPROUTES):
            return run.incomplete(SWEEP, f"hub does not serve {HTTPROUTES.api_version} httproutes")
        routes = read_routes(run.hub, run.scope)
    except KubeError as exc:
        return run.incomplete(SWEEP, "cannot list HTTPRoutes", exc)
    state.scanned = len(routes)
    shaped: list[tuple[Route, RouteTarget]] = []
    sort: GraceSort[RouteTarget | None] = GraceSort(Rule.ROUTE, run.now, run.settings.grace)
    for route in routes:
        if not in_scope(route):
            continue  # another owner's route
        state.in_scope += 1
        target = route_target(route)
        if isinstance(target, Verdict):
            if not sort.not_orphan(target, None):
                run.keep(SWEEP, target)
        else:
            shaped.append((route, target))
    index = run.upstream_index = UpstreamIndex(run.upstreams)
    try:
        index.load((t for _, t in shaped), run.settings.suspect_min_routes)
    except Stopped as exc:
        return run.incomplete(SWEEP, "stopped while reading upstream Gateways", exc)
    for route, target in shaped:
        verdict = decide_route(route, target, index.view(target), run.now, run.settings.min_age)
        if verdict.delete:
            evidence = route_evidence(
                target.cluster, target.namespace, target.gateways, route.parent_refs
            )
            sort.orphan(verdict, evidence, target)
            continue
        if verdict.reason == "upstream-suspect" and run.settings.delete:
            run.codes.add(ExitCode.BRAKE)
        if not sort.not_orphan(verdict, target):
            run.keep(SWEEP, verdict)

    def delete(graced: Graced[RouteTarget | None]) -> list[Outcome]:
        assert graced.target is not None  # an orphan always has its Gateways
        return [delete_route(graced.verdict, graced.target, index, run.deleter)]

    if grace.act(run, SWEEP, sort, state.in_scope, lambda _: HTTPROUTES, delete):
        run.completed(SWEEP)
    return None
