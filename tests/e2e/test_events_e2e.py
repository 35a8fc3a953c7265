"""End to end, on the real API server (issue 34 item 8): a --delete run posts an Event
(events.k8s.io/v1) on the object's namespace when it marks, unmarks or deletes it, which
`kubectl get events` shows: gcjob's reason code, the run id, when a marked object goes; no
label or annotation value. A dry run posts none, nor a run with --no-events."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from typing import Any

from testbed.cluster import TEST_FINALIZER, TestCluster, wait_for
from testbed.faultproxy import Fault, FaultProxy
from testbed.objects import companion, workload
from testbed.report import Result, records_of, run_gcjob, start_gcjob
from testbed.servers import kubectl

SECRET_LOOKING = "label-value-7f3a"  # a label value no Event may carry
NOTE_VALUE = "annotation-value-9c2e"  # nor an annotation value


def events_of(hub: TestCluster, ns: str) -> list[dict[str, Any]]:
    status, listed = hub._call("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events")
    assert status == 200, listed
    items: list[dict[str, Any]] = listed["items"]
    return items


def by_object(events: list[dict[str, Any]], name: str) -> list[str]:
    """The reasons of the Events regarding `name`, oldest first."""
    mine = [e for e in events if e["regarding"]["name"] == name]
    return [e["reason"] for e in sorted(mine, key=lambda e: e["eventTime"])]


def test_marks_unmarks_and_deletes_post_events_on_the_objects_namespace(
    hub: TestCluster, hub_kubeconfig: str
) -> None:
    ns = hub.namespace("events")
    hub.create(workload(ns, "web"))
    labels = {"team": SECRET_LOOKING}
    notes = {"example.com/note": NOTE_VALUE}
    gone = companion("ConfigMap", ns, "orphan", [f"{ns}/gone"], labels=labels, annotations=notes)
    hub.create(gone)
    hub.create(companion("ConfigMap", ns, "revives", [f"{ns}/later"]))
    hub.create(companion("ConfigMap", ns, "live", [f"{ns}/web"]))
    args = (
        *("--hub-kubeconfig", hub_kubeconfig, "--namespace", ns, "--no-lock"),
        *("--min-age", "0s", "--sweep", "companions"),
    )

    dry = run_gcjob(*args, "--grace", "2s")
    assert dry.exit_code == 0 and dry.outcome("ConfigMap", "orphan") == ("would-mark", "orphaned")
    assert events_of(hub, ns) == []  # a dry run posts nothing
    quiet = run_gcjob(*args, "--grace", "2s", "--delete", "--no-events")
    assert quiet.outcome("ConfigMap", "orphan") == ("marked", "orphaned")
    assert events_of(hub, ns) == []  # --no-events
    hub.patch(  # its mark removed again, by hand: the next run marks it anew
        "ConfigMap",
        ns,
        "orphan",
        {"metadata": {"labels": {"gcjob.datumapis.com/orphaned": None}}},
    )
    hub.patch(
        "ConfigMap", ns, "revives", {"metadata": {"labels": {"gcjob.datumapis.com/orphaned": None}}}
    )

    marking = run_gcjob(*args, "--grace", "2s", "--delete")
    hub.create(workload(ns, "later"))  # "revives" has its referrer back
    time.sleep(2.5)
    deleting = run_gcjob(*args, "--grace", "2s", "--delete")

    assert marking.outcome("ConfigMap", "orphan") == ("marked", "orphaned"), marking.stderr
    assert deleting.outcome("ConfigMap", "orphan") == ("deleted", "orphaned"), deleting.stderr
    assert deleting.outcome("ConfigMap", "revives") == ("unmarked", "referrer-live")
    events = events_of(hub, ns)
    assert by_object(events, "orphan") == ["OrphanMarked", "OrphanDeleted"]
    assert by_object(events, "revives") == ["OrphanMarked", "OrphanUnmarked"]
    assert by_object(events, "live") == []
    [marked] = [
        e for e in events if e["reason"] == "OrphanMarked" and e["regarding"]["name"] == "orphan"
    ]
    item = marking.item("ConfigMap", "orphan")
    assert item is not None
    assert marked["regarding"]["uid"] == item["uid"]
    assert marked["regarding"]["kind"] == "ConfigMap" and marked["action"] == "Mark"
    assert marked["reportingController"] == "gcjob.datumapis.com/gcjob"
    assert "reason orphaned" in marked["note"] and marking.summary["run_id"] in marked["note"]
    assert f"deleted at {item['would_delete_at']} if still orphaned" in marked["note"]
    [deleted] = [e for e in events if e["reason"] == "OrphanDeleted"]
    assert deleting.summary["run_id"] in deleted["note"]
    text = str(events)
    assert SECRET_LOOKING not in text and NOTE_VALUE not in text
    # Where operators look: `kubectl get events` shows them.
    shown = subprocess.run(
        [kubectl(), "--kubeconfig", hub_kubeconfig, "-n", ns, "get", "events"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "OrphanDeleted" in shown and "configmap/orphan" in shown


def test_events_never_take_from_the_write_budget(hub: TestCluster, hub_kubeconfig: str) -> None:
    """--max-writes counts marks, unmarks and deletes only: with Events on, a run that may
    write 3 objects marks 3, and posts their 3 Events besides."""
    ns = hub.namespace("budget")
    for i in range(5):
        hub.create(companion("ConfigMap", ns, f"orphan-{i}", [f"{ns}/gone"]))

    result: Result = run_gcjob(
        *("--hub-kubeconfig", hub_kubeconfig, "--namespace", ns, "--no-lock"),
        *("--min-age", "0s", "--grace", "1h", "--sweep", "companions", "--delete"),
        *("--max-writes", "3"),
    )

    marked = [i for i in result.items if i["action"] == "marked"]
    assert len(marked) == 3, result.stderr
    assert result.summary["writes"]["counted"] == 3
    assert sorted(e["regarding"]["name"] for e in events_of(hub, ns)) == sorted(
        i["name"] for i in marked
    )


def _refused_as_terminating(hub: TestCluster, ns: str) -> bool:
    """Whether the API server now refuses to create an Event in `ns` as being deleted (a dry
    run: nothing is created)."""
    probe = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "probe", "namespace": ns},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "gcjob.test/probe",
        "reportingInstance": "probe",
        "action": "Probe",
        "reason": "Probe",
        "type": "Normal",
    }
    path = f"/apis/events.k8s.io/v1/namespaces/{ns}/events?dryRun=All"
    status, _ = hub._call("POST", path, probe)
    return status == 403


def test_a_namespace_being_deleted_refuses_its_events_and_the_others_are_still_sent(
    hub: TestCluster, hub_kubeconfig: str, faults: FaultProxy
) -> None:
    """Issue 46 item 7: a run's first Event went to a namespace that started terminating as
    the run ended (403, NamespaceTerminating) and every later Event was dropped, "none more
    this run". The real API server's refusal names its cause, which is no missing permission:
    only that namespace's Events go unsent."""
    leaving = hub.namespace("events-a")  # sorts first: its Events are sent first
    staying = hub.namespace("events-b")
    for ns in (leaving, staying):
        for i in range(2):
            hub.create(companion("ConfigMap", ns, f"orphan-{i}", [f"{ns}/gone"]))
    # Keeps `leaving` Terminating once deleted, past the namespace controller.
    hub.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "held", "namespace": leaving, "finalizers": [TEST_FINALIZER]},
        }
    )
    first = threading.Event()
    held = faults.add_fault(
        Fault(method="POST", path=rf"/namespaces/{leaving}/events$", hold=first)
    )

    run = start_gcjob(
        *("--hub-kubeconfig", hub_kubeconfig, "--no-lock", "--min-age", "0s", "--grace", "0s"),
        *("--namespace", leaving, "--namespace", staying, "--sweep", "companions", "--delete"),
        *("--read-timeout", "60s"),  # its first Event waits at the proxy meanwhile
    )
    try:
        wait_for(lambda: held.hits or run.poll() is not None, 120, "the run's first Event")
        assert held.hits == 1, run.communicate()
        hub.delete("Namespace", None, leaving)  # after its orphans went, before its Events
        wait_for(lambda: _refused_as_terminating(hub, leaving), 30, f"{leaving} terminating")
    finally:
        first.set()
    stdout, stderr = run.communicate(timeout=120)

    assert run.returncode == 0, stderr
    deleted = [
        (i["namespace"], i["name"]) for i in records_of(stdout) if i.get("action") == "deleted"
    ]
    assert sorted(deleted) == sorted(
        (ns, f"orphan-{i}") for ns in (leaving, staying) for i in range(2)
    )
    sent = [
        r
        for r in faults.requests
        if r.method == "POST" and r.path.endswith("/events") and "dryRun" not in r.query
    ]
    answered = [(r.path.split("/")[5], r.status) for r in sent]
    # The namespace being deleted was asked first, and refused as such by the real server.
    assert answered[0] == (leaving, 403), answered
    refusal = json.loads(sent[0].response_body)
    assert refusal["kind"] == "Status" and refusal["reason"] == "Forbidden"
    assert "NamespaceTerminating" in {c.get("reason") for c in refusal["details"]["causes"]}
    # Asked once there, and the other namespace's Events were still sent.
    assert answered.count((leaving, 403)) == 1, answered
    assert answered[1:] == [(staying, 201), (staying, 201)], answered
    assert sorted(by_object(events_of(hub, staying), f"orphan-{i}") for i in range(2)) == [
        ["OrphanDeleted"],
        ["OrphanDeleted"],
    ]
    assert "being deleted" in stderr and "none more this run" not in stderr


def test_an_event_about_a_long_name_cut_at_a_dash_is_accepted(
    hub: TestCluster, hub_kubeconfig: str
) -> None:
    """Issue 46 item 8: a valid 210-character name with `-` at position 200 gave the Event
    name `…a-.<hex>`, which the API server refused (a part of a DNS-1123 subdomain ends
    alphanumeric). The cut drops what it leaves of `-` and `.`: the real server takes it."""
    ns = hub.namespace("events")
    name = "a" * 199 + "-" + "b" * 10
    hub.create(companion("ConfigMap", ns, name, [f"{ns}/gone"]))

    result = run_gcjob(
        *("--hub-kubeconfig", hub_kubeconfig, "--namespace", ns, "--no-lock"),
        *("--min-age", "0s", "--grace", "0s", "--sweep", "companions", "--delete"),
    )

    assert result.outcome("ConfigMap", name) == ("deleted", "orphaned"), result.stderr
    [event] = events_of(hub, ns)
    assert event["reason"] == "OrphanDeleted" and event["regarding"]["name"] == name
    assert event["metadata"]["name"].startswith("a" * 199 + ".")
    assert "could not post" not in result.stderr
