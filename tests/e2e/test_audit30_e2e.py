"""Issue 30's fixes attacked with inputs nobody listed, on the real server pair: what broke,
held by a test each (the audit of the copy rule, the Project API and the second looks)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from gcjob.cli import cli
from gcjob.domain import ORPHANED_LABEL, UPSTREAM_KIND_LABEL
from testbed.cluster import TestCluster
from testbed.faultproxy import Fault, FaultProxy
from testbed.milo import CONNECTORS, MILO, present, template
from testbed.report import run_gcjob
from tests.e2e.test_copies_e2e import (  # noqa: F401  (fixtures: the Milo proxy and its CRDs)
    milo,
    milo_kubeconfig,
    served,
)
from tests.e2e.test_drain_e2e import marked
from tests.e2e.test_project_api_e2e import PROJECT_API, filler_projects, make_world, project_lists


def connector(hub: TestCluster, ns: str, name: str) -> dict[str, Any] | None:
    status, body = hub._call("GET", CONNECTORS.format(namespace=ns) + "/" + name)
    return body if status == 200 else None


def test_a_marked_copy_kept_on_a_later_run_has_its_mark_removed_not_an_internal_error(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
) -> None:
    """Copies marked as their project's (gone) in one run, and the Project API failing in the
    next: each copy is kept as the lookup failure it is and its mark removed (as every sweep
    removes the mark of what it keeps), exit 1. Before, every kept copy's mark removal raised
    (no target to name its resource): `internal-error`, exit 3, and the mark stayed, so its
    grace counted on from the old mark whatever the runs between saw."""
    world = make_world(hub, upstream, milo, groups=2)
    run = [*world.args(gcjob_hub_args, milo_kubeconfig, milo), "--grace", "1h"]
    first = run_gcjob(*run)
    assert first.exit_code == 0, first.stderr
    names = [f"web-{i}" for i in range(world.groups)]
    assert all(marked(connector(hub, world.ns, name)) for name in names)
    milo.add_fault(Fault(path=PROJECT_API, status=503, times=None))

    second = run_gcjob(*run)

    assert second.exit_code == 1, (second.stderr, second.summary["sweeps"])
    assert not [i for i in second.items if i["reason"] == "internal-error"], second.stderr
    for name in names:
        item = second.item("Connector", name)
        assert item is not None and item["action"] == "unmarked", item
        assert not marked(connector(hub, world.ns, name))
        assert present(hub, "Connector", world.ns, name)


FILLERS = 300


@pytest.fixture
def some_projects(upstream: TestCluster) -> Iterator[str]:
    yield from filler_projects(upstream, FILLERS)


def test_each_round_of_a_drain_has_the_project_apis_read_budget_again(
    hub: TestCluster,
    upstream: TestCluster,
    hub_kubeconfig: str,
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
    some_projects: str,
) -> None:
    """A drain lists the Project API once a run (each project keeps its first answer for
    every round, issue 46 item 3) and reads every upstream each round; a budget that one
    round's reads fit in must not run out in the second round on the first round's items.
    Before, the Project API's (and every upstream cluster's) budget was spent over the rounds:
    round 2's list ran out of `--upstream-max-items`, the copies due in it were kept and the
    drain ended `incomplete`, on no fault of the API."""
    world = make_world(hub, upstream, milo, groups=2)
    projects = len(upstream._call("GET", MILO)[1]["items"])
    milo.clear_requests()
    result = run_gcjob(
        *("--hub-kubeconfig", hub_kubeconfig, "--namespace", world.ns),
        *("--lock-namespace", world.ns, "--min-age", "0s", "--grace", "3s"),
        *("--upstream-kubeconfig", milo_kubeconfig, "--upstream-server-template", template(milo)),
        *("--sweep", "routes", "--sweep", "copies", "--clock-skew", "0s"),
        *("--delete", "--drain", "--timeout", "3m", "--enforce", "routes", "--enforce", "copies"),
        *("--max-deletions", "1000", "--max-delete-percent", "100"),
        # One round's list of every project fits, two do not.
        *("--upstream-max-items", str(projects + projects // 2)),
    )

    assert result.exit_code == 0, (result.stderr, result.summary["sweeps"])
    drain = result.summary["drain"]
    assert drain["finished"] == "clear" and drain["rounds"] >= 2, drain
    assert len(project_lists(milo)) == 1  # once a run: every round reads its answers
    assert all(r.status == 200 for r in project_lists(milo))
    for i in range(world.groups):
        item = [x for x in result.items if x["name"] == f"web-{i}" and x["action"] == "deleted"]
        assert item and item[0]["reason"] == "project-gone", item
        assert not present(hub, "Connector", world.ns, f"web-{i}")
    assert not [i for i in result.items if i["reason"] == "lookup-failed"]


def label_connector(hub: TestCluster, ns: str, name: str, key: str, value: str | None) -> None:
    path = CONNECTORS.format(namespace=ns) + "/" + name
    patch = {"metadata": {"labels": {key: value}}}
    status, body = hub._call("PATCH", path, patch, content_type="application/merge-patch+json")
    assert status == 200, body


def test_a_marked_copy_that_loses_its_upstream_kind_label_loses_its_mark(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
) -> None:
    """A copy marked by the copies sweep whose `upstream-kind` label is removed leaves the
    sweep (it selects on that label), and its mark goes with it, as the other sweeps' marks
    do when their objects leave them. Before, the mark stayed where no run looked: when the
    label came back, the old mark was due at once (the same evidence), and the copy was
    deleted on the first run that saw it again, never an orphan in gcjob's sight for
    --grace."""
    world = make_world(hub, upstream, milo, groups=1)
    run = world.args(gcjob_hub_args, milo_kubeconfig, milo)
    first = run_gcjob(*run, "--grace", "1h")
    assert first.outcome("Connector", "web-0") == ("marked", "project-gone"), first.items
    label_connector(hub, world.ns, "web-0", UPSTREAM_KIND_LABEL, None)

    second = run_gcjob(*run, "--grace", "1h")

    assert second.exit_code == 0, second.stderr
    assert second.outcome("Connector", "web-0") == ("unmarked", "left-scope"), second.items
    assert not marked(connector(hub, world.ns, "web-0"))


def test_an_anchor_due_waits_for_a_copy_it_owns_still_in_its_grace_period(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    hub_kubeconfig: str,
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
) -> None:
    """An anchor and its copy marked together; then the copy's mark removed (by hand, or
    void, or gone with the copy's label): the next run marks the copy afresh while the
    anchor's mark is due. Before, the anchor was deleted then and there, and the garbage
    collector took the copy with it: a copy deleted before its own grace period. The anchor
    goes last, with the last of its copies: it waits, and says for what. `gcjob explain` on
    that anchor, just before that run, says what the run does (judge.py plan_group, one
    function for both): before, it called the anchor due."""
    world = make_world(hub, upstream, milo, groups=1)
    run = world.args(gcjob_hub_args, milo_kubeconfig, milo)
    first = run_gcjob(*run, "--grace", "1h")
    anchors = [i for i in first.items if i["kind"] == "ConfigMap"]
    assert [a["action"] for a in anchors] == ["marked"], first.items
    label_connector(hub, world.ns, "web-0", ORPHANED_LABEL, None)
    time.sleep(5)

    explain = [
        *("explain", f"cm/{world.ns}/{anchors[0]['name']}", "--output", "json"),
        *("--hub-kubeconfig", hub_kubeconfig, "--upstream-kubeconfig", milo_kubeconfig),
        *("--upstream-server-template", template(milo), "--namespace", world.ns),
        *("--min-age", "0s", "--grace", "4s"),
    ]
    explained = CliRunner().invoke(cli, explain)

    second = run_gcjob(*run, "--grace", "4s")  # the anchor's mark is due, the copy's is new

    assert second.exit_code == 0, second.stderr
    assert second.outcome("Connector", "web-0") == ("marked", "project-gone"), second.items
    anchor = second.item("ConfigMap", anchors[0]["name"])
    assert anchor is not None and anchor["action"] == "skipped", anchor
    assert "waits for a copy it owns" in anchor["detail"], anchor
    assert explained.exit_code == 0, explained.output
    said = json.loads(explained.stdout)
    assert (said["verdict"]["action"], said["verdict"]["reason"]) == ("skipped", "grace-period")
    assert (anchor["action"], anchor["reason"]) == ("skipped", "grace-period")
    assert "waits for a copy it owns" in said["verdict"]["detail"], said["verdict"]
    [waits] = [s for s in said["steps"] if s["rule"] == "copies-grace"]
    assert waits["outcome"] == "held back", waits
    assert hub.present("ConfigMap", world.ns, anchors[0]["name"])
    assert present(hub, "Connector", world.ns, "web-0")
