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
from collections.abc import Callable, Generator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from gcjob.act.deleter import Deleter
from gcjob.decide.grace import Graced
from gcjob.domain import sorted_names
from gcjob.enumerate.owners import OwnerLookups, ProjectReads
from gcjob.enumerate.parallel import ReadAhead, wait_all
from gcjob.enumerate.shared import Found
from gcjob.enumerate.upstream import UpstreamIndex, Wanted
from gcjob.exitcodes import ExitCode
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.resources import HTTPROUTES, Resource
from gcjob.marks import Rule
from gcjob.model import (
    ClusterStatus,
    Looked,
    ObjectRef,
    Outcome,
    ProjectCall,
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
from gcjob.sweeps.boundary import ObjectScan
from gcjob.sweeps.driver import (
    Counted,
    Declaration,
    Exits,
    Failed,
    Healthy,
    Incomplete,
    Judged,
    Leaving,
    Named,
    NotConfigured,
    Planned,
    Projects,
    RoundProjects,
    Scan,
    Step,
    drive,
)
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
    answered_clusters,
    owners_to_read,
    scan_marked_outside_routes,
    scan_routes,
)

SWEEP = Sweep("routes")
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
    readers), then the upstream HTTPRoutes. `found`: where the Gateways found are handed on to
    the copies sweep's reads, settled once the Gateways' reads end (whatever ended them)."""
    try:
        gateways = _gateways(run, found)
    finally:
        if found is not None:
            found.settle()
    if isinstance(gateways, UpstreamRead):
        return gateways
    index, owned, elsewhere = gateways
    del gateways  # the tuple would hold `owned` through the owners' reads
    assert run.upstreams is not None  # _gateways read them
    owners = owners_to_read(index, owned)
    del owned
    # The routes' rule rests on an HTTPRoute's presence, never on its uid or creation.
    lookups = OwnerLookups(run.upstreams, run.upstream_reads, identity=False)
    try:
        lookups.load(owners)
    except Stopped as exc:
        failed = "stopped while reading upstream HTTPRoutes"
        return UpstreamRead(index, None, failed, exc, elsewhere)
    return UpstreamRead(index, lookups, elsewhere=elsewhere)


def named(upstream: UpstreamRead) -> Named | None:
    """The projects the routes name, for the round's one judgement of projects (driver.py
    `RoundProjects`); None when the routes' upstream reads failed (the sweep judges none)."""
    if upstream.index is None or upstream.failed:
        return None
    index = upstream.index
    return Named(
        sorted_names(index.clusters), answered_clusters(index), sorted_names(upstream.elsewhere)
    )


def _gateways(
    run: Run, found: Found | None
) -> tuple[UpstreamIndex, set[RouteTarget], frozenset[str]] | UpstreamRead:
    """The hub's routes, then their upstream Gateways: the index, the targets whose upstream
    route is asked for, and (with --shard) the clusters other shards read; or the read that
    failed or stopped."""
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
    # not held through the owners' reads, the longest part of the run (returning drops it):
    # at 25,000 routes it was about 25 MiB of the sweep's peak.
    return index, owned, elsewhere


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
    """The second read: judges each route as it arrives, on what the upstream clusters said,
    at the hub's time then (`now`: after those answers and its own page came back); keeps
    what must be reported or acted on, and only a count of the healthy ones (unless they are
    to be itemised)."""

    def __init__(
        self,
        world: UpstreamWorld,
        now: Callable[[], datetime],  # the hub's time now (run.Run.now)
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
        judged = judge_route(route, self.world, self.now(), self.min_age, self.grace)
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


class Routes(Declaration[RouteJudgement, RouteTarget | None]):
    """Sweep 3, declared (gcjob/sweeps/driver.py runs it): what the upstream clusters said
    (read ahead: `read`), the Project API of the projects the routes name and its brake,
    then the hub's routes again, each judged as its page arrives (RouteScan), and the marked
    routes that left the sweep. Before the deletes, each route's upstream reads are looked
    at again, live, a few ahead.

    `projects`: the round's one judgement of projects, shared with the copies sweep;
    `ahead`: the upstream read started before the first sweep (`read`), if it was."""

    sweep = SWEEP
    rule = Rule.ROUTE

    def __init__(
        self, run: Run, projects: RoundProjects, ahead: Future[UpstreamRead] | None = None
    ) -> None:
        super().__init__(run)
        self.projects = projects
        self.ahead = ahead
        self.upstream = UpstreamRead()
        self.looks: ReadAhead[ObjectRef, LiveRead] | None = None

    def scan(self) -> Scan[RouteJudgement, RouteTarget | None]:
        run, settings = self.run, self.run.settings
        if run.upstreams is None:
            raise NotConfigured("no upstream configured (--upstream-kubeconfig)")
        if self.ahead is not None:
            wait_all([self.ahead])
            upstream = self.upstream = self.ahead.result()
        else:
            upstream = self.upstream = read(run)
        if upstream.index is None:
            raise Incomplete(upstream.failed, upstream.error)
        index = run.upstream_index = upstream.index
        if upstream.failed:  # stopped while reading upstream
            raise Incomplete(upstream.failed, upstream.error)
        calls = yield from self.projects_named(index, upstream.elsewhere)
        world = IndexedUpstream(index, calls, upstream.owners)

        def start() -> RouteScan:
            return RouteScan(
                world,
                run.clock.now,
                settings.min_age,
                settings.grace,
                settings.report_healthy,
                run.shard,
            )

        try:
            scans = scan_routes(run.hub, run.scope, start, run.hub_reads)
        except KubeError as exc:
            raise Incomplete("cannot list HTTPRoutes", exc) from exc
        try:
            left = scan_marked_outside_routes(run.hub, run.scope, run.hub_reads)
        except KubeError as exc:
            # A mark left behind could be counted from when the labels come back: decide nothing.
            raise Incomplete("cannot list marked objects that left the sweep", exc) from exc
        yield Leaving(list(filter(None, map(route_left_scope, left))))
        if settings.delete and any(
            judged.verdict.reason == Reason.UPSTREAM_SUSPECT
            for scan in scans
            for judged in [*scan.shapeless, *scan.kept, *scan.candidates]
        ):
            # The suspect-cluster brake: held back, the routes of a cluster that answered with
            # too few Gateways are kept (upstream-suspect); a run that deletes says so (exit 4).
            yield Exits(ExitCode.BRAKE)
        for scan in scans:
            yield Counted(scan.scanned, scan.in_scope, scan.elsewhere)
            yield Failed([scan])
            yield Judged(sorted(scan.shapeless, key=_in_order), _ref)
        for scan in scans:
            yield Judged(sorted(scan.kept, key=_in_order), _ref)
            yield Healthy(scan.healthy)
            yield Judged(sorted(scan.candidates, key=_in_order), _ref)

    def projects_named(
        self, index: UpstreamIndex, elsewhere: frozenset[str] = frozenset()
    ) -> Generator[Step[RouteJudgement, RouteTarget | None], None, Mapping[str, ProjectCall]]:
        """What the Project API says of the projects the routes name, from the round's one
        judgement of projects (for every sweep, behind the run's projects brake); a cluster
        that failed fails the run. `elsewhere`: with --shard, the clusters other shards
        read, whose projects found gone the brake counts too (the whole hub)."""
        named = Named(
            sorted_names(index.clusters), answered_clusters(index), sorted_names(elsewhere)
        )
        try:
            calls = self.projects.calls(named)
        except Stopped as exc:
            raise Incomplete("stopped while reading the Project API", exc) from exc
        yield Projects(calls, calls.brake, self.projects.reads.failed(index.clusters))
        gone = {name for name, call in calls.items() if call.state is ProjectState.GONE}
        if any(
            state.status is ClusterStatus.UNAVAILABLE and name not in gone
            for name, state in index.clusters.items()
        ):
            # A cluster that failed is a failure of the run, whatever its routes' items say; a
            # deleted project's control plane is gone with it, and that is no failure.
            yield Exits(ExitCode.ITEM_FAILED)
        return calls

    def plan(self, judged: RouteJudgement) -> Planned[RouteTarget | None]:
        verdict, claims = judged.verdict, judged.claims
        return Planned(verdict, judged.evidence, judged.call, judged.target, claims)

    def resource(self, graced: Graced[RouteTarget | None]) -> Resource:
        return HTTPROUTES

    def delete(self, graced: Graced[RouteTarget | None], deleter: Deleter) -> list[Outcome]:
        assert graced.target is not None  # an orphan always has its Gateways
        index = self.upstream.index
        assert index is not None  # the routes were judged on it
        return [
            delete_route(
                graced.verdict,
                graced.target,
                index,
                deleter,
                read=lambda: self.looked(graced),
            )
        ]

    def ahead_of_deletes(self, graced: list[Graced[RouteTarget | None]]) -> None:
        """The routes about to go, their live second looks read a few at once on the upstream
        readers (one after another, 1,000 orphaned clusters cost 1,000 times 4 round trips)."""
        by_ref = {g.verdict.ref: g for g in graced}
        self.looks = ReadAhead(
            self.run.upstream_reads, list(by_ref), lambda ref: self.live_read(by_ref[ref]), AHEAD
        )

    def live_read(self, graced: Graced[RouteTarget | None]) -> LiveRead:
        """The upstream reads a route's delete rests on: in an upstream reader thread."""
        assert graced.target is not None and self.upstream.index is not None
        return read_again(
            graced.verdict,
            graced.target,
            self.upstream.index,
            self.projects.reads.still_gone,
            self.owner_still_gone,
        )

    def looked(self, graced: Graced[RouteTarget | None]) -> LiveRead:
        found = self.looks.take(graced.verdict.ref) if self.looks is not None else None
        seen = found.result() if found is not None else self.live_read(graced)
        look = seen.look
        if graced.verdict.reason == Reason.PROJECT_GONE and look and look.found is Looked.FAILED:
            self.run.project_api_failed(SWEEP, look.detail)
        return seen

    def owner_still_gone(self, owner: UpstreamOwner) -> SecondLook:
        """The upstream HTTPRoute read again, right before deleting: still proven gone?"""
        assert self.upstream.owners is not None  # an owner-gone verdict rests on its read
        return self.upstream.owners.second_look(owner, owner_gone)


def sweep(run: Run, projects: ProjectReads, ahead: Future[UpstreamRead] | None = None) -> None:
    """The routes sweep alone, driven as gcjob/sweeps/__init__.py `execute` drives it."""
    drive(run, Routes(run, RoundProjects(run, projects), ahead))
