"""End to end, on the real API server: the rollout Job's --drain clears a backlog of orphans
(a third of the 510 bench/bench_drain.py clears) interleaved with live objects in one run; the
CronJob's runs step aside meanwhile; after a backlog, --max-deletions is a drain cap (the
oldest marks first, exit 0), and a sudden mass of new orphans trips a breaker (exit 4)."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gcjob.budget import RunBudget
from gcjob.domain import ORPHANED_LABEL
from gcjob.kube.access import KubeAccess
from gcjob.kube.connect import hub_client
from gcjob.kube.transport import RequestStats, Transport
from gcjob.lease import DRAIN_HOLDER, LeaseLock, LockHeld
from gcjob.lifecycle import DRAIN_MARGIN
from gcjob.times import parse_time
from testbed.backlog import seed_backlog
from testbed.cluster import TestCluster, wait_for
from testbed.faultproxy import Fault, FaultProxy
from testbed.objects import companion, workload
from testbed.report import records_of, run_gcjob, start_gcjob

GRACE = "3s"
# A third of the rollout Job's world (testbed/backlog.py: 170 orphans of 510) and of its cap
# (200): the same three rounds, in a third of the time (203 s of CI's 1,583 at 510).
SHARE = 3
CAP = 200 // SHARE


def marked(obj: dict[str, Any] | None) -> bool:
    return obj is not None and ORPHANED_LABEL in (obj["metadata"].get("labels") or {})


def drain_args(hub_kubeconfig: str, ns: str, *extra: str) -> list[str]:
    """The rollout Job's arguments (cronjobs/rollout/job.yaml), with a short grace period, kept
    to the test's namespace; the lock in it too."""
    return [
        *("--hub-kubeconfig", hub_kubeconfig, "--namespace", ns, "--lock-namespace", ns),
        *("--min-age", "0s", "--grace", GRACE, "--write-qps", "0"),
        *("--delete", "--drain", "--timeout", "8m"),
        *("--max-deletions", str(CAP), "--max-delete-percent", "100", "--drain-pace", "50"),
        *("--max-marks", "2000", "--max-writes", "10000"),
        *extra,
    ]


@pytest.mark.timeout(300)  # 30 s on an idle machine
def test_one_drain_run_clears_a_backlog_over_rounds_and_deletes_nothing_live(
    hub: TestCluster, hub_kubeconfig: str
) -> None:
    ns = hub.namespace("drain")
    orphans, live = seed_backlog(hub, ns, SHARE)
    # One orphan whose workload comes back while the drain waits: unmarked, never deleted.
    revived = hub.create_with_binding(companion("ConfigMap", ns, "a-revives", ["default/revive"]))

    drain = start_gcjob(*drain_args(hub_kubeconfig, ns))

    def revives_marked() -> bool:
        assert drain.poll() is None, drain.communicate()
        return marked(hub.get("ConfigMap", ns, "a-revives"))

    wait_for(revives_marked, timeout=120)
    hub.create(workload(ns, "revive"))  # the rollout re-created it
    # A CronJob run meanwhile finds the lock held by the drain: it steps aside, exit 0.
    cron = run_gcjob(
        *("--hub-kubeconfig", hub_kubeconfig, "--namespace", ns, "--lock-namespace", ns),
        "--delete",
    )
    stdout, stderr = drain.communicate(timeout=520)

    assert cron.exit_code == 0, cron.stderr
    assert cron.summary["skipped"].startswith("rollout holds the lock")
    assert cron.summary["exit_reason"].startswith("skipped: rollout holds the lock")
    assert not cron.items
    assert drain.returncode == 0, stderr
    records = records_of(stdout)
    summary = records[-1]
    print("drain:", summary["drain"], "from", summary["started"], "to", summary["finished"])
    assert summary["drain"]["finished"] == "clear"
    assert summary["drain"]["rounds"] >= 3  # marked, waited, deleted CAP a round
    # It waited for the marks to fall due, from the hub's time now (issue 46: each mark is
    # dated when it was judged, and a round slower than the grace period waits only the
    # margin after it), and deleted none before its mark's grace period was over.
    assert summary["drain"]["slept_seconds"] >= DRAIN_MARGIN
    assert summary["drain"]["waiting"] == summary["drain"]["backlog"] == 0
    # Orphan deletes of the backlog's objects: the garbage collector takes their `orphan` finalizers
    # off at its client's pace (about a minute here), so the first look waits for it.
    left = [(kind, name) for kind, name in orphans if not hub.gone(kind, ns, name)]
    assert left == []
    wrong = [(kind, name) for kind, name in live if not hub.present(kind, ns, name)]
    assert wrong == []
    assert all(not marked(hub.get(kind, ns, name)) for kind, name in live[:20])
    assert hub.present("ConfigMap", ns, "a-revives") and hub.present("ResourceBinding", ns, revived)
    assert not marked(hub.get("ConfigMap", ns, "a-revives"))
    items = [r for r in records if r["record"] == "item"]
    deleted = Counter((r["kind"], r["name"]) for r in items if r["action"] == "deleted")
    assert set(deleted) == set(orphans)
    grace = timedelta(seconds=int(GRACE.removesuffix("s")))
    for r in items:
        if r["action"] == "deleted":
            since, at = parse_time(r["orphaned_since"]), parse_time(r["time"])
            assert since is not None and at is not None and at >= since + grace, r
    assert max(deleted.values()) == 1  # each deleted once
    actions = Counter(r["action"] for r in items)
    assert actions["marked"] == len(orphans) + 2  # and the revived Secret with its binding
    assert actions["deleted"] == len(orphans)
    revived_seen = [(r["action"], r["reason"]) for r in items if r["name"] == "a-revives"]
    assert revived_seen[0] == ("marked", "orphaned")
    assert ("unmarked", "referrer-live") in revived_seen
    assert not any(action == "deleted" for action, _ in revived_seen)
    backlog = [r for r in items if r["reason"] == "backlog"]
    assert backlog and all(r["action"] == "skipped" for r in backlog)
    assert all(f"--max-deletions {CAP}" in r["detail"] for r in backlog)
    assert not [r for r in items if r["reason"] == "brake"]


def test_after_a_backlog_the_cap_takes_the_oldest_marks_and_new_orphans_trip_the_breaker(
    hub: TestCluster, gcjob_hub_args: list[str]
) -> None:
    ns = hub.namespace("cap")
    # A grace period longer than a run takes on a loaded machine: the older marks must not
    # fall due while the younger ones are written.
    cron = [*gcjob_hub_args[:-2], "--grace", "10s", "--namespace", ns, "--delete"]

    def orphans(prefix: str, count: int) -> list[str]:
        names = [f"{prefix}-{i}" for i in range(count)]
        for name in names:
            hub.create(companion("ConfigMap", ns, name, [f"default/gone-{name}"]))
        return names

    older = orphans("older", 3)
    assert run_gcjob(*cron).exit_code == 0  # marks them
    time.sleep(1.2)  # marks count whole seconds: the next ones are younger
    younger = orphans("younger", 3)
    assert run_gcjob(*cron).exit_code == 0  # marks these; the older ones wait out the grace
    # All due now: the grace, and a second more, for the hub's clock is its whole-second Date
    # carried on by the monotonic clock (a mark is dated when its evidence was complete, and the
    # next run's now may read up to a second behind the real time).
    time.sleep(11.2)

    capped = run_gcjob(*cron, "--max-deletions", "4")

    assert capped.exit_code == 0, capped.stderr
    assert capped.summary["deletion_backlog"] == 2, (capped.summary, capped.stderr)
    assert capped.summary["sweeps"]["companions"]["status"] == "completed"
    assert all(capped.outcome("ConfigMap", n) == ("deleted", "orphaned") for n in older)
    young = Counter(capped.outcome("ConfigMap", n) for n in younger)
    assert young == {("deleted", "orphaned"): 1, ("skipped", "backlog"): 2}
    assert sum(hub.present("ConfigMap", ns, n) for n in younger) == 2

    sudden = orphans("sudden", 8)
    braked = run_gcjob(*cron, "--max-marks", "5")

    assert braked.exit_code == 4
    detail = braked.summary["sweeps"]["companions"]["detail"]
    assert "marks brake" in detail and "raise --max-marks for one run" in detail
    assert all(braked.outcome("ConfigMap", n) == ("would-mark", "brake") for n in sudden)
    assert not any(marked(hub.get("ConfigMap", ns, n)) for n in sudden)
    # The backlog went on draining: the breaker holds the new orphans only.
    assert all(hub.gone("ConfigMap", ns, n) for n in younger)


def test_a_drain_renews_its_lease_and_stops_when_it_is_no_longer_its_own(
    hub: TestCluster, hub_kubeconfig: str
) -> None:
    ns = hub.namespace("lease")
    transport = Transport(
        hub_client(hub_kubeconfig, None), "hub", stats=RequestStats(), budget=RunBudget(None)
    )
    mine = f"{DRAIN_HOLDER}pod-a/run-1"
    lock = LeaseLock(KubeAccess(transport), ns, "gcjob", mine, timedelta(minutes=5))
    lock.acquire(datetime.now(UTC))
    first = hub.get("Lease", ns, "gcjob")
    assert first is not None
    time.sleep(1.1)

    lock.renew(datetime.now(UTC))

    renewed = hub.get("Lease", ns, "gcjob")
    assert renewed is not None
    assert renewed["spec"]["holderIdentity"] == mine
    assert renewed["spec"]["renewTime"] > first["spec"]["renewTime"]
    # Another run finds it held by a drain: it is told so, and by whom.
    other = LeaseLock(KubeAccess(transport), ns, "gcjob", "pod-b/run-2", timedelta(minutes=5))
    with pytest.raises(LockHeld) as held:
        other.acquire(datetime.now(UTC))
    assert held.value.by_drain and held.value.holder == mine
    # Taken from under it (an operator deleted the Lease): the drain's next renewal stops it.
    hub.delete("Lease", ns, "gcjob")
    with pytest.raises(LockHeld):
        lock.renew(datetime.now(UTC))


@pytest.mark.timeout(300)
def test_one_failing_item_never_ends_the_drain_for_the_rest(
    hub: TestCluster, hub_kubeconfig: str, faults: FaultProxy
) -> None:
    """issue 51 item 1: one item the drain cannot act on (its every delete refused) is that
    item's failure: the rounds go on until nothing else waits, and the run exits 1."""
    ns = hub.namespace("drain-fail")
    hub.create(workload(ns, "web"))
    orphans = []
    for i in range(6):
        rb = hub.create_with_binding(companion("ConfigMap", ns, f"orphan-{i}", [f"default/g{i}"]))
        orphans.append((f"orphan-{i}", rb))
        hub.create_with_binding(companion("ConfigMap", ns, f"live-{i}", ["default/web"]))
    path = f"/api/v1/namespaces/{ns}/configmaps/orphan-0"
    faults.add_fault(Fault(method="DELETE", path=f"^{path}$", status=422, times=None))

    result = run_gcjob(*drain_args(hub_kubeconfig, ns, "--max-deletions", "4"))

    assert result.exit_code == 1, result.stderr
    drain = result.summary["drain"]
    assert drain["finished"] == "clear", drain
    assert drain["rounds"] >= 3  # marked; 4 deletions a round over 10 objects
    assert hub.present("ConfigMap", ns, "orphan-0")
    seen = [
        (r["action"], r["reason"])
        for r in result.items
        if (r["kind"], r["name"]) == ("ConfigMap", "orphan-0")
    ]
    assert seen[0] == ("marked", "orphaned")
    assert set(seen[1:]) == {("failed", "delete-failed")}  # tried again each round, kept
    for name, rb in orphans[1:]:
        assert hub.gone("ConfigMap", ns, name) and hub.gone("ResourceBinding", ns, rb), name
    for i in range(6):
        assert hub.present("ConfigMap", ns, f"live-{i}")
