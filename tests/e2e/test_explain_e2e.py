"""End to end: `gcjob explain` on the real hub and upstream, then `sweep --delete` on the same
objects. The verdict of explain must be what the sweep then did to each object, case by case,
and every step of every trace must name its evidence. Explain itself only ever GETs.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from click.testing import CliRunner

from gcjob.cli import cli
from gcjob.exitcodes import ExitCode
from testbed.cluster import TestCluster
from testbed.endpoints import UPSTREAM_CLUSTER
from testbed.faultproxy import Fault, FaultProxy
from testbed.milo import (
    connector_group,
    delete_project,
    live_owner,
    make_project,
    project_name,
    template,
)
from testbed.objects import SECRET_VALUE, binding, companion, route, upstream_route, workload
from testbed.report import HubSweep, explain, run_gcjob
from tests.e2e.test_copies_e2e import (  # noqa: F401  (fixtures: the Milo proxy and its CRDs)
    milo,
    milo_kubeconfig,
    served,
)

LABEL = f"cluster-{UPSTREAM_CLUSTER}"


def agrees(explained: tuple[str, str], swept: tuple[str, str] | None) -> bool:
    """would-delete/-mark/-unmark is what a --delete run does; a skip is the same skip;
    out-of-scope and not-found are objects the sweep never reports; unknown is never a delete."""
    action, reason = explained
    done = {"would-delete": "deleted", "would-mark": "marked", "would-unmark": "unmarked"}
    if action in done:
        return swept == (done[action], reason)
    if action == "skipped" and reason != "out-of-scope":
        return swept == ("skipped", reason)
    if action == "unknown":
        return swept is None or swept[0] != "deleted"
    return swept is None


@pytest.fixture
def explain_args(hub_kubeconfig: str, hub: TestCluster) -> list[str]:
    return ["--hub-kubeconfig", hub_kubeconfig, "--min-age", "0s", "--grace", "0s"]


def test_companions_and_bindings_explain_matches_what_delete_did(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep, explain_args: list[str]
) -> None:
    ns = hub.namespace()
    hub.create(workload(ns, "web-live"))

    def pair(kind: str, name: str, referrers: Any, **kw: Any) -> None:
        created = hub.create(companion(kind, ns, name, referrers, **kw))
        uid = created["metadata"]["uid"]
        hub.create(binding(ns, f"{name}-{kind.lower()}", kind=kind, target=name, target_uid=uid))

    pair("ConfigMap", "orphan", ["default/web-gone"])
    pair("Secret", "orphan-creds", ["default/api-gone"])
    pair("ConfigMap", "configmap.legacy", ["default/old-gone"])
    pair("ConfigMap", "live", ["default/web-live"])
    pair("ConfigMap", "malformed", '["Default/web"]')
    pair(
        "ConfigMap",
        "protected",
        ["default/gone"],
        annotations={"gcjob.datumapis.com/protect": "true"},
    )
    pair("ConfigMap", "unlabelled", ["default/gone"], labelled=False)
    # An orphan whose binding binds another uid: the companion goes, the binding stays.
    hub.create(companion("ConfigMap", ns, "mismatched", ["default/gone"]))
    hub.create(
        binding(ns, "mismatched-configmap", kind="ConfigMap", target="mismatched", target_uid="x")
    )
    hub.create(companion("ConfigMap", ns, "terminating", ["default/gone"]))
    hub.make_terminating("ConfigMap", ns, "terminating")
    # Bindings of objects that are gone, or that name something else, or are not gcjob's.
    hub.create(binding(ns, "gone-config-configmap", kind="ConfigMap", target="gone-config"))
    hub.create(binding(ns, "gone-creds-secret", kind="Secret", target="gone-creds"))
    hub.create(binding(ns, "other-configmap", kind="ConfigMap", target="somebody-else"))
    hub.create(
        binding(
            ns, "gone-label-configmap", kind="ConfigMap", target="gone-label", policy_in="label"
        )
    )
    hub.create(
        binding(ns, "not-city-configmap", kind="ConfigMap", target="not-city", policy="global")
    )
    hub.create(binding(ns, "leaving-configmap", kind="ConfigMap", target="leaving"))
    hub.make_terminating("ResourceBinding", ns, "leaving-configmap")

    targets = [
        ("ConfigMap", "orphan"),
        ("Secret", "orphan-creds"),
        ("ConfigMap", "configmap.legacy"),
        ("ConfigMap", "live"),
        ("ConfigMap", "malformed"),
        ("ConfigMap", "protected"),
        ("ConfigMap", "unlabelled"),
        ("ConfigMap", "mismatched"),
        ("ConfigMap", "terminating"),
        ("ConfigMap", "never-existed"),
        ("ResourceBinding", "live-configmap"),
        ("ResourceBinding", "unlabelled-configmap"),
        ("ResourceBinding", "gone-config-configmap"),
        ("ResourceBinding", "gone-creds-secret"),
        ("ResourceBinding", "other-configmap"),
        ("ResourceBinding", "gone-label-configmap"),
        ("ResourceBinding", "not-city-configmap"),
        ("ResourceBinding", "leaving-configmap"),
        ("ResourceBinding", "orphan-configmap"),
    ]
    faults.clear_requests()
    explained = {(kind, name): explain(kind, ns, name, *explain_args) for kind, name in targets}
    assert {r.method for r in faults.requests} == {"GET"}  # read-only: no lock, no delete
    assert all(e.exit_code == ExitCode.OK for e in explained.values())

    result = sweep(ns, "--delete", "--report-healthy")

    assert result.exit_code == 0, result.stderr
    for (kind, name), e in explained.items():
        swept = result.outcome(kind, name)
        assert agrees(e.verdict, swept), (kind, name, e.verdict, swept)
        if e.verdict[0] == "would-delete":
            assert hub.gone(kind, ns, name), (kind, name)
        elif e.verdict[0] != "not-found":  # kept: still there (maybe still terminating)
            assert hub.get(kind, ns, name) is not None, (kind, name)
        if kind in ("ConfigMap", "Secret") and e.binding is not None:
            rb = e.doc["binding"]["object"].rpartition("/")[2]
            assert agrees(e.binding, result.outcome("ResourceBinding", rb)), rb
    # The cases this test is about, so that agreement is not agreement on nothing.
    assert explained[("ConfigMap", "orphan")].verdict == ("would-delete", "orphaned")
    assert explained[("ConfigMap", "orphan")].binding == ("would-delete", "companion-deleted")
    assert explained[("ConfigMap", "live")].binding == ("skipped", "object-exists")
    assert explained[("ConfigMap", "mismatched")].binding == ("skipped", "binding-mismatch")
    assert explained[("ConfigMap", "never-existed")].verdict == ("not-found", "not-found")
    assert explained[("ConfigMap", "unlabelled")].verdict == ("skipped", "out-of-scope")
    assert explained[("ResourceBinding", "gone-label-configmap")].verdict == (
        "would-delete",
        "orphaned",
    )
    assert explained[("ResourceBinding", "other-configmap")].verdict == (
        "skipped",
        "resource-mismatch",
    )
    assert explained[("ResourceBinding", "leaving-configmap")].verdict == ("skipped", "terminating")
    assert explained[("ResourceBinding", "orphan-configmap")].verdict == (
        "would-delete",
        "companion-deleted",
    )
    assert hub.present("ResourceBinding", ns, "mismatched-configmap")
    # The evidence names the very reads: the referrer's GET and its answer.
    steps = explained[("ConfigMap", "orphan")].doc["steps"]
    gone = next(s for s in steps if s["rule"] == "referrers-gone")
    assert gone["reads"] == [f"GET workloaddeployments/web-gone in {ns} -> 404 NotFound"]
    rb_steps = explained[("ResourceBinding", "other-configmap")].doc["steps"]
    assert "binding binds ConfigMap somebody-else" in rb_steps[-1]["evidence"]


def test_routes_explain_matches_what_delete_did(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    explain_args: list[str],
    upstream_kubeconfig: str,
) -> None:
    project = upstream.project("gw-a")
    ns = hub.namespace()
    cases: dict[str, tuple[str, str, list[dict[str, str]]]] = {
        "orphaned": (LABEL, project, [{"name": "gw-gone"}]),
        "healthy": (LABEL, project, [{"name": "gw-a"}]),
        "one-left": (LABEL, project, [{"name": "gw-gone"}, {"name": "gw-a"}]),
        "namespace-gone": (LABEL, "no-such-project", [{"name": "gw-a"}]),
        "unknown-cluster": ("cluster-nowhere", project, [{"name": "gw-gone"}]),
        "no-parents": (LABEL, project, []),
        "service-parent": (LABEL, project, [{"name": "svc", "group": "", "kind": "Service"}]),
    }
    for name, (label, up_ns, parents) in cases.items():
        hub.create(route(ns, name, cluster_label=label, upstream_namespace=up_ns, parents=parents))
    for name in ("healthy", "one-left"):  # NSO's upstream HTTPRoutes of the kept
        upstream.create(upstream_route(project, name))
    up = ["--upstream-kubeconfig", upstream_kubeconfig]

    explained = {name: explain("HTTPRoute", ns, name, *explain_args, *up) for name in cases}
    assert all(e.exit_code == ExitCode.OK for e in explained.values())

    result = run_gcjob(
        *gcjob_hub_args, *up, "--sweep", "routes", "--namespace", ns, "--delete", "--report-healthy"
    )

    for name, e in explained.items():
        swept = result.outcome("HTTPRoute", name)
        assert agrees(e.verdict, swept), (name, e.verdict, swept)
    assert explained["orphaned"].verdict == ("would-delete", "upstream-gateways-gone")
    assert explained["namespace-gone"].verdict == ("would-delete", "upstream-namespace-gone")
    assert explained["healthy"].verdict == ("skipped", "gateway-exists")
    assert explained["unknown-cluster"].verdict == ("skipped", "upstream-cluster-unknown")
    steps = explained["orphaned"].doc["steps"]
    gone = next(s for s in steps if s["rule"] == "gateways-gone")
    assert gone["reads"] == [
        f"upstream {UPSTREAM_CLUSTER}: GET gateways/gw-gone in {project} -> 404 NotFound"
    ]
    assert hub.gone("HTTPRoute", ns, "orphaned")
    assert hub.present("HTTPRoute", ns, "healthy")


def test_a_failed_read_is_unknown_exit_3_and_the_sweep_deletes_nothing_either(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep, explain_args: list[str]
) -> None:
    ns = hub.namespace()
    created = hub.create(companion("ConfigMap", ns, "orphan", ["default/web-gone"]))
    uid = created["metadata"]["uid"]
    hub.create(binding(ns, "orphan-configmap", kind="ConfigMap", target="orphan", target_uid=uid))
    hub.create(binding(ns, "gone-config-configmap", kind="ConfigMap", target="gone-config"))
    # RBAC-like refusals: every WorkloadDeployment read and the gone ConfigMap's GET.
    faults.add_fault(Fault(path=rf"/namespaces/{ns}/workloaddeployments", status=403, times=None))
    faults.add_fault(
        Fault(path=rf"/namespaces/{ns}/configmaps/gone-config$", status=403, times=None)
    )

    companion_e = explain("ConfigMap", ns, "orphan", *explain_args)
    binding_e = explain("ResourceBinding", ns, "gone-config-configmap", *explain_args)
    text = CliRunner().invoke(
        cli, ["explain", f"cm/{ns}/orphan", *explain_args], standalone_mode=False
    )

    assert companion_e.exit_code == binding_e.exit_code == ExitCode.INCOMPLETE
    assert companion_e.verdict == ("unknown", "lookup-failed")
    assert binding_e.verdict == ("unknown", "lookup-failed")
    last = companion_e.doc["steps"][-1]
    assert (last["rule"], last["outcome"]) == ("referrers-gone", "unknown")
    assert "403" in last["reads"][-1], last
    # The steps that ran, then unknown and why.
    lines = text.stdout.splitlines()
    assert any(". referrers-readable: passed" in line for line in lines)
    assert lines[-1].startswith("verdict: unknown (lookup-failed)"), lines[-1]
    assert int(text.return_value) == ExitCode.INCOMPLETE

    result = sweep(ns, "--delete")

    assert result.exit_code == ExitCode.INCOMPLETE
    for kind, name, e in (
        ("ConfigMap", "orphan", companion_e),
        ("ResourceBinding", "gone-config-configmap", binding_e),
    ):
        assert agrees(e.verdict, result.outcome(kind, name)), name
        assert hub.present(kind, ns, name), name
    assert result.outcome("ResourceBinding", "gone-config-configmap") == (
        "skipped",
        "lookup-failed",
    )


def test_an_unreachable_upstream_is_unknown_exit_3_like_the_sweeps_skip(
    hub: TestCluster,
    upstream: TestCluster,
    upstream_faults: FaultProxy,
    gcjob_hub_args: list[str],
    explain_args: list[str],
    upstream_kubeconfig: str,
) -> None:
    project = upstream.project()
    ns = hub.namespace()
    hub.create(
        route(
            ns,
            "r",
            cluster_label="cluster-proj-x",
            upstream_namespace=project,
            parents=[{"name": "gw"}],
        )
    )
    # --upstream-server-template names a path the real server does not serve.
    up = [
        "--upstream-kubeconfig",
        upstream_kubeconfig,
        "--upstream-server-template",
        upstream_faults.url + "/{cluster}",
    ]

    e = explain("HTTPRoute", ns, "r", *explain_args, *up)
    result = run_gcjob(*gcjob_hub_args, *up, "--sweep", "routes", "--namespace", ns, "--delete")

    assert e.exit_code == ExitCode.INCOMPLETE
    assert e.verdict == ("unknown", "upstream-unavailable")
    assert result.outcome("HTTPRoute", "r") == ("skipped", "upstream-unavailable")
    assert any(r.path.startswith("/proj-x/apis") for r in upstream_faults.requests)
    assert hub.present("HTTPRoute", ns, "r")


def test_a_suspect_upstream_is_explained_as_the_sweep_distrusts_it(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    explain_args: list[str],
    upstream_kubeconfig: str,
) -> None:
    project = upstream.project()  # holds no Gateway at all
    ns = hub.namespace()
    names = ["r1", "r2", "r3"]
    for name in names:
        hub.create(
            route(
                ns, name, cluster_label=LABEL, upstream_namespace=project, parents=[{"name": "gw"}]
            )
        )
    args = ["--upstream-kubeconfig", upstream_kubeconfig, "--suspect-min-routes", "3"]
    scoped = [*explain_args, "--namespace", ns]  # count the routes the sweep below counts

    explained = {name: explain("HTTPRoute", ns, name, *scoped, *args) for name in names}
    one_fewer = explain("HTTPRoute", ns, "r1", *scoped, *args[:2], "--suspect-min-routes", "4")
    result = run_gcjob(*gcjob_hub_args, *args, "--sweep", "routes", "--namespace", ns, "--delete")

    for name, e in explained.items():
        assert e.verdict == ("skipped", "upstream-suspect"), name
        assert agrees(e.verdict, result.outcome("HTTPRoute", name)), name
        assert hub.present("HTTPRoute", ns, name)
    assert one_fewer.verdict == ("would-delete", "upstream-gateways-gone")
    trusted = next(s for s in explained["r1"].doc["steps"] if s["rule"] == "cluster-trusted")
    assert trusted["outcome"] == "held back"
    assert any(read.startswith("LIST httproutes") for read in trusted["reads"]), trusted


def test_a_secret_is_explained_from_its_metadata_alone(
    hub: TestCluster, faults: FaultProxy, explain_args: list[str]
) -> None:
    ns = hub.namespace()
    applied = json.dumps({"kind": "Secret", "data": {"password": SECRET_VALUE}})
    note = {"kubectl.kubernetes.io/last-applied-configuration": applied}
    created = hub.create(companion("Secret", ns, "db-creds", ["default/gone"], annotations=note))
    uid = created["metadata"]["uid"]
    hub.create(binding(ns, "db-creds-secret", kind="Secret", target="db-creds", target_uid=uid))
    faults.clear_requests()

    e = explain("Secret", ns, "db-creds", *explain_args)
    text = CliRunner().invoke(cli, ["explain", f"secret/{ns}/db-creds", *explain_args])

    assert e.verdict == ("would-delete", "orphaned")
    assert e.binding == ("would-delete", "companion-deleted")
    secret_reads = [r for r in faults.requests if "/secrets" in r.path]
    assert secret_reads and {r.method for r in secret_reads} == {"GET"}
    for request in secret_reads:
        assert "as=PartialObjectMetadata" in request.accept, request.accept
        assert ",application/json" not in request.accept
    assert SECRET_VALUE not in json.dumps(e.doc) + text.stdout + text.stderr


def test_grace_explain_says_mark_wait_delete_and_unmark_as_the_runs_do(
    hub: TestCluster, hub_kubeconfig: str
) -> None:
    """Two-run scenarios with a short real --grace, by the hub's clock: explain before each
    run says what that run then does, for an orphan that stays one, and one whose referrer
    comes back."""
    ns = hub.namespace()
    for name, referrer in (("stays", "default/gone"), ("revives", "default/back")):
        made = hub.create(companion("ConfigMap", ns, name, [referrer]))
        uid = made["metadata"]["uid"]
        hub.create(binding(ns, f"{name}-configmap", kind="ConfigMap", target=name, target_uid=uid))
    common = ["--hub-kubeconfig", hub_kubeconfig, "--min-age", "0s", "--grace", "8s"]
    sweep = [*common, "--no-lock", "--namespace", ns, "--delete", "--report-healthy"]
    targets = [
        ("ConfigMap", "stays"),
        ("ResourceBinding", "stays-configmap"),
        ("ConfigMap", "revives"),
        ("ResourceBinding", "revives-configmap"),
    ]

    def step() -> dict[tuple[str, str], tuple[str, str]]:
        told = {t: explain(t[0], ns, t[1], *common) for t in targets}
        result = run_gcjob(*sweep)
        now = result.summary["decided_at"]
        assert result.exit_code == 0, result.stderr
        for (kind, name), e in told.items():
            assert agrees(e.verdict, result.outcome(kind, name)), (now, kind, name, e.verdict)
            if kind == "ConfigMap" and e.binding is not None:
                rb = f"{name}-configmap"
                assert agrees(e.binding, result.outcome("ResourceBinding", rb)), (now, rb)
        return {t: e.verdict for t, e in told.items()}

    first = step()
    marked_at = time.monotonic()
    assert first[("ConfigMap", "stays")] == ("would-mark", "orphaned")
    assert first[("ConfigMap", "revives")] == ("would-mark", "orphaned")
    hub.create(workload(ns, "back"))  # a referrer comes back inside the grace period
    second = step()
    assert second[("ConfigMap", "stays")] == ("skipped", "grace-period")
    assert second[("ConfigMap", "revives")] == ("would-unmark", "referrer-live")
    time.sleep(max(0.0, marked_at + 8 + 1.5 - time.monotonic()))  # past the grace period
    third = step()
    assert third[("ConfigMap", "stays")] == ("would-delete", "orphaned")
    assert third[("ResourceBinding", "stays-configmap")] == ("would-delete", "companion-deleted")
    assert hub.gone("ConfigMap", ns, "stays")
    assert hub.present("ConfigMap", ns, "revives")
    assert hub.present("ResourceBinding", ns, "revives-configmap")


def test_a_copy_and_its_anchor_are_explained_as_the_copies_sweep_sees_them(
    hub: TestCluster,
    upstream: TestCluster,
    hub_kubeconfig: str,
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
) -> None:
    """Issue 34 item 5: the anchor is the copies sweep's (not the companions sweep's), and the
    copy's ownership step names the reference to its anchor it has (not "no ownerReferences")."""
    live, gone = project_name(), project_name()
    make_project(upstream, live)
    make_project(upstream, gone)
    ns = hub.namespace("ns")
    upstream_ns = upstream.namespace("app")
    # A project is proven gone only while the same API answers for another, live one.
    connector_group(hub, ns, live, upstream_ns, "other", live_owner(upstream, upstream_ns, "other"))
    made_anchor, _ = connector_group(hub, ns, gone, upstream_ns, "web", str(uuid.uuid4()))
    anchor_name = made_anchor["metadata"]["name"]
    delete_project(upstream, milo, gone)
    common = [
        *("--hub-kubeconfig", hub_kubeconfig, "--upstream-kubeconfig", milo_kubeconfig),
        *("--upstream-server-template", template(milo), "--min-age", "0s", "--namespace", ns),
    ]

    def explained(target: str, *output: str) -> Any:
        result = CliRunner().invoke(cli, ["explain", target, *common, *output])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout) if output else result.stdout

    anchor_doc = explained(f"cm/{ns}/{anchor_name}", "--output", "json")
    anchor_text = explained(f"cm/{ns}/{anchor_name}")
    copy_doc = explained(f"connector/{ns}/web", "--output", "json")

    assert anchor_doc["target"]["sweep"] == "copies"
    assert anchor_text.splitlines()[0].startswith(
        f"ConfigMap {ns}/{anchor_name} (copies sweep), from "
    )
    assert anchor_doc["verdict"]["reason"] == "project-gone"
    [owned] = [s for s in copy_doc["steps"] if s["rule"] == "not-owned"]
    assert owned["outcome"] == "passed"
    assert f"ownerReference to ConfigMap {anchor_name}: an anchor" in owned["evidence"]
    assert copy_doc["target"]["sweep"] == "copies"
