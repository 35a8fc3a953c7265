"""End to end: the test hub is a Karmada hub (issue 31). Beside its API server runs the
kube-controller-manager with the controllers Karmada's hub runs, so a deleted namespace
finishes, the garbage collector deletes what a deleted owner owned (core and custom kinds
alike), and service-account tokens are minted; the upstream stays a bare API server. Every
server answers /version with the release it was built from: gcjob chooses how to read by it."""

from __future__ import annotations

import os
import subprocess
import time
from functools import partial
from typing import Any

import pytest

from testbed import builds
from testbed.cluster import TestCluster, wait_for
from testbed.endpoints import Endpoint
from testbed.fixtures import Collect
from testbed.objects import binding_for, companion, owned_by, route, workload
from testbed.servers import ApiServer, binaries

REFERRERS = ["default/web"]


def test_a_deleted_owner_takes_its_dependents_with_it(
    hub: TestCluster, hub_collects_garbage: Collect
) -> None:
    """The positive control: a core owner's core and custom dependents go, a custom owner's
    too; an object nothing owns stays."""
    ns = hub.namespace()
    owner = hub.create(companion("ConfigMap", ns, "owner", REFERRERS))
    secret = hub.create(owned_by(companion("Secret", ns, "owned-secret", REFERRERS), owner))
    custom = hub.create(owned_by(workload(ns, "owned-workload"), owner))
    custom_owner = hub.create(workload(ns, "owner-workload"))
    owned_route = hub.create(
        owned_by(
            route(ns, "owned-route", cluster_label="c", upstream_namespace="p", parents=[]),
            custom_owner,
        )
    )
    owned_config = hub.create(
        owned_by(companion("ConfigMap", ns, "owned-config", REFERRERS), custom_owner)
    )
    bystander = hub.create(companion("ConfigMap", ns, "bystander", REFERRERS))

    hub_collects_garbage(owner, secret, custom)
    hub_collects_garbage(custom_owner, owned_route, owned_config)

    assert hub.present("ConfigMap", ns, bystander["metadata"]["name"])


def test_a_deleted_companion_takes_its_karmada_binding_with_it(
    hub: TestCluster, hub_collects_garbage: Collect
) -> None:
    """Karmada removes a companion's ResourceBinding only through this cascade: the binding
    it writes is owned by the companion. The collector deletes it; it stays terminating on
    Karmada's finalizer, which Karmada's binding controller removes (none runs here)."""
    ns = hub.namespace()
    owner = hub.create(companion("ConfigMap", ns, "app-config", REFERRERS))
    rb = hub.create(binding_for(owner, karmada_finalizer=True))

    hub_collects_garbage(owner, rb)

    left = hub.get("ResourceBinding", ns, rb["metadata"]["name"])
    assert left is not None and left["metadata"]["deletionTimestamp"]
    assert left["metadata"]["finalizers"] == ["karmada.io/binding-controller"]


@pytest.mark.usefixtures("hub_controllers")
def test_a_deleted_namespace_finishes_once_nothing_holds_it(hub: TestCluster) -> None:
    """The namespace controller deletes what a deleted namespace holds and then the namespace;
    a binding Karmada's finalizer holds keeps it Terminating until Karmada lets go."""
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "app-config", REFERRERS))
    hub.create(workload(ns, "web"))
    rb = hub.create_with_binding(
        companion("Secret", ns, "creds", REFERRERS), karmada_finalizer=True
    )

    hub.delete("Namespace", None, ns)

    wait_for(partial(hub.absent, "ConfigMap", ns, "app-config"), 60, "for the namespace's content")
    wait_for(partial(hub.absent, "WorkloadDeployment", ns, "web"), 60, "for the workload")
    wait_for(partial(hub.absent, "Secret", ns, "creds"), 60, "for the companion")
    # the binding terminating on Karmada's finalizer, whichever controller deleted it first
    wait_for(partial(hub.gone, "ResourceBinding", ns, rb, 0.0), 60, "for the binding")
    held = hub.get("Namespace", None, ns)
    assert held is not None and held["status"]["phase"] == "Terminating"
    assert hub.get("ResourceBinding", ns, rb) is not None

    hub.patch("ResourceBinding", ns, rb, {"metadata": {"finalizers": None}})  # as Karmada does

    wait_for(partial(hub.absent, "Namespace", None, ns), 60, f"for namespace {ns} to finish")


@pytest.mark.usefixtures("hub_controllers")
def test_the_hub_mints_service_account_tokens(hub: TestCluster) -> None:
    """The serviceaccount-token controller (Karmada enables it) fills a token Secret."""
    ns = hub.namespace()
    hub.create_at(
        f"/api/v1/namespaces/{ns}/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
    )
    hub.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {
                "name": "robot-token",
                "namespace": ns,
                "annotations": {"kubernetes.io/service-account.name": "robot"},
            },
        }
    )

    def minted() -> bool:
        secret = hub.get("Secret", ns, "robot-token")
        return bool(secret and (secret.get("data") or {}).get("token"))

    wait_for(minted, 60, "for the token controller to mint robot-token's token")


def _built_release() -> str:
    if os.environ.get("KUBEBUILDER_ASSETS"):
        pytest.skip("KUBEBUILDER_ASSETS: binaries brought, not built here: no release to compare")
    return builds.kube_module().required("k8s.io/kubernetes")


def _server(endpoint: Endpoint) -> ApiServer:
    if endpoint.server is None:
        pytest.skip("a real cluster (GCJOB_E2E_*_KUBECONFIG): not built here")
    return endpoint.server


def test_each_server_answers_version_with_the_release_it_was_built_from(
    hub_endpoint: Endpoint, upstream_endpoint: Endpoint
) -> None:
    """Unstamped, a server says v0.0.0-master, and gcjob would read a 1.36 hub as an old one."""
    release = _built_release()
    major, minor = release.removeprefix("v").split(".")[:2]
    for endpoint in (hub_endpoint, upstream_endpoint):
        said: dict[str, Any] = _server(endpoint).request("GET", "/version")
        assert (said["gitVersion"], said["major"], said["minor"]) == (release, major, minor)
    found = binaries()
    assert found.controller_manager is not None
    manager = subprocess.run(
        [str(found.controller_manager), "--version"], capture_output=True, text=True, check=True
    )
    assert manager.stdout.split() == ["Kubernetes", release]
    etcd = subprocess.run([str(found.etcd), "--version"], capture_output=True, text=True)
    wanted = builds.ETCD.required("go.etcd.io/etcd/server/v3").removeprefix("v")
    assert f"etcd Version: {wanted}" in etcd.stdout.splitlines()


def test_the_upstream_is_a_bare_api_server(
    upstream: TestCluster, upstream_endpoint: Endpoint
) -> None:
    """No controller finishes a deleted namespace there, as on a project's control plane."""
    _server(upstream_endpoint)
    assert not upstream_endpoint.collects_garbage
    ns = upstream.namespace()
    upstream.create(companion("ConfigMap", ns, "left", REFERRERS))
    upstream.delete("Namespace", None, ns)
    time.sleep(3)  # a namespace controller would have emptied it by now
    held = upstream.get("Namespace", None, ns)
    assert held is not None and held["status"]["phase"] == "Terminating"
    assert upstream.present("ConfigMap", ns, "left")
