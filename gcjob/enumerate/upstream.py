"""What the upstream clusters say about the Gateways downstream routes hang on.

Batched and cached per run: each cluster is probed once (resolves, authenticates, serves
gateway.networking.k8s.io/v1 gateways); each (cluster, namespace) costs one metadata-only
Gateway list, or one GET when a single Gateway is asked for there. Clusters are read at once
(`--upstream-concurrency`), each one's reads in order: a slow or black-holed cluster holds one
reader, and only its own routes wait for it. What they found is merged in cluster order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from gcjob.decide.routes import ClusterStatus, RouteTarget, UpstreamView, is_suspect
from gcjob.enumerate.parallel import SERIAL, Reads
from gcjob.kube import reduce
from gcjob.kube.errors import KubeError, Stopped, UnknownCluster
from gcjob.kube.reader import Reader
from gcjob.kube.resources import GATEWAYS, NAMESPACES


class UpstreamSource(Protocol):
    def reader_for(self, cluster: str) -> Reader:
        """A reader for that cluster; raises UnknownCluster."""
        ...


@dataclass
class ClusterState:
    status: ClusterStatus
    detail: str = ""
    server: str = ""
    reader: Reader | None = None
    routes: int = 0
    gateways_found: int = 0


@dataclass
class Wanted:
    """What the routes ask of their upstream clusters: how many hang on each cluster, and
    which Gateways each (cluster, namespace) must be asked for. Nothing per route: the
    routes sweep builds it as the hub's routes stream in, and keeps no route."""

    routes: Counter[str] = field(default_factory=Counter)
    gateways: dict[str, dict[str, set[str]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(set))
    )

    def add(self, target: RouteTarget) -> None:
        self.routes[target.cluster] += 1
        self.gateways[target.cluster][target.namespace].update(target.gateways)

    def update(self, other: Wanted) -> None:
        self.routes.update(other.routes)
        for cluster, namespaces in other.gateways.items():
            for namespace, names in namespaces.items():
                self.gateways[cluster][namespace].update(names)

    @classmethod
    def of(cls, targets: Iterable[RouteTarget]) -> Wanted:
        wanted = cls()
        for target in targets:
            wanted.add(target)
        return wanted


@dataclass
class _Namespace:
    gateways: frozenset[str] | None = None
    error: str = ""
    exists: bool | None = None
    asked: frozenset[str] = frozenset()  # `gateways` says nothing of names not asked for


@dataclass
class UpstreamIndex:
    source: UpstreamSource
    clusters: dict[str, ClusterState] = field(default_factory=dict)
    _namespaces: dict[tuple[str, str], _Namespace] = field(default_factory=dict)

    def cluster(self, name: str) -> ClusterState:
        if name not in self.clusters:
            self.clusters[name] = self._probe(name)
        return self.clusters[name]

    def _probe(self, name: str) -> ClusterState:
        try:
            reader = self.source.reader_for(name)
        except UnknownCluster as exc:
            return ClusterState(ClusterStatus.UNKNOWN, str(exc))
        except Stopped:
            raise  # the run is over: not a fact about this cluster
        except KubeError as exc:  # configured, but its credentials cannot be loaded
            return ClusterState(ClusterStatus.UNAVAILABLE, str(exc))
        try:
            served = reader.served(GATEWAYS)
        except Stopped:
            raise
        except KubeError as exc:
            reader.close_idle()
            return ClusterState(ClusterStatus.UNAVAILABLE, str(exc), reader.server)
        if not served:
            reader.close_idle()
            return ClusterState(
                ClusterStatus.UNAVAILABLE,
                f"{reader.server} does not serve {GATEWAYS.api_version} gateways",
                reader.server,
            )
        return ClusterState(ClusterStatus.OK, "", reader.server, reader)

    def load(self, wanted: Wanted, suspect_min_routes: int, reads: Reads = SERIAL) -> None:
        """Look up every Gateway wanted, cluster by cluster at once; then distrust clusters
        that found none. Raises Stopped (the first, in cluster order)."""
        routes = wanted.routes
        clusters = sorted(routes)
        found = reads.all([partial(self._read_cluster, c, wanted.gateways[c]) for c in clusters])
        stopped: Stopped | None = None
        for cluster, (state, namespaces, stop) in zip(clusters, found, strict=True):
            stopped = stopped or stop
            if state is None:
                continue  # stopped before it could be probed
            self.clusters[cluster] = state
            state.routes += routes[cluster]
            for namespace, entry in sorted(namespaces.items()):
                self._namespaces[(cluster, namespace)] = entry
                if entry.gateways is not None:
                    state.gateways_found += len(entry.gateways)
        if stopped is not None:
            raise stopped  # what was read so far stays, for the summary
        for state in self.clusters.values():
            if state.status is ClusterStatus.OK and is_suspect(
                state.routes, state.gateways_found, suspect_min_routes
            ):
                state.status = ClusterStatus.SUSPECT
                state.detail = (
                    f"{state.routes} routes hang on Gateways here and none was found; "
                    f"suspected wrong endpoint or emptied cluster (--suspect-min-routes)"
                )

    def _read_cluster(
        self, cluster: str, wanted: dict[str, set[str]]
    ) -> tuple[ClusterState | None, dict[str, _Namespace], Stopped | None]:
        """One cluster's probe (unless done already), then its namespaces' lookups, in a
        reader thread: it only returns what it found, and a stop with it; `load` merges."""
        state = self.clusters.get(cluster)
        namespaces: dict[str, _Namespace] = {}
        try:
            if state is None:
                state = self._probe(cluster)
            if state.status is ClusterStatus.OK:
                assert state.reader is not None
                for namespace, names in sorted(wanted.items()):
                    namespaces[namespace] = self._lookup(state.reader, namespace, names)
        except Stopped as exc:
            return state, namespaces, exc
        finally:
            # Done with this cluster until a deletion's live read, if any: its connection
            # would otherwise stay open for the rest of the run, one per cluster.
            if state is not None and state.reader is not None:
                state.reader.close_idle()
        return state, namespaces, None

    def _lookup(self, reader: Reader, namespace: str, names: set[str]) -> _Namespace:
        asked = frozenset(names)
        try:
            if len(names) == 1:
                (name,) = names
                found = reader.get(GATEWAYS, namespace, name, reduce.name_of)
                return _Namespace(frozenset() if found is None else asked, asked=asked)
            listed = reader.list(GATEWAYS, reduce.name_of, namespace=namespace)
            return _Namespace(frozenset(n for n in listed if n), asked=asked)
        except Stopped:
            raise
        except KubeError as exc:
            return _Namespace(None, str(exc), asked=asked)

    def covers(self, target: RouteTarget) -> bool:
        """Whether `load` asked about everything this target names. A route that appeared
        or changed after the routes were first read may hang on a cluster or a Gateway
        nobody asked about: that a lookup found no such name then proves nothing."""
        state = self.clusters.get(target.cluster)
        if state is None:
            return False
        if state.status not in (ClusterStatus.OK, ClusterStatus.SUSPECT):
            return True  # the cluster's own state decides, whatever the names
        entry = self._namespaces.get((target.cluster, target.namespace))
        return entry is not None and entry.asked.issuperset(target.gateways)

    def namespace_exists(self, cluster: str, namespace: str) -> bool | None:
        """Whether the upstream namespace still exists: None when that cannot be told."""
        entry = self._namespaces.setdefault((cluster, namespace), _Namespace())
        if entry.exists is None:
            reader = self.cluster(cluster).reader
            if reader is None:
                return None
            try:
                entry.exists = reader.get(NAMESPACES, None, namespace, reduce.name_of) is not None
            except KubeError:
                return None
        return entry.exists

    def view(self, target: RouteTarget) -> UpstreamView:
        state = self.cluster(target.cluster)
        entry = self._namespaces.get((target.cluster, target.namespace), _Namespace())
        return UpstreamView(
            cluster_status=state.status,
            cluster_detail=state.detail,
            gateways=entry.gateways,
            lookup_error=entry.error,
            namespace_exists=entry.exists,
        )

    def gateway_exists(self, cluster: str, namespace: str, name: str) -> bool:
        """A live read, right before deleting. Raises KubeError when it cannot be proven."""
        reader = self.cluster(cluster).reader
        if reader is None:
            raise KubeError(f"upstream cluster {cluster} has no reader")
        return reader.get(GATEWAYS, namespace, name, reduce.name_of) is not None

    def summary(self) -> dict[str, dict[str, object]]:
        return {
            name: {
                "status": state.status.value,
                "detail": state.detail,
                "server": state.server,
                "routes": state.routes,
                "gateways_found": state.gateways_found,
            }
            for name, state in sorted(self.clusters.items())
        }
