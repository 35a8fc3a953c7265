"""End to end: a ResourceBinding whose free-form status is nested thousands of levels deep.

Python's JSON decoder cannot follow such an object (RecursionError). gcjob must treat it as
unreadable (a skip with a reason, or an incomplete list), never crash: the other sweeps run.
"""

from __future__ import annotations

from testbed.cluster import TestCluster
from testbed.objects import binding, companion
from testbed.report import HubSweep

DEPTH = 3000  # as in issue 12; far past Python's recursion limit of 1000


def _deep_status(depth: int) -> bytes:
    # Written by hand: json.dumps cannot encode what json.loads cannot decode.
    inner = b'{"a": ' * depth + b"1" + b"}" * depth
    return b'{"aggregatedStatus": [{"clusterName": "c1", "status": ' + inner + b"}]}"


def _patch_status(hub: TestCluster, namespace: str, name: str, depth: int) -> int:
    """Merge-patch the binding's status subresource; returns the HTTP status. The answer (the
    object itself) is not decoded."""
    path = f"/apis/work.karmada.io/v1alpha2/namespaces/{namespace}/resourcebindings/{name}"
    method, url, headers, _, _ = hub.api.param_serialize(
        method="PATCH",
        resource_path=f"{path}/status",
        header_params={"Content-Type": "application/merge-patch+json", "Accept": "*/*"},
        auth_settings=["BearerToken"],
    )
    body = b'{"status": ' + _deep_status(depth) + b"}"
    response = hub.api.rest_client.pool_manager.request(
        method, url, body=body, headers=headers, preload_content=True
    )
    return int(response.status)


def test_a_binding_too_deep_to_decode_is_skipped_and_the_other_sweeps_run(
    hub: TestCluster, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    # An orphaned companion whose binding carries the deep status: the companions sweep reads
    # that binding in full before deleting it.
    created = hub.create(companion("ConfigMap", ns, "app-config", ["default/web-gone"]))
    uid = created["metadata"]["uid"]
    hub.create(
        binding(ns, "app-config-configmap", kind="ConfigMap", target="app-config", target_uid=uid)
    )
    status = _patch_status(hub, ns, "app-config-configmap", DEPTH)
    assert status == 200, f"the API server refused a {DEPTH}-level status: HTTP {status}"
    # An orphaned binding of its own: the bindings sweep must still run and find it.
    hub.create(binding(ns, "gone-configmap", kind="ConfigMap", target="gone"))

    try:
        result = sweep(ns, "--delete")
    finally:
        # The fixture's clean-up decodes what it deletes: make the status shallow again.
        assert _patch_status(hub, ns, "app-config-configmap", 1) == 200

    assert result.exit_code == 1, result.stderr  # an item failed; never 70
    assert result.outcome("ConfigMap", "app-config") == ("deleted", "orphaned")
    deep = result.item("ResourceBinding", "app-config-configmap")
    assert deep is not None and (deep["action"], deep["reason"]) == ("skipped", "lookup-failed")
    assert "nested too deeply" in deep["detail"]
    assert hub.present("ResourceBinding", ns, "app-config-configmap")
    assert result.outcome("ResourceBinding", "gone-configmap") == ("deleted", "orphaned")
    sweeps = result.summary["sweeps"]
    assert {name: s["status"] for name, s in sweeps.items()} == {
        "companions": "completed",
        "bindings": "completed",
        "routes": sweeps["routes"]["status"],
        "copies": sweeps["copies"]["status"],
    }
