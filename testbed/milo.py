"""Milo's Project API and NSO's copies on real servers, as the copies-sweep tests need them.

A server stands for Milo: it serves Milo's Project CRD (the Project API), and a proxy of the
test's own (`milo_proxy`) serves each project's control plane at its Milo path
(`/apis/resourcemanager.miloapis.com/v1alpha1/projects/<name>/control-plane`), forwarding to
the same server. A deleted project's control plane answers 404 for every path, as Milo's
does (`delete_project`). The builders make anchors (`anchor-<owner uid>` ConfigMaps) and the
copies they own, labelled with the five `upstream-*` labels (../shared/domain.md, Sweep 4).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from gcjob.domain import (
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_NAME_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
)
from testbed.cluster import ApiFailure, TestCluster
from testbed.faultproxy import Fault, FaultProxy, Target
from testbed.servers import crds_dir

MILO = "/apis/resourcemanager.miloapis.com/v1alpha1/projects"
CONTROL_PLANE = r"^/apis/resourcemanager\.miloapis\.com/v1alpha1/projects/[^/]+/control-plane"
NET = "networking.datumapis.com"
CONNECTORS = f"/apis/{NET}/v1alpha1/namespaces/{{namespace}}/connectors"
HTTPPROXIES = f"/apis/{NET}/v1alpha/namespaces/{{namespace}}/httpproxies"
GATEWAYS = "/apis/gateway.networking.k8s.io/v1/namespaces/{namespace}/gateways"
CONFIGMAPS = "/api/v1/namespaces/{namespace}/configmaps"
SECRETS = "/api/v1/namespaces/{namespace}/secrets"
PATHS = {
    "Connector": CONNECTORS,
    "HTTPProxy": HTTPPROXIES,
    "Gateway": GATEWAYS,
    "ConfigMap": CONFIGMAPS,
    "Secret": SECRETS,
}
# The CRDs (in crds_dir()) each side serves beyond its usual ones: the hub two kinds NSO
# replicates; Milo the same two (their upstream owners) and Project.
HUB_COPY_CRDS = ("minimal-networking.datumapis.com_connectors-httpproxies.yaml",)
MILO_CRDS = (
    "minimal-networking.datumapis.com_connectors-httpproxies.yaml",
    "minimal-resourcemanager.miloapis.com_projects.yaml",
)


def install(cluster: TestCluster, files: tuple[str, ...]) -> None:
    """Milo's and NSO's CRDs, from tests/crds; served once this returns (a CRD that exists
    already answers 409 and is served)."""
    for name in files:
        for crd in yaml.safe_load_all((crds_dir() / name).read_text()):
            status, body = cluster._call(
                "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
            )
            if status not in (200, 201, 409):
                raise ApiFailure(f"create CRD {crd['metadata']['name']}: {status} {body}")
            group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
            version = crd["spec"]["versions"][0]["name"]
            for _ in range(150):
                if cluster._call("GET", f"/apis/{group}/{version}/{plural}")[0] == 200:
                    break
                time.sleep(0.1)
            else:
                raise ApiFailure(f"CRD {plural}.{group} not served after 15s")


def milo_proxy(target: Target, work: Path) -> FaultProxy:
    """A started proxy serving every project's control plane at its Milo path, and the
    Project API itself, from `target`."""
    return FaultProxy(target, strip_prefix=CONTROL_PLANE).start(work)


def template(milo: FaultProxy) -> str:
    """--upstream-server-template for projects behind `milo` (it names the Project API too)."""
    return milo.url + MILO + "/{cluster}/control-plane"


def milo_kubeconfig(source: str, milo: FaultProxy, path: Path) -> str:
    """`source`'s current credentials, trusting `milo`, in a new current context `milo` that
    names no project; `source`'s contexts stay (a route's cluster label may name one)."""
    config = yaml.safe_load(Path(source).read_text())
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    config["clusters"].append(
        {
            "name": "milo",
            "cluster": {"server": milo.url, "certificate-authority": str(milo.ca_file)},
        }
    )
    config["contexts"].append(
        {"name": "milo", "context": {**context["context"], "cluster": "milo"}}
    )
    config["current-context"] = "milo"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def project_name() -> str:
    return f"p-{uuid.uuid4().hex[:10]}"


def make_project(milo: TestCluster, name: str) -> None:
    milo.create_at(
        MILO,
        {
            "apiVersion": "resourcemanager.miloapis.com/v1alpha1",
            "kind": "Project",
            "metadata": {"name": name},
        },
    )


def delete_project(milo: TestCluster, proxy: FaultProxy, name: str) -> None:
    """Gone from the Project API, and its control plane answers 404 for every path."""
    milo._call("DELETE", f"{MILO}/{name}")
    proxy.add_fault(
        Fault(
            path=f"^{MILO}/{name}/control-plane",
            status=404,
            body="404 page not found\n",
            times=None,
        )
    )


def labels(project: str, group: str, kind: str, namespace: str, name: str) -> dict[str, str]:
    """The five labels NSO puts on a copy (and its anchor) of this upstream owner."""
    return {
        UPSTREAM_CLUSTER_LABEL: f"cluster-{project}",
        UPSTREAM_GROUP_LABEL: group,
        UPSTREAM_KIND_LABEL: kind,
        UPSTREAM_NAMESPACE_LABEL: namespace,
        UPSTREAM_NAME_LABEL: name,
    }


def anchor(
    hub: TestCluster, ns: str, owner_uid: str, owner_labels: dict[str, str]
) -> dict[str, Any]:
    return hub.create_at(
        CONFIGMAPS.format(namespace=ns),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"anchor-{owner_uid}", "namespace": ns, "labels": owner_labels},
        },
    )


def owned_by(anchor_obj: dict[str, Any] | None) -> list[dict[str, Any]]:
    if anchor_obj is None:
        return []
    meta = anchor_obj["metadata"]
    return [{"apiVersion": "v1", "kind": "ConfigMap", "name": meta["name"], "uid": meta["uid"]}]


def copy(
    hub: TestCluster,
    ns: str,
    collection: str,
    api_version: str,
    kind: str,
    name: str,
    copy_labels: dict[str, str],
    anchor_obj: dict[str, Any] | None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": copy_labels}
    if anchor_obj is not None:
        meta["ownerReferences"] = owned_by(anchor_obj)
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    if kind == "Gateway":
        obj["spec"] = {
            "gatewayClassName": "datum-external",
            "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
        }
    return hub.create_at(collection.format(namespace=ns), obj)


def live_owner(milo: TestCluster, upstream_ns: str, name: str) -> str:
    """An upstream Connector that exists: its uid, for its anchor."""
    made = milo.create_at(
        CONNECTORS.format(namespace=upstream_ns),
        {
            "apiVersion": f"{NET}/v1alpha1",
            "kind": "Connector",
            "metadata": {"name": name, "namespace": upstream_ns},
        },
    )
    return str(made["metadata"]["uid"])


def connector_group(
    hub: TestCluster, ns: str, project: str, upstream_ns: str, name: str, owner_uid: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An anchor and the Connector copy it owns."""
    found = labels(project, NET, "Connector", upstream_ns, name)
    made = anchor(hub, ns, owner_uid, found)
    return made, copy(hub, ns, CONNECTORS, f"{NET}/v1alpha1", "Connector", name, found, made)


def present(cluster: TestCluster, kind: str, ns: str, name: str) -> bool:
    """There, and not being deleted (a bare server never finishes a finalized delete)."""
    status, body = cluster._call("GET", PATHS[kind].format(namespace=ns) + "/" + name)
    return status == 200 and not body["metadata"].get("deletionTimestamp")
