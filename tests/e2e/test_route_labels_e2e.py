"""Route label values that are no names: never proof that a Gateway is gone (real servers)."""

from __future__ import annotations

from testbed.cluster import TestCluster
from testbed.endpoints import UPSTREAM_CLUSTER
from testbed.objects import route
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
