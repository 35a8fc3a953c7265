"""End to end: the blast-radius brake, the hub Lease, --timeout and SIGTERM."""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from testbed.cluster import TestCluster, wait_for
from testbed.faultproxy import Fault, FaultProxy
from testbed.objects import binding, companion, workload
from testbed.report import HubSweep, run_gcjob, start_gcjob, summary_of, upstreams


def orphans(hub: TestCluster, ns: str, count: int, *, bound: bool = False) -> list[str]:
    names = [f"orphan-{i}" for i in range(count)]
    for name in names:
        orphan = companion("ConfigMap", ns, name, [f"default/gone-{name}"])
        if bound:
            hub.create_with_binding(orphan)
        else:
            hub.create(orphan)
    return names


def live(hub: TestCluster, ns: str, count: int) -> None:
    hub.create(workload(ns, "web"))
    for i in range(count):
        hub.create(companion("ConfigMap", ns, f"live-{i}", ["default/web"]))


# -- brake -------------------------------------------------------------------------------


def test_max_deletions_is_a_drain_cap_not_a_brake(hub: TestCluster, sweep: HubSweep) -> None:
    ns = hub.namespace()
    names = orphans(hub, ns, 4)

    result = sweep(ns, "--delete", "--max-deletions", "3")

    assert result.exit_code == 0, result.stderr
    assert result.summary["sweeps"]["companions"]["status"] == "completed"
    assert result.summary["deletion_backlog"] == 1
    outcomes = [result.outcome("ConfigMap", name) for name in names]
    assert outcomes.count(("deleted", "orphaned")) == 3
    assert outcomes.count(("skipped", "backlog")) == 1
    left = [n for n in names if hub.present("ConfigMap", ns, n)]
    assert len(left) == 1
    assert "--max-deletions 3" in result.item("ConfigMap", left[0])["detail"]


def test_a_dry_run_reports_the_drain_cap_as_a_real_run_would(
    hub: TestCluster, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    orphans(hub, ns, 4)

    result = sweep(ns, "--max-deletions", "3")

    assert result.exit_code == 0
    assert result.summary["counts"]["companions"]["would-delete"] == {"orphaned": 3}
    assert result.summary["counts"]["companions"]["skipped"]["backlog"] == 1


def test_a_companion_and_its_binding_count_as_one_deletion(
    hub: TestCluster, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    names = orphans(hub, ns, 2, bound=True)

    result = sweep(ns, "--delete", "--max-deletions", "2")

    assert result.exit_code == 0, result.stderr
    for name in names:
        assert hub.gone("ConfigMap", ns, name)
        assert hub.gone("ResourceBinding", ns, f"{name}-configmap")


def test_percent_brake_applies_only_above_its_minimum(
    hub: TestCluster, gcjob_hub_args: list[str]
) -> None:
    ns = hub.namespace()
    names = orphans(hub, ns, 6)
    live(hub, ns, 4)
    args = [
        *gcjob_hub_args,
        "--namespace",
        ns,
        "--delete",
        "--max-delete-percent",
        "50",
        "--sweep",
        "companions",
    ]

    braked = run_gcjob(*args, "--brake-min-objects", "10")

    assert braked.exit_code == 4
    assert "6 of 10 objects (60%)" in braked.item("ConfigMap", names[0])["detail"]
    assert all(hub.present("ConfigMap", ns, n) for n in names)

    small_hub = run_gcjob(*args, "--brake-min-objects", "11")

    assert small_hub.exit_code == 0
    assert all(hub.gone("ConfigMap", ns, n) for n in names)


def test_a_braked_sweep_does_not_stop_the_others(
    hub: TestCluster, gcjob_hub_args: list[str]
) -> None:
    ns = hub.namespace()
    orphans(hub, ns, 3)
    hub.create(binding(ns, "gone-configmap", kind="ConfigMap", target="gone"))
    args = [*gcjob_hub_args, "--namespace", ns, "--delete", "--brake-min-objects", "3"]

    result = run_gcjob(*args)

    assert result.exit_code == 4
    assert result.summary["sweeps"]["companions"]["status"] == "braked"
    assert "--max-delete-percent" in result.summary["sweeps"]["companions"]["detail"]
    assert result.summary["sweeps"]["bindings"]["status"] == "completed"
    assert result.outcome("ResourceBinding", "gone-configmap") == ("deleted", "orphaned")


# -- lease -------------------------------------------------------------------------------


def lease(ns: str, holder: str, renewed: datetime, seconds: int) -> dict[str, Any]:
    stamp = renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "gcjob", "namespace": ns},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": seconds,
            "acquireTime": stamp,
            "renewTime": stamp,
        },
    }


def locked_args(hub_kubeconfig: str, hub: TestCluster, ns: str) -> list[str]:
    args = [
        "--hub-kubeconfig",
        hub_kubeconfig,
        "--min-age",
        "0s",
        "--grace",
        "0s",
        "--namespace",
        ns,
        "--lock-namespace",
        ns,
        "--delete",
    ]
    return [*args, "--hub-context", hub.context] if hub.context else args


def test_a_live_lease_holder_keeps_a_run_out(hub: TestCluster, hub_kubeconfig: str) -> None:
    ns = hub.namespace()
    names = orphans(hub, ns, 1)
    hub.create(lease(ns, "other-pod/run-1", datetime.now(UTC), 600))

    result = run_gcjob(*locked_args(hub_kubeconfig, hub, ns))

    assert result.exit_code == 6
    assert "other-pod/run-1" in result.stderr
    assert result.items == []
    assert hub.present("ConfigMap", ns, names[0])


def test_an_expired_lease_is_taken_over_and_released(hub: TestCluster, hub_kubeconfig: str) -> None:
    ns = hub.namespace()
    names = orphans(hub, ns, 1)
    hub.create(lease(ns, "dead-pod/run-0", datetime.now(UTC) - timedelta(hours=1), 300))

    result = run_gcjob(*locked_args(hub_kubeconfig, hub, ns))

    assert result.exit_code == 0, result.stderr
    assert hub.gone("ConfigMap", ns, names[0])
    released = hub.get("Lease", ns, "gcjob")
    assert released is not None
    assert not released["spec"].get("holderIdentity")
    assert released["spec"]["leaseTransitions"] >= 1


def test_two_runs_at_once_one_waits_out(
    hub: TestCluster, hub_kubeconfig: str, faults: FaultProxy
) -> None:
    ns = hub.namespace()
    names = orphans(hub, ns, 2)
    # Hold the first run inside its sweep, after it took the lease, until the second is done
    # (a fixed delay lost the race once: the second process started after the first ended).
    gate = threading.Event()
    path = f"/namespaces/{ns}/workloaddeployments$"
    faults.add_fault(Fault(method="GET", path=path, hold=gate))
    first = start_gcjob(*locked_args(hub_kubeconfig, hub, ns))
    # A loaded CI machine took over 10 s to start a process; a first run that ended instead
    # of holding the lease fails here with its own words, not as a timeout.
    wait_for(
        lambda: (
            first.poll() is not None
            or (hub.get("Lease", ns, "gcjob") or {}).get("spec", {}).get("holderIdentity")
        ),
        timeout=60,
        what="for the first run to take the lease",
    )
    assert first.poll() is None, first.communicate()[1]

    second = start_gcjob(*locked_args(hub_kubeconfig, hub, ns))
    second_out, second_err = second.communicate(timeout=30)
    gate.set()
    first_out, first_err = first.communicate(timeout=30)

    assert second.returncode == 6, second_err
    assert "held by" in second_err
    assert summary_of(second_out)["exit_code"] == 6
    assert first.returncode == 0, first_err
    assert summary_of(first_out)["totals"]["deleted"] == 2
    assert all(hub.gone("ConfigMap", ns, n) for n in names)


# -- timeout and signals -----------------------------------------------------------------


def test_timeout_stops_the_run_and_says_what_is_left(
    hub: TestCluster, sweep: HubSweep, faults: FaultProxy
) -> None:
    ns = hub.namespace()
    names = orphans(hub, ns, 2)
    faults.add_fault(Fault(method="GET", path=f"/namespaces/{ns}/configmaps$", delay=2.0))

    result = sweep(ns, "--delete", "--timeout", "1s")

    assert result.exit_code == 5
    assert result.summary["sweeps"]["companions"]["status"] == "stopped"
    assert all(
        s["status"] == "stopped"
        for s in result.summary["sweeps"].values()
        if s["status"] != "not-configured"
    )
    assert all(hub.present("ConfigMap", ns, n) for n in names)


def test_sigterm_mid_run_stops_after_the_request_in_flight(
    hub: TestCluster, hub_kubeconfig: str, faults: FaultProxy
) -> None:
    ns = hub.namespace()
    names = orphans(hub, ns, 3)
    args = [
        "--hub-kubeconfig",
        hub_kubeconfig,
        "--no-lock",
        "--min-age",
        "0s",
        "--grace",
        "0s",
        "--namespace",
        ns,
        "--delete",
        "--delete-qps",
        "0.2",
    ]  # 5 s between deletions
    faults.clear_requests()
    process = start_gcjob(*args)
    wait_for(
        lambda: process.poll() is not None or any(r.method == "DELETE" for r in faults.requests),
        timeout=60,
    )
    started = time.monotonic()

    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=20)

    assert time.monotonic() - started < 3.0  # a backoff or throttle sleep wakes at once
    assert process.returncode == 5, err
    summary = summary_of(out)
    assert summary["exit_code"] == 5
    assert summary["totals"]["deleted"] == 1
    # issue 12 item 14: the sweep is not `completed` when candidates were left undone
    assert summary["sweeps"]["companions"]["status"] == "stopped"
    # two ConfigMaps, and the deleted one's binding if its lookup was not sent yet
    assert re.fullmatch(
        r"[23] objects left undone: run stopped \(SIGTERM\)",
        summary["sweeps"]["companions"]["detail"],
    )
    records = [json.loads(line) for line in out.splitlines() if line.strip()]
    configmaps = {r["name"]: r["action"] for r in records if r.get("kind") == "ConfigMap"}
    assert sorted(configmaps.values()) == ["deleted", "skipped", "skipped"], out
    stopped = [r for r in records if r.get("kind") == "ConfigMap" and r["action"] == "skipped"]
    assert {r["reason"] for r in stopped} == {"stopped"}
    # The deleted one's binding lookup may have been sent before the signal or left undone;
    # either way nothing else was deleted.
    assert sum(hub.present("ConfigMap", ns, n) for n in names) == 2


def test_sigterm_while_bindings_are_read_ahead_of_their_marks_stops_at_once(
    hub: TestCluster, hub_kubeconfig: str, faults: FaultProxy
) -> None:
    """The bindings of the companions about to be marked are read ahead on the hub's readers;
    the proxy holds those reads. A SIGTERM then ends the run within moments (the readers give
    up, the process waits on none of them): no binding is marked, the rest is left undone."""
    ns = hub.namespace()
    names = orphans(hub, ns, 3, bound=True)
    gate = threading.Event()
    faults.add_fault(
        Fault(method="GET", path=f"/namespaces/{ns}/resourcebindings/", hold=gate, times=None)
    )
    args = [
        "--hub-kubeconfig",
        hub_kubeconfig,
        "--no-lock",
        "--min-age",
        "0s",
        "--grace",
        "1h",
        "--namespace",
        ns,
        "--delete",
        "--sweep",
        "companions",
    ]
    faults.clear_requests()
    process = start_gcjob(*args)
    try:
        # the first companion marked; its binding's read and the next two, read ahead, held
        def marked_first_and_reading_ahead() -> bool:
            requests = faults.requests
            held = [r for r in requests if r.method == "GET" and "/resourcebindings/" in r.path]
            return len(held) == 3 and any(
                r.method == "PATCH" and r.path.endswith(f"/{names[0]}") and r.status == 200
                for r in requests
            )

        wait_for(lambda: process.poll() is not None or marked_first_and_reading_ahead(), 60)
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
        stopped_in = time.monotonic() - started
    finally:
        gate.set()

    assert stopped_in < 3.0, err  # not the proxy's 60 s hold
    assert process.returncode == 5, err
    summary = summary_of(out)
    assert summary["sweeps"]["companions"]["status"] == "stopped"
    records = [json.loads(line) for line in out.splitlines() if line.strip()]
    bindings = [r for r in records if r.get("kind") == "ResourceBinding"]
    assert [(r["action"], r["reason"]) for r in bindings] == [("skipped", "stopped")], out
    configmaps = {
        r["name"]: (r["action"], r["reason"]) for r in records if r.get("kind") == "ConfigMap"
    }
    assert configmaps[names[0]] == ("marked", "orphaned")
    assert configmaps[names[1]] == configmaps[names[2]] == ("skipped", "stopped")
    assert not [r for r in faults.requests if r.method == "PATCH" and "resourcebindings" in r.path]


def test_a_stopped_run_still_releases_its_lease(
    hub: TestCluster, hub_kubeconfig: str, faults: FaultProxy
) -> None:
    ns = hub.namespace()
    names = orphans(hub, ns, 1)
    faults.add_fault(Fault(method="GET", path=f"/namespaces/{ns}/configmaps$", delay=2.0))

    stopped = run_gcjob(*locked_args(hub_kubeconfig, hub, ns), "--timeout", "1s")

    assert stopped.exit_code == 5
    assert not hub.get("Lease", ns, "gcjob")["spec"].get("holderIdentity")
    again = run_gcjob(*locked_args(hub_kubeconfig, hub, ns))
    assert again.exit_code == 0, again.stderr
    assert hub.gone("ConfigMap", ns, names[0])


def test_a_stop_during_upstream_lookups_is_a_stop_not_an_unavailable_upstream(
    hub: TestCluster,
    upstream: TestCluster,
    upstream_faults: FaultProxy,
    gcjob_hub_args: list[str],
    upstream_kubeconfig: str,
) -> None:
    from testbed.endpoints import UPSTREAM_CLUSTER
    from testbed.objects import route

    projects = [upstream.project("gw-a") for _ in range(2)]
    ns = hub.namespace()
    for i, project in enumerate(projects):
        hub.create(
            route(
                ns,
                f"r{i}",
                cluster_label=f"cluster-{UPSTREAM_CLUSTER}",
                upstream_namespace=project,
                parents=[{"name": "gw-a"}],
            )
        )
    upstream_faults.add_fault(Fault(method="GET", path="/gateways/gw-a$", delay=2.0, times=None))
    try:
        result = run_gcjob(
            *gcjob_hub_args,
            "--upstream-kubeconfig",
            upstream_kubeconfig,
            "--sweep",
            "routes",
            "--namespace",
            ns,
            "--delete",
            "--timeout",
            "1s",
        )
    finally:
        upstream_faults.clear_faults()

    assert result.exit_code == 5
    assert result.summary["sweeps"]["routes"]["status"] == "stopped"
    assert upstreams(result)[UPSTREAM_CLUSTER]["status"] == "ok"
    assert all(i["reason"] != "upstream-unavailable" for i in result.items)


def test_a_lock_namespace_that_does_not_exist_is_a_configuration_error(
    hub: TestCluster, hub_kubeconfig: str
) -> None:
    ns = hub.namespace()
    names = orphans(hub, ns, 1)
    args = locked_args(hub_kubeconfig, hub, ns)
    args[args.index("--lock-namespace") + 1] = "no-such-namespace-e2e"

    result = run_gcjob(*args)

    assert result.exit_code == 2
    assert "--lock-namespace" in result.stderr
    assert result.items == []
    assert hub.present("ConfigMap", ns, names[0])
