"""What the upstream clusters say about the Gateways downstream routes hang on.

Batched and cached per run: each cluster is probed once (resolves, authenticates, serves
gateway.networking.k8s.io/v1 gateways); each (cluster, namespace) costs one metadata-only
Gateway list, or one GET when a single Gateway is asked for there. Clusters are read at once
(`--upstream-concurrency`), each one's reads in order: a slow or black-holed cluster holds one
reader, and only its own routes wait for it. What each found is kept as soon as it is read.

Only the names some route asked for are kept from a list (a hostile list of millions of names
costs nothing but its read budget), and only they count as found. A cluster where any lookup
fails (a 403 on list, a read budget run out, retries used up) is unavailable as a whole: its
other namespaces are not read, and none of its routes is decided on a part of its answers.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from gcjob.brakes import suspect_detail, suspect_groups
from gcjob.enumerate.parallel import SERIAL, Reads
from gcjob.enumerate.shared import Found, Seen, seen
from gcjob.kube import reduce
from gcjob.kube.errors import KubeError, Stopped, UnknownCluster
from gcjob.kube.oneofeach import OneOfEach
from gcjob.kube.reader import Reader
from gcjob.kube.resources import GATEWAYS, NAMESPACES
from gcjob.model import ClusterStatus, RouteTarget, UpstreamView
from gcjob.redact import redact


class UpstreamSource(Protocol):
    def reader_for(self, cluster: str) -> Reader:
        """A reader for that cluster; raises UnknownCluster."""
        ...


# Sets of Gateway names, one object for every equal set (most clusters ask about and find the
# same few names: a set is 216 bytes, two a cluster for the run).
SHARED_NAMES: OneOfEach[frozenset[str], frozenset[str]] = OneOfEach()


def _shared(names: frozenset[str]) -> frozenset[str]:
    return SHARED_NAMES.kept(names, names)


@dataclass(frozen=True, slots=True)  # one per upstream cluster, for the run: equal ones one
class ClusterState:
    status: ClusterStatus
    detail: str = ""
    server: str = ""  # "" for one that answered its probe: its reader says it (`server_of`)
    # It answered its probe: it may be read again (a deletion's live reads), with a reader
    # made then (one kept for each cluster was about 1 KiB a cluster for the run).
    probed: bool = False
    routes: int = 0
    gateways_found: int = 0  # of those some route asked for
    # When suspect: the hub namespaces whose routes found a Gateway here.
    vouched: frozenset[str] = frozenset()


# One ClusterState for every equal one: most clusters end alike (answered, one route, its
# Gateway found): one each was about 90 bytes a cluster for the run.
SHARED_STATES: OneOfEach[ClusterState, ClusterState] = OneOfEach()


def _kept(state: ClusterState) -> ClusterState:
    return SHARED_STATES.kept(state, state)


# A set costs 216 bytes even for one pair, and there is about one group per route (25,000
# at 100k): a group asks in a tuple while it asks for this few, in a set past it.
FEW_ASKED = 8


@dataclass(slots=True)  # one per (cluster, hub namespace): about one per route
class Group:
    """The routes of one hub namespace that hang on one cluster."""

    routes: int = 0
    # (upstream namespace, Gateway), each once: a tuple while few (FEW_ASKED), else a set.
    asked: tuple[tuple[str, str], ...] | set[tuple[str, str]] = ()

    def ask(self, pairs: Iterable[tuple[str, str]]) -> None:
        for pair in pairs:
            if isinstance(self.asked, set):
                self.asked.add(pair)
            elif pair in self.asked:
                continue
            elif len(self.asked) < FEW_ASKED:
                self.asked += (pair,)
            else:
                self.asked = {*self.asked, pair}


# A cluster's groups: almost always one hub namespace's routes hang on a cluster, and its
# group is held with that namespace as a pair; a map only past one (a map of one group per
# cluster was about 190 bytes a cluster, through the hub's read and the Gateways' reads).
ClusterGroups = tuple[str, Group] | dict[str, Group]


@dataclass
class Wanted:
    """What the routes ask of their upstream clusters, per cluster and hub namespace (a
    tenant): how many routes, and which (upstream namespace, Gateway) they asked for, so a
    Gateway vouches only for those who asked. How many routes hang on a cluster and which
    Gateways each of its namespaces is asked for are read from these (kept apart as well, they
    were about 500 bytes a cluster). Nothing per route: the routes sweep builds it as the
    hub's routes stream in, and keeps no route."""

    groups: dict[str, ClusterGroups] = field(default_factory=dict)

    def add(self, target: RouteTarget) -> None:
        group = self._group(target.cluster, target.route_namespace)
        group.routes += 1
        group.ask((target.namespace, name) for name in target.gateways)

    def _group(self, cluster: str, route_namespace: str) -> Group:
        held = self.groups.get(cluster)
        if held is None:
            group = Group()
            self.groups[cluster] = (route_namespace, group)
            return group
        if isinstance(held, tuple):
            if held[0] == route_namespace:
                return held[1]
            held = self.groups[cluster] = {held[0]: held[1]}
        found = held.get(route_namespace)
        if found is None:
            found = held[route_namespace] = Group()
        return found

    def update(self, other: Wanted) -> None:
        for cluster in other.groups:
            for route_namespace, group in other.of_cluster(cluster).items():
                mine = self._group(cluster, route_namespace)
                mine.routes += group.routes
                mine.ask(group.asked)

    def of_cluster(self, cluster: str) -> dict[str, Group]:
        """The cluster's groups by hub namespace (a new map of one where one is held)."""
        held = self.groups.get(cluster)
        if held is None:
            return {}
        return {held[0]: held[1]} if isinstance(held, tuple) else held

    def pop(self, cluster: str) -> dict[str, Group]:
        """The cluster's groups, no longer held."""
        groups = self.of_cluster(cluster)
        self.groups.pop(cluster, None)
        return groups

    def routes(self, cluster: str) -> int:
        return sum(group.routes for group in self.of_cluster(cluster).values())

    def gateways(self, cluster: str) -> dict[str, set[str]]:
        """The Gateways each upstream namespace of `cluster` is asked for."""
        asked: dict[str, set[str]] = defaultdict(set)
        for group in self.of_cluster(cluster).values():
            for namespace, name in group.asked:
                asked[namespace].add(name)
        return asked

    @classmethod
    def of(cls, targets: Iterable[RouteTarget]) -> Wanted:
        wanted = cls()
        for target in targets:
            wanted.add(target)
        return wanted


@dataclass(frozen=True, slots=True)  # one per (cluster, upstream namespace), for the run
class _Namespace:
    gateways: frozenset[str] | None = None
    error: str = ""
    exists: bool | None = None
    asked: frozenset[str] = frozenset()  # `gateways` says nothing of names not asked for
    namespace: str = ""  # which (kept with it, so that a cluster's one needs no pair)


# One _Namespace for every equal one that names no error: most clusters' namespaces were asked
# and found alike (one each, and its (cluster, namespace) key, were about 120 bytes a cluster
# through the owners' reads). An error names its cluster: not kept past the cluster's own.
SHARED_NAMESPACES: OneOfEach[_Namespace, _Namespace] = OneOfEach()


def _one_of_each(entry: _Namespace) -> _Namespace:
    return entry if entry.error else SHARED_NAMESPACES.kept(entry, entry)


# A cluster's namespaces: almost always one, held alone (it names its namespace); a map past
# one.
ClusterNamespaces = _Namespace | dict[str, _Namespace]


@dataclass
class UpstreamIndex:
    source: UpstreamSource
    # What the lookups found, handed on to another sweep's reads this round (shared.py).
    found: Found | None = None
    clusters: dict[str, ClusterState] = field(default_factory=dict)
    _namespaces: dict[str, ClusterNamespaces] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _reading: dict[tuple[str, str], threading.Lock] = field(default_factory=dict)

    def cluster(self, name: str) -> ClusterState:
        if name not in self.clusters:
            state, reader = self._probe(name)
            if reader is not None:
                reader.close_idle()
            self.clusters[name] = _kept(state)
        return self.clusters[name]

    def _probe(self, name: str) -> tuple[ClusterState, Reader | None]:
        """The cluster's state once probed, and the reader that probed it if it answered."""
        try:
            reader = self.source.reader_for(name)
        except UnknownCluster as exc:
            return ClusterState(ClusterStatus.UNKNOWN, redact(str(exc))), None
        except Stopped:
            raise  # the run is over: not a fact about this cluster
        except KubeError as exc:  # configured, but its credentials cannot be loaded
            return ClusterState(ClusterStatus.UNAVAILABLE, redact(str(exc))), None
        try:
            served = reader.served(GATEWAYS)
        except Stopped:
            raise
        except KubeError as exc:
            reader.close_idle()
            return ClusterState(ClusterStatus.UNAVAILABLE, redact(str(exc)), reader.server), None
        if not served:
            reader.close_idle()
            detail = f"{reader.server} does not serve {GATEWAYS.api_version} gateways"
            return ClusterState(ClusterStatus.UNAVAILABLE, detail, reader.server), None
        # Its URL is not kept (about 150 bytes a cluster): the report asks its reader again.
        return ClusterState(ClusterStatus.OK, "", probed=True), reader

    def _reader(self, cluster: str) -> Reader:
        """A reader of a cluster that answered its probe, made for this use. Raises
        KubeError."""
        if not self.cluster(cluster).probed:
            raise KubeError(f"upstream cluster {cluster} did not answer its probe")
        return self.source.reader_for(cluster)

    def load(self, wanted: Wanted, suspect_min_routes: int, reads: Reads = SERIAL) -> None:
        """Look up every Gateway wanted, cluster by cluster at once, and distrust the routes of
        a cluster that found none of theirs, each cluster as soon as it is read. Empties
        `wanted` as it goes: a cluster's groups are dropped once it is read (held until every
        cluster was, they were about 400 bytes a cluster through the longest part of the
        read). Raises Stopped (the first, in cluster order)."""
        clusters = sorted(wanted.groups)
        stops = reads.map(lambda c: self._load_cluster(c, wanted, suspect_min_routes), clusters)
        stopped = next((stop for stop in stops if stop is not None), None)
        if stopped is not None:
            raise stopped  # what was read so far stays, for the summary

    def _load_cluster(self, cluster: str, wanted: Wanted, min_routes: int) -> Stopped | None:
        """One cluster read, in a reader thread, and kept at once: its state (judged, unless
        it stopped) and its namespaces' lookups. Returns the stop it ended with."""
        state, namespaces, stop = self._read_cluster(cluster, wanted.gateways(cluster))
        routes = wanted.routes(cluster)
        groups = wanted.pop(cluster)  # only this thread reads this cluster's
        if state is None:
            return stop  # stopped before it could be probed
        state = replace(state, routes=state.routes + routes)
        with self._lock:
            for namespace, entry in sorted(namespaces.items()):
                self._keep(cluster, namespace, entry)
        if stop is None and state.status is ClusterStatus.OK:
            state = self._judged(cluster, state, groups, min_routes)
        with self._lock:
            self.clusters[cluster] = _kept(state)
        return stop

    def _judged(
        self, cluster: str, state: ClusterState, groups: dict[str, Group], min_routes: int
    ) -> ClusterState:
        """Count the Gateways found that some route asked for, and distrust the hub
        namespaces whose routes found none of theirs (suspect_groups)."""
        found: dict[str, int] = {}
        for route_namespace, group in groups.items():
            found[route_namespace] = sum(
                1 for namespace, name in group.asked if self._found(cluster, namespace, name)
            )
        asked = {pair for group in groups.values() for pair in group.asked}
        state = replace(
            state, gateways_found=sum(1 for pair in asked if self._found(cluster, *pair))
        )
        suspect = suspect_groups(
            {ns: (group.routes, found[ns]) for ns, group in groups.items()}, min_routes
        )
        if not suspect:
            return state
        held = sum(groups[ns].routes for ns in suspect)
        return replace(
            state,
            # Read only of a suspect cluster (view): not kept for the others, one set each.
            vouched=frozenset(ns for ns, count in found.items() if count),
            status=ClusterStatus.SUSPECT,
            detail=suspect_detail(held, len(suspect)),
        )

    def _entry(self, cluster: str, namespace: str) -> _Namespace | None:
        held = self._namespaces.get(cluster)
        if isinstance(held, _Namespace):
            return held if held.namespace == namespace else None
        return held.get(namespace) if held is not None else None

    def _keep(self, cluster: str, namespace: str, entry: _Namespace) -> None:
        """Keeps what `cluster`'s `namespace` said; called with the lock held."""
        entry = _one_of_each(replace(entry, namespace=namespace))
        held = self._namespaces.get(cluster)
        if held is None or (isinstance(held, _Namespace) and held.namespace == namespace):
            self._namespaces[cluster] = entry
        elif isinstance(held, _Namespace):
            self._namespaces[cluster] = {held.namespace: held, namespace: entry}
        else:
            held[namespace] = entry

    def _found(self, cluster: str, namespace: str, name: str) -> bool:
        entry = self._entry(cluster, namespace)
        return entry is not None and entry.gateways is not None and name in entry.gateways

    def _read_cluster(
        self, cluster: str, wanted: dict[str, set[str]]
    ) -> tuple[ClusterState | None, dict[str, _Namespace], Stopped | None]:
        """One cluster's probe (unless done already), then its namespaces' lookups, in a
        reader thread: it only returns what it found, and a stop with it; `load` merges."""
        state = self.clusters.get(cluster)
        reader: Reader | None = None
        namespaces: dict[str, _Namespace] = {}
        try:
            if state is None:
                state, reader = self._probe(cluster)
            elif state.status is ClusterStatus.OK:
                try:
                    reader = self._reader(cluster)  # probed before (explain)
                except Stopped:
                    raise
                except KubeError as exc:
                    unavailable = ClusterStatus.UNAVAILABLE
                    state = ClusterState(unavailable, redact(str(exc)))
            if state.status is ClusterStatus.OK and reader is not None:
                for namespace, names in sorted(wanted.items()):
                    entry = self._lookup(cluster, reader, namespace, names)
                    namespaces[namespace] = entry
                    if entry.gateways is None:
                        # Its other answers decide nothing either: a cluster that answers only
                        # part of what it is asked is not trusted with the rest, and its
                        # failure must show as the cluster's, where alerts look.
                        state = replace(
                            state,
                            status=ClusterStatus.UNAVAILABLE,
                            detail=f"Gateway lookup in namespace {namespace} failed: {entry.error}",
                        )
                        break
        except Stopped as exc:
            return state, namespaces, exc
        finally:
            # Done with this cluster until a deletion's live read, if any: its connection
            # would otherwise stay open for the rest of the run, one per cluster.
            if reader is not None:
                reader.close_idle()
        return state, namespaces, None

    def _lookup(self, cluster: str, reader: Reader, namespace: str, names: set[str]) -> _Namespace:
        asked = _shared(frozenset(names))
        # What is found is kept by the name asked for, not the one its answer spelled again (a
        # string each, held with what was found until the copies sweep takes it).
        by_name = {name: name for name in asked}

        def asked_one(obj: dict[str, Any]) -> tuple[str, Seen] | None:
            found = seen(obj)  # kept while the list streams in only if asked for
            name = by_name.get(found[0]) if found is not None else None
            return None if found is None or name is None else (name, found[1])

        try:
            if len(names) == 1:
                (name,) = names
                got = reader.get(GATEWAYS, namespace, name, seen)
                listed = {name: got[1]} if got is not None and got[0] == name else {}
            else:
                listed = dict(reader.list(GATEWAYS, asked_one, namespace=namespace))
        except Stopped:
            raise
        except KubeError as exc:
            return _Namespace(None, redact(str(exc)), asked=asked)
        if self.found is not None:
            self.found.add(cluster, GATEWAYS, namespace, listed)
        return _Namespace(_shared(frozenset(listed)), asked=asked)

    def covers(self, target: RouteTarget) -> bool:
        """Whether `load` asked about everything this target names. A route that appeared
        or changed after the routes were first read may hang on a cluster or a Gateway
        nobody asked about: that a lookup found no such name then proves nothing."""
        state = self.clusters.get(target.cluster)
        if state is None:
            return False
        if state.status not in (ClusterStatus.OK, ClusterStatus.SUSPECT):
            return True  # the cluster's own state decides, whatever the names
        entry = self._entry(target.cluster, target.namespace)
        return entry is not None and entry.asked.issuperset(target.gateways)

    def namespace_exists(self, cluster: str, namespace: str) -> bool | None:
        """Whether the upstream namespace still exists: None when that cannot be told. Read
        once (from the upstream readers too, a deletion's live reads read ahead: one at a time
        per namespace)."""
        with self._lock:
            guard = self._reading.setdefault((cluster, namespace), threading.Lock())
        with guard:
            entry = self._entry(cluster, namespace) or _Namespace()
            if entry.exists is None:
                try:
                    reader = self._reader(cluster)
                    found = reader.get(NAMESPACES, None, namespace, reduce.name_of)
                except KubeError:
                    return None
                entry = replace(entry, exists=found is not None)
                with self._lock:
                    self._keep(cluster, namespace, entry)
            return entry.exists

    def view(self, target: RouteTarget) -> UpstreamView:
        state = self.cluster(target.cluster)
        entry = self._entry(target.cluster, target.namespace) or _Namespace()
        status = state.status
        if status is ClusterStatus.SUSPECT and target.route_namespace in state.vouched:
            status = ClusterStatus.OK  # its own hub namespace's routes found theirs here
        return UpstreamView(
            cluster_status=status,
            cluster_detail=state.detail,
            gateways=entry.gateways,
            lookup_error=entry.error,
            namespace_exists=entry.exists,
        )

    def gateway_exists(self, cluster: str, namespace: str, name: str) -> bool:
        """A live read, right before deleting. Raises KubeError when it cannot be proven."""
        return self._reader(cluster).get(GATEWAYS, namespace, name, reduce.name_of) is not None

    def lookups_done(self) -> None:
        """The routes are judged and acted on: what the Gateway lookups found is not asked for
        again. Only each cluster's state stays, for the summary (what each namespace was asked
        and found was about 170 bytes a cluster, held through the copies sweep's reads)."""
        with self._lock:
            self._namespaces = {}
            self._reading = {}

    def summary(self) -> dict[str, dict[str, object]]:
        return dict(self.summaries())

    def summaries(self) -> Iterator[tuple[str, dict[str, object]]]:
        """Each cluster's state, by name, made one at a time (10,000 at once were tens of MiB
        at the run's end)."""
        for name in sorted(self.clusters):
            state = self.clusters[name]
            yield (
                name,
                {
                    "status": state.status.value,
                    "detail": state.detail,
                    "server": self.server_of(name, state),
                    "routes": state.routes,
                    "gateways_found": state.gateways_found,
                },
            )

    def server_of(self, name: str, state: ClusterState) -> str:
        """The server a cluster's reads went to: kept where its probe failed, else its reader's
        (made again, which reads nothing)."""
        if state.server or not state.probed:
            return state.server
        try:
            return self.source.reader_for(name).server
        except KubeError:
            return ""

    def status_counts(self) -> dict[str, int]:
        """How many clusters ended in each status, by its name."""
        return dict(sorted(Counter(s.status.value for s in self.clusters.values()).items()))
