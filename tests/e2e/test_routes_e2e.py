"""End to end: the routes sweep, hub and upstream API servers over HTTP."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest
import yaml

from testbed.cluster import TestCluster
from testbed.endpoints import UPSTREAM_CLUSTER
from testbed.faultproxy import Fault, FaultProxy
from testbed.objects import route, upstream_route
from testbed.report import HubSweep, run_gcjob, upstreams

LABEL = f"cluster-{UPSTREAM_CLUSTER}"


def gw(name: str) -> dict[str, str]:
    return {"name": name}


@pytest.fixture
def project(upstream: TestCluster) -> str:
    """An upstream project namespace with Gateways `gw-a` and `gw-b`."""
    return upstream.project("gw-a", "gw-b")


def test_seed_plan_orphaned_healthy_and_multi_parent_routes(
    hub: TestCluster, upstream: TestCluster, project: str, routes_args: list[str]
) -> None:
    ns = hub.namespace()
    gone_ns = f"deleted-project-{uuid.uuid4().hex[:6]}"
    cases = {
        "orphaned": (LABEL, project, [gw("gw-gone")]),
        "healthy": (LABEL, project, [gw("gw-a")]),
        "one-of-two-left": (LABEL, project, [gw("gw-gone"), gw("gw-b")]),
        "both-gone": (LABEL, project, [gw("gw-gone"), gw("gw-gone-too")]),
        "legacy-label": (f"cluster-_{UPSTREAM_CLUSTER}", project, [gw("gw-gone")]),
        "explicit-defaults": (
            LABEL,
            project,
            [
                {
                    "name": "gw-gone",
                    "group": "gateway.networking.k8s.io",
                    "kind": "Gateway",
                    "namespace": ns,
                    "sectionName": "http",
                }
            ],
        ),
        "namespace-gone": (LABEL, gone_ns, [gw("gw-a")]),
    }
    for name, (label, up_ns, parents) in cases.items():
        hub.create(route(ns, name, cluster_label=label, upstream_namespace=up_ns, parents=parents))
    for name in ("healthy", "one-of-two-left"):  # NSO's upstream HTTPRoutes of the kept
        upstream.create(upstream_route(project, name))

    result = run_gcjob(*routes_args, "--namespace", ns, "--delete")

    assert result.exit_code == 0, result.stderr
    expected_deleted = {
        "orphaned": "upstream-gateways-gone",
        "both-gone": "upstream-gateways-gone",
        "legacy-label": "upstream-gateways-gone",
        "explicit-defaults": "upstream-gateways-gone",
        "namespace-gone": "upstream-namespace-gone",
    }
    for name, reason in expected_deleted.items():
        assert result.outcome("HTTPRoute", name) == ("deleted", reason), name
        assert hub.gone("HTTPRoute", ns, name), name
    for name in ("healthy", "one-of-two-left"):
        assert result.item("HTTPRoute", name) is None
        assert hub.present("HTTPRoute", ns, name)
    orphan = result.item("HTTPRoute", "orphaned")
    assert orphan is not None
    assert orphan["cluster"] == UPSTREAM_CLUSTER
    assert orphan["gateways"] == [f"{project}/gw-gone"]
    assert upstreams(result)[UPSTREAM_CLUSTER]["status"] == "ok"


def test_a_route_whose_upstream_httproute_is_gone_goes_though_its_gateway_exists(
    hub: TestCluster,
    upstream: TestCluster,
    project: str,
    routes_args: list[str],
    upstream_faults: FaultProxy,
) -> None:
    """Issue 22: NSO ties a downstream route to its upstream HTTPRoute, not to the Gateway."""
    ns = hub.namespace()
    for name in ("owner-gone", "owner-present", "gateway-gone"):
        hub.create(
            route(ns, name, cluster_label=LABEL, upstream_namespace=project, parents=[gw("gw-a")])
        )
    hub.patch("HTTPRoute", ns, "gateway-gone", {"spec": {"parentRefs": [gw("gw-gone")]}})
    upstream.create(upstream_route(project, "owner-present"))
    upstream_faults.clear_requests()

    result = run_gcjob(*routes_args, "--namespace", ns, "--delete", "--report-healthy")

    assert result.exit_code == 0, result.stderr
    assert result.outcome("HTTPRoute", "owner-gone") == ("deleted", "owner-gone")
    assert hub.gone("HTTPRoute", ns, "owner-gone")
    gone = result.item("HTTPRoute", "owner-gone")
    assert gone is not None
    assert f"HTTPRoute.gateway.networking.k8s.io {project}/owner-gone" in gone["detail"]
    assert gone["gateways"] == [f"{project}/gw-a"]
    assert result.outcome("HTTPRoute", "owner-present") == ("skipped", "gateway-exists")
    assert hub.present("HTTPRoute", ns, "owner-present")
    # A route whose Gateways are all gone keeps the Gateway rule and its reason.
    assert result.outcome("HTTPRoute", "gateway-gone") == ("deleted", "upstream-gateways-gone")
    # The upstream HTTPRoute proven gone by a GET naming it, and read again (a GET) right
    # before the delete; upstream only ever read.
    asked = [(r.method, r.path, r.status) for r in upstream_faults.requests]
    get_gone = (
        "GET",
        f"/apis/gateway.networking.k8s.io/v1/namespaces/{project}/httproutes/owner-gone",
        404,
    )
    assert asked.count(get_gone) == 2
    assert not [r for r in asked if r[0] != "GET"]


def test_preserve_cases_are_kept(hub: TestCluster, project: str, routes_args: list[str]) -> None:
    ns = hub.namespace()
    other_ns = hub.namespace("elsewhere")
    specs = {
        "http01": dict(parents=[gw("gw-gone")], http01=True),
        "no-name-label": dict(
            parents=[gw("gw-gone")], drop_labels=("meta.datumapis.com/upstream-name",)
        ),
        "no-parents": dict(parents=[]),
        "service-parent": dict(parents=[{"name": "svc", "group": "", "kind": "Service"}]),
        "gateway-and-service": dict(
            parents=[gw("gw-gone"), {"name": "svc", "group": "", "kind": "Service"}]
        ),
        "cross-namespace": dict(parents=[{"name": "gw-gone", "namespace": other_ns}]),
        "protected": dict(
            parents=[gw("gw-gone")], annotations={"gcjob.datumapis.com/protect": "true"}
        ),
    }
    for name, spec in specs.items():
        hub.create(route(ns, name, cluster_label=LABEL, upstream_namespace=project, **spec))
    hub.create(
        route(
            ns,
            "terminating",
            cluster_label=LABEL,
            upstream_namespace=project,
            parents=[gw("gw-gone")],
        )
    )
    hub.make_terminating("HTTPRoute", ns, "terminating")
    other_owner = route(
        ns,
        "grpc-owned",
        cluster_label=LABEL,
        upstream_namespace=project,
        parents=[gw("gw-gone")],
        extra_labels={"meta.datumapis.com/upstream-kind": "GRPCRoute"},
    )
    hub.create(other_owner)

    result = run_gcjob(*routes_args, "--namespace", ns, "--delete")

    assert result.exit_code == 0, result.stderr
    expected = {
        "http01": "http01-solver",
        "no-name-label": "labels-missing",
        "no-parents": "no-parent-refs",
        "service-parent": "non-gateway-parent",
        "gateway-and-service": "non-gateway-parent",
        "cross-namespace": "cross-namespace-parent",
        "protected": "protected",
        "terminating": "terminating",
    }
    for name, reason in expected.items():
        assert result.outcome("HTTPRoute", name) == ("skipped", reason), name
    for name in [*specs, "grpc-owned"]:
        assert hub.present("HTTPRoute", ns, name), name
    assert result.item("HTTPRoute", "grpc-owned") is None  # another owner: not ours to report


def test_young_route_not_deleted(hub: TestCluster, project: str, routes_args: list[str]) -> None:
    ns = hub.namespace()
    hub.create(
        route(ns, "fresh", cluster_label=LABEL, upstream_namespace=project, parents=[gw("gw-gone")])
    )

    result = run_gcjob(*routes_args, "--namespace", ns, "--delete", "--min-age", "5m")

    assert result.outcome("HTTPRoute", "fresh") == ("skipped", "too-young")
    assert hub.present("HTTPRoute", ns, "fresh")


def test_no_downstream_routes_is_a_no_op(hub: TestCluster, routes_args: list[str]) -> None:
    ns = hub.namespace()

    result = run_gcjob(*routes_args, "--namespace", ns, "--delete")

    assert result.exit_code == 0
    assert result.items == []
    assert result.summary["sweeps"]["routes"] == {
        "status": "completed",
        "detail": "",
        "scanned": 0,
        "in_scope": 0,
    }


def two_clusters_kubeconfig(upstream_kubeconfig: str, tmp_path: Path, dead_server: str) -> str:
    """The upstream kubeconfig plus a context `e2e-dead` whose server answers nothing."""
    config = yaml.safe_load(Path(upstream_kubeconfig).read_text())
    config["clusters"].append({"name": "dead", "cluster": {"server": dead_server}})
    config["users"].append({"name": "dead", "user": {"token": "x"}})
    config["contexts"].append({"name": "e2e-dead", "context": {"cluster": "dead", "user": "dead"}})
    path = tmp_path / "upstreams"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_unknown_and_unreachable_clusters_are_never_proof(
    hub: TestCluster,
    project: str,
    gcjob_hub_args: list[str],
    upstream_kubeconfig: str,
    tmp_path: Path,
) -> None:
    ns = hub.namespace()
    kubeconfig = two_clusters_kubeconfig(upstream_kubeconfig, tmp_path, "http://127.0.0.1:9")
    hub.create(
        route(
            ns,
            "unknown",
            cluster_label="cluster-nowhere",
            upstream_namespace=project,
            parents=[gw("gw-gone")],
        )
    )
    hub.create(
        route(
            ns,
            "unreachable",
            cluster_label="cluster-e2e-dead",
            upstream_namespace=project,
            parents=[gw("gw-gone")],
        )
    )
    hub.create(
        route(
            ns, "orphaned", cluster_label=LABEL, upstream_namespace=project, parents=[gw("gw-gone")]
        )
    )

    result = run_gcjob(
        *gcjob_hub_args,
        "--upstream-kubeconfig",
        kubeconfig,
        "--sweep",
        "routes",
        "--namespace",
        ns,
        "--delete",
        "--connect-timeout",
        "1s",
    )

    assert result.outcome("HTTPRoute", "unknown") == ("skipped", "upstream-cluster-unknown")
    assert result.outcome("HTTPRoute", "unreachable") == ("skipped", "upstream-unavailable")
    assert result.outcome("HTTPRoute", "orphaned") == ("deleted", "upstream-gateways-gone")
    assert hub.present("HTTPRoute", ns, "unknown")
    assert hub.present("HTTPRoute", ns, "unreachable")
    clusters = upstreams(result)
    assert clusters["nowhere"]["status"] == "unknown"
    assert clusters["e2e-dead"]["status"] == "unavailable"
    assert clusters[UPSTREAM_CLUSTER]["status"] == "ok"
    assert result.exit_code == 1  # an unavailable upstream is a failure to decide


def test_wrong_server_template_is_unavailable_not_gone(
    hub: TestCluster,
    project: str,
    gcjob_hub_args: list[str],
    upstream_kubeconfig: str,
    upstream_faults: FaultProxy,
) -> None:
    ns = hub.namespace()
    hub.create(
        route(
            ns,
            "orphan-looking",
            cluster_label="cluster-proj-x",
            upstream_namespace=project,
            parents=[gw("gw-gone")],
        )
    )
    template = f"{upstream_faults.url}/apis/resourcemanager.example/v1/projects/{{cluster}}/cp"

    result = run_gcjob(
        *gcjob_hub_args,
        "--upstream-kubeconfig",
        upstream_kubeconfig,
        "--upstream-server-template",
        template,
        "--sweep",
        "routes",
        "--namespace",
        ns,
        "--delete",
    )

    assert result.outcome("HTTPRoute", "orphan-looking") == ("skipped", "upstream-unavailable")
    assert hub.present("HTTPRoute", ns, "orphan-looking")
    assert upstreams(result)["proj-x"]["status"] == "unavailable"
    assert result.exit_code == 1


def test_server_template_names_the_cluster_in_the_url(
    hub: TestCluster,
    project: str,
    gcjob_hub_args: list[str],
    upstream_kubeconfig: str,
    upstream_faults: FaultProxy,
) -> None:
    ns = hub.namespace()
    hub.create(
        route(
            ns,
            "via-template",
            cluster_label="cluster-proj-x",
            upstream_namespace=project,
            parents=[gw("gw-gone")],
        )
    )
    upstream_faults.clear_requests()

    result = run_gcjob(
        *gcjob_hub_args,
        "--upstream-kubeconfig",
        upstream_kubeconfig,
        "--upstream-server-template",
        upstream_faults.url + "/{cluster}",
        "--sweep",
        "routes",
        "--namespace",
        ns,
    )

    # The template puts the decoded cluster name in the path; the real server does not
    # serve that prefix, so the cluster is unavailable: what matters is the URL it asked.
    assert any(r.path == "/proj-x/apis" for r in upstream_faults.requests)
    assert result.outcome("HTTPRoute", "via-template") == ("skipped", "upstream-unavailable")


def test_routes_sweep_without_upstream_is_not_configured(hub: TestCluster, sweep: HubSweep) -> None:
    ns = hub.namespace()
    default = sweep(ns)
    explicit = sweep(ns, "--sweep", "routes")

    assert default.exit_code == 0
    assert default.summary["sweeps"]["routes"]["status"] == "not-configured"
    assert explicit.exit_code == 2
    assert explicit.records == []
    assert "--upstream-kubeconfig" in explicit.stderr


def test_upstream_reads_are_batched_per_namespace(
    hub: TestCluster,
    upstream: TestCluster,
    project: str,
    routes_args: list[str],
    upstream_faults: FaultProxy,
) -> None:
    ns = hub.namespace()
    for i, parents in enumerate([["gw-a"], ["gw-b"], ["gw-a", "gw-b"], ["gw-a"], ["gw-b"]]):
        hub.create(
            route(
                ns,
                f"healthy-{i}",
                cluster_label=LABEL,
                upstream_namespace=project,
                parents=[gw(p) for p in parents],
            )
        )
        upstream.create(upstream_route(project, f"healthy-{i}", tuple(parents)))
    upstream_faults.clear_requests()

    result = run_gcjob(*routes_args, "--namespace", ns, "--delete")

    assert result.exit_code == 0
    asked = [(r.method, r.path) for r in upstream_faults.requests]
    # One aggregated discovery of every group but the core one (the HTTPRoutes' group, served,
    # also shows the control plane answers: no /api), one metadata-only Gateway list of the
    # namespace; then, for the routes whose Gateways exist, their upstream HTTPRoutes (the
    # shared owner look-ups: one metadata-only HTTPRoute list of the namespace; every one
    # listed, so no GET).
    assert asked == [
        ("GET", "/apis"),
        ("GET", f"/apis/gateway.networking.k8s.io/v1/namespaces/{project}/gateways"),
        ("GET", f"/apis/gateway.networking.k8s.io/v1/namespaces/{project}/httproutes"),
    ]
    assert "as=APIGroupDiscoveryList" in upstream_faults.requests[0].headers["accept"]
    assert upstreams(result)[UPSTREAM_CLUSTER]["api_requests"] == 3
    assert result.summary["api_requests"]["by_target"]["upstream"] == 3


def test_a_parent_name_that_is_no_object_name_is_never_proof(
    hub: TestCluster, project: str, routes_args: list[str]
) -> None:
    ns = hub.namespace()
    hub.create(
        route(ns, "dot", cluster_label=LABEL, upstream_namespace=project, parents=[{"name": "."}])
    )

    result = run_gcjob(*routes_args, "--namespace", ns, "--delete")

    assert result.outcome("HTTPRoute", "dot") == ("skipped", "malformed-parent-ref")
    assert hub.present("HTTPRoute", ns, "dot")


def test_an_upstream_context_whose_credentials_cannot_load_is_unavailable(
    hub: TestCluster,
    project: str,
    gcjob_hub_args: list[str],
    upstream_kubeconfig: str,
    tmp_path: Path,
) -> None:
    config = yaml.safe_load(Path(upstream_kubeconfig).read_text())
    config["clusters"].append({"name": "broken", "cluster": {"server": "http://127.0.0.1:9"}})
    config["users"].append({"name": "broken", "user": {"tokenFile": str(tmp_path / "none")}})
    config["contexts"].append(
        {"name": "broken", "context": {"cluster": "broken", "user": "broken"}}
    )
    kubeconfig = tmp_path / "upstreams"
    kubeconfig.write_text(yaml.safe_dump(config))
    ns = hub.namespace()
    hub.create(
        route(
            ns,
            "r",
            cluster_label="cluster-broken",
            upstream_namespace=project,
            parents=[gw("gw-gone")],
        )
    )

    result = run_gcjob(
        *gcjob_hub_args,
        "--upstream-kubeconfig",
        str(kubeconfig),
        "--sweep",
        "routes",
        "--namespace",
        ns,
        "--delete",
    )

    assert result.outcome("HTTPRoute", "r") == ("skipped", "upstream-unavailable")
    assert upstreams(result)["broken"]["status"] == "unavailable"
    assert result.exit_code == 1


def test_a_route_that_changes_between_the_two_reads_is_not_decided(
    hub: TestCluster,
    upstream: TestCluster,
    project: str,
    routes_args: list[str],
    faults: FaultProxy,
) -> None:
    """The sweep reads the hub's routes twice: first for what to ask upstream, then to
    decide each as it streams in. A GET of gw-a alone says nothing of gw-b: a route moved
    to gw-b, or a new one in a namespace nobody asked about, is not decided this run."""
    ns = hub.namespace()
    other = upstream.project("gw-x")
    hub.create(
        route(ns, "moved", cluster_label=LABEL, upstream_namespace=project, parents=[gw("gw-a")])
    )
    hub.create(
        route(ns, "steady", cluster_label=LABEL, upstream_namespace=project, parents=[gw("gw-a")])
    )
    upstream.create(upstream_route(project, "steady"))
    lists = f"/namespaces/{ns}/httproutes$"
    faults.add_fault(Fault(method="GET", path=lists))  # the first read goes through
    gate = threading.Event()
    second = Fault(method="GET", path=lists, hold=gate)
    faults.add_fault(second)
    changed: list[str] = []

    def change_between_the_reads() -> None:
        # Between the reads: gw-b exists but was never asked for; nor was anything in `other`.
        deadline = time.monotonic() + 30
        while not second.hits and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            hub.patch("HTTPRoute", ns, "moved", {"spec": {"parentRefs": [gw("gw-b")]}})
            hub.create(
                route(
                    ns, "new", cluster_label=LABEL, upstream_namespace=other, parents=[gw("gw-x")]
                )
            )
            changed.append("yes")
        finally:
            gate.set()

    changer = threading.Thread(target=change_between_the_reads, daemon=True)
    changer.start()
    result = run_gcjob(*routes_args, "--namespace", ns)
    changer.join(30)

    assert changed, "the second read of the routes never came"
    assert result.exit_code == 0, result.stderr
    assert result.outcome("HTTPRoute", "moved") == ("skipped", "upstream-not-read")
    assert result.outcome("HTTPRoute", "new") == ("skipped", "upstream-not-read")
    assert result.summary["counts"]["routes"]["skipped"]["gateway-exists"] == 1  # steady
    assert result.summary["sweeps"]["routes"]["scanned"] == 3


# -- issue 20: a hostile or broken upstream ---------------------------------------------------


def test_a_route_of_another_hub_namespace_cannot_vouch_for_a_cluster(
    hub: TestCluster, upstream: TestCluster, project: str, routes_args: list[str]
) -> None:
    """issue 20 item 9: tenant B's ten routes find none of their Gateways (a wrong endpoint or
    an emptied cluster: suspect). One route in tenant A's hub namespace naming B's cluster,
    with a parent that exists there, no longer makes that cluster look healthy for B's."""
    tenant_a, tenant_b = hub.namespace("tenant-a"), hub.namespace("tenant-b")
    # Gateways never asked for: they count for nothing
    b_project = upstream.project("gw-other", "gw-unasked", prefix="b-project")
    for i in range(10):
        hub.create(
            route(
                tenant_b,
                f"b-{i}",
                cluster_label=LABEL,
                upstream_namespace=b_project,
                parents=[gw(f"gw-b-{i}"), gw("gw-b-shared")],
            )
        )
    hub.create(
        route(
            tenant_a,
            "vouching",
            cluster_label=LABEL,
            upstream_namespace=project,
            parents=[gw("gw-a")],
        )
    )

    result = run_gcjob(*routes_args, "--namespace", f"{tenant_a},{tenant_b}", "--delete")

    for i in range(10):
        assert result.outcome("HTTPRoute", f"b-{i}") == ("skipped", "upstream-suspect")
        assert hub.present("HTTPRoute", tenant_b, f"b-{i}")
    assert result.summary["counts"]["routes"]["skipped"]["gateway-exists"] == 1  # A's own
    cluster = upstreams(result)[UPSTREAM_CLUSTER]
    assert cluster["status"] == "suspect"
    assert cluster["gateways_found"] == 1  # gw-a; gw-other and gw-unasked were never asked
    assert "10 routes in 1 hub namespaces" in cluster["detail"]
    assert result.exit_code == 4  # the brake: nothing deleted on that cluster


def test_an_upstream_403_reaches_the_report_as_one_redacted_line(
    hub: TestCluster, project: str, routes_args: list[str], upstream_faults: FaultProxy
) -> None:
    """issue 20 item 10."""
    ns = hub.namespace()
    hub.create(
        route(ns, "r", cluster_label=LABEL, upstream_namespace=project, parents=[gw("gw-gone")])
    )
    message = (
        "gateways is forbidden:\nAuthorization: Bearer t0ken-XYZ\r\n"
        "see https://admin:hunter2@idp.example/login\n\tthanks"
    )
    upstream_faults.add_fault(
        Fault(
            path=rf"/namespaces/{project}/gateways/gw-gone$",
            status=403,
            body={
                "kind": "Status",
                "status": "Failure",
                "reason": "Forbidden\n",
                "message": message,
            },
            times=None,
        )
    )

    result = run_gcjob(*routes_args, "--namespace", ns, "--delete")

    item = result.item("HTTPRoute", "r")
    assert item is not None and (item["action"], item["reason"]) == (
        "skipped",
        "upstream-unavailable",
    )
    cluster = upstreams(result)[UPSTREAM_CLUSTER]
    for detail in (item["detail"], cluster["detail"]):
        assert detail == " ".join(detail.split()), detail  # one line
        assert "t0ken-XYZ" not in detail and "hunter2" not in detail
        assert "gateways is forbidden: Authorization: Bearer ***" in detail
    assert "t0ken-XYZ" not in result.stdout + result.stderr
    assert "hunter2" not in result.stdout + result.stderr
    assert hub.present("HTTPRoute", ns, "r")


def get_only_token(upstream: TestCluster, namespace: str) -> str:
    """A ServiceAccount token on the real upstream that may `get` Gateways but not `list`
    them (issue 20 item 15): RBAC enforced by the real server."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    for path, body in (
        (
            f"/api/v1/namespaces/{namespace}/serviceaccounts",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "getter"}},
        ),
        (
            f"{rbac}/namespaces/{namespace}/roles",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "gateway-getter"},
                "rules": [
                    {
                        "apiGroups": ["gateway.networking.k8s.io"],
                        "resources": ["gateways"],
                        "verbs": ["get"],
                    }
                ],
            },
        ),
        (
            f"{rbac}/namespaces/{namespace}/rolebindings",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "gateway-getter"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "gateway-getter",
                },
                "subjects": [{"kind": "ServiceAccount", "name": "getter", "namespace": namespace}],
            },
        ),
    ):
        status, answer = upstream._call("POST", path, body)
        assert status in (200, 201), answer
    status, answer = upstream._call(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/getter/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    assert status in (200, 201), answer
    return str(answer["status"]["token"])


def test_an_identity_that_may_get_but_not_list_fails_where_alerts_look(
    hub: TestCluster,
    upstream: TestCluster,
    project: str,
    gcjob_hub_args: list[str],
    upstream_kubeconfig: str,
    tmp_path: Path,
) -> None:
    """issue 20 item 15: its routes are kept, and the failure shows in the upstream record,
    the summary's counts and the exit code (metrics: tests/publish/test_metrics.py)."""
    token = get_only_token(upstream, project)
    config = yaml.safe_load(Path(upstream_kubeconfig).read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    kubeconfig = tmp_path / "get-only"
    kubeconfig.write_text(yaml.safe_dump(config))
    ns = hub.namespace()
    for name, parents in (("one", ["gw-a"]), ("two", ["gw-gone", "gw-b"]), ("gone", ["x", "y"])):
        hub.create(
            route(
                ns,
                name,
                cluster_label=LABEL,
                upstream_namespace=project,
                parents=[gw(p) for p in parents],
            )
        )
    deadline = time.monotonic() + 10  # the RoleBinding takes effect within moments
    while True:
        result = run_gcjob(
            *gcjob_hub_args,
            *("--upstream-kubeconfig", str(kubeconfig), "--sweep", "routes"),
            *("--namespace", ns, "--delete"),
        )
        cluster = upstreams(result)[UPSTREAM_CLUSTER]
        if "grant 'list'" in cluster["detail"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)

    assert cluster["status"] == "unavailable"
    assert cluster["detail"].startswith(f"Gateway lookup in namespace {project} failed: HTTP 403")
    assert "grant 'list'" in cluster["detail"]
    for name in ("one", "two", "gone"):
        assert result.outcome("HTTPRoute", name) == ("skipped", "upstream-unavailable"), name
        assert hub.present("HTTPRoute", ns, name)
    assert result.summary["upstream_counts"] == {"unavailable": 1}
    assert result.summary["counts"]["routes"]["skipped"]["upstream-unavailable"] == 3
    assert result.exit_code == 1
    assert result.summary["exit_code"] == 1
