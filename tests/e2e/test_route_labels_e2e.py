"""Route labels that are no names, or not the route's own: never proof that anything upstream
is gone (real servers)."""

from __future__ import annotations

from testbed.cluster import TestCluster
from testbed.endpoints import UPSTREAM_CLUSTER
from testbed.faultproxy import FaultProxy
from testbed.objects import route, upstream_route
from testbed.report import run_gcjob


def test_an_upstream_namespace_label_that_is_no_namespace_name_never_deletes(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    upstream_kubeconfig: str,
) -> None:
    """`Project-x` names no namespace, so the upstream answers NotFound for it and for the
    Gateway in it: both true, and neither says anything of `project-x`'s Gateway."""
    upstream_namespace = upstream.project("gw-a")
    namespace = hub.namespace()
    odd = {
        "r-capital": upstream_namespace[0].upper() + upstream_namespace[1:],
        "r-dotted": f"{upstream_namespace}.svc",
        "r-underscore": upstream_namespace.replace("-", "_"),
    }
    for name, label in odd.items():
        hub.create(
            route(
                namespace,
                name,
                cluster_label=f"cluster-{UPSTREAM_CLUSTER}",
                upstream_namespace=label,
                parents=[{"name": "gw-a"}, {"name": "gw-b"}]
                if "dotted" in name
                else [{"name": "gw-a"}],
            )
        )

    result = run_gcjob(
        *gcjob_hub_args,
        "--upstream-kubeconfig",
        upstream_kubeconfig,
        "--namespace",
        namespace,
        "--sweep",
        "routes",
        "--delete",
    )

    for name in odd:
        assert result.outcome("HTTPRoute", name) == ("skipped", "upstream-namespace-malformed")
        assert hub.present("HTTPRoute", namespace, name)
    assert upstream.present("Gateway", upstream_namespace, "gw-a")


def test_a_route_whose_upstream_name_is_not_its_own_is_kept_and_never_looked_up(
    hub: TestCluster,
    upstream: TestCluster,
    routes_args: list[str],
    upstream_faults: FaultProxy,
) -> None:
    """Issue 30 item 1, as reproduced: a live route `web` labelled `upstream-name: web-v1`,
    whose upstream HTTPRoute `web` and Gateway exist, was deleted as `owner-gone` after a
    look-up of `web-v1`. Such a route is no copy of NSO's: kept, nothing asked about it, and
    the Gateway rule no longer deletes one whose Gateway is gone either. A route under its
    own name, beside it, still goes (the control: the sweep deletes on this bed)."""
    project = upstream.project("gw-a")
    ns = hub.namespace()
    upstream.create(upstream_route(project, "web", ("gw-a",)))
    label = f"cluster-{UPSTREAM_CLUSTER}"
    hub.create(
        route(
            ns,
            "web",
            cluster_label=label,
            upstream_namespace=project,
            parents=[{"name": "gw-a"}],
            upstream_name="web-v1",
        )
    )
    hub.create(
        route(
            ns,
            "gw-gone",
            cluster_label=label,
            upstream_namespace=project,
            parents=[{"name": "gw-gone"}],
            upstream_name="gw-gone-v1",
        )
    )
    hub.create(
        route(
            ns,
            "control",
            cluster_label=label,
            upstream_namespace=project,
            parents=[{"name": "gw-a"}],
        )
    )
    upstream_faults.clear_requests()

    result = run_gcjob(*routes_args, "--namespace", ns, "--delete")

    assert result.exit_code == 0, result.stderr
    for name in ("web", "gw-gone"):
        assert result.outcome("HTTPRoute", name) == ("skipped", "not-a-copy"), name
        assert hub.present("HTTPRoute", ns, name)
    item = result.item("HTTPRoute", "web")
    assert item is not None and "does not copy" in item["detail"]
    assert result.outcome("HTTPRoute", "control") == ("deleted", "owner-gone")
    asked = [r.path for r in upstream_faults.requests]
    assert not [p for p in asked if p.endswith(("/httproutes/web-v1", "/httproutes/gw-gone-v1"))]
    assert not [p for p in asked if "gw-gone" in p], asked
    assert [p for p in asked if p.endswith("/httproutes/control")], asked
