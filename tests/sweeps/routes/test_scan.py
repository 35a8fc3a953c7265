"""gcjob/sweeps/routes/scan.py: the routes NSO copied, in report order within each namespace."""

from __future__ import annotations

from gcjob.enumerate.scope import Scope
from gcjob.kube.snapshot import SnapshotStore
from gcjob.sweeps.routes.scan import read_routes


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
    routes = read_routes(hub, Scope(("ns-b", "ns-a")))
    assert [(r.ref.namespace, r.ref.name) for r in routes] == [
        ("ns-b", "r1"),
        ("ns-b", "r2"),
        ("ns-a", "r0"),
        ("ns-a", "r9"),
    ]
