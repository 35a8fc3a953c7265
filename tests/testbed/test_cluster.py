"""testbed/cluster.py on the real hub: what seeding a test's world costs."""

from __future__ import annotations

from testbed.cluster import TestCluster
from testbed.faultproxy import FaultProxy
from testbed.objects import route


def test_a_created_route_is_awaited_in_the_watch_cache_alone(
    hub: TestCluster, faults: FaultProxy
) -> None:
    """create() waits until the watch cache holds a new route by asking it for that route
    alone, so seeding n routes in one namespace reads n of them, not n²/2: 1,000 routes
    (tests/e2e/test_report_e2e.py) read half a million, and the seeding took most of its
    706 s in a measured 1.31 pass."""
    ns = hub.namespace()

    def seed(name: str) -> None:
        hub.create(route(ns, name, cluster_label="c", upstream_namespace="p", parents=[]))

    for name in ("r-0", "r-1", "r-2"):
        seed(name)
    faults.clear_requests()

    seed("r-3")

    reads = [r for r in faults.requests if r.method == "GET" and r.path.endswith("/httproutes")]
    assert reads, [(r.method, r.path) for r in faults.requests]
    assert all(r.query["resourceVersion"] == ["0"] for r in reads)  # from the watch cache
    listed = [r.response_body for r in reads]
    assert all(b'"name":"r-3"' in body and b'"r-0"' not in body for body in listed), listed
    assert hub.present("HTTPRoute", ns, "r-0")
