"""Reads of the hub, reduced to records and limited to the run's scope."""

from __future__ import annotations

from collections import defaultdict
from typing import Protocol, TypeVar

from gcjob.domain import (
    COMPANION_LABEL,
    GATEWAY_GROUP,
    HTTPROUTE_KIND,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
)
from gcjob.enumerate.scope import Scope
from gcjob.kube import reduce
from gcjob.kube.access import Reduce
from gcjob.kube.reader import Reader
from gcjob.kube.resources import (
    COMPANION_RESOURCES,
    HTTPROUTES,
    RESOURCEBINDINGS,
    WORKLOADDEPLOYMENTS,
    Resource,
)
from gcjob.model import Binding, Companion, ObjectRef, Route

COMPANION_SELECTOR = f"{COMPANION_LABEL}=true"
ROUTE_SELECTOR = f"{UPSTREAM_GROUP_LABEL}={GATEWAY_GROUP},{UPSTREAM_KIND_LABEL}={HTTPROUTE_KIND}"


class HasRef(Protocol):
    @property
    def ref(self) -> ObjectRef: ...


R = TypeVar("R", bound=HasRef)


def read_in_scope(
    reader: Reader,
    resource: Resource,
    reduce_item: Reduce[R],
    scope: Scope,
    *,
    label_selector: str | None = None,
    metadata_only: bool = True,
) -> list[R]:
    records: list[R] = []
    for namespace in scope.list_targets():
        page = reader.list(
            resource,
            reduce_item,
            namespace=namespace,
            label_selector=label_selector,
            metadata_only=metadata_only,
        )
        records.extend(r for r in page if scope.allows(r.ref.namespace))
    return records


def read_companions(reader: Reader, scope: Scope) -> list[Companion]:
    """Labelled ConfigMaps and Secrets, metadata only (selected on the server)."""
    companions: list[Companion] = []
    for resource in COMPANION_RESOURCES.values():
        companions.extend(
            read_in_scope(
                reader,
                resource,
                reduce.companion(resource),
                scope,
                label_selector=COMPANION_SELECTOR,
            )
        )
    return companions


def read_workload_index(reader: Reader, scope: Scope) -> dict[str, frozenset[str]]:
    """Names of every WorkloadDeployment, by namespace: read unfiltered (nothing guarantees a
    label on them). Raises KubeError when the read fails: then there is no index at all."""
    index: dict[str, set[str]] = defaultdict(set)
    for namespace in scope.list_targets():
        for found in reader.list(
            WORKLOADDEPLOYMENTS, reduce.namespace_and_name, namespace=namespace
        ):
            index[found[0]].add(found[1])
    return {ns: frozenset(names) for ns, names in index.items()}


def read_bindings(reader: Reader, scope: Scope) -> list[Binding]:
    # spec.resource is read again, live, for the bindings gcjob deletes with a companion.
    return read_in_scope(reader, RESOURCEBINDINGS, reduce.binding, scope)


def read_routes(reader: Reader, scope: Scope) -> list[Route]:
    return read_in_scope(
        reader, HTTPROUTES, reduce.route, scope, label_selector=ROUTE_SELECTOR, metadata_only=False
    )
