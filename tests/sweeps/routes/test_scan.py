"""gcjob/sweeps/routes/scan.py: the routes NSO copied, in report order within each namespace."""

from __future__ import annotations

from gcjob.enumerate.scope import Scope
from gcjob.enumerate.upstream import Group, Wanted
from gcjob.kube.snapshot import SnapshotStore
from gcjob.model import RouteTarget
from gcjob.sweeps.routes.judge import route_target
from gcjob.sweeps.routes.scan import listed_routes, scan_routes
from gcjob.sweeps.routes.sweep import RouteTargets, _merged
from testbed.objects import route


def test_routes_come_in_name_order_within_each_listed_namespace() -> None:
    hub = SnapshotStore("hub", [], every_kind=True)
    labels = {
        "meta.datumapis.com/upstream-group": "gateway.networking.k8s.io",
        "meta.datumapis.com/upstream-kind": "HTTPRoute",
    }
    for namespace, name in (("ns-b", "r2"), ("ns-a", "r9"), ("ns-b", "r1"), ("ns-a", "r0")):
        hub.add(
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "HTTPRoute",
                "metadata": {"namespace": namespace, "name": name, "labels": labels},
            }
        )
    routes = listed_routes(hub, Scope(("ns-b", "ns-a")))
    assert [(r.ref.namespace, r.ref.name) for r in routes] == [
        ("ns-b", "r1"),
        ("ns-b", "r2"),
        ("ns-a", "r0"),
        ("ns-a", "r9"),
    ]


def test_the_first_reads_scans_merge_into_one_and_are_dropped() -> None:
    # sweep.read merges one scan per listed namespace in place (a copy held every group
    # twice through the upstream reads): the findings are those of one pass over all routes.
    hub = SnapshotStore("hub", [], every_kind=True)
    for namespace, name, cluster, upstream_ns, gateway in (
        ("ns-a", "r1", "cluster-proj-1", "p1", "gw-a"),
        ("ns-a", "r2", "cluster-proj-2", "p1", "gw-b"),
        ("ns-b", "r3", "cluster-proj-1", "p1", "gw-c"),
        ("ns-c", "r4", "cluster-proj-1", "p2", "gw-a"),
    ):
        hub.add(
            route(
                namespace,
                name,
                cluster_label=cluster,
                upstream_namespace=upstream_ns,
                parents=[{"name": gateway}],
            )
        )
    scans = scan_routes(hub, Scope(("ns-a", "ns-b", "ns-c")), RouteTargets)
    assert len(scans) == 3
    every = listed_routes(hub, Scope(("ns-a", "ns-b", "ns-c")))
    targets = [t for t in map(route_target, every) if isinstance(t, RouteTarget)]
    wanted, owned = _merged(scans)
    assert scans == []
    assert owned == set(targets)
    assert len(owned) == 4
    expected = Wanted.of(targets)
    for cluster, routes in {"proj-1": 3, "proj-2": 1}.items():
        assert wanted.routes(cluster) == expected.routes(cluster) == routes
        assert wanted.gateways(cluster) == expected.gateways(cluster)
    assert wanted.groups == expected.groups
    assert wanted.of_cluster("proj-1")["ns-a"] == Group(1, (("p1", "gw-a"),))
