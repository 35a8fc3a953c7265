"""End to end: mark first, delete later (--grace), on the real API servers.

A live run decides by the hub's clock (the Date of its answers), never a changed one: the
grace period here is a few real seconds, and the tests wait it out. Every write is a
conditional JSON Patch; a patch whose `test` fails because of a real concurrent write is a
safe skip.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gcjob import marks
from gcjob.domain import (
    COMPANION_LABEL,
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
    REFERRERS_ANNOTATION,
    UPSTREAM_KIND_LABEL,
)
from gcjob.report.records import rfc3339
from gcjob.sweeps.companions.scan import LEFT_COMPANIONS_SELECTOR
from gcjob.times import parse_http_date, parse_time
from testbed.cluster import TestCluster
from testbed.endpoints import UPSTREAM_CLUSTER
from testbed.faultproxy import Fault, FaultProxy
from testbed.objects import (
    SECRET_VALUE,
    binding,
    companion,
    gateway,
    route,
    upstream_route,
    workload,
)
from testbed.report import Result, run_gcjob, to_the_second

GRACE = timedelta(seconds=4)


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


def mark_notes(since: str, evidence: str, reason: str = "orphaned") -> dict[str, str]:
    return {
        ORPHANED_SINCE_ANNOTATION: since,
        ORPHANED_REASON_ANNOTATION: reason,
        ORPHANED_EVIDENCE_ANNOTATION: evidence,
    }


@pytest.fixture
def graced(gcjob_hub_args: list[str]) -> Any:
    """`graced(*args)`: a deleting run with a short real grace period (GRACE)."""

    def run(*args: str) -> Result:
        grace = f"{int(GRACE.total_seconds())}s"
        return run_gcjob(*gcjob_hub_args, "--grace", grace, "--delete", *args)

    return run


def decided_at(result: Result) -> str:
    return str(result.summary["decided_at"])


def judged_by(result: Result) -> str:
    """The latest time a mark `result` wrote can carry (Result.judged_during)."""
    summary = result.summary
    start, began, ended = (parse_time(summary[k]) for k in ("decided_at", "started", "finished"))
    assert start is not None and began is not None and ended is not None
    return marks.since_value(start + (ended - began) + timedelta(seconds=2))


def wait_past(since: str, span: timedelta = GRACE) -> None:
    """Sleep until the hub's clock (this machine's, to the second) is past `since + span`."""
    moment = parse_time(since)
    assert moment is not None
    left = (moment + span - datetime.now(UTC)).total_seconds() + 1.2
    if left > 0:
        time.sleep(left)


def test_a_run_marks_a_run_inside_the_grace_period_keeps_a_run_after_it_deletes(
    hub: TestCluster, graced: Any
) -> None:
    ns = hub.namespace("grace")
    rb = hub.create_with_binding(companion("ConfigMap", ns, "app-config", ["default/web-gone"]))

    first = graced("--namespace", ns)

    assert first.exit_code == 0, first.stderr
    assert first.outcome("ConfigMap", "app-config") == ("marked", "orphaned")
    assert first.outcome("ResourceBinding", rb) == ("marked", "companion-orphaned")
    since = mark_of(hub.get("ConfigMap", ns, "app-config"))["since"]  # type: ignore[index]
    assert first.judged_during(since)  # the hub's time when it was judged (issue 46)
    t0 = to_the_second(since)
    for kind, name in (("ConfigMap", "app-config"), ("ResourceBinding", rb)):
        item = first.item(kind, name)
        assert item is not None and item["orphaned_since"] == t0
        obj = hub.get(kind, ns, name)
        mark = mark_of(obj)
        assert mark is not None and mark["label"] == "true" and mark["since"] == since
        # bound to this very object
        assert obj is not None and str(mark["evidence"]).endswith(":" + obj["metadata"]["uid"])
    assert mark_of(hub.get("ConfigMap", ns, "app-config"))["evidence"].startswith("companion:")  # type: ignore[index]
    # Every mark written counts, the binding's too (issue 20 item 6).
    assert first.summary["marks"] == {"companions": {"companion-orphaned": 1, "orphaned": 1}}
    assert first.summary["grace_seconds"] == GRACE.total_seconds()

    inside = graced("--namespace", ns)

    assert inside.exit_code == 0, inside.stderr
    assert inside.outcome("ConfigMap", "app-config") == ("skipped", "grace-period")
    assert inside.outcome("ResourceBinding", rb) == ("skipped", "grace-period")
    assert inside.item("ConfigMap", "app-config")["orphaned_since"] == t0  # type: ignore[index]
    assert hub.present("ConfigMap", ns, "app-config") and hub.present("ResourceBinding", ns, rb)
    assert inside.summary["marks"] == {}

    wait_past(str(since))
    after = graced("--namespace", ns)

    assert after.exit_code == 0, after.stderr
    assert after.outcome("ConfigMap", "app-config") == ("deleted", "orphaned")
    assert after.outcome("ResourceBinding", rb) == ("deleted", "companion-deleted")
    assert after.item("ResourceBinding", rb)["orphaned_since"] == t0  # type: ignore[index]
    assert hub.gone("ConfigMap", ns, "app-config") and hub.gone("ResourceBinding", ns, rb)


def test_a_referrer_back_between_two_runs_removes_the_mark(hub: TestCluster, graced: Any) -> None:
    ns = hub.namespace("grace")
    rb = hub.create_with_binding(companion("Secret", ns, "db-creds", ["default/web"]))
    graced("--namespace", ns)
    assert mark_of(hub.get("Secret", ns, "db-creds")) is not None
    assert mark_of(hub.get("ResourceBinding", ns, rb)) is not None

    hub.create(workload(ns, "web"))  # the rollout re-created it
    back = graced("--namespace", ns)

    assert back.exit_code == 0, back.stderr
    assert back.outcome("Secret", "db-creds") == ("unmarked", "referrer-live")
    assert back.outcome("ResourceBinding", rb) == ("unmarked", "referrer-live")
    assert mark_of(hub.get("Secret", ns, "db-creds")) is None
    assert mark_of(hub.get("ResourceBinding", ns, rb)) is None

    hub.delete("WorkloadDeployment", ns, "web")  # gone again: the clock starts over
    again = graced("--namespace", ns)

    assert again.outcome("Secret", "db-creds") == ("marked", "orphaned")
    assert again.judged_during(again.item("Secret", "db-creds")["orphaned_since"])  # type: ignore[index]
    assert hub.present("Secret", ns, "db-creds")


def test_changed_evidence_under_a_mark_restarts_the_grace_period(
    hub: TestCluster, graced: Any
) -> None:
    ns = hub.namespace("grace")
    hub.create(companion("ConfigMap", ns, "app-config", ["default/web-gone"]))
    graced("--namespace", ns)
    t0 = str(mark_of(hub.get("ConfigMap", ns, "app-config"))["since"])  # type: ignore[index]
    time.sleep(3)  # the second mark is a few seconds younger than the first

    referrers = json.dumps(sorted(["default/web-gone", "default/api-gone"]))
    hub.patch(
        "ConfigMap",
        ns,
        "app-config",
        {"metadata": {"annotations": {REFERRERS_ANNOTATION: referrers}}},
    )
    changed = graced("--namespace", ns)

    assert changed.outcome("ConfigMap", "app-config") == ("marked", "orphaned")
    assert "evidence changed" in changed.item("ConfigMap", "app-config")["detail"]  # type: ignore[index]
    t1 = str(mark_of(hub.get("ConfigMap", ns, "app-config"))["since"])  # type: ignore[index]
    assert t1 > t0 and changed.judged_during(t1)

    wait_past(t0)
    due_by_the_first_mark = graced("--namespace", ns)
    assert due_by_the_first_mark.outcome("ConfigMap", "app-config") == ("skipped", "grace-period")
    assert hub.present("ConfigMap", ns, "app-config")

    wait_past(t1)
    due = graced("--namespace", ns)
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
    result = graced("--namespace", ns, "--sweep", "companions")
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
    assert graced("--namespace", ns).outcome("ConfigMap", "busy") == ("marked", "orphaned")


def test_a_binding_changed_after_it_was_read_ahead_of_its_mark_is_not_marked(
    hub: TestCluster, faults: FaultProxy, graced: Any
) -> None:
    """The bindings of the companions about to be marked are read a few ahead (ReadAhead).
    The proxy holds the first companion's mark until the second's binding has been read and
    then changed by a real write: that binding's mark, pinned to the read, is refused."""
    ns = hub.namespace("grace")
    rb_a = hub.create_with_binding(companion("ConfigMap", ns, "a", ["default/web-gone"]))
    rb_b = hub.create_with_binding(companion("ConfigMap", ns, "b", ["default/web-gone"]))
    faults.clear_requests()  # gcjob's requests (and the one write below) from here
    gate = threading.Event()
    faults.add_fault(Fault(method="PATCH", path=f"/namespaces/{ns}/configmaps/a$", hold=gate))

    def change_b_once_read_ahead() -> None:
        deadline = time.monotonic() + 30
        try:
            while time.monotonic() < deadline:
                requests = faults.requests
                read = any(
                    r.method == "GET" and r.path.endswith(f"/{rb_b}") and r.status == 200
                    for r in requests
                )
                held = any(r.method == "PATCH" and r.path.endswith("/a") for r in requests)
                if read and held:
                    note = {"metadata": {"annotations": {"team": "x"}}}
                    hub.patch("ResourceBinding", ns, rb_b, note)
                    return
                time.sleep(0.02)
        finally:
            gate.set()

    writer = threading.Thread(target=change_b_once_read_ahead)
    writer.start()
    result = graced("--namespace", ns, "--sweep", "companions")
    writer.join()

    assert result.outcome("ConfigMap", "a") == ("marked", "orphaned")
    assert result.outcome("ResourceBinding", rb_a) == ("marked", "companion-orphaned")
    assert result.outcome("ConfigMap", "b") == ("marked", "orphaned")
    assert result.outcome("ResourceBinding", rb_b) == ("skipped", "changed-since-observed")
    assert result.exit_code == 0, result.stderr
    # read once, ahead of the mark, not again after it: the mark was pinned to that read
    reads_of_b = [r for r in faults.requests if r.method == "GET" and r.path.endswith(f"/{rb_b}")]
    assert len(reads_of_b) == 1
    changed = hub.get("ResourceBinding", ns, rb_b)
    assert mark_of(changed) is None
    assert changed is not None and changed["metadata"]["annotations"]["team"] == "x"

    # the next run finds the companion waiting and marks its binding as it is now
    again = graced("--namespace", ns, "--sweep", "companions")
    assert again.outcome("ResourceBinding", rb_b) == ("marked", "companion-orphaned")
    assert mark_of(hub.get("ResourceBinding", ns, rb_b)) is not None


def test_the_marks_brake_counts_every_mark_before_any_binding_is_read_or_marked(
    hub: TestCluster, faults: FaultProxy, graced: Any
) -> None:
    """Two companions and their bindings are four marks: past --max-marks 3 the sweep marks
    none of them (issue 46 item 11: it marked the companions and one binding, then braked),
    and no binding is read ahead of a mark that will not be written, or patched."""
    ns = hub.namespace("grace")
    rb_a = hub.create_with_binding(companion("ConfigMap", ns, "a", ["default/web-gone"]))
    rb_b = hub.create_with_binding(companion("ConfigMap", ns, "b", ["default/web-gone"]))
    faults.clear_requests()

    result = graced("--namespace", ns, "--sweep", "companions", "--max-marks", "3")

    assert result.exit_code == 4, result.stderr
    for name in ("a", "b"):
        assert result.outcome("ConfigMap", name) == ("would-mark", "brake")
        assert mark_of(hub.get("ConfigMap", ns, name)) is None
    for rb in (rb_a, rb_b):
        assert result.item("ResourceBinding", rb) is None
        assert not [r for r in faults.requests if r.path.endswith(f"/{rb}")]
        assert mark_of(hub.get("ResourceBinding", ns, rb)) is None
    assert "4 new marks of 2 new orphans" in result.summary["sweeps"]["companions"]["detail"]


def test_a_secret_is_marked_with_no_payload_received(
    hub: TestCluster, faults: FaultProxy, graced: Any
) -> None:
    ns = hub.namespace("grace")
    rb = hub.create_with_binding(companion("Secret", ns, "db-creds", ["default/web-gone"]))
    faults.clear_requests()  # only gcjob's requests from here

    result = graced("--namespace", ns, "--sweep", "companions")

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
    rb = hub.create_with_binding(companion("ConfigMap", ns, "app-config", ["default/web-gone"]))
    faults.clear_requests()  # only gcjob's requests from here

    dry = run_gcjob(*gcjob_hub_args, "--grace", "10m", "--namespace", ns)

    assert dry.exit_code == 0, dry.stderr
    assert dry.outcome("ConfigMap", "app-config") == ("would-mark", "orphaned")
    assert dry.outcome("ResourceBinding", rb) == ("would-mark", "companion-orphaned")
    assert dry.summary["marks"] == {"companions": {"companion-orphaned": 1, "orphaned": 1}}
    assert not [r for r in faults.requests if r.method not in ("GET",)]
    assert mark_of(hub.get("ConfigMap", ns, "app-config")) is None


def test_a_dry_run_says_when_each_orphan_would_go_marked_or_not_and_writes_nothing(
    hub: TestCluster, faults: FaultProxy, graced: Any, gcjob_hub_args: list[str]
) -> None:
    """Issue 23 item 2: an orphan an enforcing run marked long enough ago would go this run,
    one it marked lately when its mark's grace period ends, an unmarked one a grace period
    from the dry run's time; each says so in its item (`would_delete_at`, the detail), the
    summary counts them, and the dry run sends no PATCH or DELETE."""
    dry_grace = timedelta(seconds=9)
    due_ns, waiting_ns, new_ns = (hub.namespace("dry") for _ in range(3))
    due_rb = hub.create_with_binding(companion("ConfigMap", due_ns, "due-config", ["default/a"]))
    graced("--namespace", due_ns)  # marked: its grace period starts
    time.sleep(12)  # > dry_grace: the first mark is due for the dry run
    rb = hub.create_with_binding(companion("ConfigMap", waiting_ns, "waiting-config", ["x/b"]))
    graced("--namespace", waiting_ns)
    new_rb = hub.create_with_binding(companion("ConfigMap", new_ns, "new-config", ["default/c"]))
    marks_before = {
        name: mark_of(hub.get("ConfigMap", ns, name))
        for ns, name in ((due_ns, "due-config"), (waiting_ns, "waiting-config"))
    }
    t1 = parse_time(marks_before["waiting-config"]["since"])  # type: ignore[index]
    assert t1 is not None
    faults.clear_requests()  # only the dry run's requests from here

    scope = ("--namespace", due_ns, "--namespace", waiting_ns, "--namespace", new_ns)
    dry = run_gcjob(*gcjob_hub_args, "--grace", f"{dry_grace.seconds}s", *scope)

    assert dry.exit_code == 0, dry.stderr
    now = parse_time(decided_at(dry))
    assert now is not None
    assert now - t1 < dry_grace, "the machine was too slow for this test's timing"
    waits = t1 + dry_grace  # the mark's time, to the microsecond, and its grace period
    fresh = parse_time(dry.item("ConfigMap", "new-config")["would_delete_at"])  # type: ignore[index]
    assert fresh is not None and dry.judged_during(rfc3339(fresh - dry_grace))
    expected = {
        ("ConfigMap", "due-config"): ("would-delete", "orphaned"),
        ("ResourceBinding", due_rb): ("would-delete", "companion-deleted"),
        ("ConfigMap", "waiting-config"): ("skipped", "grace-period"),
        ("ResourceBinding", rb): ("skipped", "grace-period"),
        ("ConfigMap", "new-config"): ("would-mark", "orphaned"),
        ("ResourceBinding", new_rb): ("would-mark", "companion-orphaned"),
    }
    for (kind, name), (action, reason) in expected.items():
        item = dry.item(kind, name)
        assert item is not None and item["dry_run"] is True
        assert (item["action"], item["reason"]) == (action, reason), item
        at = item["would_delete_at"]
        if action == "would-delete":  # due: the hub's time when it was judged
            assert dry.judged_during(at), item
        else:  # its mark's time (one a dry run would write, for a new one) + --grace
            assert at == rfc3339(waits if reason == "grace-period" else fresh), item
    waiting = dry.item("ConfigMap", "waiting-config")["detail"]  # type: ignore[index]
    assert f"due for deletion at {marks.since_value(waits)} if still" in waiting
    new = dry.item("ConfigMap", "new-config")["detail"]  # type: ignore[index]
    assert f"due for deletion at {rfc3339(fresh).removesuffix('Z')}" in new
    # Nothing says it marked: it marked nothing.
    assert not [i["detail"] for i in dry.items if " marked" in f" {i['detail']}"]
    assert dry.summary["would_delete"]["companions"] == {
        "this_run": 2,
        "later": 4,
        "earliest": rfc3339(waits),
        "latest": rfc3339(fresh),
    }
    assert dry.summary["totals"]["marked"] == 0 and dry.summary["totals"]["deleted"] == 0
    # It wrote nothing: only reads went to the hub, and every object and mark is as it was.
    assert {r.method for r in faults.requests} == {"GET"}
    assert mark_of(hub.get("ConfigMap", new_ns, "new-config")) is None
    for ns, name in ((due_ns, "due-config"), (waiting_ns, "waiting-config")):
        assert mark_of(hub.get("ConfigMap", ns, name)) == marks_before[name]
    assert hub.present("ResourceBinding", due_ns, due_rb)


def test_the_marks_brake_holds_a_mass_of_new_orphans(hub: TestCluster, graced: Any) -> None:
    ns = hub.namespace("grace")
    for i in range(3):
        hub.create(companion("ConfigMap", ns, f"cm-{i}", ["default/web-gone"]))

    braked = graced("--namespace", ns, "--max-marks", "2", "--sweep", "companions")

    assert braked.exit_code == 4, braked.stderr
    assert {braked.outcome("ConfigMap", f"cm-{i}") for i in range(3)} == {("would-mark", "brake")}
    assert braked.summary["sweeps"]["companions"]["status"] == "braked"
    assert all(mark_of(hub.get("ConfigMap", ns, f"cm-{i}")) is None for i in range(3))

    # A companion counts as two marks, its binding's too, before any binding is read: three
    # companions pass the brake from --max-marks 6 (these have no binding: three written).
    within = graced("--namespace", ns, "--max-marks", "6", "--sweep", "companions")
    assert within.exit_code == 0
    assert within.summary["totals"]["marked"] == 3


def test_bindings_sweep_marks_a_binding_and_unmarks_it_when_its_object_is_back(
    hub: TestCluster, graced: Any
) -> None:
    ns = hub.namespace("grace")
    hub.create(binding(ns, "gone-config-configmap", kind="ConfigMap", target="gone-config"))

    first = graced("--namespace", ns, "--sweep", "bindings")
    assert first.outcome("ResourceBinding", "gone-config-configmap") == ("marked", "orphaned")
    mark = mark_of(hub.get("ResourceBinding", ns, "gone-config-configmap"))
    assert mark is not None and str(mark["evidence"]).startswith("binding:")

    # an unlabelled ConfigMap of that name still owns the binding
    hub.create(companion("ConfigMap", ns, "gone-config", None, labelled=False))
    back = graced("--namespace", ns, "--sweep", "bindings")

    assert back.outcome("ResourceBinding", "gone-config-configmap") == ("unmarked", "object-exists")
    assert hub.present("ResourceBinding", ns, "gone-config-configmap")
    assert mark_of(hub.get("ResourceBinding", ns, "gone-config-configmap")) is None


def test_routes_are_marked_unmarked_when_a_gateway_exists_and_deleted_after_grace(
    hub: TestCluster, upstream: TestCluster, upstream_kubeconfig: str, graced: Any
) -> None:
    project = upstream.project()
    upstream.create(upstream_route(project, "web"))  # NSO's upstream HTTPRoute
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

    assert graced(*args).outcome("HTTPRoute", "web") == ("marked", "upstream-gateways-gone")
    upstream.create(gateway(project, "gw-a"))
    back = graced(*args)
    assert back.outcome("HTTPRoute", "web") == ("unmarked", "gateway-exists")
    assert mark_of(hub.get("HTTPRoute", ns, "web")) is None

    upstream.delete("Gateway", project, "gw-a")
    marked = graced(*args)
    assert marked.outcome("HTTPRoute", "web") == ("marked", "upstream-gateways-gone")
    assert graced(*args).outcome("HTTPRoute", "web") == ("skipped", "grace-period")
    assert hub.present("HTTPRoute", ns, "web")
    wait_past(str(mark_of(hub.get("HTTPRoute", ns, "web"))["since"]))  # type: ignore[index]
    gone = graced(*args)
    assert gone.outcome("HTTPRoute", "web") == ("deleted", "upstream-gateways-gone")
    assert hub.gone("HTTPRoute", ns, "web")


# -- issue 20 item 3: a mark counts only on the object gcjob wrote it on -----------------------


def test_a_mark_copied_onto_a_new_object_even_in_another_namespace_deletes_nothing(
    hub: TestCluster, graced: Any
) -> None:
    """Exported with its mark (`kubectl get -o json`, a backup, GitOps) and created again:
    with a grace period long past by the copied time, the first --delete run marks it afresh
    from now and says why; the next run inside the grace period keeps it."""
    source_ns, ns = hub.namespace("grace"), hub.namespace("grace")
    hub.create(companion("ConfigMap", source_ns, "app-config", ["default/web-gone"]))
    graced("--namespace", source_ns, "--sweep", "companions")
    original = hub.get("ConfigMap", source_ns, "app-config")
    copied = mark_of(original)
    assert original is not None and copied is not None
    days_ago = (datetime.now(UTC) - timedelta(days=22)).strftime("%Y-%m-%dT%H:%M:%SZ")
    facts = marks.companion_evidence(json.dumps(["default/web-gone"])).facts_digest
    variants = {
        # verbatim, as exported
        "verbatim": mark_notes(str(copied["since"]), str(copied["evidence"])),
        # the same, 22 days older (what the issue saw)
        "older": mark_notes(days_ago, str(copied["evidence"])),
        # an older gcjob's mark (no uid in it), 22 days old
        "legacy": mark_notes(days_ago, facts),
    }
    for name, notes in variants.items():
        obj = companion("ConfigMap", ns, name, ["default/web-gone"], annotations=notes)
        obj["metadata"]["labels"][ORPHANED_LABEL] = "true"
        hub.create(obj)

    run = graced("--namespace", ns, "--sweep", "companions")

    assert run.exit_code == 0, run.stderr
    for name in variants:
        assert run.outcome("ConfigMap", name) == ("marked", "orphaned"), name
        item = run.item("ConfigMap", name)
        assert item is not None and run.judged_during(item["orphaned_since"])
        assert hub.present("ConfigMap", ns, name)
        obj = hub.get("ConfigMap", ns, name)
        mark = mark_of(obj)
        assert obj is not None and mark is not None and run.judged_during(mark["since"])
        assert to_the_second(mark["since"]) == item["orphaned_since"]
        assert str(mark["evidence"]).endswith(":" + obj["metadata"]["uid"])
    for name in variants:
        detail = run.item("ConfigMap", name)["detail"]  # type: ignore[index]
        assert detail.startswith("void mark: "), detail
    assert "another object" in run.item("ConfigMap", "verbatim")["detail"]  # type: ignore[index]
    # a copied older gcjob's mark is no upgrade: its time is before this object was created
    legacy = run.item("ConfigMap", "legacy")
    assert legacy is not None and "before the object was created" in legacy["detail"]
    assert run.summary["marks"] == {"companions": {"orphaned": 3}}  # new marks, all of them

    inside = graced("--namespace", ns, "--sweep", "companions")
    assert {inside.outcome("ConfigMap", n) for n in variants} == {("skipped", "grace-period")}


ITEM_13_SINCES = {
    "future": "2099-01-01T00:00:00Z",
    "space": "2026-11-23 18:00:00+00:00",
    "week": "2026-W47-1T18:00:00Z",
    "offset": "2026-11-23T18:00:00+01:00",
    "max": "9999-12-31T23:59:59Z",
    "min-plus-one": "0001-01-01T00:00:00+01:00",
    "max-minus": "9999-12-31T23:59:59-23:59",
}


def _marked_with(hub: TestCluster, ns: str, name: str, since: str) -> None:
    """An orphan carrying a mark with `since`, bound to its own uid and evidence: only the
    time is wrong."""
    raw = json.dumps(["default/web-gone"])
    made = hub.create(companion("ConfigMap", ns, name, raw))
    evidence = marks.companion_evidence(raw).on(made["metadata"]["uid"]).digest
    hub.patch(
        "ConfigMap",
        ns,
        name,
        {
            "metadata": {
                "labels": {ORPHANED_LABEL: "true"},
                "annotations": mark_notes(since, evidence),
            }
        },
    )


def test_marks_whose_time_gcjob_did_not_write_are_void_and_named(
    hub: TestCluster, graced: Any
) -> None:
    """Issue 20 item 13 (and item 5's inputs): void, marked afresh, named in the detail."""
    ns = hub.namespace("grace")
    for name, since in ITEM_13_SINCES.items():
        _marked_with(hub, ns, name, since)

    run = graced("--namespace", ns, "--sweep", "companions")

    assert run.exit_code == 0, run.stderr
    for name, since in ITEM_13_SINCES.items():
        assert run.outcome("ConfigMap", name) == ("marked", "orphaned"), name
        detail = run.item("ConfigMap", name)["detail"]  # type: ignore[index]
        assert detail.startswith("void mark: orphaned-since") and since in detail, detail
        assert run.judged_during(mark_of(hub.get("ConfigMap", ns, name))["since"])  # type: ignore[index]


def test_with_no_grace_period_a_void_since_ends_nothing(
    hub: TestCluster, gcjob_hub_args: list[str]
) -> None:
    """Issue 20 item 5's inputs with --grace 0 (no evidence needed): each orphan is deleted on
    the first look, as --grace 0 says, and reported without the void time; the run goes on."""
    ns = hub.namespace("grace")
    for name, since in ITEM_13_SINCES.items():
        _marked_with(hub, ns, name, since)

    run = run_gcjob(*gcjob_hub_args, "--delete", "--namespace", ns, "--sweep", "companions")

    assert run.exit_code == 0, run.stderr
    for name in ITEM_13_SINCES:
        assert run.outcome("ConfigMap", name) == ("deleted", "orphaned"), name
        assert run.item("ConfigMap", name).get("orphaned_since") is None  # type: ignore[union-attr]


def test_an_older_gcjobs_marks_are_marked_again_without_the_marks_brake(
    hub: TestCluster, graced: Any
) -> None:
    """On upgrade: marks without the uid are rewritten from now (grace restarts, once), and
    --max-marks does not count them."""
    ns = hub.namespace("grace")
    raw = json.dumps(["default/web-gone"])
    legacy = marks.companion_evidence(raw).facts_digest
    for i in range(3):
        obj = companion(
            "ConfigMap", ns, f"cm-{i}", raw, annotations=mark_notes("2000-01-01T00:00:00Z", legacy)
        )
        hub.create(obj)  # created after its mark: also void, so use a time after creation
    time.sleep(1.1)
    since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for i in range(3):
        notes = {
            "metadata": {
                "labels": {ORPHANED_LABEL: "true"},
                "annotations": mark_notes(since, legacy),
            }
        }
        hub.patch("ConfigMap", ns, f"cm-{i}", notes)
    time.sleep(1.1)  # the mark is in the hub's past

    run = graced("--namespace", ns, "--sweep", "companions", "--max-marks", "0")

    assert run.exit_code == 0, run.stderr
    for i in range(3):
        assert run.outcome("ConfigMap", f"cm-{i}") == ("marked", "orphaned")
        obj = hub.get("ConfigMap", ns, f"cm-{i}")
        mark = mark_of(obj)
        assert obj is not None and mark is not None and run.judged_during(mark["since"])
        assert mark["evidence"] == f"{legacy}:{obj['metadata']['uid']}"
    assert run.summary["sweeps"]["companions"]["status"] == "completed"
    assert run.summary["totals"]["marked"] == 3


# -- the run's clock is the hub's ---------------------------------------------------------------


def test_decided_at_and_marks_follow_the_hubs_clock_not_the_pods(
    hub: TestCluster, faults: FaultProxy, graced: Any
) -> None:
    """The proxy shows the hub's clock a day ahead of this machine's (as a pod a day behind
    would see it): the run decides, and marks, by the hub's."""
    ns = hub.namespace("grace")
    hub.create(companion("ConfigMap", ns, "app-config", ["default/web-gone"]))

    def ahead(date: str) -> str:
        moment = parse_http_date(date)
        assert moment is not None
        return format_datetime(moment + timedelta(days=1), usegmt=True)

    faults.rewrite_date = ahead
    run = graced("--namespace", ns, "--sweep", "companions")

    assert run.exit_code == 0, run.stderr
    decided = parse_time(decided_at(run))
    assert decided is not None
    skew = decided - datetime.now(UTC)
    assert timedelta(hours=23) < skew < timedelta(hours=25), skew
    since = parse_time(mark_of(hub.get("ConfigMap", ns, "app-config"))["since"])  # type: ignore[index]
    assert since is not None and run.judged_during(since.isoformat())
    assert timedelta(hours=23) < since - datetime.now(UTC) < timedelta(hours=25)

    # The hub's clock back to true: the mark is after now, void, marked afresh (never a
    # delete on it, never a grace period cut short).
    faults.rewrite_date = None
    back = graced("--namespace", ns, "--sweep", "companions")
    assert back.outcome("ConfigMap", "app-config") == ("marked", "orphaned")
    assert "after now" in back.item("ConfigMap", "app-config")["detail"]  # type: ignore[index]


def test_a_mark_is_never_older_than_its_evidence_however_long_the_run_read_first(
    hub: TestCluster, faults: FaultProxy, gcjob_hub_args: list[str]
) -> None:
    """Issue 46 item 4: the hub's clock was read once, when the run started, and every mark
    carried that time. Here the hub is slow to answer the WorkloadDeployments list (the
    proxy holds it); meanwhile the companion's last referrer is deleted and another orphan
    created. Each mark carries the hub's time once its evidence came back: after the
    deletion, after its object's creationTimestamp; and the grace period runs from then,
    whole: a run a grace period after the run's start (when the old marks were due) keeps it.
    """
    grace, held_for = timedelta(seconds=8), 6.0
    ns = hub.namespace("clock")
    hub.create(workload(ns, "web"))
    hub.create(companion("ConfigMap", ns, "app-config", ["default/web"]))
    gate, moments = threading.Event(), dict[str, datetime | None]()
    faults.clear_requests()  # only gcjob's requests from here, until the hold
    faults.add_fault(Fault(method="GET", path="/workloaddeployments$", hold=gate))

    def listing(r: Any) -> bool:
        return bool(r.method == "GET" and r.path.endswith("/workloaddeployments"))

    def meanwhile() -> None:
        deadline = time.monotonic() + 30
        try:
            while time.monotonic() < deadline:
                if any(map(listing, faults.requests)):
                    hub.delete("WorkloadDeployment", ns, "web")
                    moments["deleted"] = datetime.now(UTC)  # the hub's clock is this machine's
                    made = hub.create(companion("ConfigMap", ns, "late", ["default/gone"]))
                    moments["created"] = parse_time(made["metadata"]["creationTimestamp"])
                    time.sleep(held_for)  # a slow hub: the run has read nothing since it began
                    return
                time.sleep(0.02)
        finally:
            gate.set()

    def graced(*args: str) -> Result:
        at = f"{int(grace.total_seconds())}s"
        return run_gcjob(*gcjob_hub_args, "--grace", at, "--delete", *args)

    helper = threading.Thread(target=meanwhile)
    helper.start()
    first = graced("--namespace", ns, "--sweep", "companions")
    helper.join()

    assert first.exit_code == 0, first.stderr
    deleted, created = moments.get("deleted"), moments.get("created")
    assert deleted is not None and created is not None, "no WorkloadDeployments list was held"
    sinces: dict[str, datetime] = {}
    for name in ("app-config", "late"):
        assert first.outcome("ConfigMap", name) == ("marked", "orphaned"), name
        since = parse_time(mark_of(hub.get("ConfigMap", ns, name))["since"])  # type: ignore[index]
        assert since is not None and first.judged_during(since), name
        sinces[name] = since
    started = parse_time(decided_at(first))
    assert started is not None and started < deleted  # the run began before the deletion
    assert sinces["app-config"] >= deleted, (sinces, moments)
    assert sinces["late"] >= created, (sinces, moments)

    wait_past(decided_at(first), grace)  # where a mark of the run's start would be due
    inside = graced("--namespace", ns, "--sweep", "companions")
    judged = parse_time(decided_at(inside))
    assert judged is not None and judged < sinces["app-config"] + grace, "too slow a machine"
    for name in ("app-config", "late"):
        assert inside.outcome("ConfigMap", name) == ("skipped", "grace-period"), name
        assert hub.present("ConfigMap", ns, name)

    wait_past(marks.since_value(max(sinces.values())), grace)
    due = graced("--namespace", ns, "--sweep", "companions")
    assert due.outcome("ConfigMap", "app-config") == ("deleted", "orphaned")
    assert due.outcome("ConfigMap", "late") == ("deleted", "orphaned")


@pytest.mark.parametrize("date", [None, "yesterday"], ids=["no-date", "bad-date"])
def test_a_hub_without_a_usable_date_gets_nothing_deleted_or_marked(
    hub: TestCluster, faults: FaultProxy, graced: Any, date: str | None
) -> None:
    ns = hub.namespace("grace")
    hub.create(companion("ConfigMap", ns, "fresh", ["default/web-gone"]))
    hub.create(companion("ConfigMap", ns, "due", ["default/web-gone"]))
    graced("--namespace", ns, "--sweep", "companions")
    hub.patch("ConfigMap", ns, "fresh", {"metadata": {"labels": {ORPHANED_LABEL: None}}})
    wait_past(datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    faults.rewrite_date = lambda _: date

    run = graced("--namespace", ns, "--sweep", "companions")

    assert run.exit_code == 3, run.stderr
    for name in ("fresh", "due"):
        assert run.outcome("ConfigMap", name) == ("skipped", "hub-clock-unknown")
        assert "no usable Date header" in run.item("ConfigMap", name)["detail"]  # type: ignore[index]
    assert hub.present("ConfigMap", ns, "due")
    assert mark_of(hub.get("ConfigMap", ns, "fresh"))["label"] is None  # type: ignore[index]
    assert run.summary["sweeps"]["companions"]["status"] == "incomplete"


def test_explain_names_a_void_mark_and_ends_normally(hub: TestCluster, hub_kubeconfig: str) -> None:
    """Issue 20 item 5: `gcjob explain` on such a mark printed a traceback (exit 1)."""
    from testbed.report import explain

    ns = hub.namespace("grace")
    for name, since in ITEM_13_SINCES.items():
        _marked_with(hub, ns, name, since)
    args = ("--hub-kubeconfig", hub_kubeconfig, "--min-age", "0s")
    for name, since in ITEM_13_SINCES.items():
        for grace in ("10m", "0s"):
            told = explain("ConfigMap", ns, name, *args, "--grace", grace)
            assert told.exit_code == 0, told.doc
            if grace == "10m":
                assert told.verdict == ("would-mark", "orphaned"), (name, told.doc)
                assert since in told.doc["verdict"]["detail"]
            else:
                assert told.verdict == ("would-delete", "orphaned"), (name, told.doc)


# -- issue 20 item 14: a mark lives only while its object stays in the sweep ---------------------


def test_a_companion_that_loses_its_label_loses_its_mark_and_starts_afresh_when_it_is_back(
    hub: TestCluster, graced: Any
) -> None:
    ns, elsewhere = hub.namespace("grace"), hub.namespace("grace")
    rb = hub.create_with_binding(companion("ConfigMap", ns, "app-config", ["default/web-gone"]))
    first = graced("--namespace", ns, "--sweep", "companions")
    assert first.outcome("ConfigMap", "app-config") == ("marked", "orphaned")
    # the same, in a namespace this run does not sweep: another run's to judge
    hub.create(companion("ConfigMap", elsewhere, "app-config", ["default/web-gone"]))
    graced("--namespace", elsewhere, "--sweep", "companions")

    for where in (ns, elsewhere):
        hub.patch(
            "ConfigMap", where, "app-config", {"metadata": {"labels": {COMPANION_LABEL: None}}}
        )
    left = graced("--namespace", ns, "--sweep", "companions")

    assert left.exit_code == 0, left.stderr
    assert left.outcome("ConfigMap", "app-config") == ("unmarked", "left-scope")
    assert left.outcome("ResourceBinding", rb) == ("unmarked", "left-scope")
    assert "no longer labelled" in left.item("ConfigMap", "app-config")["detail"]  # type: ignore[index]
    assert mark_of(hub.get("ConfigMap", ns, "app-config")) is None
    assert mark_of(hub.get("ResourceBinding", ns, rb)) is None
    assert mark_of(hub.get("ConfigMap", elsewhere, "app-config")) is not None  # not in scope

    wait_past(judged_by(first))  # the old mark would be due by now
    hub.patch("ConfigMap", ns, "app-config", {"metadata": {"labels": {COMPANION_LABEL: "true"}}})
    back = graced("--namespace", ns, "--sweep", "companions")

    assert back.outcome("ConfigMap", "app-config") == ("marked", "orphaned")
    assert back.judged_during(back.item("ConfigMap", "app-config")["orphaned_since"])  # type: ignore[index]
    assert hub.present("ConfigMap", ns, "app-config") and hub.present("ResourceBinding", ns, rb)


def test_a_binding_that_leaves_the_sweep_loses_its_mark_and_starts_afresh_when_it_is_back(
    hub: TestCluster, graced: Any
) -> None:
    """Its policy no longer city-*: the bindings sweep no longer judges it, so its mark goes;
    back under a city-* policy, it is marked afresh, never deleted on the old mark (second
    audit F2). Explain says the same."""
    ns = hub.namespace("grace")
    hub.create(binding(ns, "gone-configmap", kind="ConfigMap", target="gone"))
    first = graced("--namespace", ns, "--sweep", "bindings")
    assert first.outcome("ResourceBinding", "gone-configmap") == ("marked", "orphaned")

    policy = "propagationpolicy.karmada.io/name"
    hub.patch(
        "ResourceBinding",
        ns,
        "gone-configmap",
        {"metadata": {"annotations": {policy: "other-dfw"}}},
    )
    left = graced("--namespace", ns, "--sweep", "bindings")

    assert left.outcome("ResourceBinding", "gone-configmap") == ("unmarked", "left-scope")
    assert mark_of(hub.get("ResourceBinding", ns, "gone-configmap")) is None

    wait_past(judged_by(first))  # the old mark would be due by now
    hub.patch(
        "ResourceBinding", ns, "gone-configmap", {"metadata": {"annotations": {policy: "city-dfw"}}}
    )
    back = graced("--namespace", ns, "--sweep", "bindings")

    assert back.outcome("ResourceBinding", "gone-configmap") == ("marked", "orphaned")
    assert back.judged_during(back.item("ResourceBinding", "gone-configmap")["orphaned_since"])  # type: ignore[index]
    assert hub.present("ResourceBinding", ns, "gone-configmap")


def test_a_failed_list_of_marks_out_of_the_sweep_decides_nothing(
    hub: TestCluster, faults: FaultProxy, graced: Any
) -> None:
    ns = hub.namespace("grace")
    hub.create(companion("ConfigMap", ns, "app-config", ["default/web-gone"]))
    left = {"labelSelector": LEFT_COMPANIONS_SELECTOR}
    faults.add_fault(Fault(method="GET", path="/configmaps$", query=left, status=500, times=None))

    run = graced("--namespace", ns, "--sweep", "companions")

    assert run.exit_code == 3, run.stderr
    assert run.summary["sweeps"]["companions"]["status"] == "incomplete"
    assert run.item("ConfigMap", "app-config") is None
    assert mark_of(hub.get("ConfigMap", ns, "app-config")) is None


# -- generated marks on the real server ------------------------------------------------------------

ANNOTATION_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
SINCES = st.one_of(
    st.none(),
    ANNOTATION_TEXT,
    st.sampled_from(list(ITEM_13_SINCES.values())),
    st.just("created"),  # exactly the object's creationTimestamp: a mark that counts
    st.integers(-3 * 86_400, 3 * 86_400).map(lambda s: f"offset:{s}"),
)
BINDINGS = st.sampled_from(["own", "other", "legacy", "garbage", "none"])


@settings(
    max_examples=max(5, settings().max_examples // 10),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    label=st.sampled_from(["true", "false", "True", "", None]),
    since=SINCES,
    bound=BINDINGS,
    reason=st.one_of(st.none(), ANNOTATION_TEXT),
)
def test_no_generated_mark_ends_a_run_or_cuts_a_grace_period_short(
    hub: TestCluster,
    graced: Any,
    label: str | None,
    since: str | None,
    bound: str,
    reason: str | None,
) -> None:
    """Any mark on a freshly created orphan, on the real server: the run ends normally, and
    nothing is deleted (the object is younger than --grace, so no mark can be due); a mark is
    kept waiting only when it is gcjob's own on this object, else it is marked afresh."""
    ns = hub.namespace("grace")
    raw = json.dumps(["default/web-gone"])
    made = hub.create(companion("ConfigMap", ns, "generated", raw))
    meta = made["metadata"]
    facts = marks.companion_evidence(raw)
    evidence = {
        "own": facts.on(meta["uid"]).digest,
        "other": facts.on("0b5e8f9e-0000-4000-8000-000000000000").digest,
        "legacy": facts.facts_digest,
        "garbage": "companion:not-a-digest",
        "none": None,
    }[bound]
    if since == "created":
        since = meta["creationTimestamp"]
    elif since is not None and since.startswith("offset:"):
        created = parse_time(meta["creationTimestamp"])
        assert created is not None
        since = marks.since_value(created + timedelta(seconds=int(since[7:])))
    annotations = {
        ORPHANED_SINCE_ANNOTATION: since,
        ORPHANED_REASON_ANNOTATION: reason,
        ORPHANED_EVIDENCE_ANNOTATION: evidence,
    }
    patch = {"labels": {ORPHANED_LABEL: label}, "annotations": annotations}
    hub.patch("ConfigMap", ns, "generated", {"metadata": patch})
    written = mark_of(hub.get("ConfigMap", ns, "generated"))

    run = graced("--namespace", ns, "--sweep", "companions")

    assert run.exit_code == 0, run.stderr
    assert hub.present("ConfigMap", ns, "generated")
    outcome = run.outcome("ConfigMap", "generated")
    assert outcome in {("marked", "orphaned"), ("skipped", "grace-period")}, outcome
    if outcome == ("skipped", "grace-period"):
        assert written is not None and written["label"] == "true" and bound == "own"
        kept_since = marks.parse_since(written["since"])
        created = parse_time(meta["creationTimestamp"])
        assert kept_since is not None and created is not None and created <= kept_since
        assert marks.since_value(kept_since) == written["since"]  # gcjob's own format
    else:
        mark = mark_of(hub.get("ConfigMap", ns, "generated"))
        assert mark is not None and run.judged_during(mark["since"])
        assert mark["evidence"] == facts.on(meta["uid"]).digest


def test_a_route_that_loses_its_labels_loses_its_mark(
    hub: TestCluster, upstream: TestCluster, upstream_kubeconfig: str, graced: Any
) -> None:
    project = upstream.project()
    ns = hub.namespace("grace")
    hub.create(
        route(
            ns,
            "web",
            cluster_label=f"cluster-{UPSTREAM_CLUSTER}",
            upstream_namespace=project,
            parents=[{"name": "gw-gone"}],
        )
    )
    args = ("--namespace", ns, "--upstream-kubeconfig", upstream_kubeconfig, "--sweep", "routes")
    first = graced(*args)
    assert first.outcome("HTTPRoute", "web") == ("marked", "upstream-gateways-gone")

    kind_off = {"metadata": {"labels": {UPSTREAM_KIND_LABEL: "GRPCRoute"}}}
    hub.patch("HTTPRoute", ns, "web", kind_off)
    left = graced(*args)

    assert left.exit_code == 0, left.stderr
    assert left.outcome("HTTPRoute", "web") == ("unmarked", "left-scope")
    assert mark_of(hub.get("HTTPRoute", ns, "web")) is None

    wait_past(judged_by(first))
    hub.patch("HTTPRoute", ns, "web", {"metadata": {"labels": {UPSTREAM_KIND_LABEL: "HTTPRoute"}}})
    back = graced(*args)
    assert back.outcome("HTTPRoute", "web") == ("marked", "upstream-gateways-gone")
    assert hub.present("HTTPRoute", ns, "web")
