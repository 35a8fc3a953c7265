"""gcjob/sweeps/copies/sweep.py: where it cannot run it says why and reads nothing (no
upstream; a snapshot, which holds no discovery); against the real hub and a Milo of our own
(tests/e2e/test_copies_e2e.py's fixtures), a deleted project's group goes whole, copies
before their anchor."""

from __future__ import annotations

import shutil
import uuid
from dataclasses import replace
from pathlib import Path

from gcjob.decide.projects import never_a_project
from gcjob.enumerate.owners import ProjectReads
from gcjob.model import Sweep
from gcjob.sweeps.copies import sweep as copies
from testbed.cluster import TestCluster
from testbed.faultproxy import FaultProxy
from testbed.milo import (
    connector_group,
    delete_project,
    live_owner,
    make_project,
    project_name,
)
from testbed.report import run_gcjob
from testbed.runs import DEMO, snapshot_run
from tests.e2e.test_copies_e2e import args, milo, milo_kubeconfig, served  # noqa: F401


def gone_and_live_groups(
    hub: TestCluster, upstream: TestCluster, proxy: FaultProxy
) -> tuple[str, str]:
    """A deleted project's Connector and its anchor, and a live project's group beside them
    (the Project API is trusted only once it answered for a project that exists): the hub
    namespace, and the gone group's anchor's name."""
    live, gone = project_name(), project_name()
    make_project(upstream, live)  # a Project API that knows no project proves nothing gone
    make_project(upstream, gone)
    ns = hub.namespace("copies-sweep")
    upstream_ns = upstream.namespace("app")
    # A live project's group beside it: the Project API is trusted only once it has
    # answered for a project that exists.
    connector_group(hub, ns, live, upstream_ns, "api", live_owner(upstream, upstream_ns, "api"))
    made, _ = connector_group(hub, ns, gone, upstream_ns, "web", str(uuid.uuid4()))
    delete_project(upstream, proxy, gone)
    return ns, made["metadata"]["name"]


def test_over_a_snapshot_without_discovery_it_is_not_configured_and_says_why(
    tmp_path: Path,
) -> None:
    snapshot = tmp_path / "demo"
    shutil.copytree(DEMO, snapshot)
    shutil.rmtree(snapshot / "hub" / "discovery")
    ran = snapshot_run(Sweep.COPIES, directory=snapshot, snapshot=str(snapshot))
    copies.sweep(ran.run, ProjectReads(None, never_a_project))
    state = ran.run.tally.sweeps[Sweep.COPIES]
    assert state.status == "not-configured" and "discovery" in state.detail
    assert ran.items() == [] and ran.run.stats.total == 0


def test_without_an_upstream_it_is_not_configured() -> None:
    ran = snapshot_run(Sweep.COPIES)
    ran.run.context = replace(ran.run.context, upstreams=None)
    copies.sweep(ran.run, ProjectReads(None, never_a_project))
    state = ran.run.tally.sweeps[Sweep.COPIES]
    assert state.status == "not-configured" and "--upstream-kubeconfig" in state.detail


def test_a_deleted_projects_group_goes_whole_copies_before_their_anchor(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
) -> None:
    ns, anchor = gone_and_live_groups(hub, upstream, milo)
    # --delete, not enforced: the copies sweep reports what it would delete, and deletes nothing.
    result = run_gcjob(*args(gcjob_hub_args, milo_kubeconfig, milo, ns, "--delete"))
    said = [(i["name"], i["action"], i["reason"], i["detail"]) for i in result.items]
    assert result.exit_code == 0, (said, result.summary["sweeps"])
    reported = [(i["kind"], i["name"], i["action"], i["reason"]) for i in result.items]
    assert reported == [
        ("Connector", "web", "would-delete", "project-gone"),
        ("ConfigMap", anchor, "would-delete", "project-gone"),
    ]
    state = result.summary["sweeps"]["copies"]
    assert state["status"] == "completed" and state["in_scope"] == 4  # the live group's too
