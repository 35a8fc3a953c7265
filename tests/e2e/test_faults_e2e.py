"""End to end: API faults injected by the proxy in front of the real server, and how gcjob
rides them out.

Each test injects one fault whose path regex names the test's own namespace or object, runs
the real CLI, and checks what was deleted on the server, what the report says, and the exit
code (docs/operating.md: retries, proven NotFound, resent deletes, restarted lists; the
README's exit codes).
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from gcjob.sweeps.companions.scan import COMPANION_SELECTOR, LEFT_COMPANIONS_SELECTOR
from testbed.cluster import TestCluster
from testbed.endpoints import UPSTREAM_CLUSTER
from testbed.faultproxy import Fault, FaultProxy, RecordedRequest
from testbed.objects import binding, companion, route, workload
from testbed.report import HubSweep, run_gcjob, upstreams

LABEL = f"cluster-{UPSTREAM_CLUSTER}"
WD_PATH = "/apis/compute.datumapis.com/v1alpha/namespaces/{ns}/workloaddeployments"
RB_PATH = "/apis/work.karmada.io/v1alpha2/namespaces/{ns}/resourcebindings"
GW_PATH = "/apis/gateway.networking.k8s.io/v1/namespaces/{ns}/gateways"


@pytest.fixture
def stamps(faults: FaultProxy, monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, Any]]:
    """(monotonic time, request) for every request the hub receives from now on."""
    seen: list[tuple[float, Any]] = []
    original = faults._record

    def record(rec: RecordedRequest) -> None:
        seen.append((time.monotonic(), rec))
        original(rec)

    monkeypatch.setattr(faults, "_record", record)
    return seen


def test_500_once_on_configmap_list_is_retried(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(workload(ns, "web-live"))
    hub.create(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))
    hub.create(companion("ConfigMap", ns, "live", ["default/web-live"]))
    fault = faults.add_fault(
        Fault(method="GET", path=rf"^/api/v1/namespaces/{ns}/configmaps$", status=500)
    )

    result = sweep(ns, "--delete", "--sweep", "companions")

    assert fault.hits == 1
    assert hub.gone("ConfigMap", ns, "orphan")
    assert hub.present("ConfigMap", ns, "live")
    assert result.outcome("ConfigMap", "orphan") == ("deleted", "orphaned")
    assert result.item("ConfigMap", "live") is None
    assert result.summary["sweeps"]["companions"]["status"] == "completed"
    assert result.exit_code == 0, result.stderr


def test_503_forever_on_workload_list_makes_companions_incomplete(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(workload(ns, "web-live"))
    orphan = hub.create(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))
    hub.create(
        binding(
            ns,
            "orphan-configmap",
            kind="ConfigMap",
            target="orphan",
            target_uid=orphan["metadata"]["uid"],
        )
    )
    hub.create(companion("Secret", ns, "live", ["default/web-live"]))
    # Proof that the bindings sweep ran: a binding whose ConfigMap is gone.
    hub.create(binding(ns, "gone-config-configmap", kind="ConfigMap", target="gone-config"))
    fault = faults.add_fault(
        Fault(method="GET", path="^" + WD_PATH.format(ns=ns) + "$", status=503, times=None)
    )

    result = sweep(
        ns,
        "--delete",
        "--sweep",
        "companions",
        "--sweep",
        "bindings",
    )

    assert fault.hits >= 2  # retried before giving up
    assert hub.present("ConfigMap", ns, "orphan")
    assert hub.present("Secret", ns, "live")
    assert hub.present("ResourceBinding", ns, "orphan-configmap")
    assert hub.gone("ResourceBinding", ns, "gone-config-configmap")
    assert not [i for i in result.items if i["sweep"] == "companions"]
    assert result.item("ConfigMap", "orphan") is None
    assert result.item("ResourceBinding", "orphan-configmap") is None  # object-exists: healthy
    assert result.outcome("ResourceBinding", "gone-config-configmap") == ("deleted", "orphaned")
    sweeps = result.summary["sweeps"]
    assert sweeps["companions"]["status"] == "incomplete"
    assert "WorkloadDeployment" in sweeps["companions"]["detail"]
    assert sweeps["bindings"]["status"] == "completed"
    assert result.exit_code == 3, result.stderr


def test_429_with_retry_after_on_companion_delete_waits_and_deletes_once(
    hub: TestCluster,
    faults: FaultProxy,
    stamps: list[tuple[float, Any]],
    sweep: HubSweep,
) -> None:
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))
    path = f"/api/v1/namespaces/{ns}/configmaps/orphan"
    faults.add_fault(
        Fault(method="DELETE", path=f"^{path}$", status=429, headers={"Retry-After": "1"})
    )

    result = sweep(ns, "--delete", "--sweep", "companions")

    deletes = [(t, r) for t, r in stamps if r.method == "DELETE" and r.path == path]
    assert [r.status for _, r in deletes] == [429, 200]
    assert deletes[1][0] - deletes[0][0] >= 0.9  # Retry-After honoured
    assert hub.gone("ConfigMap", ns, "orphan")
    assert result.outcome("ConfigMap", "orphan") == ("deleted", "orphaned")
    assert result.summary["counts"]["companions"]["deleted"] == {"orphaned": 1}
    assert result.exit_code == 0, result.stderr


def test_slow_referrer_reread_past_read_timeout_is_retried(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))
    path = WD_PATH.format(ns=ns) + "/web-gone"
    fault = faults.add_fault(Fault(method="GET", path=f"^{path}$", delay=2.0))

    result = sweep(
        ns,
        "--delete",
        "--sweep",
        "companions",
        "--read-timeout",
        "1s",
    )

    assert fault.hits == 1
    gets = [r for r in faults.requests if r.method == "GET" and r.path == path]
    assert len(gets) == 2  # timed out once, then answered NotFound
    assert hub.gone("ConfigMap", ns, "orphan")
    assert result.outcome("ConfigMap", "orphan") == ("deleted", "orphaned")
    assert result.summary["sweeps"]["companions"]["status"] == "completed"
    assert result.exit_code == 0, result.stderr


def test_delete_dropped_before_applying_is_resent(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))
    path = f"/api/v1/namespaces/{ns}/configmaps/orphan"
    fault = faults.add_fault(Fault(method="DELETE", path=f"^{path}$", drop=True))

    result = sweep(ns, "--delete", "--sweep", "companions")

    assert fault.hits == 1
    deletes = [r for r in faults.requests if r.method == "DELETE" and r.path == path]
    assert [r.status for r in deletes] == [None, 200]
    assert hub.gone("ConfigMap", ns, "orphan")
    assert result.outcome("ConfigMap", "orphan") == ("deleted", "orphaned")
    assert result.summary["counts"]["companions"]["deleted"] == {"orphaned": 1}
    assert result.exit_code == 0, result.stderr


def test_delete_dropped_after_applying_meets_404_and_counts_as_deleted(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    created = hub.create(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))
    hub.create(
        binding(
            ns,
            "orphan-configmap",
            kind="ConfigMap",
            target="orphan",
            target_uid=created["metadata"]["uid"],
        )
    )
    path = f"/api/v1/namespaces/{ns}/configmaps/orphan"
    fault = faults.add_fault(Fault(method="DELETE", path=f"^{path}$", drop=True, apply_first=True))

    result = sweep(ns, "--delete", "--sweep", "companions")

    assert fault.hits == 1
    deletes = [r for r in faults.requests if r.method == "DELETE" and r.path == path]
    # The resend finds it gone, or (the hub's garbage collector not yet done with our Orphan
    # delete's finalizer) terminating under our uid, a 409 that a read-back settles as ours.
    assert [r.status for r in deletes] in ([None, 404], [None, 409])
    assert hub.gone("ConfigMap", ns, "orphan")
    assert result.outcome("ConfigMap", "orphan") == ("deleted", "orphaned")
    # our own delete applied: the binding goes with it
    assert result.outcome("ResourceBinding", "orphan-configmap") == (
        "deleted",
        "companion-deleted",
    )
    assert hub.gone("ResourceBinding", ns, "orphan-configmap")
    counts = result.summary["counts"]["companions"]
    assert "already-gone" not in counts
    assert counts["deleted"] == {"orphaned": 1, "companion-deleted": 1}
    assert result.exit_code == 0, result.stderr


def test_binding_delete_dropped_after_applying_meets_409_and_is_settled(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(
        binding(
            ns,
            "gone-config-configmap",
            kind="ConfigMap",
            target="gone-config",
            karmada_finalizer=True,
        )
    )
    path = RB_PATH.format(ns=ns) + "/gone-config-configmap"
    fault = faults.add_fault(Fault(method="DELETE", path=f"^{path}$", drop=True, apply_first=True))

    result = sweep(ns, "--delete", "--sweep", "bindings")

    assert fault.hits == 1
    deletes = [r for r in faults.requests if r.method == "DELETE" and r.path == path]
    assert [r.status for r in deletes] == [None, 409]  # the finalizer holds it: rv changed
    left = hub.get("ResourceBinding", ns, "gone-config-configmap")
    assert left is not None and left["metadata"].get("deletionTimestamp")  # terminating
    # Our delete applied, and Karmada's finalizer (no Karmada runs here) still holds it.
    assert result.outcome("ResourceBinding", "gone-config-configmap") == ("delete-held", "orphaned")
    counts = result.summary["counts"]["bindings"]
    assert counts["delete-held"] == {"orphaned": 1}
    assert "skipped" not in counts
    assert result.summary["sweeps"]["bindings"]["status"] == "completed"
    assert result.exit_code == 0, result.stderr


def _paged_companions(hub: TestCluster, ns: str) -> list[str]:
    """Five orphaned ConfigMaps and one live one (three pages of two)."""
    hub.create(workload(ns, "web-live"))
    orphans = [f"orphan-{i}" for i in range(5)]
    for name in orphans:
        hub.create(companion("ConfigMap", ns, name, ["default/web-gone"]))
    hub.create(companion("ConfigMap", ns, "live", ["default/web-live"]))
    return orphans


def test_410_once_on_list_continue_restarts_the_list(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    orphans = _paged_companions(hub, ns)
    list_path = f"/api/v1/namespaces/{ns}/configmaps"
    fault = faults.add_fault(
        Fault(method="GET", path=f"^{list_path}$", query={"continue": "*"}, status=410)
    )

    result = sweep(
        ns,
        "--delete",
        "--sweep",
        "companions",
        "--page-size",
        "2",
        "--list-from",
        "etcd",  # pages: a resourceVersion=0 list comes whole from the cache, without a token
    )

    assert fault.hits == 1
    firsts = [
        r
        for r in faults.requests
        if r.method == "GET"
        and r.path == list_path
        and "continue" not in r.query
        and r.query.get("labelSelector") == [COMPANION_SELECTOR]  # not the left-scope list
    ]
    assert len(firsts) == 2  # restarted from scratch
    for name in orphans:
        deletes = [
            r for r in faults.requests if r.method == "DELETE" and r.path == f"{list_path}/{name}"
        ]
        assert len(deletes) == 1, name
        assert hub.gone("ConfigMap", ns, name)
        assert result.outcome("ConfigMap", name) == ("deleted", "orphaned")
    assert hub.present("ConfigMap", ns, "live")
    assert result.summary["counts"]["companions"]["deleted"] == {"orphaned": 5}
    assert result.summary["sweeps"]["companions"]["in_scope"] == 6
    assert result.exit_code == 0, result.stderr


def test_410_forever_on_list_continue_makes_the_sweep_incomplete(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    orphans = _paged_companions(hub, ns)
    list_path = f"/api/v1/namespaces/{ns}/configmaps"
    fault = faults.add_fault(
        Fault(method="GET", path=f"^{list_path}$", query={"continue": "*"}, status=410, times=None)
    )

    result = sweep(
        ns,
        "--delete",
        "--sweep",
        "companions",
        "--page-size",
        "2",
        "--list-from",
        "etcd",  # pages: a resourceVersion=0 list comes whole from the cache, without a token
    )

    assert 2 <= fault.hits <= 4  # restarted, but a bounded number of times
    for name in [*orphans, "live"]:
        assert hub.present("ConfigMap", ns, name), name
    assert not [r for r in faults.requests if r.method == "DELETE" and f"/{ns}/" in r.path]
    assert result.items == []
    assert result.summary["sweeps"]["companions"]["status"] == "incomplete"
    assert result.exit_code == 3, result.stderr


def test_409_on_delete_is_changed_since_observed(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    created = hub.create(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))
    hub.create(
        binding(
            ns,
            "orphan-configmap",
            kind="ConfigMap",
            target="orphan",
            target_uid=created["metadata"]["uid"],
        )
    )
    path = f"/api/v1/namespaces/{ns}/configmaps/orphan"
    faults.add_fault(Fault(method="DELETE", path=f"^{path}$", status=409))

    result = sweep(ns, "--delete", "--sweep", "companions")

    assert hub.present("ConfigMap", ns, "orphan")
    assert hub.present("ResourceBinding", ns, "orphan-configmap")  # kept with its companion
    assert result.outcome("ConfigMap", "orphan") == ("skipped", "changed-since-observed")
    assert result.item("ResourceBinding", "orphan-configmap") is None
    assert not [
        r
        for r in faults.requests
        if r.method == "DELETE" and "resourcebindings" in r.path and f"/{ns}/" in r.path
    ]
    assert result.summary["sweeps"]["companions"]["status"] == "completed"
    assert result.exit_code == 0, result.stderr


def test_404_naming_the_object_on_delete_is_already_gone(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))
    path = f"/api/v1/namespaces/{ns}/configmaps/orphan"
    not_found = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "orphan" not found',
        "reason": "NotFound",
        "details": {"name": "orphan", "kind": "configmaps"},
        "code": 404,
    }
    faults.add_fault(Fault(method="DELETE", path=f"^{path}$", status=404, body=not_found))

    result = sweep(ns, "--delete", "--sweep", "companions")

    deletes = [r for r in faults.requests if r.method == "DELETE" and r.path == path]
    assert [r.status for r in deletes] == [404]  # never resent
    assert result.outcome("ConfigMap", "orphan") == ("already-gone", "already-gone")
    assert result.summary["sweeps"]["companions"]["status"] == "completed"
    assert result.exit_code == 0, result.stderr


def test_403_on_secret_list_makes_companions_incomplete(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))
    hub.create(companion("Secret", ns, "orphan-secret", ["default/web-gone"]))
    fault = faults.add_fault(
        Fault(method="GET", path=rf"^/api/v1/namespaces/{ns}/secrets$", status=403, times=None)
    )

    result = sweep(ns, "--delete", "--sweep", "companions")

    assert fault.hits == 1  # 403 is never retried
    assert hub.present("ConfigMap", ns, "orphan")
    assert hub.present("Secret", ns, "orphan-secret")
    assert result.items == []
    sweep = result.summary["sweeps"]["companions"]
    assert sweep["status"] == "incomplete"
    message = sweep["detail"] + "\n" + result.stderr
    assert "secrets" in sweep["detail"]
    assert "403" in sweep["detail"] or "forbidden" in sweep["detail"].lower()
    assert re.search(r"\blist\b", message), message  # the RBAC verb to grant
    assert result.exit_code == 3, result.stderr


def test_403_on_delete_is_delete_failed(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))
    path = f"/api/v1/namespaces/{ns}/configmaps/orphan"
    fault = faults.add_fault(Fault(method="DELETE", path=f"^{path}$", status=403, times=None))

    result = sweep(ns, "--delete", "--sweep", "companions")

    assert fault.hits == 1  # never retried
    assert hub.present("ConfigMap", ns, "orphan")
    assert result.outcome("ConfigMap", "orphan") == ("failed", "delete-failed")
    item = result.item("ConfigMap", "orphan")
    assert item is not None
    assert re.search(r"\bdelete\b", item["detail"]), item["detail"]
    assert "403" in item["detail"] or "forbidden" in item["detail"].lower()
    assert result.exit_code == 1, result.stderr


# -- upstream faults ---------------------------------------------------------------------


def _orphan_route(hub: TestCluster, ns: str, name: str, project: str, gateways: list[str]) -> None:
    parents = [{"name": g} for g in gateways]
    hub.create(route(ns, name, cluster_label=LABEL, upstream_namespace=project, parents=parents))


def test_403_on_upstream_gateway_reads_keeps_routes(
    hub: TestCluster,
    upstream: TestCluster,
    upstream_faults: FaultProxy,
    routes_args: list[str],
) -> None:
    ns = hub.namespace()
    one = upstream.project("gw-a")  # one Gateway asked for: a GET
    two = upstream.project("gw-a")  # two asked for: a list
    _orphan_route(hub, ns, "by-get", one, ["gw-gone"])
    _orphan_route(hub, ns, "by-list", two, ["gw-gone", "gw-gone-too"])
    for project in (one, two):
        upstream_faults.add_fault(
            Fault(method="GET", path="^" + GW_PATH.format(ns=project), status=403, times=None)
        )

    result = run_gcjob(*routes_args, "--namespace", ns, "--delete")

    for name in ("by-get", "by-list"):
        assert hub.present("HTTPRoute", ns, name), name
        assert result.outcome("HTTPRoute", name) == ("skipped", "upstream-unavailable"), name
    assert not [r for r in upstream_faults.requests if r.method == "DELETE"]
    # issue 20 item 15: what failed shows as the cluster's status, where alerts look.
    cluster = upstreams(result)[UPSTREAM_CLUSTER]
    assert cluster["status"] == "unavailable"
    assert "HTTP 403" in cluster["detail"]
    assert result.exit_code == 1, result.stderr


def test_slow_upstream_discovery_makes_the_cluster_unavailable(
    hub: TestCluster,
    upstream: TestCluster,
    upstream_faults: FaultProxy,
    routes_args: list[str],
) -> None:
    ns = hub.namespace()
    project = upstream.project()
    _orphan_route(hub, ns, "orphan", project, ["gw-gone"])
    upstream_faults.add_fault(
        Fault(
            method="GET",
            # the aggregated document, and the group version's own where it is not served
            path=r"^/apis(/gateway\.networking\.k8s\.io/v1)?/?$",
            delay=1.5,
            times=None,
        )
    )

    # 0.5 s rather than 1 s: five timed-out attempts plus backoff stay under ~8 s
    result = run_gcjob(*routes_args, "--namespace", ns, "--delete", "--read-timeout", "0.5s")

    assert hub.present("HTTPRoute", ns, "orphan")
    assert result.outcome("HTTPRoute", "orphan") == ("skipped", "upstream-unavailable")
    assert upstreams(result)[UPSTREAM_CLUSTER]["status"] == "unavailable"
    assert result.exit_code == 1, result.stderr


def test_upstream_not_serving_gateways_is_unavailable(
    hub: TestCluster,
    upstream: TestCluster,
    upstream_faults: FaultProxy,
    routes_args: list[str],
) -> None:
    ns = hub.namespace()
    project = upstream.project()
    _orphan_route(hub, ns, "orphan", project, ["gw-gone"])
    upstream_faults.unserve("gateway.networking.k8s.io", "v1")
    try:
        result = run_gcjob(*routes_args, "--namespace", ns, "--delete")
    finally:
        upstream_faults.serve("gateway.networking.k8s.io", "v1")

    assert hub.present("HTTPRoute", ns, "orphan")
    assert result.outcome("HTTPRoute", "orphan") == ("skipped", "upstream-unavailable")
    assert upstreams(result)[UPSTREAM_CLUSTER]["status"] == "unavailable"
    assert result.exit_code == 1, result.stderr


# -- the hub itself ----------------------------------------------------------------------


def test_unreachable_hub_is_incomplete_with_one_summary(tmp_path: Path) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "dead", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "dead", "user": {"token": "x"}}],
        "contexts": [{"name": "dead", "context": {"cluster": "dead", "user": "dead"}}],
        "current-context": "dead",
    }
    kubeconfig = tmp_path / "dead-hub"
    kubeconfig.write_text(yaml.safe_dump(config))
    ns = f"gcjob-e2e-{uuid.uuid4().hex[:8]}"

    result = run_gcjob(
        "--hub-kubeconfig",
        str(kubeconfig),
        "--no-lock",
        "--min-age",
        "0s",
        "--grace",
        "0s",
        "--namespace",
        ns,
        "--delete",
        "--connect-timeout",
        "1s",
    )

    assert result.exit_code == 3, result.stderr
    assert len(result.records) == 1
    assert result.summary["exit_code"] == 3
    errors = [line for line in result.stderr.splitlines() if line.startswith("gcjob: error:")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith("gcjob: error: cannot use the hub:")
    assert "ConnectionRefused" in errors[0] or "NewConnectionError" in errors[0]


def test_hub_without_karmada_is_refused(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))
    hub.create(binding(ns, "gone-config-configmap", kind="ConfigMap", target="gone-config"))
    faults.unserve("work.karmada.io", "v1alpha2")
    try:
        result = sweep(ns, "--delete")
    finally:
        faults.serve("work.karmada.io", "v1alpha2")

    assert result.exit_code == 2, result.stderr
    assert result.items == []
    assert hub.present("ConfigMap", ns, "orphan")
    assert hub.present("ResourceBinding", ns, "gone-config-configmap")
    assert not [r for r in faults.requests if r.method == "DELETE" and f"/{ns}/" in r.path]
    assert "not a Karmada hub" in result.stderr


def test_delete_applied_then_answered_503_counts_as_deleted_and_takes_the_binding(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    created = hub.create(companion("ConfigMap", ns, "app", ["default/gone"]))
    hub.create(
        binding(
            ns,
            "app-configmap",
            kind="ConfigMap",
            target="app",
            target_uid=created["metadata"]["uid"],
        )
    )
    faults.add_fault(
        Fault(
            method="DELETE", path=f"/namespaces/{ns}/configmaps/app$", status=503, apply_first=True
        )
    )

    result = sweep(ns, "--delete")

    assert result.exit_code == 0, result.stderr
    assert result.outcome("ConfigMap", "app") == ("deleted", "orphaned")
    assert result.outcome("ResourceBinding", "app-configmap") == ("deleted", "companion-deleted")
    assert hub.gone("ResourceBinding", ns, "app-configmap")


def test_binding_delete_applied_then_answered_503_is_settled_as_deleted(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(binding(ns, "lost-configmap", kind="ConfigMap", target="lost"))
    faults.add_fault(
        Fault(
            method="DELETE",
            path=f"/namespaces/{ns}/resourcebindings/lost-",
            status=503,
            apply_first=True,
        )
    )

    result = sweep(ns, "--delete", "--sweep", "bindings")

    assert result.exit_code == 0, result.stderr
    assert result.outcome("ResourceBinding", "lost-configmap") == ("deleted", "orphaned")
    assert hub.gone("ResourceBinding", ns, "lost-configmap")


def test_delete_applied_then_503_until_retries_run_out_is_settled_by_looking(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "app", ["default/gone"]))
    faults.add_fault(
        Fault(
            method="DELETE", path=f"/namespaces/{ns}/configmaps/app$", status=503, apply_first=True
        )
    )
    faults.add_fault(
        Fault(method="DELETE", path=f"/namespaces/{ns}/configmaps/app$", status=503, times=None)
    )

    result = sweep(ns, "--delete", "--sweep", "companions")

    assert hub.gone("ConfigMap", ns, "app")
    assert result.outcome("ConfigMap", "app") == ("deleted", "orphaned")
    assert result.summary["totals"]["deleted"] == 1
    assert result.exit_code == 0, result.stderr


def test_delete_applied_then_stopped_before_the_retry_is_settled_not_left_undone(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "app", ["default/gone"]))
    faults.add_fault(
        Fault(
            method="DELETE",
            path=f"/namespaces/{ns}/configmaps/app$",
            drop=True,
            apply_first=True,
            delay=8.0,  # still in flight when the run's deadline comes
        )
    )

    # 4 s: the preflight's access reviews and the lists come first, and take most of a second
    # on a loaded machine; the DELETE must be sent before the deadline and answered after it.
    result = sweep(ns, "--delete", "--sweep", "companions", "--timeout", "4s")

    assert hub.gone("ConfigMap", ns, "app")
    assert result.outcome("ConfigMap", "app") == ("deleted", "orphaned")
    assert result.summary["totals"]["deleted"] == 1
    assert result.exit_code == 5  # the run was stopped; what it did is still told truly


def test_a_delete_that_cannot_be_settled_is_reported_uncertain(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "app", ["default/gone"]))
    faults.add_fault(
        Fault(method="DELETE", path=f"/namespaces/{ns}/configmaps/app$", status=503, times=None)
    )
    faults.add_fault(
        Fault(method="GET", path=f"/namespaces/{ns}/configmaps/app$", status=500, times=None)
    )

    result = sweep(ns, "--delete", "--sweep", "companions")

    assert result.outcome("ConfigMap", "app") == ("failed", "delete-uncertain")
    assert "may have been applied" in result.item("ConfigMap", "app")["detail"]
    faults.clear_faults()
    assert hub.present("ConfigMap", ns, "app")
    assert result.exit_code == 1


def test_a_failed_list_of_marks_that_left_the_sweep_read_beside_the_index_deletes_nothing(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    """The two lists of marked objects no longer labelled companions are read beside the
    WorkloadDeployment index; one that fails still ends the sweep before any decision."""
    ns = hub.namespace()
    hub.create_with_binding(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))
    faults.add_fault(
        Fault(
            method="GET",
            path=f"^/api/v1/namespaces/{ns}/secrets$",
            query={"labelSelector": LEFT_COMPANIONS_SELECTOR},
            status=500,
            times=None,  # every retry too
        )
    )

    result = sweep(ns, "--delete", "--sweep", "companions")

    assert result.exit_code == 3, result.stderr
    state = result.summary["sweeps"]["companions"]
    assert state["status"] == "incomplete"
    assert "cannot list marked objects that left the sweep" in state["detail"]
    assert hub.present("ConfigMap", ns, "orphan")
    assert result.item("ConfigMap", "orphan") is None  # not judged at all
    assert not [r for r in faults.requests if r.method in ("DELETE", "PATCH")]
    index = [r for r in faults.requests if "workloaddeployments" in r.path]
    assert index and all(r.status == 200 for r in index)  # read beside it, in full


def test_a_failed_index_still_waits_for_the_lists_read_beside_it_before_the_next_sweep(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    """The lists of marks that left the companions sweep are read beside the index. When the
    index fails, the sweep still waits for them to end (as every read of a sweep is waited
    for): no read of one sweep goes on under the next, or after the run's report."""
    ns = hub.namespace()
    hub.create_with_binding(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))
    hub.create(binding(ns, "gone-config-configmap", kind="ConfigMap", target="gone-config"))
    faults.add_fault(
        Fault(method="GET", path="^" + WD_PATH.format(ns=ns) + "$", status=403, times=None)
    )
    gate = threading.Event()
    faults.add_fault(
        Fault(
            method="GET",
            path=f"^/api/v1/namespaces/{ns}/configmaps$",
            query={"labelSelector": LEFT_COMPANIONS_SELECTOR},
            hold=gate,
        )
    )
    timer = threading.Timer(2.0, gate.set)
    timer.start()
    try:
        result = sweep(ns, "--sweep", "companions", "--sweep", "bindings")
    finally:
        timer.cancel()
        gate.set()

    assert result.exit_code == 3, result.stderr
    sweeps = result.summary["sweeps"]
    assert sweeps["companions"]["status"] == "incomplete"
    assert "WorkloadDeployment" in sweeps["companions"]["detail"]
    assert sweeps["bindings"]["status"] == "completed"
    assert result.outcome("ResourceBinding", "gone-config-configmap") == (
        "would-delete",
        "orphaned",
    )
    [left] = [
        r
        for r in faults.requests
        if r.path == f"/api/v1/namespaces/{ns}/configmaps"
        and LEFT_COMPANIONS_SELECTOR in r.query.get("labelSelector", [])
    ]
    assert left.answered is not None
    bindings_lists = [
        r for r in faults.requests if r.method == "GET" and r.path == RB_PATH.format(ns=ns)
    ]
    assert bindings_lists
    assert all(r.received > left.answered for r in bindings_lists)


ADMISSION = "/apis/admissionregistration.k8s.io/v1"


def test_a_delete_an_admission_policy_refuses_names_the_policy_not_a_grant(
    hub: TestCluster, sweep: HubSweep
) -> None:
    """A ValidatingAdmissionPolicy that refuses the delete (403 Forbidden, as RBAC's) is no
    permission to grant: the item says the policy refused it, in the server's words, and the
    object stays."""
    ns = hub.namespace()
    policy = f"keep-{ns[-8:]}"
    hub.create_at(
        f"{ADMISSION}/validatingadmissionpolicies",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": policy},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["DELETE"],
                            "resources": ["configmaps"],
                        }
                    ]
                },
                "validations": [
                    {"expression": "false", "message": "kept by policy", "reason": "Forbidden"}
                ],
            },
        },
    )
    hub.create_at(
        f"{ADMISSION}/validatingadmissionpolicybindings",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": policy},
            "spec": {
                "policyName": policy,
                "validationActions": ["Deny"],
                "matchResources": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}
                },
            },
        },
    )
    try:
        hub.create(companion("ConfigMap", ns, "probe", ["default/web-gone"]))
        probe = f"/api/v1/namespaces/{ns}/configmaps/probe?dryRun=All"
        deadline = time.monotonic() + 30
        while hub._call("DELETE", probe)[0] != 403:  # the policy is read by an informer
            assert time.monotonic() < deadline, "the policy never took effect"
            time.sleep(0.2)
        hub.create(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))

        result = sweep(ns, "--delete", "--sweep", "companions")

        item = result.item("ConfigMap", "orphan")
        assert item is not None, result.items
        assert (item["action"], item["reason"]) == ("skipped", "admission-refused")
        detail = item["detail"]
        assert "refused by admission" in detail, detail
        assert f"ValidatingAdmissionPolicy '{policy}'" in detail and "kept by policy" in detail
        assert "grant" not in detail
        assert hub.present("ConfigMap", ns, "orphan")
        # The hub's owner said no on purpose: kept and counted, not a failed run (issue 47).
        assert result.exit_code == 0, result.stderr
    finally:
        hub._call("DELETE", f"{ADMISSION}/validatingadmissionpolicybindings/{policy}")
        hub._call("DELETE", f"{ADMISSION}/validatingadmissionpolicies/{policy}")
