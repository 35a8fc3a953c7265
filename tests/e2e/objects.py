"""Realistic objects for end-to-end tests: valid against the real CRDs in shared/crds."""

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

Obj = dict[str, Any]
SECRET_VALUE = "c3VwZXItc2VjcmV0LXBhc3N3b3Jk"  # base64 "super-secret-password"


def _meta(namespace: str, name: str, labels: dict[str, str], annotations: dict[str, str]) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return meta


def companion(
    kind: str,
    namespace: str,
    name: str,
    referrers: list[str] | str | None,
    *,
    labelled: bool = True,
    annotations: dict[str, str] | None = None,
) -> Obj:
    """A ConfigMap or Secret copied to the hub; `referrers` a list (JSON-encoded here), a raw
    annotation string, or None for no annotation."""
    notes = dict(annotations or {})
    if referrers is not None:
        notes[REFERRERS_ANNOTATION] = (
            referrers if isinstance(referrers, str) else json.dumps(sorted(referrers))
        )
    labels = {COMPANION_LABEL: "true"} if labelled else {}
    obj: Obj = {"apiVersion": "v1", "kind": kind, "metadata": _meta(namespace, name, labels, notes)}
    if kind == "Secret":
        obj["type"] = "Opaque"
        obj["data"] = {"password": SECRET_VALUE}
    else:
        obj["data"] = {"app.conf": "listen 8080"}
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
    meta["finalizers"] = ["karmada.io/binding-controller"]
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
