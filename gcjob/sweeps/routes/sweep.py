"""Sweep 3: downstream HTTPRoutes whose upstream Gateways are all proven gone.

The hub's routes are read twice and kept neither time. The first read (ahead, beside the
other sweeps) learns only which Gateways to ask each upstream cluster about. Once those
answers are in, the second read decides each route as it streams in and keeps only what must
be reported or acted on. Holding every route until the upstream answers came back cost about
25 MiB at 25,000 routes; the second list of the routes costs one request. A route that
appeared or changed between the two reads may name a Gateway nobody asked about: it is kept
(`upstream-not-read`), and the next run decides it.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from gcjob.decide.grace import Graced, GraceSort
from gcjob.decide.projects import project_calls
from gcjob.enumerate.owners import OwnerLookups, ProjectReads
from gcjob.enumerate.parallel import ReadAhead, wait_all
from gcjob.enumerate.shared import Found
from gcjob.enumerate.upstream import UpstreamIndex, Wanted
from gcjob.exitcodes import ExitCode
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.resources import HTTPROUTES
from gcjob.logs import log
from gcjob.marks import Rule
from gcjob.model import (
    ClusterStatus,
    Looked,
    ObjectRef,
    Outcome,
    ProjectState,
    Route,
    RouteTarget,
    SecondLook,
    Sweep,
    UpstreamOwner,
)
from gcjob.reasons import Reason
from gcjob.run import Run
from gcjob.shard import WHOLE, Shard, copy_key
from gcjob.sweeps import grace_actions
from gcjob.sweeps.boundary import ObjectScan, each, report_failed
from gcjob.sweeps.routes.act import LiveRead, delete_route, read_again
from gcjob.sweeps.routes.judge import (
    RouteJudgement,
    UpstreamWorld,
    in_scope,
    judge_route,
    owner_gone,
    route_left_scope,
    route_target,
)
from gcjob.sweeps.routes.scan import (
    IndexedUpstream,
    owners_to_read,
    project_answers,
    scan_marked_outside_routes,
    scan_routes,
)

SWEEP = Sweep.ROUTES
# How many routes' live second looks are read ahead of the deletes: at most this many reads
# not yet taken, so none is older than this many deletes (each still pinned to what it saw).
AHEAD = 16


class RouteTargets(ObjectScan[Route]):
    """The first read: what the in-scope routes ask of their upstream clusters. A route that
    fails here is asked about by nobody: the second read keeps it (`upstream-not-read`).
    With --shard, only this shard's projects are asked about; the others' are only named,
    for the projects brake (it holds for the whole hub)."""

    def __init__(self, shard: Shard = WHOLE) -> None:
        super().__init__(shard)
        self.wanted = Wanted()
        self.owned: set[RouteTarget] = set()  # the targets whose upstream route is asked for
        self.elsewhere_clusters: set[str] = set()  # the clusters other shards ask

    def shard_key(self, record: Route) -> str:
        return copy_key(record.labels, record.ref.namespace)

    def take(self, route: Route) -> None:
        if in_scope(route):
            target = route_target(route)
            if self.judged_elsewhere(route):
                if isinstance(target, RouteTarget):
                    self.elsewhere_clusters.add(target.cluster)
                return
            if isinstance(target, RouteTarget):
                self.wanted.add(target)
                if target.owner is not None:
                    self.owned.add(target)


@dataclass
class UpstreamRead:
    """What the upstream clusters said, read ahead (see `read`): it reports nothing and
    changes nothing of the run, so the report keeps its order."""

    index: UpstreamIndex | None = None  # None: the hub's routes could not be read
    owners: OwnerLookups | None = None  # the upstream HTTPRoutes, once the Gateways are read
    failed: str = ""  # what could not be read: the sweep is then incomplete (or stopped)
    error: KubeError | None = None
    elsewhere: frozenset[str] = frozenset()  # with --shard: the clusters other shards read


def read(run: Run, found: Found | None = None) -> UpstreamRead:
    """The hub's routes (on the hub's readers), then their upstream Gateways (on the upstream
    readers). `found`: where the Gateways found are handed on to the copies sweep's reads."""
    assert run.upstreams is not None
    try:
        if not run.hub.served(HTTPROUTES):
            return UpstreamRead(failed=f"hub does not serve {HTTPROUTES.api_version} httproutes")
        scans = scan_routes(run.hub, run.scope, partial(RouteTargets, run.shard), run.hub_reads)
    except KubeError as exc:
        return UpstreamRead(failed="cannot list HTTPRoutes", error=exc)
    elsewhere = frozenset(c for scan in scans for c in scan.elsewhere_clusters)
    wanted, owned = _merged(scans)
    index = UpstreamIndex(run.upstreams, found)
    try:
        index.load(wanted, run.settings.suspect_min_routes, run.upstream_reads)
    except Stopped as exc:
        return UpstreamRead(index, None, "stopped while reading upstream Gateways", exc, elsewhere)
    # What the routes asked (a group per cluster and hub namespace, a target per route) is
    # not held through the owners' reads, the longest part of the run: at 25,000 routes it
    # was about 25 MiB of the sweep's peak.
    del wanted
    owners = owners_to_read(index, owned)
    del owned
    lookups = OwnerLookups(run.upstreams, run.upstream_reads)
    try:
        lookups.load(owners)
    except Stopped as exc:
        failed = "stopped while reading upstream HTTPRoutes"
        return UpstreamRead(index, None, failed, exc, elsewhere)
    return UpstreamRead(index, lookups, elsewhere=elsewhere)


def _merged(scans: list[RouteTargets]) -> tuple[Wanted, set[RouteTarget]]:
    """Every scan's findings in the first scan's, each other scan dropped once added (copied
    into a new Wanted, every group would be held twice). Empties `scans`."""
    if not scans:
        return Wanted(), set()
    first = scans[0]
    while len(scans) > 1:
        scan = scans.pop()
        first.wanted.update(scan.wanted)
        first.owned.update(scan.owned)
    scans.clear()
    return first.wanted, first.owned


class RouteScan(ObjectScan[Route]):
    """The second read: judges each route as it arrives, on what the upstream clusters said;
    keeps what must be reported or acted on, and only a count of the healthy ones (unless
    they are to be itemised)."""

    def __init__(
        self,
        world: UpstreamWorld,
        now: datetime,
        min_age: timedelta,
        grace: timedelta,
        keep_healthy: bool,
        shard: Shard = WHOLE,
    ) -> None:
        super().__init__(shard)
        self.world = world
        self.now = now
        self.min_age = min_age
        self.grace = grace
        self.keep_healthy = keep_healthy
        self.in_scope = 0
        self.shapeless: list[RouteJudgement] = []  # kept for their shape, before any upstream
        self.kept: list[RouteJudgement] = []
        self.candidates: list[RouteJudgement] = []
        self.healthy: Counter[Reason] = Counter()

    def shard_key(self, record: Route) -> str:
        return copy_key(record.labels, record.ref.namespace)

    def take(self, route: Route) -> None:
        if not in_scope(route):
            return  # another owner's route
        if self.judged_elsewhere(route):
            return
        self.in_scope += 1
        judged = judge_route(route, self.world, self.now, self.min_age, self.grace)
        verdict = judged.verdict
        if judged.target is None:
            self.shapeless.append(judged)
        elif verdict.delete:
            self.candidates.append(judged)
        elif verdict.healthy and route.ref.mark is None and not self.keep_healthy:
            self.healthy[verdict.reason] += 1
        else:
            self.kept.append(judged)


def _in_order(judged: RouteJudgement) -> tuple[str, str, str]:
    return judged.verdict.ref.order


def _ref(judged: RouteJudgement) -> ObjectRef:
    return judged.verdict.ref


def sweep(run: Run, projects: ProjectReads, ahead: Future[UpstreamRead] | None = None) -> None:
    """`projects`: the run's Project API, shared with the copies sweep; `ahead`: the upstream
    read started before the first sweep (`read`), if it was."""
    state = run.tally.sweeps[SWEEP]
    if run.upstreams is None:
        state.status = "not-configured"
        state.detail = "no upstream configured (--upstream-kubeconfig)"
        log.warning("routes sweep not configured: %s", state.detail)
        return None
    if ahead is not None:
        wait_all([ahead])
        upstream = ahead.result()
    else:
        upstream = read(run)
    if upstream.index is None:
        return run.incomplete(SWEEP, upstream.failed, upstream.error)
    index = run.upstream_index = upstream.index
    run.tally.clusters_read[SWEEP.value] = len(index.clusters)
    if upstream.failed:  # stopped while reading upstream
        return run.incomplete(SWEEP, upstream.failed, upstream.error)
    settings = run.settings
    try:
        answers, answered = project_answers(index, projects)
        # With --shard, the projects brake counts the projects gone in the whole hub.
        answers |= projects.answers(upstream.elsewhere)
    except Stopped as exc:
        return run.incomplete(SWEEP, "stopped while reading the Project API", exc)
    calls, brake = project_calls(
        index.clusters,
        run.is_project,
        answers,
        answered,
        settings.max_projects_gone,
        elsewhere=upstream.elsewhere,
    )
    run.count_projects(calls, brake)
    run.project_api_failed(SWEEP, projects.failed(index.clusters))
    if brake:
        run.hold_brake(SWEEP, brake)
    gone = {name for name, call in calls.items() if call.state is ProjectState.GONE}
    if any(
        state.status is ClusterStatus.UNAVAILABLE and name not in gone
        for name, state in index.clusters.items()
    ):
        # A cluster that failed is a failure of the run, whatever its routes' items say; a
        # deleted project's control plane is gone with it, and that is no failure.
        run.tally.codes.add(ExitCode.ITEM_FAILED)

    world = IndexedUpstream(index, calls, upstream.owners)

    def start() -> RouteScan:
        return RouteScan(
            world, run.now, settings.min_age, settings.grace, settings.report_healthy, run.shard
        )

    try:
        scans = scan_routes(run.hub, run.scope, start, run.hub_reads)
    except KubeError as exc:
        return run.incomplete(SWEEP, "cannot list HTTPRoutes", exc)
    try:
        left = scan_marked_outside_routes(run.hub, run.scope, run.hub_reads)
    except KubeError as exc:
        # A mark left behind could be counted from when the labels come back: decide nothing.
        return run.incomplete(SWEEP, "cannot list marked objects that left the sweep", exc)
    for ref in [ref for ref in left if run.shard.judges(ref.namespace)]:
        leaving = route_left_scope(ref)
        if leaving is not None:
            run.record(run.marker.unmark(SWEEP, leaving.verdict, HTTPROUTES))
    sort: GraceSort[RouteTarget | None] = GraceSort(Rule.ROUTE, run.now, settings.grace)

    def file(judged: RouteJudgement) -> None:
        verdict = judged.verdict
        if verdict.reason == Reason.UPSTREAM_SUSPECT and settings.delete:
            run.tally.codes.add(ExitCode.BRAKE)
        if not sort.take(verdict, judged.evidence, judged.call, judged.target):
            run.keep(SWEEP, verdict)

    for scan in scans:
        state.scanned += scan.scanned
        state.in_scope += scan.in_scope
        state.other_shards += scan.elsewhere
        report_failed(run, SWEEP, [scan])
        each(run, SWEEP, sorted(scan.shapeless, key=_in_order), _ref, file)
    for scan in scans:
        each(run, SWEEP, sorted(scan.kept, key=_in_order), _ref, file)
        for reason, count in sorted(scan.healthy.items()):
            run.reporter.count_healthy(SWEEP, reason, count)
        each(run, SWEEP, sorted(scan.candidates, key=_in_order), _ref, file)

    looks: ReadAhead[ObjectRef, LiveRead] | None = None

    def live_read(graced: Graced[RouteTarget | None]) -> LiveRead:
        """The upstream reads a route's delete rests on: in an upstream reader thread."""
        assert graced.target is not None  # an orphan always has its Gateways
        return read_again(
            graced.verdict, graced.target, index, projects.still_gone, owner_still_gone
        )

    def read_ahead(due: list[Graced[RouteTarget | None]]) -> None:
        """The routes about to go, their live second looks read a few at once on the upstream
        readers (one after another, 1,000 orphaned clusters cost 1,000 times 4 round trips)."""
        nonlocal looks
        by_ref = {graced.verdict.ref: graced for graced in due}
        looks = ReadAhead(
            run.upstream_reads, list(by_ref), lambda ref: live_read(by_ref[ref]), AHEAD
        )

    def looked(graced: Graced[RouteTarget | None]) -> LiveRead:
        found = looks.take(graced.verdict.ref) if looks is not None else None
        seen = found.result() if found is not None else live_read(graced)
        look = seen.look
        if graced.verdict.reason == Reason.PROJECT_GONE and look and look.found is Looked.FAILED:
            run.project_api_failed(SWEEP, look.detail)
        return seen

    def delete(graced: Graced[RouteTarget | None]) -> list[Outcome]:
        assert graced.target is not None  # an orphan always has its Gateways
        return [
            delete_route(
                graced.verdict, graced.target, index, run.deleter, read=lambda: looked(graced)
            )
        ]

    def owner_still_gone(owner: UpstreamOwner) -> SecondLook:
        """The upstream HTTPRoute read again, right before deleting: still proven gone?"""
        assert upstream.owners is not None  # an owner-gone verdict rests on its read
        return upstream.owners.second_look(owner, owner_gone)

    if grace_actions.act(
        run, SWEEP, sort, state.in_scope, lambda _: HTTPROUTES, delete, before_delete=read_ahead
    ):
        run.completed(SWEEP)
    return None
