"""gcjob/enumerate/upstream.py: one probe per cluster, one read per (cluster, namespace)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.enumerate.parallel import Reads
from gcjob.enumerate.upstream import FEW_ASKED, Group, UpstreamIndex, Wanted
from gcjob.kube.errors import ApiError, Stopped, Unavailable
from gcjob.kube.snapshot import SnapshotStore, SnapshotUpstreams
from gcjob.model import ClusterStatus, RouteTarget


class CountingStore(SnapshotStore):
    """An upstream that counts its reads, to check what the index costs."""

    def __init__(self, *objects: dict[str, Any], serves: bool = True) -> None:
        super().__init__("upstream", [], every_kind=True)
        self.calls: list[str] = []
        self.serves = serves
        for obj in objects:
            self.add(obj)

    def served(self, resource):  # type: ignore[no-untyped-def]
        self.calls.append("discovery")
        return self.serves

    def list(self, resource, reduce, **kwargs):  # type: ignore[no-untyped-def]
        self.calls.append(f"list {resource.plural} {kwargs.get('namespace')}")
        return super().list(resource, reduce, **kwargs)

    def get(self, resource, namespace, name, reduce, **kwargs):  # type: ignore[no-untyped-def]
        self.calls.append(f"get {resource.plural} {namespace}/{name}")
        return super().get(resource, namespace, name, reduce, **kwargs)

    def close_idle(self) -> None:
        self.calls.append("close")


def gateway(ns: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"namespace": ns, "name": name},
    }


def test_one_probe_and_one_read_per_namespace() -> None:
    store = CountingStore(gateway("p1", "gw-a"), gateway("p2", "gw-b"))
    index = UpstreamIndex(SnapshotUpstreams({"single": store}))
    targets = [
        RouteTarget("single", "p1", ("gw-a",)),
        RouteTarget("single", "p1", ("gw-b",)),
        RouteTarget("single", "p1", ("gw-a", "gw-c")),
        RouteTarget("single", "p2", ("gw-b",)),
    ]

    index.load(Wanted.of(targets), suspect_min_routes=10)

    # p1 needs three names: one list; p2 needs one: one GET. One discovery in all. Then
    # its connection is closed: one kept open per cluster adds up over a thousand clusters.
    assert store.calls == ["discovery", "list gateways p1", "get gateways p2/gw-b", "close"]
    assert index.view(targets[0]).gateways == frozenset({"gw-a"})
    assert index.view(targets[3]).gateways == frozenset({"gw-b"})
    assert index.clusters["single"].routes == 4


def test_a_cluster_that_does_not_serve_gateways_is_unavailable() -> None:
    store = CountingStore(serves=False)
    index = UpstreamIndex(SnapshotUpstreams({"single": store}))
    index.load(Wanted.of([RouteTarget("single", "p1", ("gw-a",))]), suspect_min_routes=10)
    assert index.clusters["single"].status is ClusterStatus.UNAVAILABLE
    assert store.calls == ["discovery", "close"]


def test_many_routes_and_no_gateway_at_all_is_suspect() -> None:
    index = UpstreamIndex(SnapshotUpstreams({"single": CountingStore()}))
    targets = [RouteTarget("single", f"p{i}", ("gw",)) for i in range(3)]

    index.load(Wanted.of(targets), suspect_min_routes=3)

    assert index.clusters["single"].status is ClusterStatus.SUSPECT
    assert index.view(targets[0]).cluster_status is ClusterStatus.SUSPECT


def test_one_gateway_found_is_enough_to_trust_the_cluster() -> None:
    index = UpstreamIndex(SnapshotUpstreams({"single": CountingStore(gateway("p0", "gw"))}))
    index.load(
        Wanted.of([RouteTarget("single", f"p{i}", ("gw",)) for i in range(3)]), suspect_min_routes=3
    )
    assert index.clusters["single"].status is ClusterStatus.OK


def test_namespace_existence_is_read_once() -> None:
    store = CountingStore({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "p1"}})
    index = UpstreamIndex(SnapshotUpstreams({"single": store}))
    index.load(Wanted.of([RouteTarget("single", "p1", ("gw",))]), suspect_min_routes=0)

    assert index.namespace_exists("single", "p1") is True
    assert index.namespace_exists("single", "p1") is True
    assert index.namespace_exists("single", "gone") is False
    assert store.calls.count("get namespaces None/p1") == 1


class UnreachableStore(CountingStore):
    def served(self, resource):  # type: ignore[no-untyped-def]
        raise Unavailable("GET /apis/gateway.networking.k8s.io/v1 failed after 3 attempts")


def test_an_unavailable_cluster_still_names_the_server_it_resolved_to() -> None:
    """issue 12 item 9: the templated URL is in the summary even when the cluster failed."""
    index = UpstreamIndex(SnapshotUpstreams({"proj-a": UnreachableStore()}))
    index.load(Wanted.of([RouteTarget("proj-a", "p1", ("gw",))]), suspect_min_routes=0)
    state = index.summary()["proj-a"]
    assert state["status"] == ClusterStatus.UNAVAILABLE.value
    assert state["server"] == "upstream"


class SlowStore(CountingStore):
    """An upstream whose every answer takes `delay` seconds."""

    def __init__(self, *objects: dict[str, Any], delay: float) -> None:
        super().__init__(*objects)
        self.delay = delay

    def served(self, resource):  # type: ignore[no-untyped-def]
        time.sleep(self.delay)
        return super().served(resource)

    def get(self, resource, namespace, name, reduce, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(self.delay)
        return super().get(resource, namespace, name, reduce, **kwargs)


def test_clusters_are_read_at_once_and_found_the_same_as_one_by_one() -> None:
    """Eight clusters at 0.2 s per request (a probe and a GET each): 3.2 s one after another,
    about 0.4 s at once; what they found is the same either way, summed up in cluster order."""
    names = [f"c{i}" for i in range(8)]
    targets = [RouteTarget(name, "p", ("gw",)) for name in names]

    def index_with(reads: Reads) -> tuple[UpstreamIndex, float]:
        stores = {name: SlowStore(gateway("p", "gw"), delay=0.2) for name in names}
        index = UpstreamIndex(SnapshotUpstreams(stores))  # type: ignore[arg-type]
        started = time.monotonic()
        index.load(Wanted.of(reversed(targets)), suspect_min_routes=10, reads=reads)
        return index, time.monotonic() - started

    pool = Reads(16, "test")
    try:
        at_once, fast = index_with(pool)
    finally:
        pool.close()
    one_by_one, slow = index_with(Reads(1, "test"))
    assert slow >= 3.2
    assert fast < slow / 3
    assert sorted(at_once.clusters) == sorted(one_by_one.clusters) == names
    assert list(at_once.summary()) == names and at_once.summary() == one_by_one.summary()
    for target in targets:
        assert at_once.view(target).gateways == frozenset({"gw"})


def test_a_stop_while_reading_clusters_is_raised_not_taken_for_unavailable() -> None:
    class Stopping(CountingStore):
        def served(self, resource):  # type: ignore[no-untyped-def]
            raise Stopped("deadline")

    stores = {"a": CountingStore(gateway("p", "gw")), "b": Stopping()}
    index = UpstreamIndex(SnapshotUpstreams(stores))  # type: ignore[arg-type]
    pool = Reads(4, "test")
    try:
        with pytest.raises(Stopped):
            index.load(
                Wanted.of([RouteTarget("a", "p", ("gw",)), RouteTarget("b", "p", ("gw",))]),
                10,
                pool,
            )
    finally:
        pool.close()


def test_covers_only_what_was_asked() -> None:
    # A route read after the lookups may name a Gateway nobody asked for: a GET of gw-a
    # that found nothing says nothing of gw-b, nor of another namespace or cluster.
    store = CountingStore(gateway("p1", "gw-a"))
    index = UpstreamIndex(SnapshotUpstreams({"single": store}))
    index.load(Wanted.of([RouteTarget("single", "p1", ("gw-a",))]), suspect_min_routes=0)
    assert index.covers(RouteTarget("single", "p1", ("gw-a",)))
    assert not index.covers(RouteTarget("single", "p1", ("gw-a", "gw-b")))
    assert not index.covers(RouteTarget("single", "p2", ("gw-a",)))
    assert not index.covers(RouteTarget("other", "p1", ("gw-a",)))


def test_covers_any_name_on_a_cluster_that_cannot_be_read() -> None:
    index = UpstreamIndex(SnapshotUpstreams({"single": CountingStore(serves=False)}))
    index.load(Wanted.of([RouteTarget("single", "p1", ("gw-a",))]), suspect_min_routes=0)
    # Its routes are kept for the cluster's sake, whatever Gateways they name.
    assert index.covers(RouteTarget("single", "p9", ("gw-z",)))


def test_wanted_merges_counts_and_names() -> None:
    first = Wanted.of([RouteTarget("a", "p", ("gw-1",))])
    first.update(Wanted.of([RouteTarget("a", "p", ("gw-2",)), RouteTarget("b", "q", ("gw",))]))
    assert (first.routes("a"), first.routes("b"), first.routes("c")) == (2, 1, 0)
    assert first.gateways("a") == {"p": {"gw-1", "gw-2"}}
    assert first.gateways("b") == {"q": {"gw"}}
    assert first.gateways("c") == {} and "c" not in first.groups  # asking adds nothing


def test_a_clusters_groups_are_one_pair_until_a_second_hub_namespace_asks() -> None:
    """A cluster's one group is held with its hub namespace, not in a map of one; a second hub
    namespace's routes get a group of their own, and merging or popping loses none."""
    wanted = Wanted.of([RouteTarget("a", "p", ("gw-1",), "hub-1")])
    assert wanted.groups["a"] == ("hub-1", Group(1, (("p", "gw-1"),)))
    wanted.add(RouteTarget("a", "p", ("gw-1",), "hub-1"))
    wanted.update(Wanted.of([RouteTarget("a", "q", ("gw-2",), "hub-2")]))
    assert wanted.of_cluster("a") == {
        "hub-1": Group(2, (("p", "gw-1"),)),
        "hub-2": Group(1, (("q", "gw-2"),)),
    }
    assert wanted.routes("a") == 3
    assert wanted.gateways("a") == {"p": {"gw-1"}, "q": {"gw-2"}}
    assert wanted.pop("a") == wanted.of_cluster("b") | {
        "hub-1": Group(2, (("p", "gw-1"),)),
        "hub-2": Group(1, (("q", "gw-2"),)),
    }
    assert "a" not in wanted.groups and wanted.pop("a") == {} and wanted.routes("a") == 0


def test_only_gateways_asked_for_are_kept_and_counted() -> None:
    """issue 20 items 7, 9: a list keeps only the names asked for, and only they count."""
    store = CountingStore(*(gateway("p1", name) for name in ("gw-a", "gw-x", "gw-y", "gw-z")))
    index = UpstreamIndex(SnapshotUpstreams({"single": store}))
    target = RouteTarget("single", "p1", ("gw-a", "gw-b"), "ns-1")

    index.load(Wanted.of([target]), suspect_min_routes=10)

    assert index.view(target).gateways == frozenset({"gw-a"})
    assert index.clusters["single"].gateways_found == 1


def test_once_the_routes_are_done_only_each_clusters_state_stays_for_the_summary() -> None:
    store = CountingStore(*(gateway("p1", name) for name in ("gw-a", "gw-x")))
    index = UpstreamIndex(SnapshotUpstreams({"single": store}))
    target = RouteTarget("single", "p1", ("gw-a", "gw-b"), "ns-1")
    index.load(Wanted.of([target]), suspect_min_routes=10)
    summary, counts = index.summary(), index.status_counts()
    assert index.covers(target)

    index.lookups_done()

    assert index.summary() == summary and index.status_counts() == counts
    assert summary["single"]["gateways_found"] == 1 and summary["single"]["routes"] == 1
    # Nothing of the lookups is left to vouch for a route: asked again, it is not covered.
    assert not index.covers(target)


def tenant_targets(spread: bool) -> tuple[RouteTarget, list[RouteTarget]]:
    """Tenant A's one route naming cluster b with a parent that exists there, and tenant B's
    ten routes whose Gateways are not there (in one hub namespace, or one each)."""
    vouching = RouteTarget("b", "shared", ("gw-real",), "ns-a")
    victims = [
        RouteTarget("b", "shared", (f"gw-{i}",), f"ns-b{i}" if spread else "ns-b")
        for i in range(10)
    ]
    return vouching, victims


@pytest.mark.parametrize("spread", [False, True], ids=["one-namespace", "spread"])
def test_a_route_of_another_tenant_does_not_vouch_for_a_cluster(spread: bool) -> None:
    """issue 20 item 9."""
    vouching, victims = tenant_targets(spread)
    store = CountingStore(gateway("shared", "gw-real"))
    index = UpstreamIndex(SnapshotUpstreams({"b": store}))

    index.load(Wanted.of([vouching, *victims]), suspect_min_routes=10)

    state = index.clusters["b"]
    assert state.status is ClusterStatus.SUSPECT
    assert state.gateways_found == 1
    assert "10 routes" in state.detail
    assert index.view(vouching).cluster_status is ClusterStatus.OK
    for victim in victims:
        assert index.view(victim).cluster_status is ClusterStatus.SUSPECT
    # A route that appeared later, in a hub namespace that vouched for nothing: distrusted.
    late = RouteTarget("b", "shared", ("gw-0",), "ns-late")
    assert index.view(late).cluster_status is ClusterStatus.SUSPECT


class ForbiddenListStore(CountingStore):
    """An identity with `get` but no `list` on Gateways (issue 20 item 15)."""

    def list(self, resource, reduce, **kwargs):  # type: ignore[no-untyped-def]
        self.calls.append(f"list {resource.plural} {kwargs.get('namespace')}")
        raise ApiError(403, "Forbidden", "forbidden:\nAuthorization: Bearer s3cr3t", "/apis/x")


def test_a_failed_lookup_makes_the_whole_cluster_unavailable() -> None:
    store = ForbiddenListStore(gateway("p0", "gw"), gateway("p2", "gw"))
    index = UpstreamIndex(SnapshotUpstreams({"single": store}))
    targets = [
        RouteTarget("single", "p0", ("gw",)),  # a GET: found
        RouteTarget("single", "p1", ("gw-a", "gw-b")),  # a list: forbidden
        RouteTarget("single", "p2", ("gw",)),  # not read: the cluster failed already
    ]

    index.load(Wanted.of(targets), suspect_min_routes=10)

    state = index.clusters["single"]
    assert state.status is ClusterStatus.UNAVAILABLE
    assert state.detail.startswith("Gateway lookup in namespace p1 failed: HTTP 403")
    assert "s3cr3t" not in state.detail and "\n" not in state.detail
    assert store.calls == ["discovery", "get gateways p0/gw", "list gateways p1", "close"]
    for target in targets:
        assert index.view(target).cluster_status is ClusterStatus.UNAVAILABLE


def test_a_group_asks_for_each_pair_once_in_a_tuple_while_few_then_in_a_set() -> None:
    group = Group()
    group.ask([("p", "gw-a"), ("p", "gw-a"), ("q", "gw-a")])
    assert group.asked == (("p", "gw-a"), ("q", "gw-a"))
    pairs = [("p", f"gw-{i}") for i in range(FEW_ASKED + 3)]
    group.ask(pairs + pairs)
    assert isinstance(group.asked, set)
    assert group.asked == {("p", "gw-a"), ("q", "gw-a"), *pairs}


def test_clusters_that_end_alike_keep_one_state_and_none_can_be_changed_under_another() -> None:
    """Most clusters end alike (answered, one route, its Gateway found): one state for all of
    them. It is frozen: a shared state changed for one cluster would change the others'."""
    import dataclasses

    stores = {c: CountingStore(gateway("app", "gw")) for c in ("p1", "p2", "p3")}
    stores["p3"] = CountingStore()  # its Gateway is gone
    index = UpstreamIndex(SnapshotUpstreams(stores))
    index.load(
        Wanted.of(RouteTarget(c, "app", ("gw",), f"hub-{c}") for c in stores),
        suspect_min_routes=10,
    )
    p1, p2, p3 = (index.clusters[c] for c in ("p1", "p2", "p3"))
    assert p1 is p2 and p1.gateways_found == 1 and p1.routes == 1
    assert p3 is not p1 and p3.gateways_found == 0 and p3.status is ClusterStatus.OK
    with pytest.raises(dataclasses.FrozenInstanceError):
        p1.routes = 5  # type: ignore[misc]


CLUSTERS = ("c1", "c2", "c3")
NAMESPACES_ASKED = ("app", "web")
GATEWAY_NAMES = ("gw", "gw-b")
ROUTE = st.tuples(
    st.sampled_from(CLUSTERS),
    st.sampled_from(NAMESPACES_ASKED),
    st.sets(st.sampled_from(GATEWAY_NAMES), min_size=1),
)
UPSTREAM = st.sets(st.tuples(st.sampled_from(NAMESPACES_ASKED), st.sampled_from(GATEWAY_NAMES)))


@given(
    routes=st.lists(ROUTE, min_size=1, max_size=8),
    upstream=st.fixed_dictionaries({c: UPSTREAM for c in CLUSTERS}),
    namespaces=st.fixed_dictionaries(
        {c: st.sets(st.sampled_from(NAMESPACES_ASKED)) for c in CLUSTERS}
    ),
)
def test_each_clusters_namespaces_answer_for_that_cluster_alone(
    routes: list[tuple[str, str, set[str]]],
    upstream: dict[str, set[tuple[str, str]]],
    namespaces: dict[str, set[str]],
) -> None:
    """Equal answers of different clusters are held as one object (and a cluster's one
    namespace as a pair): what each view says is still that cluster's and namespace's own,
    a namespace's existence read for one cluster included."""
    stores = {
        cluster: CountingStore(
            *(gateway(ns, name) for ns, name in upstream[cluster]),
            *(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                for ns in namespaces[cluster]
            ),
        )
        for cluster in CLUSTERS
    }
    index = UpstreamIndex(SnapshotUpstreams(stores))
    targets = [RouteTarget(c, ns, tuple(sorted(names))) for c, ns, names in routes]
    index.load(Wanted.of(targets), suspect_min_routes=100)
    for target in targets:
        asked = {
            n
            for c, ns, names in routes
            if (c, ns) == (target.cluster, target.namespace)
            for n in names
        }
        there = {name for ns, name in upstream[target.cluster] if ns == target.namespace}
        assert index.covers(target)
        assert index.view(target).gateways == frozenset(asked & there)
    for target in targets:
        exists = target.namespace in namespaces[target.cluster]
        assert index.namespace_exists(target.cluster, target.namespace) is exists
    for target in targets:
        view = index.view(target)
        assert view.namespace_exists is (target.namespace in namespaces[target.cluster])
