"""End to end: mark first, delete later (--grace), on the real API servers.

Time is set with the hidden --now flag, never with sleeps: run 1 marks, a run inside the
grace period keeps the mark, a run after it deletes. Every write is a conditional JSON Patch;
a patch whose `test` fails because of a real concurrent write is a safe skip.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gcjob.domain import (
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
    REFERRERS_ANNOTATION,
)
from tests.e2e.cluster import TestCluster
from tests.e2e.conftest import UPSTREAM_CLUSTER, Result, run_gcjob
from tests.e2e.faultproxy import Fault, FaultProxy
from tests.e2e.objects import SECRET_VALUE, binding, companion, gateway, route, workload

# Whole seconds, a minute ahead of the clock: objects created now are never "from the future".
T0 = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=1)


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def mark_of(obj: dict[str, Any] | None) -> dict[str, str | None] | None:
    """gcjob's mark on an object; None when it carries none."""
    assert obj is not None
    meta = obj["metadata"]
    labels, notes = meta.get("labels") or {}, meta.get("annotations") or {}
    found = {
        "label": labels.get(ORPHANED_LABEL),
        "since": notes.get(ORPHANED_SINCE_ANNOTATION),
        "reason": notes.get(ORPHANED_REASON_ANNOTATION),
        "evidence": notes.get(ORPHANED_EVIDENCE_ANNOTATION),
    }
    return None if not any(found.values()) else found


@pytest.fixture
def graced(gcjob_hub_args: list[str]) -> Any:
    """`graced(minutes, *args)`: a deleting run with a 10 minute grace period, at T0+minutes."""

    def run(minutes: float, *args: str) -> Result:
        return run_gcjob(*gcjob_hub_args, "--grace", "10m", "--now", at(minutes), "--delete", *args)

    return run


def bound_pair(hub: TestCluster, kind: str, ns: str, name: str, referrers: list[str]) -> str:
    created = hub.create(companion(kind, ns, name, referrers))
    rb = f"{name}-{kind.lower()}"
    hub.create(binding(ns, rb, kind=kind, target=name, target_uid=created["metadata"]["uid"]))
    return rb


def test_a_run_marks_a_run_inside_the_grace_period_keeps_a_run_after_it_deletes(
    hub: TestCluster, graced: Any
) -> None:
    ns = hub.namespace("grace")
    rb = bound_pair(hub, "ConfigMap", ns, "app-config", ["default/web-gone"])

    first = graced(0, "--namespace", ns)

    assert first.exit_code == 0, first.stderr
    assert first.outcome("ConfigMap", "app-config") == ("marked", "orphaned")
    assert first.outcome("ResourceBinding", rb) == ("marked", "companion-orphaned")
    for kind, name in (("ConfigMap", "app-config"), ("ResourceBinding", rb)):
        item = first.item(kind, name)
        assert item is not None and item["orphaned_since"] == at(0)
        mark = mark_of(hub.get(kind, ns, name))
        assert mark is not None and mark["label"] == "true" and mark["since"] == at(0)
    assert mark_of(hub.get("ConfigMap", ns, "app-config"))["evidence"].startswith("companion:")  # type: ignore[index]
    # Every mark written counts, the binding's too (issue 20 item 6).
    assert first.summary["marks"] == {"companions": {"companion-orphaned": 1, "orphaned": 1}}
    assert first.summary["grace_seconds"] == 600

    inside = graced(9.9, "--namespace", ns)

    assert inside.exit_code == 0, inside.stderr
    assert inside.outcome("ConfigMap", "app-config") == ("skipped", "grace-period")
    assert inside.outcome("ResourceBinding", rb) == ("skipped", "grace-period")
    assert inside.item("ConfigMap", "app-config")["orphaned_since"] == at(0)  # type: ignore[index]
    assert hub.present("ConfigMap", ns, "app-config") and hub.present("ResourceBinding", ns, rb)
    assert inside.summary["marks"] == {}

    after = graced(10, "--namespace", ns)

    assert after.exit_code == 0, after.stderr
    assert after.outcome("ConfigMap", "app-config") == ("deleted", "orphaned")
    assert after.outcome("ResourceBinding", rb) == ("deleted", "companion-deleted")
    assert after.item("ResourceBinding", rb)["orphaned_since"] == at(0)  # type: ignore[index]
    assert hub.gone("ConfigMap", ns, "app-config") and hub.gone("ResourceBinding", ns, rb)


def test_a_referrer_back_between_two_runs_removes_the_mark(hub: TestCluster, graced: Any) -> None:
    ns = hub.namespace("grace")
    rb = bound_pair(hub, "Secret", ns, "db-creds", ["default/web"])
    graced(0, "--namespace", ns)
    assert mark_of(hub.get("Secret", ns, "db-creds")) is not None
    assert mark_of(hub.get("ResourceBinding", ns, rb)) is not None

    hub.create(workload(ns, "web"))  # the rollout re-created it
    back = graced(5, "--namespace", ns)

    assert back.exit_code == 0, back.stderr
    assert back.outcome("Secret", "db-creds") == ("unmarked", "referrer-live")
    assert back.outcome("ResourceBinding", rb) == ("unmarked", "referrer-live")
    assert mark_of(hub.get("Secret", ns, "db-creds")) is None
    assert mark_of(hub.get("ResourceBinding", ns, rb)) is None

    hub.delete("WorkloadDeployment", ns, "web")  # gone again: the clock starts over
    again = graced(10, "--namespace", ns)

    assert again.outcome("Secret", "db-creds") == ("marked", "orphaned")
    assert again.item("Secret", "db-creds")["orphaned_since"] == at(10)  # type: ignore[index]
    assert hub.present("Secret", ns, "db-creds")


def test_changed_evidence_under_a_mark_restarts_the_grace_period(
    hub: TestCluster, graced: Any
) -> None:
    ns = hub.namespace("grace")
    hub.create(companion("ConfigMap", ns, "app-config", ["default/web-gone"]))
    graced(0, "--namespace", ns)

    referrers = json.dumps(sorted(["default/web-gone", "default/api-gone"]))
    hub.patch(
        "ConfigMap",
        ns,
        "app-config",
        {"metadata": {"annotations": {REFERRERS_ANNOTATION: referrers}}},
    )
    changed = graced(5, "--namespace", ns)

    assert changed.outcome("ConfigMap", "app-config") == ("marked", "orphaned")
    assert "evidence changed" in changed.item("ConfigMap", "app-config")["detail"]  # type: ignore[index]
    assert mark_of(hub.get("ConfigMap", ns, "app-config"))["since"] == at(5)  # type: ignore[index]

    due_by_the_first_mark = graced(10, "--namespace", ns)
    assert due_by_the_first_mark.outcome("ConfigMap", "app-config") == ("skipped", "grace-period")
    assert hub.present("ConfigMap", ns, "app-config")

    due = graced(15, "--namespace", ns)
    assert due.outcome("ConfigMap", "app-config") == ("deleted", "orphaned")
    assert hub.gone("ConfigMap", ns, "app-config")


def test_a_patch_whose_test_fails_after_a_concurrent_write_is_a_safe_skip(
    hub: TestCluster, faults: FaultProxy, graced: Any
) -> None:
    """The proxy holds gcjob's PATCH for a moment; meanwhile a real write changes the object.
    The server then refuses the patch (its resourceVersion test fails): nothing is written."""
    ns = hub.namespace("grace")
    hub.create(companion("ConfigMap", ns, "busy", ["default/web-gone"]))
    faults.add_fault(Fault(method="PATCH", path=f"/namespaces/{ns}/configmaps/busy$", delay=2.0))

    def write_while_held() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if any(
                r.method == "PATCH" and r.body and r.path.endswith("/busy") for r in faults.requests
            ):
                hub.patch("ConfigMap", ns, "busy", {"metadata": {"annotations": {"team": "x"}}})
                return
            time.sleep(0.05)

    writer = threading.Thread(target=write_while_held)
    writer.start()
    result = graced(0, "--namespace", ns, "--sweep", "companions")
    writer.join()

    assert result.outcome("ConfigMap", "busy") == ("skipped", "changed-since-observed")
    [patch] = [
        r for r in faults.requests if r.headers.get("content-type") == "application/json-patch+json"
    ]
    assert patch.status == 422
    assert result.exit_code == 0, result.stderr  # a safe skip, not a failure
    obj = hub.get("ConfigMap", ns, "busy")
    assert mark_of(obj) is None
    assert obj is not None and obj["metadata"]["annotations"]["team"] == "x"

    # the next run decides again on what is there now
    assert graced(1, "--namespace", ns).outcome("ConfigMap", "busy") == ("marked", "orphaned")


def test_a_secret_is_marked_with_no_payload_received(
    hub: TestCluster, faults: FaultProxy, graced: Any
) -> None:
    ns = hub.namespace("grace")
    rb = bound_pair(hub, "Secret", ns, "db-creds", ["default/web-gone"])
    faults.clear_requests()  # only gcjob's requests from here

    result = graced(0, "--namespace", ns, "--sweep", "companions")

    assert result.outcome("Secret", "db-creds") == ("marked", "orphaned")
    assert result.outcome("ResourceBinding", rb) == ("marked", "companion-orphaned")
    secret_requests = [r for r in faults.requests if "/secrets" in r.path]
    assert any(r.method == "PATCH" for r in secret_requests)
    for request in secret_requests:
        assert "as=PartialObjectMetadata" in request.accept, request.path
        assert "application/json," not in request.accept + ","  # no full-object fallback
        assert SECRET_VALUE.encode() not in request.response_body
        assert b'"data"' not in request.response_body
    assert SECRET_VALUE not in result.stdout
    secret = hub.get("Secret", ns, "db-creds")
    assert mark_of(secret) is not None
    assert secret is not None and secret["data"] == {"password": SECRET_VALUE}


def test_a_dry_run_writes_nothing_and_says_what_it_would_mark(
    hub: TestCluster, faults: FaultProxy, gcjob_hub_args: list[str]
) -> None:
    ns = hub.namespace("grace")
    rb = bound_pair(hub, "ConfigMap", ns, "app-config", ["default/web-gone"])
    faults.clear_requests()  # only gcjob's requests from here

    dry = run_gcjob(*gcjob_hub_args, "--grace", "10m", "--now", at(0), "--namespace", ns)

    assert dry.exit_code == 0, dry.stderr
    assert dry.outcome("ConfigMap", "app-config") == ("would-mark", "orphaned")
    assert dry.outcome("ResourceBinding", rb) == ("would-mark", "companion-orphaned")
    assert dry.summary["marks"] == {"companions": {"companion-orphaned": 1, "orphaned": 1}}
    assert not [r for r in faults.requests if r.method not in ("GET",)]
    assert mark_of(hub.get("ConfigMap", ns, "app-config")) is None


def test_the_marks_brake_holds_a_mass_of_new_orphans(hub: TestCluster, graced: Any) -> None:
    ns = hub.namespace("grace")
    for i in range(3):
        hub.create(companion("ConfigMap", ns, f"cm-{i}", ["default/web-gone"]))

    braked = graced(0, "--namespace", ns, "--max-marks", "2", "--sweep", "companions")

    assert braked.exit_code == 4, braked.stderr
    assert {braked.outcome("ConfigMap", f"cm-{i}") for i in range(3)} == {("would-mark", "brake")}
    assert braked.summary["sweeps"]["companions"]["status"] == "braked"
    assert all(mark_of(hub.get("ConfigMap", ns, f"cm-{i}")) is None for i in range(3))

    within = graced(0, "--namespace", ns, "--max-marks", "3", "--sweep", "companions")
    assert within.exit_code == 0
    assert within.summary["totals"]["marked"] == 3


def test_bindings_sweep_marks_a_binding_and_unmarks_it_when_its_object_is_back(
    hub: TestCluster, graced: Any
) -> None:
    ns = hub.namespace("grace")
    hub.create(binding(ns, "gone-config-configmap", kind="ConfigMap", target="gone-config"))

    first = graced(0, "--namespace", ns, "--sweep", "bindings")
    assert first.outcome("ResourceBinding", "gone-config-configmap") == ("marked", "orphaned")
    mark = mark_of(hub.get("ResourceBinding", ns, "gone-config-configmap"))
    assert mark is not None and str(mark["evidence"]).startswith("binding:")

    # an unlabelled ConfigMap of that name still owns the binding
    hub.create(companion("ConfigMap", ns, "gone-config", None, labelled=False))
    back = graced(20, "--namespace", ns, "--sweep", "bindings")

    assert back.outcome("ResourceBinding", "gone-config-configmap") == ("unmarked", "object-exists")
    assert hub.present("ResourceBinding", ns, "gone-config-configmap")
    assert mark_of(hub.get("ResourceBinding", ns, "gone-config-configmap")) is None


def test_routes_are_marked_unmarked_when_a_gateway_exists_and_deleted_after_grace(
    hub: TestCluster, upstream: TestCluster, upstream_kubeconfig: str, graced: Any
) -> None:
    project = upstream.namespace("project")
    ns = hub.namespace("grace")
    hub.create(
        route(
            ns,
            "web",
            cluster_label=f"cluster-{UPSTREAM_CLUSTER}",
            upstream_namespace=project,
            parents=[{"name": "gw-a"}],
        )
    )
    args = ("--namespace", ns, "--upstream-kubeconfig", upstream_kubeconfig, "--sweep", "routes")

    assert graced(0, *args).outcome("HTTPRoute", "web") == ("marked", "upstream-gateways-gone")
    upstream.create(gateway(project, "gw-a"))
    back = graced(5, *args)
    assert back.outcome("HTTPRoute", "web") == ("unmarked", "gateway-exists")
    assert mark_of(hub.get("HTTPRoute", ns, "web")) is None

    upstream.delete("Gateway", project, "gw-a")
    assert graced(6, *args).outcome("HTTPRoute", "web") == ("marked", "upstream-gateways-gone")
    assert graced(15, *args).outcome("HTTPRoute", "web") == ("skipped", "grace-period")
    assert hub.present("HTTPRoute", ns, "web")
    gone = graced(16, *args)
    assert gone.outcome("HTTPRoute", "web") == ("deleted", "upstream-gateways-gone")
    assert hub.gone("HTTPRoute", ns, "web")
