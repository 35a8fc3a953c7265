"""Reads of the hub, reduced to records and limited to the run's scope."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

from gcjob.domain import (
    COMPANION_LABEL,
    GATEWAY_GROUP,
    HTTPROUTE_KIND,
    ORPHANED_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
)
from gcjob.enumerate.keyset import KeySet
from gcjob.enumerate.parallel import SERIAL, Reads
from gcjob.enumerate.scope import Scope
from gcjob.kube import reduce
from gcjob.kube.access import Collected, Reduce, Sink
from gcjob.kube.errors import ApiError
from gcjob.kube.reader import Reader
from gcjob.kube.resources import (
    COMPANION_RESOURCES,
    HTTPROUTES,
    RESOURCEBINDINGS,
    WORKLOADDEPLOYMENTS,
    Resource,
)
from gcjob.model import Companion, ObjectRef, Route

COMPANION_SELECTOR = f"{COMPANION_LABEL}=true"
# Marked ConfigMaps and Secrets the companions sweep no longer selects (`!=` also matches an
# absent label): a mark must not outlive the object's place in the sweep.
LEFT_COMPANIONS_SELECTOR = f"{ORPHANED_LABEL},{COMPANION_LABEL}!=true"
ROUTE_SELECTOR = f"{UPSTREAM_GROUP_LABEL}={GATEWAY_GROUP},{UPSTREAM_KIND_LABEL}={HTTPROUTE_KIND}"


class HasRef(Protocol):
    @property
    def ref(self) -> ObjectRef: ...


R = TypeVar("R", bound=HasRef)
S = TypeVar("S", bound=Sink)


def _in_scope(reduce_item: Reduce[R], scope: Scope) -> Reduce[R]:
    """Drop out-of-scope objects as they arrive, before anything keeps them."""

    def reduce_in_scope(obj: dict[str, Any]) -> R | None:
        record = reduce_item(obj)
        return record if record is not None and scope.allows(record.ref.namespace) else None

    return reduce_in_scope


def _folds(
    reader: Reader,
    resource: Resource,
    reduce_item: Reduce[R],
    scope: Scope,
    start: Callable[[], S],
    *,
    label_selector: str | None = None,
    metadata_only: bool = True,
) -> list[Callable[[], S]]:
    """One fold per listed namespace (or one for the whole cluster), not yet started."""
    return [
        partial(
            reader.fold,
            resource,
            _in_scope(reduce_item, scope),
            start,
            namespace=namespace,
            label_selector=label_selector,
            metadata_only=metadata_only,
        )
        for namespace in scope.list_targets()
    ]


def scan_in_scope(
    reader: Reader,
    resource: Resource,
    reduce_item: Reduce[R],
    scope: Scope,
    start: Callable[[], S],
    *,
    label_selector: str | None = None,
    metadata_only: bool = True,
    reads: Reads = SERIAL,
) -> list[S]:
    """One sink per listed namespace (or one for the whole cluster), read at once."""
    return reads.all(
        _folds(
            reader,
            resource,
            reduce_item,
            scope,
            start,
            label_selector=label_selector,
            metadata_only=metadata_only,
        )
    )


def read_in_scope(
    reader: Reader,
    resource: Resource,
    reduce_item: Reduce[R],
    scope: Scope,
    *,
    label_selector: str | None = None,
    metadata_only: bool = True,
    reads: Reads = SERIAL,
) -> list[R]:
    sinks: list[Collected[R]] = scan_in_scope(
        reader,
        resource,
        reduce_item,
        scope,
        Collected,
        label_selector=label_selector,
        metadata_only=metadata_only,
        reads=reads,
    )
    # In key order within each listed namespace, whatever order the server listed them in.
    return [record for sink in sinks for record in sorted(sink.records, key=lambda r: r.ref.order)]


def scan_companions(
    reader: Reader, scope: Scope, start: Callable[[], S], reads: Reads = SERIAL
) -> list[S]:
    """Labelled ConfigMaps and Secrets, metadata only (selected on the server), into one sink
    per resource and listed namespace, all read at once: nothing but what the sinks keep
    stays in memory."""
    folds = [
        fold
        for resource in COMPANION_RESOURCES.values()
        for fold in _folds(
            reader,
            resource,
            reduce.companion(resource),
            scope,
            start,
            label_selector=COMPANION_SELECTOR,
        )
    ]
    return reads.all(folds)


# Either route label off its value takes a route out of the sweep: one list for each.
LEFT_ROUTES_SELECTORS = (
    f"{ORPHANED_LABEL},{UPSTREAM_GROUP_LABEL}!={GATEWAY_GROUP}",
    f"{ORPHANED_LABEL},{UPSTREAM_KIND_LABEL}!={HTTPROUTE_KIND}",
)


@dataclass(frozen=True, slots=True)
class Seen:
    ref: ObjectRef


def read_marked_outside_routes(
    reader: Reader, scope: Scope, reads: Reads = SERIAL
) -> list[ObjectRef]:
    """Marked HTTPRoutes in the namespaces in scope that are not (any more) routes NSO copied,
    metadata only, selected on the server; each once."""
    found: dict[tuple[str, str], ObjectRef] = {}
    for selector in LEFT_ROUTES_SELECTORS:
        for seen in read_in_scope(
            reader,
            HTTPROUTES,
            lambda obj: Seen(reduce.object_ref(obj, HTTPROUTES)),
            scope,
            label_selector=selector,
            reads=reads,
        ):
            found.setdefault((seen.ref.namespace, seen.ref.name), seen.ref)
    return sorted(found.values(), key=lambda ref: ref.order)


def read_marked_outside_companions(
    reader: Reader, scope: Scope, reads: Reads = SERIAL
) -> list[Companion]:
    """Marked ConfigMaps and Secrets in the namespaces in scope that are not labelled as
    companions (any more), metadata only, selected on the server."""
    return [
        record
        for resource in COMPANION_RESOURCES.values()
        for record in read_in_scope(
            reader,
            resource,
            reduce.companion(resource),
            scope,
            label_selector=LEFT_COMPANIONS_SELECTOR,
            reads=reads,
        )
    ]


class _WorkloadKeys:
    """One listed namespace's WorkloadDeployments (or all of them), as (namespace, name),
    added as they arrive: the names are never held as strings."""

    def __init__(self, target: str | None) -> None:
        self.target = target
        self.keys = KeySet()
        self.nowhere = ""  # the name of an item that says nothing of where it lives

    def add(self, record: tuple[str, str]) -> None:
        namespace, name = record
        namespace = namespace or self.target or ""
        if namespace:
            self.keys.add(namespace, name)
        elif not self.nowhere:
            self.nowhere = name


def read_workload_index(reader: Reader, scope: Scope, reads: Reads = SERIAL) -> KeySet:
    """Every WorkloadDeployment, as (namespace, name): read unfiltered (nothing guarantees a
    label on them). Raises KubeError when the read fails: then there is no index at all."""
    targets = scope.list_targets()
    sinks = reads.all(
        [
            partial(
                reader.fold,
                WORKLOADDEPLOYMENTS,
                reduce.namespace_and_name,
                partial(_WorkloadKeys, target),
                namespace=target,
            )
            for target in targets
        ]
    )
    index = KeySet()
    for sink in sinks:
        if sink.nowhere:  # filed nowhere, its namespace's companions would look orphaned
            raise ApiError(
                200, "Malformed", f"{sink.nowhere} has no namespace", "workloaddeployments"
            )
        index.update(sink.keys)
    return index.freeze()


def scan_bindings(
    reader: Reader, scope: Scope, start: Callable[[], S], reads: Reads = SERIAL
) -> list[S]:
    # Metadata only: spec.resource is read live for the bindings deleted with a companion.
    return scan_in_scope(reader, RESOURCEBINDINGS, reduce.binding, scope, start, reads=reads)


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


def read_routes(reader: Reader, scope: Scope, reads: Reads = SERIAL) -> list[Route]:
    return read_in_scope(
        reader,
        HTTPROUTES,
        reduce.route,
        scope,
        label_selector=ROUTE_SELECTOR,
        metadata_only=False,
        reads=reads,
    )
