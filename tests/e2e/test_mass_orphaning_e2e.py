"""End to end, on the real API server: the disaster the brakes exist for (issue 46 items 10-12).
Every WorkloadDeployment of a namespace is deleted at once: 300 companions, each with its
binding, orphaned, nothing live. With the default brakes (only --grace and --min-age set, to
make the orphans due at once or to have them marked), run after run deletes nothing, exits 4
and says which brake held and how to get past it; a dry run says the same. Marks delete
nothing; here, where the marks brake trips (600 marks over --max-marks 500), none of the sweep
is written."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from gcjob.domain import ORPHANED_LABEL
from testbed.cluster import BY_KIND, TestCluster, wait_for
from testbed.objects import companion, workload
from testbed.report import Result, run_gcjob

COMPANIONS = 300


def everything_orphaned(hub: TestCluster, ns: str) -> list[str]:
    """`COMPANIONS` companions in `ns`, each named by its own WorkloadDeployment and with its
    binding as Karmada writes it; then every WorkloadDeployment deleted at once (one delete of
    the collection). Returns the companions' names."""
    names = [f"app-{i:03}" for i in range(COMPANIONS)]

    def make(name: str) -> None:
        hub.create(workload(ns, f"wd-{name}"))
        hub.create_with_binding(companion("ConfigMap", ns, name, [f"default/wd-{name}"]))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(make, names))
    workloads = BY_KIND["WorkloadDeployment"].path(ns, None)
    status, answer = hub._call("DELETE", workloads)
    assert status == 200, answer

    def none_left() -> bool:
        status, listed = hub._call("GET", workloads)
        return status == 200 and not listed["items"]

    wait_for(none_left, timeout=60)
    return names


def listed(hub: TestCluster, ns: str, kind: str) -> list[dict[str, Any]]:
    status, answer = hub._call("GET", BY_KIND[kind].path(ns, None))
    assert status == 200, answer
    items: list[dict[str, Any]] = answer["items"]
    return items


def assert_untouched(hub: TestCluster, ns: str, names: list[str]) -> None:
    """Every companion and binding still there, and not one of them carrying a mark."""
    configmaps = {o["metadata"]["name"]: o for o in listed(hub, ns, "ConfigMap")}
    bindings = {o["metadata"]["name"]: o for o in listed(hub, ns, "ResourceBinding")}
    assert [n for n in names if n not in configmaps] == []
    assert [n for n in names if f"{n}-configmap" not in bindings] == []
    marked = [
        o["metadata"]["name"]
        for o in [*configmaps.values(), *bindings.values()]
        if ORPHANED_LABEL in (o["metadata"].get("labels") or {})
    ]
    assert marked == []


def assert_deletion_brake(result: Result, names: list[str], *, delete: bool = True) -> None:
    summary = result.summary
    assert result.exit_code == (4 if delete else 0), (result.stderr, summary["exit_reason"])
    state = summary["sweeps"]["companions"]
    assert state["status"] == "braked"
    # Which brake, weighing what, and how to get past it.
    assert state["detail"].startswith(
        f"deletion brake: {COMPANIONS} of {COMPANIONS} objects (100%) exceed "
        "--max-delete-percent 50"
    ), state["detail"]
    assert "raise --max-delete-percent for one run" in state["detail"]
    assert "rollout Job" in state["detail"]
    if delete:
        assert "deletion brake" in summary["exit_reason"]
    assert summary["counts"]["companions"].get("deleted") is None
    assert summary["deletion_backlog"] == 0  # held, not a backlog waiting for the next run
    held = [result.outcome("ConfigMap", n) for n in names]
    assert set(held) == {("would-delete", "brake")}, set(held)


@pytest.mark.timeout(900)
def test_every_workload_deleted_at_once_deletes_nothing_run_after_run(
    hub: TestCluster, gcjob_hub_args: list[str]
) -> None:
    ns = hub.namespace("mass")
    names = everything_orphaned(hub, ns)
    # The default brakes: only --grace 0s and --min-age 0s (gcjob_hub_args), the orphans due.
    args = [*gcjob_hub_args, "--namespace", ns, "--sweep", "companions", "--sweep", "bindings"]

    # Due at once (--grace 0s, no mark): the drain cap would take 50 a run, 16.7% of the sweep.
    for _ in range(3):
        result = run_gcjob(*args, "--delete")
        assert_deletion_brake(result, names)
        assert_untouched(hub, ns, names)

    # A dry run says the same (exit 0: it deletes nothing anyway).
    assert_deletion_brake(run_gcjob(*args), names, delete=False)

    # With a grace period they are marked first: 300 companions and their 300 bindings are 600
    # marks, over --max-marks 500. The sweep marks none of them, run after run; the breaker says
    # at once that they would not be deleted either.
    for _ in range(2):
        result = run_gcjob(*args, "--delete", "--grace", "10m")
        summary = result.summary
        assert result.exit_code == 4, (result.stderr, summary["exit_reason"])
        detail = summary["sweeps"]["companions"]["detail"]
        # The breaker first (every orphan pending weighed, none due yet), then the marks brake.
        deletion, marks = detail.split("; marks brake: ")
        assert deletion.startswith("deletion brake: 300 of 300 objects (100%)"), detail
        assert "(0 due, 0 in their grace period, 300 new)" in deletion
        assert marks.startswith(
            f"{2 * COMPANIONS} new marks of {COMPANIONS} new orphans (+0 earlier this run) "
            "exceed --max-marks 500"
        ), detail
        assert "raise --max-marks for one run" in marks
        assert "marks brake" in summary["exit_reason"]
        assert summary["marks"] == {}
        assert set(result.outcome("ConfigMap", n) for n in names) == {("would-mark", "brake")}
        assert_untouched(hub, ns, names)
