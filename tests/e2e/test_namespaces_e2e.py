"""End to end, on the real server pair: the namespaces sweep (sweep 5, report-only).

The hub runs kube-controller-manager with its namespace controller; the upstream server stands
for Milo (testbed/milo.py), each project's control plane served at its Milo path by a proxy of
this module's own, a deleted project's answering 404 for every path. Every case to go is
reported `would-delete`, every other kept with its reason, and the request log of the proxy in
front of the hub holds no write: never a DELETE or a PATCH, a POST only to ask what it may do.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gcjob.cli import cli
from gcjob.domain import PROTECT_ANNOTATION, UPSTREAM_CLUSTER_LABEL, UPSTREAM_NAMESPACE_LABEL
from testbed import schemas
from testbed.cluster import TEST_FINALIZER, TestCluster, wait_for
from testbed.endpoints import Endpoint
from testbed.faultproxy import Fault, FaultProxy
from testbed.milo import (
    MILO,
    MILO_CRDS,
    delete_project,
    install,
    make_project,
    milo_proxy,
    project_name,
    template,
)
from testbed.milo import milo_kubeconfig as make_milo_kubeconfig
from testbed.report import Result, run_gcjob


@pytest.fixture
def milo(
    upstream: TestCluster, upstream_endpoint: Endpoint, tmp_path: Path
) -> Iterator[FaultProxy]:
    install(upstream, MILO_CRDS)
    proxy = milo_proxy(upstream_endpoint.proxy.target, tmp_path)
    yield proxy
    proxy.stop()


@pytest.fixture
def milo_kubeconfig(upstream_kubeconfig: str, milo: FaultProxy, tmp_path: Path) -> str:
    return make_milo_kubeconfig(upstream_kubeconfig, milo, tmp_path / "milo-kubeconfig")


def hub_namespace(
    hub: TestCluster,
    project: str,
    upstream_ns: str,
    uid: str | None = None,
    annotations: dict[str, str] | None = None,
) -> str:
    """A hub namespace as NSO makes it: `ns-<uid of the upstream namespace>`, both labels."""
    name = f"ns-{uid or uuid.uuid4()}"
    meta: dict[str, Any] = {
        "name": name,
        "labels": {
            UPSTREAM_CLUSTER_LABEL: f"cluster-{project}",
            UPSTREAM_NAMESPACE_LABEL: upstream_ns,
        },
    }
    if annotations:
        meta["annotations"] = annotations
    hub.create({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
    hub.namespaces.append(name)
    return name


def config_map(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }


def sweep(
    hub: TestCluster, hub_args: list[str], kubeconfig: str, milo: FaultProxy, *more: str
) -> Result:
    """The sweep, kept to the hub namespaces this test made (an earlier test's, on their way
    out, name projects this test's Milo proxy does not know are gone)."""
    scope = [arg for ns in hub.namespaces if ns.startswith("ns-") for arg in ("--namespace", ns)]
    return run_gcjob(
        *scope,
        *hub_args,
        *("--upstream-kubeconfig", kubeconfig, "--upstream-server-template", template(milo)),
        *("--sweep", "namespaces", "--clock-skew", "0s", "--report-healthy"),
        *more,
    )


def writes(faults: FaultProxy) -> list[str]:
    """What the run sent the hub that is not a read (asking what it may do aside)."""
    return [
        f"{r.method} {r.path}"
        for r in faults.requests
        if r.method not in ("GET", "HEAD") and not r.path.endswith("/selfsubjectaccessreviews")
    ]


def test_leftover_namespaces_are_reported_and_nothing_is_written(
    hub: TestCluster,
    upstream: TestCluster,
    hub_controllers: None,
    faults: FaultProxy,
    gcjob_hub_args: list[str],
    milo: FaultProxy,
    milo_kubeconfig: str,
) -> None:
    live, gone = project_name(), project_name()
    make_project(upstream, live)
    make_project(upstream, gone)
    in_use = upstream.namespace("app")
    in_use_uid = upstream.get("Namespace", None, in_use)["metadata"]["uid"]  # type: ignore[index]

    # To go: its project deleted; its upstream namespace gone (never there); re-created.
    of_gone_project = hub_namespace(hub, gone, "default")
    upstream_gone = hub_namespace(hub, live, f"deleted-{uuid.uuid4().hex[:8]}")
    recreated = hub_namespace(hub, live, "again")
    # To keep: in use (same UID upstream); holding a ConfigMap; a kind it cannot list;
    # protected; terminating (a ConfigMap's finalizer holds it).
    healthy = hub_namespace(hub, live, in_use, uid=in_use_uid)
    holding = hub_namespace(hub, gone, "holding")
    hub.create(config_map(holding, "app-config"))
    unlistable = hub_namespace(hub, gone, "unlistable")
    protected = hub_namespace(hub, gone, "protected", annotations={PROTECT_ANNOTATION: "true"})
    terminating = hub_namespace(hub, gone, "terminating")
    held = config_map(terminating, "held")
    held["metadata"]["finalizers"] = [TEST_FINALIZER]
    hub.create(held)
    hub.delete("Namespace", None, terminating)
    time.sleep(1.5)  # the re-created upstream namespace is created later than the hub's
    upstream.ensure_namespace("again")
    upstream.namespaces.append("again")
    delete_project(upstream, milo, gone)
    faults.add_fault(
        Fault(path=f"^/api/v1/namespaces/{unlistable}/secrets$", status=403, times=None)
    )
    wait_for(
        lambda: (
            (hub.get("Namespace", None, terminating) or {})
            .get("metadata", {})
            .get("deletionTimestamp")
        ),
        what="the held namespace terminating",
    )
    faults.clear_requests()

    # No projects brake for a sweep that deletes nothing (the audit: it held every run, exit
    # 4, on a big hub's thousands of deleted projects' leftovers): one gone passes 0.
    result = sweep(hub, gcjob_hub_args, milo_kubeconfig, milo, "--delete", "--max-projects-gone=0")

    assert result.outcome("Namespace", of_gone_project) == ("would-delete", "project-gone")
    assert result.outcome("Namespace", upstream_gone) == (
        "would-delete",
        "upstream-namespace-gone",
    )
    assert result.outcome("Namespace", recreated) == (
        "would-delete",
        "upstream-namespace-recreated",
    )
    assert result.outcome("Namespace", healthy) == ("skipped", "upstream-namespace-exists")
    assert result.outcome("Namespace", holding) == ("skipped", "namespace-holds")
    assert "ConfigMap 1" in result.item("Namespace", holding)["detail"]  # type: ignore[index]
    assert result.outcome("Namespace", unlistable) == ("skipped", "namespace-not-listable")
    assert "Secret" in result.item("Namespace", unlistable)["detail"]  # type: ignore[index]
    assert result.outcome("Namespace", protected) == ("skipped", "protected")
    assert result.outcome("Namespace", terminating) == ("skipped", "terminating")
    # Karmada's propagation is said; this hub serves no Works.
    detail = result.item("Namespace", of_gone_project)["detail"]  # type: ignore[index]
    assert "Karmada" in detail and "report-only" in detail
    # Nothing written, though --delete: no DELETE, no PATCH, no mark, no Event.
    assert writes(faults) == []
    for name in (of_gone_project, upstream_gone, recreated):
        assert hub.get("Namespace", None, name) is not None
    assert result.summary["sweeps"]["namespaces"]["status"] == "completed", result.summary


def test_a_young_leftover_is_kept_and_a_live_projects_namespace_is_not_inspected(
    hub: TestCluster,
    upstream: TestCluster,
    faults: FaultProxy,
    gcjob_hub_args: list[str],
    milo: FaultProxy,
    milo_kubeconfig: str,
) -> None:
    gone = project_name()
    make_project(upstream, gone)
    young = hub_namespace(hub, gone, "default")
    delete_project(upstream, milo, gone)
    faults.clear_requests()

    result = sweep(hub, gcjob_hub_args, milo_kubeconfig, milo, "--min-age", "1h")

    assert result.outcome("Namespace", young) == ("skipped", "too-young")
    assert not [r for r in faults.requests if f"/namespaces/{young}/" in r.path]  # not listed
    assert writes(faults) == []


def test_past_the_cap_a_leftover_is_kept_saying_so(
    hub: TestCluster,
    upstream: TestCluster,
    faults: FaultProxy,
    gcjob_hub_args: list[str],
    milo: FaultProxy,
    milo_kubeconfig: str,
) -> None:
    live, gone = project_name(), project_name()
    make_project(upstream, live)
    make_project(upstream, gone)
    # A live project whose control plane answers vouches for the Project API (its trust rule).
    in_use = upstream.namespace("app")
    hub_namespace(hub, live, in_use, uid=upstream.get("Namespace", None, in_use)["metadata"]["uid"])  # type: ignore[index]
    first = hub_namespace(hub, gone, "default")
    delete_project(upstream, milo, gone)

    result = sweep(hub, gcjob_hub_args, milo_kubeconfig, milo, "--namespaces-max-inspected", "0")

    assert result.outcome("Namespace", first) == ("skipped", "namespace-not-inspected")


def test_explain_says_what_the_sweep_says_of_a_namespace(
    hub: TestCluster,
    upstream: TestCluster,
    hub_kubeconfig: str,
    milo: FaultProxy,
    milo_kubeconfig: str,
) -> None:
    live, gone = project_name(), project_name()
    make_project(upstream, live)
    make_project(upstream, gone)
    in_use = upstream.namespace("app")
    uid = upstream.get("Namespace", None, in_use)["metadata"]["uid"]  # type: ignore[index]
    healthy = hub_namespace(hub, live, in_use, uid=uid)
    empty = hub_namespace(hub, gone, "default")
    holding = hub_namespace(hub, gone, "holding")
    hub.create(config_map(holding, "app-config"))
    delete_project(upstream, milo, gone)
    common = [
        *("--hub-kubeconfig", hub_kubeconfig, "--upstream-kubeconfig", milo_kubeconfig),
        *("--upstream-server-template", template(milo), "--min-age", "0s", "--output", "json"),
        *(arg for ns in (healthy, empty, holding) for arg in ("--namespace", ns)),
    ]

    def explained(target: str) -> dict[str, Any]:
        result = CliRunner().invoke(cli, ["explain", target, *common], standalone_mode=False)
        assert result.exception is None or isinstance(result.exception, SystemExit)
        doc = json.loads(result.stdout)
        schemas.EXPLAIN.validate(doc)
        return doc["verdict"]

    assert (explained(f"ns/{empty}")["action"], explained(f"ns/{empty}")["reason"]) == (
        "would-delete",
        "project-gone",
    )
    assert explained(f"namespace/{holding}")["reason"] == "namespace-holds"
    assert explained(f"ns/{healthy}")["reason"] == "upstream-namespace-exists"


def test_a_terminating_projects_namespace_is_kept(
    hub: TestCluster,
    upstream: TestCluster,
    faults: FaultProxy,
    gcjob_hub_args: list[str],
    milo: FaultProxy,
    milo_kubeconfig: str,
) -> None:
    live, ending = project_name(), project_name()
    make_project(upstream, live)
    make_project(upstream, ending)
    upstream._call(
        "PATCH",
        f"{MILO}/{ending}",
        {"metadata": {"finalizers": [TEST_FINALIZER]}},
        content_type="application/merge-patch+json",
    )
    upstream._call("DELETE", f"{MILO}/{ending}")
    in_use = upstream.namespace("app")
    uid = upstream.get("Namespace", None, in_use)["metadata"]["uid"]  # type: ignore[index]
    hub_namespace(hub, live, in_use, uid=uid)  # its control plane answers: the API is vouched
    of_ending = hub_namespace(hub, ending, "default")
    faults.clear_requests()
    try:
        result = sweep(hub, gcjob_hub_args, milo_kubeconfig, milo, "--delete")
    finally:
        upstream._call(
            "PATCH",
            f"{MILO}/{ending}",
            {"metadata": {"finalizers": None}},
            content_type="application/merge-patch+json",
        )
    assert result.outcome("Namespace", of_ending) == ("skipped", "project-terminating")
    assert writes(faults) == []
