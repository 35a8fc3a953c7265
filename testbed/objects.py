"""Kubernetes objects as JSON, realistic and valid against the real CRDs (tests/crds).

Two kinds: objects to create on a server (`companion`, `binding`, `workload`, `gateway`,
`route`, `namespace`: the server gives them their uid, resourceVersion and creation time),
and objects as a server returns them, with those fields set (`configmap`, `resourcebinding`,
`httproute`), for tests that read them without a server. `binding_for` is the binding
Karmada writes for a companion the server stored.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from gcjob.domain import (
    COMPANION_LABEL,
    HTTP01_SOLVER_LABEL,
    POLICY_KEY,
    REFERRERS_ANNOTATION,
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_NAME_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
)
from testbed.model import HUB_NS, route_labels

Obj = dict[str, Any]
# Karmada's binding controller's: it removes it once a deleted binding's Works are gone. The
# plain test hub runs no Karmada, so nothing would: a binding carries it only where a test
# asks (`karmada_finalizer`), and gcjob then truly reports its delete held (`delete-held`).
KARMADA_FINALIZER = "karmada.io/binding-controller"
SECRET_VALUE = "c3VwZXItc2VjcmV0LXBhc3N3b3Jk"  # base64 "super-secret-password"


def _meta(namespace: str, name: str, labels: dict[str, str], annotations: dict[str, str]) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return meta


def namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def owner_reference(owner: Obj, *, controller: bool = False) -> Obj:
    """An ownerReference to `owner` as the server returned it (its uid set); a controller's
    as Go's metav1.NewControllerRef writes it (Karmada's, a Deployment's), blocking the
    owner's foreground deletion."""
    meta = owner["metadata"]
    reference = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
    }
    if controller:
        reference.update(controller=True, blockOwnerDeletion=True)
    return reference


def owned_by(obj: Obj, *owners: Obj, controller: bool = False) -> Obj:
    """`obj` with ownerReferences to `owners` (as the server returned them) added; at most
    one of them its controller."""
    assert not (controller and len(owners) > 1), "an object has one controller"
    references = obj["metadata"].setdefault("ownerReferences", [])
    references += [owner_reference(o, controller=controller) for o in owners]
    return obj


def companion(
    kind: str,
    namespace: str,
    name: str,
    referrers: list[str] | str | None,
    *,
    labelled: bool = True,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    data: dict[str, str] | None = None,
) -> Obj:
    """A ConfigMap or Secret copied to the hub; `referrers` a list (JSON-encoded here), a raw
    annotation string, or None for no annotation. `labels` are added to the companion label;
    `data` replaces a small default payload."""
    notes = dict(annotations or {})
    if referrers is not None:
        notes[REFERRERS_ANNOTATION] = (
            referrers if isinstance(referrers, str) else json.dumps(sorted(referrers))
        )
    tags = {COMPANION_LABEL: "true"} if labelled else {}
    tags.update(labels or {})
    obj: Obj = {"apiVersion": "v1", "kind": kind, "metadata": _meta(namespace, name, tags, notes)}
    if kind == "Secret":
        obj["type"] = "Opaque"
        obj["data"] = {"password": SECRET_VALUE} if data is None else data
    else:
        obj["data"] = {"app.conf": "listen 8080"} if data is None else data
    return obj


def workload(namespace: str, name: str, *, labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "compute.datumapis.com/v1alpha",
        "kind": "WorkloadDeployment",
        "metadata": _meta(namespace, name, labels or {}, {}),
        "spec": {
            "cityCode": "DFW",
            "placementName": "default",
            "scaleSettings": {"minReplicas": 1, "instanceManagementPolicy": "OrderedReady"},
            "template": {
                "spec": {
                    "networkInterfaces": [{"network": {"name": "default"}}],
                    "runtime": {"resources": {"instanceType": "datumcloud/d1-standard-2"}},
                }
            },
            "workloadRef": {"name": name, "uid": str(uuid.uuid4())},
        },
    }


def binding(
    namespace: str,
    name: str,
    *,
    kind: str,
    target: str,
    target_uid: str = "",
    policy: str = "city-dfw",
    policy_in: str = "annotation",
    annotations: dict[str, str] | None = None,
    karmada_finalizer: bool = False,
) -> Obj:
    labels: dict[str, str] = {}
    notes = dict(annotations or {})
    if policy_in == "annotation":
        notes[POLICY_KEY] = policy
    elif policy_in == "label":
        labels[POLICY_KEY] = policy
    elif policy_in == "cluster":
        notes["clusterpropagationpolicy.karmada.io/name"] = policy
    resource: Obj = {"apiVersion": "v1", "kind": kind, "namespace": namespace, "name": target}
    if target_uid:
        resource["uid"] = target_uid
    meta = _meta(namespace, name, labels, notes)
    if karmada_finalizer:
        meta["finalizers"] = [KARMADA_FINALIZER]
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": meta,
        "spec": {"resource": resource},
    }


def gateway(namespace: str, name: str) -> Obj:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": _meta(namespace, name, {}, {}),
        "spec": {
            "gatewayClassName": "datum-external",
            "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
        },
    }


def upstream_route(namespace: str, name: str, gateways: tuple[str, ...] = ("gw-a",)) -> Obj:
    """The upstream HTTPRoute NSO copies a downstream route from (on a project's cluster)."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": _meta(namespace, name, {}, {}),
        "spec": {
            "parentRefs": [{"name": gateway} for gateway in gateways],
            "rules": [{"backendRefs": [{"name": "backend", "port": 8080}]}],
        },
    }


def route(
    namespace: str,
    name: str,
    *,
    cluster_label: str,
    upstream_namespace: str,
    parents: list[Obj],
    upstream_name: str | None = None,
    extra_labels: dict[str, str] | None = None,
    drop_labels: tuple[str, ...] = (),
    http01: bool = False,
    annotations: dict[str, str] | None = None,
) -> Obj:
    labels = {
        UPSTREAM_CLUSTER_LABEL: cluster_label,
        UPSTREAM_GROUP_LABEL: "gateway.networking.k8s.io",
        UPSTREAM_KIND_LABEL: "HTTPRoute",
        UPSTREAM_NAME_LABEL: upstream_name or name,
        UPSTREAM_NAMESPACE_LABEL: upstream_namespace,
        **(extra_labels or {}),
    }
    if http01:
        labels[HTTP01_SOLVER_LABEL] = "true"
    for key in drop_labels:
        labels.pop(key, None)
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": _meta(namespace, name, labels, annotations or {}),
        "spec": {
            "parentRefs": parents,
            "rules": [{"backendRefs": [{"name": "backend", "port": 8080}]}],
        },
    }


def binding_for(companion: Obj, *, karmada_finalizer: bool = False) -> Obj:
    """The ResourceBinding Karmada writes for a companion as the server stored it: named
    after it and its kind, naming its uid and resourceVersion, owned by it, placed."""
    meta = companion["metadata"]
    kind = companion["kind"]
    ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {
            "name": f"{name}-{kind.lower()}",
            "namespace": ns,
            "annotations": {
                POLICY_KEY: "city-dfw",
                "propagationpolicy.karmada.io/namespace": ns,
            },
            "labels": {"propagationpolicy.karmada.io/permanent-id": str(uuid.uuid4())},
            **({"finalizers": [KARMADA_FINALIZER]} if karmada_finalizer else {}),
            "ownerReferences": [owner_reference(companion, controller=True)],
        },
        "spec": {
            "resource": {
                "apiVersion": "v1",
                "kind": kind,
                "namespace": ns,
                "name": name,
                "uid": uid,
                "resourceVersion": meta["resourceVersion"],
            },
            "clusters": [{"name": "cell-dfw-1"}],
            "placement": {"clusterAffinity": {"labelSelector": {"matchLabels": {"city": "dfw"}}}},
            "schedulerName": "default-scheduler",
        },
    }


# -- as a server returns them: uid, resourceVersion and creationTimestamp set ---------------


def configmap(**meta_overrides: Any) -> Obj:
    """A companion ConfigMap as listed from the hub; `meta_overrides` replace metadata keys."""
    meta: Obj = {
        "annotations": {REFERRERS_ANNOTATION: '["default/web-dfw"]'},
        "creationTimestamp": "2026-11-12T09:14:27Z",
        "labels": {COMPANION_LABEL: "true"},
        "name": "app-config",
        "namespace": HUB_NS,
        "resourceVersion": "48213137",
        "uid": "79fe62ff-c667-52f3-9e89-927a2484143e",
    }
    meta.update(meta_overrides)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "data": {"APP_MODE": "production"},
    }


def resourcebinding(**meta_overrides: Any) -> Obj:
    """The binding of configmap() as listed from the hub."""
    meta: Obj = {
        "annotations": {"propagationpolicy.karmada.io/name": "city-dfw"},
        "creationTimestamp": "2026-11-12T09:14:28Z",
        "finalizers": [KARMADA_FINALIZER],
        "name": "app-config-configmap",
        "namespace": HUB_NS,
        "ownerReferences": [owner_reference(configmap(), controller=True)],
        "resourceVersion": "48213150",
        "uid": "0c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f",
    }
    meta.update(meta_overrides)
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": meta,
        "spec": {
            "resource": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "namespace": HUB_NS,
                "name": "app-config",
                "uid": "79fe62ff-c667-52f3-9e89-927a2484143e",
                "resourceVersion": "48213137",
            }
        },
    }


def httproute(parent_refs: Any = None, **meta_overrides: Any) -> Obj:
    """A downstream HTTPRoute as listed from the hub, with the labels NSO stamps."""
    meta: Obj = {
        "creationTimestamp": "2026-11-12T09:14:27Z",
        "labels": {
            **route_labels(),
            "app.kubernetes.io/managed-by": "network-services-operator",
            "meta.datumapis.com/something-else": "x",
        },
        "name": "web",
        "namespace": HUB_NS,
        "resourceVersion": "48223412",
        "uid": "763cfcc0-885b-562c-a707-4cc4abca0768",
    }
    meta.update(meta_overrides)
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": meta,
        "spec": {
            "parentRefs": [{"name": "web-gateway"}] if parent_refs is None else parent_refs,
            "rules": [{"backendRefs": [{"name": "web", "port": 8080}]}],
        },
    }
