"""Small builders for the plain records of gcjob.model, with safe defaults.

Every object built here is old enough to be deleted (created an hour before NOW), and carries
a uid and a resourceVersion, so a test only states what matters to it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from gcjob.model import (
    Binding,
    BoundResource,
    Companion,
    ObjectRef,
    OwnerRef,
    ParentRef,
    Protect,
    Route,
)

NOW = datetime(2026, 7, 1, 12, 0, 0, tzinfo=UTC)
MIN_AGE = timedelta(minutes=5)
OLD = NOW - timedelta(hours=1)
YOUNG = NOW - timedelta(minutes=1)

HUB_NS = "ns-6f1c2a9e-0d4b-4c1e-9a7f-2b3c4d5e6f70"

# `protected=True` in the builders: the annotation as an operator sets it.
PROTECTED: Protect = (("annotation gcjob.datumapis.com/protect", "true"),)

_API_VERSIONS = {
    "ConfigMap": "v1",
    "Secret": "v1",
    "ResourceBinding": "work.karmada.io/v1alpha2",
    "HTTPRoute": "gateway.networking.k8s.io/v1",
    "WorkloadDeployment": "compute.datumapis.com/v1alpha",
}


def ref(
    kind: str = "ConfigMap",
    name: str = "app-config",
    namespace: str = HUB_NS,
    *,
    uid: str = "uid-1",
    resource_version: str = "100",
    created: datetime | None = OLD,
    terminating: bool = False,
) -> ObjectRef:
    return ObjectRef(
        api_version=_API_VERSIONS.get(kind, "v1"),
        kind=kind,
        namespace=namespace,
        name=name,
        uid=uid,
        resource_version=resource_version,
        created=created,
        terminating=terminating,
    )


def companion(
    referrers: str | None = '["default/web"]',
    *,
    kind: str = "ConfigMap",
    name: str = "app-config",
    protected: bool = False,
    **ref_kwargs: Any,
) -> Companion:
    return Companion(
        ref(kind, name, **ref_kwargs), referrers, protect=PROTECTED if protected else ()
    )


def bound(
    kind: str = "ConfigMap",
    name: str = "app-config",
    namespace: str = HUB_NS,
    uid: str = "uid-1",
) -> BoundResource:
    return BoundResource(_API_VERSIONS.get(kind, "v1"), kind, namespace, name, uid)


def binding(
    name: str = "app-config-configmap",
    *,
    policy_annotation: str | None = "city-dfw",
    policy_label: str | None = None,
    cluster_policy: bool = False,
    resource: BoundResource | None = None,
    protected: bool = False,
    owners: tuple[OwnerRef, ...] = (),
    **ref_kwargs: Any,
) -> Binding:
    return Binding(
        ref("ResourceBinding", name, **ref_kwargs),
        policy_annotation=policy_annotation,
        policy_label=policy_label,
        cluster_policy=cluster_policy,
        resource=resource,
        protect=PROTECTED if protected else (),
        owners=owners,
    )


def parent(
    name: str = "gw",
    *,
    group: str | None = None,
    kind: str | None = None,
    namespace: str | None = None,
) -> ParentRef:
    """A parentRef; None for a key that is absent (as NSO writes them: a bare name)."""
    return ParentRef(name=name, group=group, kind=kind, namespace=namespace)


def route_labels(
    cluster: str = "cluster-single",
    namespace: str = "default",
    name: str = "web",
    **extra: str,
) -> dict[str, str]:
    """The labels NSO stamps on a downstream HTTPRoute; `extra` adds or overrides by key."""
    labels = {
        "meta.datumapis.com/upstream-cluster-name": cluster,
        "meta.datumapis.com/upstream-group": "gateway.networking.k8s.io",
        "meta.datumapis.com/upstream-kind": "HTTPRoute",
        "meta.datumapis.com/upstream-name": name,
        "meta.datumapis.com/upstream-namespace": namespace,
    }
    labels.update(extra)
    return labels


def route(
    name: str = "web",
    *,
    labels: dict[str, str] | None = None,
    parents: tuple[ParentRef, ...] = (ParentRef("gw", None, None, None),),
    protected: bool = False,
    **ref_kwargs: Any,
) -> Route:
    return Route(
        ref("HTTPRoute", name, **ref_kwargs),
        labels=route_labels(name=name) if labels is None else labels,
        parent_refs=parents,
        protect=PROTECTED if protected else (),
    )
