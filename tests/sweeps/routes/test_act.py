"""gcjob/sweeps/routes/act.py: parent Gateways are read again, upstream, right before deleting."""

from __future__ import annotations

from gcjob.act.deleter import Deleter
from gcjob.budget import RunBudget
from gcjob.enumerate.upstream import UpstreamIndex
from gcjob.kube.snapshot import SnapshotStore, SnapshotUpstreams
from gcjob.model import Action, RouteTarget, Verdict
from gcjob.sweeps.routes.act import delete_route
from testbed.model import ref
from tests.sweeps.companions.test_act import FailingReads

VERDICT = Verdict(ref("HTTPRoute", "web"), True, "upstream-gateways-gone", "gone")
TARGET = RouteTarget("single", "default", ("gw-a", "gw-b"))


def index(store: SnapshotStore) -> UpstreamIndex:
    return UpstreamIndex(SnapshotUpstreams({"single": store}))


def deleter() -> Deleter:
    return Deleter(None, dry_run=True, budget=RunBudget(None), qps=0)


def with_namespace(name: str = "default") -> SnapshotStore:
    store = SnapshotStore("u", [], every_kind=True)
    store.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return store


def test_all_parents_still_gone_is_deleted() -> None:
    outcome = delete_route(VERDICT, TARGET, index(with_namespace()), deleter())
    assert (outcome.action, outcome.reason) == (Action.WOULD_DELETE, "upstream-gateways-gone")


def test_a_gone_upstream_namespace_is_said_when_deleting() -> None:
    outcome = delete_route(VERDICT, TARGET, index(with_namespace("other")), deleter())
    assert (outcome.action, outcome.reason) == (Action.WOULD_DELETE, "upstream-namespace-gone")
    assert "namespace default no longer exists" in outcome.detail


def test_a_gateway_that_came_back_keeps_the_route() -> None:
    store = SnapshotStore("u", [], every_kind=True)
    store.add(
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": "gw-b", "namespace": "default"},
        }
    )

    outcome = delete_route(VERDICT, TARGET, index(store), deleter())

    assert (outcome.action, outcome.reason) == (Action.SKIPPED, "gateway-appeared")


def test_an_upstream_that_fails_the_second_look_keeps_the_route() -> None:
    outcome = delete_route(VERDICT, TARGET, index(FailingReads("Gateway")), deleter())
    assert (outcome.action, outcome.reason) == (Action.SKIPPED, "upstream-unavailable")


def test_an_unknown_cluster_is_never_read_as_gone() -> None:
    unknown = RouteTarget("elsewhere", "default", ("gw-a",))
    outcome = delete_route(
        VERDICT, unknown, index(SnapshotStore("u", [], every_kind=True)), deleter()
    )
    assert (outcome.action, outcome.reason) == (Action.SKIPPED, "upstream-unavailable")
