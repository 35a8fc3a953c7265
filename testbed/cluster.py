"""A cluster the end-to-end tests populate over HTTP: a server the session started, or a real
cluster.

Everything goes through the official client's ApiClient, so the same test code runs against
both. Tests work only inside namespaces they create here (random names). The hub runs the
controllers a Karmada hub runs (testbed/servers.py): a deleted namespace finishes, and the
garbage collector deletes what a deleted owner owned. It runs no Karmada: a deleted binding
stays terminating on Karmada's finalizer, which Karmada's binding controller would remove, so
`gone()` counts that as deleted, and `cleanup()` removes it, as Karmada would.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any
from urllib.parse import urlencode

from kubernetes import config as kube_config
from kubernetes.client import ApiClient

from gcjob.kube.resources import (
    CONFIGMAPS,
    GATEWAYS,
    HTTPROUTES,
    LEASES,
    NAMESPACES,
    REPLICATED_RESOURCES,
    RESOURCEBINDINGS,
    SECRETS,
    WORKLOADDEPLOYMENTS,
    Resource,
)
from testbed import objects

BY_KIND = {
    r.kind: r
    for r in (
        CONFIGMAPS,
        SECRETS,
        NAMESPACES,
        WORKLOADDEPLOYMENTS,
        RESOURCEBINDINGS,
        HTTPROUTES,
        GATEWAYS,
        LEASES,
        # Two kinds NSO copies, which tests install on the hub (testbed/milo.py)
        REPLICATED_RESOURCES["Connector"],
        REPLICATED_RESOURCES["HTTPProxy"],
    )
}
TEST_FINALIZER = "gcjob.test/hold"
# The garbage collector's own finalizers: a delete it finishes (propagationPolicy Orphan or
# Foreground), on a cluster that runs one.
COLLECTOR_FINALIZERS = frozenset({"orphan", "foregroundDeletion"})


class ApiFailure(Exception):
    pass


class TestCluster:
    """Create, read and tear down objects on one API server."""

    __test__ = False  # not a pytest test class

    def __init__(
        self, kubeconfig: str, context: str | None, *, collects_garbage: bool = True
    ) -> None:
        """`collects_garbage`: a garbage collector runs beside the server (see gone())."""
        self.kubeconfig = kubeconfig
        self.context = context
        self.collects_garbage = collects_garbage
        self.api: ApiClient = kube_config.new_client_from_config(
            config_file=kubeconfig, context=context
        )
        self.namespaces: list[str] = []

    def _call(self, method: str, path: str, body: Any = None, content_type: str | None = None):
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        m, url, hdrs, payload, post = self.api.param_serialize(
            method=method,
            resource_path=path,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self.api.call_api(m, url, header_params=hdrs, body=payload, post_params=post)
        data = response.read()
        response.response.release_conn()
        try:
            parsed = json.loads(data) if data else None
        except ValueError:  # e.g. "404 page not found" for a resource this server lacks
            parsed = None
        return response.status, parsed

    def release(self) -> tuple[int, int]:
        """The server's (major, minor), as its /version answer says."""
        status, body = self._call("GET", "/version")
        if status != 200:
            raise ApiFailure(f"GET /version: {status} {body}")
        return int(body["major"].rstrip("+")), int(body["minor"].rstrip("+"))

    def namespace(self, prefix: str = "gcjob-e2e") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        self.namespaces.append(name)
        return name

    def project(self, *gateways: str, prefix: str = "project") -> str:
        """An upstream project: a namespace of its own holding these Gateways."""
        name = self.namespace(prefix)
        for gateway in gateways:
            self.create(objects.gateway(name, gateway))
        return name

    def ensure_namespace(self, name: str) -> None:
        if self.get("Namespace", None, name) is None:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def install_crd(self, group: str, kind: str, plural: str) -> str:
        """A namespaced custom resource with an open schema, served once this returns; its
        collection path in a namespace, with `{namespace}` to fill in."""
        crd = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {
                "group": group,
                "names": {"kind": kind, "plural": plural, "listKind": f"{kind}List"},
                "scope": "Namespaced",
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                ],
            },
        }
        status, body = self._call(
            "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
        )
        if status not in (200, 201):
            raise ApiFailure(f"create CRD {plural}.{group}: {status} {body}")
        collection = f"/apis/{group}/v1/namespaces/{{namespace}}/{plural}"
        for _ in range(150):
            if self._call("GET", collection.format(namespace="default"))[0] == 200:
                return collection
            time.sleep(0.1)
        raise ApiFailure(f"CRD {plural}.{group} not served after 15s")

    def create_at(self, collection: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create an object of a kind this class does not know, at its collection path."""
        status, body = self._call("POST", collection, obj)
        if status not in (200, 201):
            raise ApiFailure(f"create at {collection}: {status} {body}")
        return body

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        resource = BY_KIND[obj["kind"]]
        namespace = obj.get("metadata", {}).get("namespace")
        status, body = self._call("POST", resource.path(namespace), obj)
        if status not in (200, 201):
            raise ApiFailure(f"create {obj['kind']} {obj['metadata'].get('name')}: {status} {body}")
        if obj["kind"] == "HTTPRoute":  # the routes sweep reads them twice: see cached()
            self.cached(body)
        return body

    def cached(self, created: dict[str, Any], timeout: float = 30.0) -> None:
        """Until the server's watch cache of that kind holds `created` (a create's answer):
        gcjob lists from the cache, which may lag a write by moments on a loaded machine, and
        a route seen by one of the routes sweep's two reads only is rightly kept
        (`upstream-not-read`). The cache is asked for that one object (a field selector on
        its name, which the cache filters): a list of the whole namespace made seeding n
        routes read n²/2 of them (1,000 routes: half a million)."""
        kind, meta = created["kind"], created["metadata"]
        query = urlencode(
            {"resourceVersion": "0", "fieldSelector": f"metadata.name={meta['name']}"}
        )

        def listed() -> bool:
            path = BY_KIND[kind].path(meta.get("namespace"))
            status, body = self._call("GET", f"{path}?{query}")
            assert status == 200, (status, body)
            return any(i["metadata"]["name"] == meta["name"] for i in body.get("items") or [])

        wait_for(listed, timeout, f"{kind} {meta['name']} in the watch cache")

    def create_with_binding(
        self, companion: dict[str, Any], *, karmada_finalizer: bool = False
    ) -> str:
        """Create a companion, then its ResourceBinding as Karmada writes it: naming the uid
        the server gave it, and owned by it (so the hub's garbage collector deletes it with
        its companion); returns the binding's name (the companion's and its kind's, as Karmada
        names it)."""
        created = self.create(companion)
        kind, name = companion["kind"], companion["metadata"]["name"]
        binding = f"{name}-{kind.lower()}"
        namespace = companion["metadata"]["namespace"]
        uid = created["metadata"]["uid"]
        bound = objects.binding(
            namespace,
            binding,
            kind=kind,
            target=name,
            target_uid=uid,
            karmada_finalizer=karmada_finalizer,
        )
        self.create(objects.owned_by(bound, created, controller=True))
        return binding

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        status, body = self._call("GET", BY_KIND[kind].path(namespace, name))
        if status == 404:
            return None
        if status != 200:
            raise ApiFailure(f"get {kind} {namespace}/{name}: {status} {body}")
        return body

    def gone(self, kind: str, namespace: str | None, name: str, timeout: float = 120.0) -> bool:
        """Deleted: not there, or terminating on Karmada's finalizer alone (the test hub runs no
        Karmada to remove it). A deletion the garbage collector finishes (its `orphan` and
        `foregroundDeletion` finalizers) is waited for, up to `timeout` (its client runs at
        kube-controller-manager's QPS: minutes behind on a busy machine); on a server without a
        collector (KUBEBUILDER_ASSETS without kube-controller-manager) nothing would finish it,
        and a delete held by those alone counts as deleted. One held by anything else (a
        test's finalizer) is not gone."""
        deadline = time.monotonic() + timeout
        while True:
            obj = self.get(kind, namespace, name)
            if obj is None:
                return True
            meta = obj["metadata"]
            if meta.get("deletionTimestamp") is None:
                return False
            held = set(meta.get("finalizers") or ()) - {objects.KARMADA_FINALIZER}
            if not self.collects_garbage:
                held -= COLLECTOR_FINALIZERS
            if meta.get("finalizers") and not held:
                return True
            if not held <= COLLECTOR_FINALIZERS or time.monotonic() > deadline:
                return False
            time.sleep(0.1)

    def present(self, kind: str, namespace: str | None, name: str) -> bool:
        obj = self.get(kind, namespace, name)
        return obj is not None and obj["metadata"].get("deletionTimestamp") is None

    def delete(
        self, kind: str, namespace: str | None, name: str, propagation: str | None = None
    ) -> None:
        """`propagation`: the delete's propagationPolicy (Background, Foreground, Orphan);
        None: the server's default for the kind."""
        body = None if propagation is None else {"propagationPolicy": propagation}
        status, answer = self._call("DELETE", BY_KIND[kind].path(namespace, name), body)
        # 404: gone already; 409: a namespace already Terminating
        if status not in (200, 202, 404, 409):
            raise ApiFailure(f"delete {kind} {namespace}/{name}: {status} {answer}")

    def collected(
        self, owner: dict[str, Any], *dependents: dict[str, Any], timeout: float = 60.0
    ) -> None:
        """The garbage collector at work: deletes `owner` (as created) with propagationPolicy
        Background, then waits until each of `dependents` (as created, each with an
        ownerReference to it) is gone (`gone()`: a binding may stay terminating on Karmada's
        finalizer), as Kubernetes' garbage collector deletes them."""
        meta = owner["metadata"]
        self.delete(owner["kind"], meta.get("namespace"), meta["name"], "Background")
        for dependent in dependents:
            kind, where = dependent["kind"], dependent["metadata"]
            namespace, name = where.get("namespace"), where["name"]
            wait_for(
                partial(self.gone, kind, namespace, name, 0.0),
                timeout,
                f"for the garbage collector to delete {kind} {namespace}/{name}, owned by "
                f"{owner['kind']} {meta['name']}, deleted",
            )

    def absent(self, kind: str, namespace: str | None, name: str) -> bool:
        """Not there at all (a 404), terminating or not."""
        return self.get(kind, namespace, name) is None

    def make_terminating(self, kind: str, namespace: str, name: str) -> None:
        """Hold it with a finalizer, then delete it: terminating until the test lets go."""
        self.patch(kind, namespace, name, {"metadata": {"finalizers": [TEST_FINALIZER]}})
        self.delete(kind, namespace, name)

    def patch(self, kind: str, namespace: str | None, name: str, patch: dict[str, Any]) -> None:
        status, body = self._call(
            "PATCH",
            BY_KIND[kind].path(namespace, name),
            patch,
            content_type="application/merge-patch+json",
        )
        if status != 200:
            raise ApiFailure(f"patch {kind} {namespace}/{name}: {status} {body}")

    def cleanup(self) -> None:
        """Release the finalizers nothing here would remove (a test's, Karmada's), delete what
        the test namespaces hold, then the namespaces.

        Emptied first, so that no later cluster-wide sweep sees what a test left (the hub's
        namespace controller would delete it, but in its own time), and because the upstream,
        a bare API server as a project's control plane is, runs no namespace controller: there
        a deleted namespace stays Terminating."""
        for namespace in self.namespaces:
            for resource in BY_KIND.values():
                if not resource.namespaced:
                    continue
                status, body = self._call("GET", resource.path(namespace))
                if status != 200:
                    continue
                for item in body.get("items") or []:
                    meta = item["metadata"]
                    if meta.get("finalizers"):
                        self._call(
                            "PATCH",
                            resource.path(namespace, meta["name"]),
                            {"metadata": {"finalizers": None}},
                            content_type="application/merge-patch+json",
                        )
                self._call("DELETE", resource.path(namespace))
            self.delete("Namespace", None, namespace)
        self.namespaces.clear()
        self.api.close()


def resource_of(kind: str) -> Resource:
    return BY_KIND[kind]


def wait_for(condition: Callable[[], Any], timeout: float = 10.0, what: str = "") -> None:
    """Until `condition()` is true (a server's change in effect, a process at a point)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting {what}".strip()
        time.sleep(0.05)
