"""End to end (issue 20 item 11): a Lease that never expires no longer blocks forever.

Real Leases on the real API server: a holder with no renewTime, with a renewTime in 2099, or
with leaseDurationSeconds 2e9. The first run exits 6, says who holds the lock in its
notification, and notes on the Lease when it saw that record; a run that finds the same record
unchanged for the capped duration takes it over. The passing of that hour is played by moving
the note's time back (the note is gcjob's own record), never by a clock of the run.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gcjob.budget import RunBudget
from gcjob.kube.access import KubeAccess
from gcjob.kube.connect import hub_client
from gcjob.kube.transport import RequestStats, Transport
from gcjob.lease import MAX_LEASE_DURATION, OBSERVED_ANNOTATION, LeaseLock, LockHeld, ShardLock
from gcjob.shard import Shard
from gcjob.times import parse_time
from testbed.cluster import TestCluster
from testbed.faultproxy import Fault, FaultProxy
from testbed.report import run_gcjob
from tests.e2e.test_safety_e2e import locked_args, orphans


class Receiver:
    """A Slack-compatible webhook receiver: keeps every JSON body posted to it."""

    def __init__(self) -> None:
        posts: list[dict[str, Any]] = []
        self.posts = posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                posts.append(json.loads(self.rfile.read(length) or b"{}"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _lease(ns: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "gcjob", "namespace": ns},
        "spec": spec,
    }


FAR = datetime(2099, 1, 1, tzinfo=UTC)
NEVER_EXPIRING = {
    "no-renew-time": {"holderIdentity": "stuck-pod/run-1", "leaseDurationSeconds": 300},
    "renewed-in-2099": {
        "holderIdentity": "stuck-pod/run-2",
        "leaseDurationSeconds": 300,
        "renewTime": _stamp(FAR),
        "acquireTime": _stamp(FAR),
    },
}


def _age_the_note(hub: TestCluster, ns: str, by: timedelta) -> None:
    """The observation noted on the Lease, moved `by` into the past."""
    current = hub.get("Lease", ns, "gcjob")
    assert current is not None
    note = current["metadata"]["annotations"][OBSERVED_ANNOTATION]
    digest, _, when = note.partition(" ")
    earlier = datetime.strptime(when, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) - by
    aged = f"{digest} {earlier.strftime('%Y-%m-%dT%H:%M:%SZ')}"
    hub.patch("Lease", ns, "gcjob", {"metadata": {"annotations": {OBSERVED_ANNOTATION: aged}}})


@pytest.mark.parametrize("case", sorted(NEVER_EXPIRING))
def test_a_lease_whose_time_says_nothing_is_observed_then_taken_over(
    hub: TestCluster, hub_kubeconfig: str, receiver: Receiver, case: str
) -> None:
    ns = hub.namespace()
    names = orphans(hub, ns, 1)
    holder = NEVER_EXPIRING[case]["holderIdentity"]
    hub.create(_lease(ns, dict(NEVER_EXPIRING[case])))
    args = [*locked_args(hub_kubeconfig, hub, ns), "--notify-webhook", receiver.url]

    first = run_gcjob(*args)

    assert first.exit_code == 6, first.stderr
    assert holder in first.summary["exit_reason"]
    assert "taken over if it stays so until" in first.summary["exit_reason"]
    assert hub.present("ConfigMap", ns, names[0])
    # Exit 6 is notified, naming the holder.
    [post] = receiver.posts
    assert "found the lock held (exit 6)" in post["text"]
    assert f"held by {holder}" in post["text"]
    noted = hub.get("Lease", ns, "gcjob")
    assert noted is not None
    assert OBSERVED_ANNOTATION in noted["metadata"]["annotations"]
    assert noted["spec"]["holderIdentity"] == holder  # nothing of the holder's record changed

    # Within the capped duration: still held, and the note is not moved forward.
    again = run_gcjob(*args)
    assert again.exit_code == 6, again.stderr
    assert "unchanged since" in again.summary["exit_reason"]

    _age_the_note(hub, ns, MAX_LEASE_DURATION)
    taken = run_gcjob(*args)

    assert taken.exit_code == 0, taken.stderr
    assert hub.gone("ConfigMap", ns, names[0])
    released = hub.get("Lease", ns, "gcjob")
    assert released is not None
    assert not released["spec"].get("holderIdentity")
    assert OBSERVED_ANNOTATION not in (released["metadata"].get("annotations") or {})


def test_a_holder_that_changes_its_record_restarts_the_observation(
    hub: TestCluster, hub_kubeconfig: str
) -> None:
    ns = hub.namespace()
    hub.create(_lease(ns, dict(NEVER_EXPIRING["no-renew-time"])))
    args = locked_args(hub_kubeconfig, hub, ns)
    assert run_gcjob(*args).exit_code == 6
    _age_the_note(hub, ns, MAX_LEASE_DURATION)
    hub.patch("Lease", ns, "gcjob", {"spec": {"leaseTransitions": 7}})  # the holder is alive

    result = run_gcjob(*args)

    assert result.exit_code == 6, result.stderr
    assert "first seen unchanged now" in result.summary["exit_reason"]


def test_a_two_billion_second_lease_is_capped(hub: TestCluster, hub_kubeconfig: str) -> None:
    ns = hub.namespace()
    names = orphans(hub, ns, 1)
    renewed = _stamp(datetime.now(UTC) - MAX_LEASE_DURATION - timedelta(minutes=1))
    spec = {
        "holderIdentity": "stuck-pod/run-3",
        "leaseDurationSeconds": 2_000_000_000,
        "renewTime": renewed,
        "acquireTime": renewed,
    }
    hub.create(_lease(ns, spec))

    result = run_gcjob(*locked_args(hub_kubeconfig, hub, ns))

    assert result.exit_code == 0, result.stderr
    assert hub.gone("ConfigMap", ns, names[0])


def test_a_capped_lease_renewed_just_now_still_keeps_a_run_out(
    hub: TestCluster, hub_kubeconfig: str
) -> None:
    ns = hub.namespace()
    now = _stamp(datetime.now(UTC))
    spec = {"holderIdentity": "live-pod/run-4", "leaseDurationSeconds": 2_000_000_000}
    hub.create(_lease(ns, {**spec, "renewTime": now, "acquireTime": now}))

    result = run_gcjob(*locked_args(hub_kubeconfig, hub, ns))

    assert result.exit_code == 6
    assert "live-pod/run-4" in result.summary["exit_reason"]


def test_a_lease_is_stamped_on_the_hubs_clock_not_the_pods(
    hub: TestCluster, hub_kubeconfig: str
) -> None:
    """A pod clock ten minutes behind the hub's stamped a renewTime that the next run, judging
    by the hub's clock, found expired at once: two runs held the lock (second audit F3)."""
    ns = hub.namespace("lease")
    transport = Transport(
        hub_client(hub_kubeconfig, None), "hub", stats=RequestStats(), budget=RunBudget(None)
    )
    lock = LeaseLock(KubeAccess(transport), ns, "gcjob", "pod-a/run-1", timedelta(minutes=5))
    behind = datetime.now(UTC) - timedelta(minutes=10)

    lock.acquire(behind)

    lease = hub.get("Lease", ns, "gcjob")
    assert lease is not None
    renewed = parse_time(lease["spec"]["renewTime"])
    assert renewed is not None and abs(renewed - datetime.now(UTC)) < timedelta(seconds=30)
    second = LeaseLock(KubeAccess(transport), ns, "gcjob", "pod-b/run-2", timedelta(minutes=5))
    with pytest.raises(LockHeld):
        second.acquire(behind)
    lock.release()


def _hub_access(hub_kubeconfig: str) -> KubeAccess:
    transport = Transport(
        hub_client(hub_kubeconfig, None), "hub", stats=RequestStats(), budget=RunBudget(None)
    )
    return KubeAccess(transport)


def _holder(hub: TestCluster, ns: str, name: str) -> str | None:
    lease = hub.get("Lease", ns, name)
    return None if lease is None else lease["spec"].get("holderIdentity")


def test_a_shard_never_frees_the_runs_lease_a_sibling_joined_while_it_looked(
    hub: TestCluster, hub_kubeconfig: str, faults: FaultProxy
) -> None:
    """Issue 46 item 5: shard 0/2, done, reads shard 1/2's Lease to see whether it is the last
    one out; the hub answers late, as it was before 1/2 started. Meanwhile 1/2 takes its own
    Lease and joins the run's. 0/2 freed the run's Lease on a fresh read, and an unsharded
    `--delete` run started beside 1/2 (exit 0). The run's Lease is freed only as it was before
    the siblings were read: 1/2's join makes that write 409, and the unsharded run exits 6."""
    ns = hub.namespace("lease")
    names = orphans(hub, ns, 1)
    duration = timedelta(minutes=5)
    done = ShardLock(_hub_access(hub_kubeconfig), ns, "gcjob", Shard(0, 2), "pod-0/r", duration)
    late = ShardLock(_hub_access(hub_kubeconfig), ns, "gcjob", Shard(1, 2), "pod-1/r", duration)
    done.acquire(datetime.now(UTC))
    assert _holder(hub, ns, "gcjob") == "shards/2"
    answer = threading.Event()
    slow = faults.add_fault(
        Fault(
            method="GET",
            path=rf"/namespaces/{ns}/leases/gcjob-shard-1-of-2$",
            apply_first=True,  # read now (1/2's Lease not yet there), answered when let go
            hold=answer,
        )
    )
    failed: list[BaseException] = []

    def release() -> None:
        try:
            done.release()
        except BaseException as exc:  # said by the test's own assertion
            failed.append(exc)

    releasing = threading.Thread(target=release)
    releasing.start()
    deadline = time.monotonic() + 30
    while slow.hits == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert slow.hits == 1, "0/2 never read its sibling's Lease"
    late.acquire(datetime.now(UTC))  # its own Lease, then the run's, joined
    answer.set()
    releasing.join(timeout=60)

    assert not releasing.is_alive() and not failed, failed
    assert _holder(hub, ns, "gcjob-shard-0-of-2") is None  # its own, freed
    assert _holder(hub, ns, "gcjob") == "shards/2"  # the run's: 1/2 holds it still
    unsharded = run_gcjob(*locked_args(hub_kubeconfig, hub, ns))
    assert unsharded.exit_code == 6, unsharded.stderr
    assert "shards/2" in unsharded.summary["exit_reason"]
    assert hub.present("ConfigMap", ns, names[0])
    late.release()  # the last one out frees it
    assert _holder(hub, ns, "gcjob") is None
