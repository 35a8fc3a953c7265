"""What the downstream-copies sweep reads of the hub: the kinds NSO copies that the hub
serves, and each one's objects carrying the upstream labels, metadata only.

Which kinds: a fixed list (NSO's replicator defaults, plus the Gateways, HTTPRoutes and
EndpointSlices its gateway controller writes), intersected with what the hub serves; a kind
is matched by group and kind, whatever version the hub serves, and discovery never adds one.
HTTPRoute copies are the routes sweep's: read here only to know which anchors own them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard, TypeVar, runtime_checkable

from gcjob.domain import (
    GATEWAY_GROUP,
    GATEWAY_SYNC_LABEL,
    HTTPROUTE_KIND,
    ORPHANED_LABEL,
    REPLICATED_KINDS,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_LABELS,
    kind_name,
)
from gcjob.enumerate.hub import Seen, listed_in_scope, scan_in_scope
from gcjob.enumerate.parallel import SERIAL, Reads
from gcjob.enumerate.scope import Scope
from gcjob.kube import reduce
from gcjob.kube.access import Sink
from gcjob.kube.discovery import resolve
from gcjob.kube.reader import Reader
from gcjob.kube.resources import Resource
from gcjob.model import ObjectRef, Replica

S = TypeVar("S", bound=Sink)

# Owned by anchors too, judged by the routes sweep.
ROUTES_KIND = (GATEWAY_GROUP, HTTPROUTE_KIND)
# Every copy carries the five labels; one existence test selects them on the server. Secrets
# too: one without gateway-sync is no copy (kept), but an anchor it names must stay, and what
# is read of a Secret's metadata is only what gcjob/domain.py secret_as_kept keeps.
COPY_SELECTOR = UPSTREAM_KIND_LABEL
# Marked objects that carry no `upstream-kind` label (any more): out of this sweep's sight.
LEFT_COPIES_SELECTOR = f"{ORPHANED_LABEL},!{UPSTREAM_KIND_LABEL}"
KEPT_LABELS = (*UPSTREAM_LABELS, GATEWAY_SYNC_LABEL)


@runtime_checkable
class Discovering(Protocol):
    def kinds(self, group: str) -> Mapping[str, tuple[Resource, ...]] | None: ...


def discovers(hub: object) -> TypeGuard[Discovering]:
    """Does the hub answer discovery: a live one does, a snapshot only when it carries the
    hub's (gcjob/kube/snapshot.py: its APIResourceLists). A dump of collections alone says
    which kinds were dumped, not which the hub serves."""
    return isinstance(hub, Discovering) and getattr(hub, "discovers", True) is True


@dataclass(frozen=True, slots=True)
class HubKinds:
    """The kinds this run sweeps, those it reads only for their anchors, and those it skips."""

    swept: tuple[Resource, ...]
    owners_only: tuple[Resource, ...]  # dropped by a flag, or the routes sweep's: read for
    #                                     the anchors they name, never judged here
    not_served: tuple[tuple[str, str], ...]  # (kind name, why): reported once, not an error


def hub_kinds(hub: Discovering, dropped: Iterable[str]) -> HubKinds:
    """The default list intersected with what the hub serves. Raises KubeError when a
    group's discovery fails: a kind not known to be served is not known to be absent."""
    drop = set(dropped)
    swept: list[Resource] = []
    owners_only: list[Resource] = []
    not_served: list[tuple[str, str]] = []
    served: dict[str, Mapping[str, tuple[Resource, ...]] | None] = {}
    for group, kind in (*REPLICATED_KINDS, ROUTES_KIND):
        if group not in served:
            served[group] = hub.kinds(group)
        resource = resolve(served[group], group, kind, namespaced=True)
        if not isinstance(resource, Resource):
            not_served.append((kind_name(group, kind), resource))
        elif (group, kind) == ROUTES_KIND or kind_name(group, kind) in drop:
            owners_only.append(resource)
        else:
            swept.append(resource)
    return HubKinds(tuple(swept), tuple(owners_only), tuple(not_served))


def replica(resource: Resource) -> Callable[[dict[str, Any]], Replica]:
    def reduce_replica(obj: dict[str, Any]) -> Replica:
        labels = reduce.labels_of(obj, KEPT_LABELS)
        return Replica(
            reduce.object_ref(obj, resource),
            resource.group,
            labels,
            reduce.owners(obj),
            reduce.protect(obj),
        )

    return reduce_replica


def scan_kind(
    hub: Reader,
    resource: Resource,
    scope: Scope,
    start: Callable[[], S],
    reads: Reads = SERIAL,
) -> list[S]:
    """One kind's objects carrying the upstream labels, metadata only, one sink per listed
    namespace (only namespaces in scope)."""
    return scan_in_scope(
        hub, resource, replica(resource), scope, start, label_selector=COPY_SELECTOR, reads=reads
    )


def scan_marked_outside_copies(
    hub: Reader, kinds: Iterable[Resource], scope: Scope, reads: Reads = SERIAL
) -> list[tuple[Resource, ObjectRef]]:
    """The marked objects of the swept kinds in scope that carry no `upstream-kind` label (any
    more), metadata only, selected on the server: a mark this sweep wrote on one is removed,
    or it would count from its old time when the label came back."""
    found: list[tuple[Resource, ObjectRef]] = []
    for resource in kinds:

        def seen(obj: dict[str, Any], resource: Resource = resource) -> Seen:
            return Seen(reduce.object_ref(obj, resource))

        marked = listed_in_scope(
            hub, resource, seen, scope, label_selector=LEFT_COPIES_SELECTOR, reads=reads
        )
        found += [(resource, each.ref) for each in marked]
    return found
