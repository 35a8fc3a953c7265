"""Request building, apart from transport: every request gcjob can make, as plain data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gcjob.kube.resources import Resource

JSON = "application/json"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
JSON_PATCH = "application/json-patch+json"
# Aggregated discovery (apidiscovery.k8s.io/v2, KEP-3352, GA in 1.30): every group, version
# and resource in one answer of /api or /apis. A server that does not serve it answers the
# legacy document (APIVersions, APIGroupList) as plain JSON.
AGGREGATED_DISCOVERY = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
)

Body = dict[str, Any] | list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    accept: str = JSON
    body: Body | None = field(default=None, hash=False)
    content_type: str | None = None
    # A strong ETag this answer may be told unchanged from (`304 Not Modified`): only the
    # discovery documents shared by a run's upstream clusters (discovery.SharedDocuments).
    if_none_match: str | None = None


def _accept(resource: Resource, metadata_only: bool, media: str) -> str:
    # A Secret's payload is never asked for: with no JSON fallback a server that cannot
    # strip it answers 406 instead of sending it.
    if resource.sensitive:
        return media
    return f"{media},{JSON}" if metadata_only else JSON


def discovery(resource: Resource) -> Request:
    return Request("GET", resource.group_version_path)


def aggregated_discovery(core: bool) -> Request:
    """The core group's (`/api`) or every other group's (`/apis`) aggregated discovery."""
    return Request("GET", "/api" if core else "/apis", accept=AGGREGATED_DISCOVERY)


def version() -> Request:
    """The server's release (`gitVersion`, `major`, `minor`): how lists are read
    (gcjob/kube/liststrategy.py)."""
    return Request("GET", "/version")


def group_discovery(group: str) -> Request:
    """An APIGroup (its versions); the core group has one version and no such document."""
    return Request("GET", f"/apis/{group}")


def version_discovery(group: str, version: str) -> Request:
    """An APIResourceList: the resources of one group version."""
    return Request("GET", f"/apis/{group}/{version}" if group else f"/api/{version}")


def list_page(
    resource: Resource,
    *,
    namespace: str | None,
    label_selector: str | None,
    limit: int,
    continue_token: str | None,
    metadata_only: bool,
    from_cache: bool = False,
    field_selector: str | None = None,
) -> Request:
    """`from_cache`: the first page comes from the API server's watch cache
    (`resourceVersion=0`, any version not older than the cache's), not from etcd. A 1.25
    server then ignores `limit` and sends everything; a newer one may paginate, and its
    continue token carries the version (no resourceVersion may go with a continue token)."""
    query: list[tuple[str, str]] = [("limit", str(limit))]
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    if continue_token:
        query.append(("continue", continue_token))
    elif from_cache:
        query += [("resourceVersion", "0"), ("resourceVersionMatch", "NotOlderThan")]
    return Request(
        "GET",
        resource.path(namespace),
        tuple(query),
        accept=_accept(resource, metadata_only, METADATA_LIST),
    )


def get(resource: Resource, namespace: str | None, name: str, *, metadata_only: bool) -> Request:
    return Request(
        "GET", resource.path(namespace, name), accept=_accept(resource, metadata_only, METADATA)
    )


# A delete takes exactly what was judged: never, through the hub's garbage collector, an
# object that names it as its owner. With Orphan the collector removes the deleted object's
# ownerReference from each dependent, then lets it go (docs/rules.md, "A delete takes exactly
# what was judged").
PROPAGATION_POLICY = "Orphan"


def delete(resource: Resource, namespace: str | None, name: str, uid: str, rv: str) -> Request:
    """A delete pinned to what was observed (a 409 then means "changed since I looked"),
    orphaning whatever names it as its owner."""
    body = {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "propagationPolicy": PROPAGATION_POLICY,
        "preconditions": {"uid": uid, "resourceVersion": rv},
    }
    # The answer is the object itself: ask for metadata only (always, for a Secret).
    return Request(
        "DELETE",
        resource.path(namespace, name),
        accept=_accept(resource, True, METADATA),
        body=body,
        content_type=JSON,
    )


def patch(
    resource: Resource, namespace: str | None, name: str, ops: list[dict[str, Any]]
) -> Request:
    """A JSON Patch (RFC 6902): the server applies all of it or none, so its `test` ops make
    it conditional on what was observed. The answer is the object: metadata only (always, for
    a Secret, so no payload is ever received)."""
    return Request(
        "PATCH",
        resource.path(namespace, name),
        accept=_accept(resource, True, METADATA),
        body=ops,
        content_type=JSON_PATCH,
    )


def create(resource: Resource, namespace: str | None, body: dict[str, Any]) -> Request:
    return Request("POST", resource.path(namespace), body=body, content_type=JSON)


def replace(resource: Resource, namespace: str | None, name: str, body: dict[str, Any]) -> Request:
    """PUT carrying metadata.resourceVersion: a 409 means another writer won."""
    return Request("PUT", resource.path(namespace, name), body=body, content_type=JSON)
