"""gcjob/sweeps/routes/act.py: parent Gateways are read again, upstream, right before deleting."""

from __future__ import annotations

from gcjob.act.deleter import Deleter
from gcjob.budget import RunBudget
from gcjob.enumerate.upstream import UpstreamIndex
from gcjob.kube.snapshot import SnapshotStore, SnapshotUpstreams
from gcjob.model import Action, Looked, RouteTarget, SecondLook, UpstreamOwner, Verdict
from gcjob.reasons import Reason
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


OWNER = UpstreamOwner("single", "gateway.networking.k8s.io", "HTTPRoute", "default", "web")
OWNER_GONE = Verdict(ref("HTTPRoute", "web"), True, Reason.OWNER_GONE, "HTTPRoute not found")
OWNED_TARGET = RouteTarget("single", "default", ("gw-a",), owner=OWNER)


def _gateway_a() -> SnapshotStore:
    store = with_namespace()
    store.add(
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": "gw-a", "namespace": "default"},
        }
    )
    return store


def test_a_route_whose_upstream_httproute_is_still_gone_goes_though_its_gateway_exists() -> None:
    asked: list[UpstreamOwner] = []

    def still_gone(owner: UpstreamOwner) -> SecondLook:
        asked.append(owner)
        return SecondLook(Looked.PROVEN, "not found")

    outcome = delete_route(
        OWNER_GONE, OWNED_TARGET, index(_gateway_a()), deleter(), owner_still_gone=still_gone
    )
    assert (outcome.action, outcome.reason) == (Action.WOULD_DELETE, "owner-gone")
    assert asked == [OWNER]


def test_an_upstream_httproute_back_on_the_second_look_keeps_the_route_as_appeared() -> None:
    back = SecondLook(Looked.NO_LONGER, f"on a second look {OWNER} is present")
    outcome = delete_route(
        OWNER_GONE, OWNED_TARGET, index(_gateway_a()), deleter(), owner_still_gone=lambda _: back
    )
    assert (outcome.action, outcome.reason) == (Action.SKIPPED, "owner-appeared")
    assert "is present" in outcome.detail


def test_an_upstream_httproute_not_read_again_keeps_the_route_as_a_lookup_failure() -> None:
    """Nothing appeared: a read failed (issue 30 item 3). Before, these were `owner-appeared`
    (this test replaces one that asserted that)."""
    failed = SecondLook(Looked.FAILED, "HTTP 503 ServiceUnavailable")
    outcome = delete_route(
        OWNER_GONE, OWNED_TARGET, index(_gateway_a()), deleter(), owner_still_gone=lambda _: failed
    )
    assert (outcome.action, outcome.reason) == (Action.SKIPPED, "lookup-failed")
    assert "503" in outcome.detail
    unread = SecondLook(Looked.PROVEN, "")
    for target, check in ((OWNED_TARGET, None), (TARGET, lambda _: unread)):
        kept = delete_route(OWNER_GONE, target, index(_gateway_a()), deleter(), None, check)
        assert (kept.action, kept.reason) == (Action.SKIPPED, "lookup-failed")


def test_a_stop_during_the_second_look_at_the_upstream_httproute_deletes_nothing() -> None:
    def stopped(owner: UpstreamOwner) -> SecondLook:
        return SecondLook(Looked.STOPPED, "deadline")

    outcome = delete_route(
        OWNER_GONE, OWNED_TARGET, index(_gateway_a()), deleter(), owner_still_gone=stopped
    )
    assert (outcome.action, outcome.reason) == (Action.SKIPPED, "stopped")


PROJECT_GONE = Verdict(ref("HTTPRoute", "web"), True, Reason.PROJECT_GONE, "project p gone")


def test_a_project_gone_route_goes_only_on_a_second_look_that_answered_not_found() -> None:
    looks = {
        Looked.PROVEN: (Action.WOULD_DELETE, "project-gone"),
        Looked.NO_LONGER: (Action.SKIPPED, "owner-appeared"),
        Looked.FAILED: (Action.SKIPPED, "lookup-failed"),
        Looked.STOPPED: (Action.SKIPPED, "stopped"),
    }
    for found, expected in looks.items():
        asked: list[str] = []

        def still_gone(cluster: str, found: Looked = found, asked: list[str] = asked) -> SecondLook:
            asked.append(cluster)
            return SecondLook(found, "what was read")

        outcome = delete_route(
            PROJECT_GONE, TARGET, index(with_namespace()), deleter(), project_still_gone=still_gone
        )
        assert (outcome.action, outcome.reason) == expected, found
        assert asked == ["single"]
    unasked = delete_route(PROJECT_GONE, TARGET, index(with_namespace()), deleter())
    assert (unasked.action, unasked.reason) == (Action.SKIPPED, "lookup-failed")
