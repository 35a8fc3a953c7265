"""Sweep 3: downstream HTTPRoutes whose upstream Gateways are all proven gone."""

from __future__ import annotations

from dataclasses import dataclass, field

from gcjob.act.routes import delete_route
from gcjob.decide.grace import Graced, GraceSort
from gcjob.decide.routes import RouteTarget, decide_route, in_scope, route_target
from gcjob.enumerate.hub import read_routes
from gcjob.enumerate.parallel import wait_all
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


@dataclass
class RoutesRead:
    """All the routes sweep reads before it decides: the hub's routes and what their upstream
    clusters say. Read ahead, beside the other sweeps (see `read`); it reports nothing and
    changes nothing of the run, so the report keeps its order."""

    scanned: int = 0
    kept: list[Verdict] = field(default_factory=list)  # preserved before any upstream read
    shaped: list[tuple[Route, RouteTarget]] = field(default_factory=list)
    index: UpstreamIndex | None = None
    failed: str = ""  # what could not be read: the sweep is then incomplete (or stopped)
    error: KubeError | None = None


def read(run: Run) -> RoutesRead:
    """The hub's routes (on the hub's readers) and their upstream Gateways (on the upstream
    readers)."""
    assert run.upstreams is not None
    try:
        if not run.hub.served(HTTPROUTES):
            return RoutesRead(failed=f"hub does not serve {HTTPROUTES.api_version} httproutes")
        routes = read_routes(run.hub, run.scope, run.hub_reads)
    except KubeError as exc:
        return RoutesRead(failed="cannot list HTTPRoutes", error=exc)
    found = RoutesRead(scanned=len(routes))
    for route in routes:
        if not in_scope(route):
            continue  # another owner's route
        target = route_target(route)
        if isinstance(target, Verdict):
            found.kept.append(target)
        else:
            found.shaped.append((route, target))
    found.index = UpstreamIndex(run.upstreams)
    try:
        found.index.load(
            (t for _, t in found.shaped), run.settings.suspect_min_routes, run.upstream_reads
        )
    except Stopped as exc:
        found.failed, found.error = "stopped while reading upstream Gateways", exc
    return found


def sweep(run: Run) -> None:
    state = run.sweeps[SWEEP]
    if run.upstreams is None:
        state.status = "not-configured"
        state.detail = "no upstream configured (--upstream-kubeconfig)"
        log.warning("routes sweep not configured: %s", state.detail)
        return None
    if run.routes_ahead is not None:
        wait_all([run.routes_ahead])
        found = run.routes_ahead.result()
    else:
        found = read(run)
    if found.index is None:  # the hub's routes could not be read
        return run.incomplete(SWEEP, found.failed, found.error)
    index = run.upstream_index = found.index
    state.scanned = found.scanned
    state.in_scope = len(found.kept) + len(found.shaped)
    sort: GraceSort[RouteTarget | None] = GraceSort(Rule.ROUTE, run.now, run.settings.grace)
    for verdict in found.kept:
        if not sort.not_orphan(verdict, None):
            run.keep(SWEEP, verdict)
    if found.failed:  # stopped while reading upstream
        return run.incomplete(SWEEP, found.failed, found.error)
    for route, target in found.shaped:
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
