"""What the routes sweep reads of the hub: the HTTPRoutes NSO copied, whole, and marked
HTTPRoutes that left the sweep. (What it reads upstream is gcjob/enumerate/upstream.py.)"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import TypeVar

from gcjob.domain import (
    GATEWAY_GROUP,
    HTTPROUTE_KIND,
    ORPHANED_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
)
from gcjob.enumerate.hub import Seen, listed_in_scope, scan_in_scope
from gcjob.enumerate.owners import OwnerLookups
from gcjob.enumerate.parallel import SERIAL, Reads
from gcjob.enumerate.scope import Scope
from gcjob.enumerate.upstream import UpstreamIndex
from gcjob.kube import reduce
from gcjob.kube.access import Sink
from gcjob.kube.reader import Reader
from gcjob.kube.resources import HTTPROUTES
from gcjob.model import (
    ClusterStatus,
    ObjectRef,
    ProjectCall,
    Route,
    RouteTarget,
    UpstreamOwner,
    UpstreamView,
)

S = TypeVar("S", bound=Sink)

ROUTE_SELECTOR = f"{UPSTREAM_GROUP_LABEL}={GATEWAY_GROUP},{UPSTREAM_KIND_LABEL}={HTTPROUTE_KIND}"
# Either route label off its value takes a route out of the sweep: one list for each.
LEFT_ROUTES_SELECTORS = (
    f"{ORPHANED_LABEL},{UPSTREAM_GROUP_LABEL}!={GATEWAY_GROUP}",
    f"{ORPHANED_LABEL},{UPSTREAM_KIND_LABEL}!={HTTPROUTE_KIND}",
)


def scan_marked_outside_routes(
    reader: Reader, scope: Scope, reads: Reads = SERIAL
) -> list[ObjectRef]:
    """Marked HTTPRoutes in the namespaces in scope that are not (any more) routes NSO copied,
    metadata only, selected on the server; each once."""
    found: dict[tuple[str, str], ObjectRef] = {}
    for selector in LEFT_ROUTES_SELECTORS:
        for seen in listed_in_scope(
            reader,
            HTTPROUTES,
            lambda obj: Seen(reduce.object_ref(obj, HTTPROUTES)),
            scope,
            label_selector=selector,
            reads=reads,
        ):
            found.setdefault((seen.ref.namespace, seen.ref.name), seen.ref)
    return sorted(found.values(), key=lambda ref: ref.order)


def scan_routes(
    reader: Reader, scope: Scope, start: Callable[[], S], reads: Reads = SERIAL
) -> list[S]:
    """The hub's upstream HTTPRoute copies, whole (spec.parentRefs is needed), into one sink
    per listed namespace, read at once."""
    return scan_in_scope(
        reader,
        HTTPROUTES,
        reduce.route,
        scope,
        start,
        label_selector=ROUTE_SELECTOR,
        metadata_only=False,
        reads=reads,
    )


def listed_routes(reader: Reader, scope: Scope, reads: Reads = SERIAL) -> list[Route]:
    return listed_in_scope(
        reader,
        HTTPROUTES,
        reduce.route,
        scope,
        label_selector=ROUTE_SELECTOR,
        metadata_only=False,
        reads=reads,
    )


class IndexedUpstream:
    """The batch sweep's world for judge.py (UpstreamWorld): the upstream index loaded for
    every route at once by the first read; a route it did not ask about has no view."""

    def __init__(
        self,
        index: UpstreamIndex,
        projects: Mapping[str, ProjectCall] | None = None,
        owners: OwnerLookups | None = None,
    ) -> None:
        self.index = index
        self.projects = projects or {}
        self.owners = owners

    def view(self, target: RouteTarget) -> UpstreamView | None:
        if not self.index.covers(target):
            return None
        owner = None
        if self.owners is not None and target.owner is not None:
            owner = self.owners.read(target.owner)
        return replace(
            self.index.view(target), project=self.projects.get(target.cluster), owner=owner
        )


def load_owners(
    index: UpstreamIndex, targets: Iterable[RouteTarget], lookups: OwnerLookups
) -> None:
    """The upstream HTTPRoutes of the routes that have a Gateway found upstream (a route
    without one is decided by the Gateway rule alone): one metadata-only list per (cluster,
    namespace), a GET for each one not listed. Raises Stopped."""
    lookups.load(owners_to_read(index, targets))


def owners_to_read(index: UpstreamIndex, targets: Iterable[RouteTarget]) -> Iterator[UpstreamOwner]:
    """The upstream HTTPRoutes `load_owners` reads: those of the routes that have a Gateway
    found upstream, each as often as its routes name it. A generator: once OwnerLookups.load
    has gathered them, it lets go of `targets` (sweep.read holds no other reference)."""
    for target in targets:
        if target.owner is None or not index.covers(target):
            continue
        state = index.clusters[target.cluster]
        if state.status is not ClusterStatus.OK:
            continue
        found = index.view(target).gateways
        if found and not found.isdisjoint(target.gateways):
            yield target.owner


def answered_clusters(index: UpstreamIndex) -> list[str]:
    """The clusters whose control planes answered the routes sweep (what vouches for the
    Project API: decide/projects.py)."""
    return [
        name
        for name, state in index.clusters.items()
        if state.status in (ClusterStatus.OK, ClusterStatus.SUSPECT)
    ]
