"""gcjob/sweeps/companions/act.py: the live second look, and the binding that goes with a companion.

The hub here is an in-memory store; `Deleter` runs as a dry run, so what is checked is the
decision to act, taken on what the second look finds.
"""

from __future__ import annotations

from typing import Any

from gcjob.act.deleter import Deleter
from gcjob.budget import RunBudget
from gcjob.kube.errors import Unavailable
from gcjob.kube.snapshot import SnapshotStore
from gcjob.model import Action, Verdict
from gcjob.sweeps.companions.act import delete_companion
from testbed.model import HUB_NS, ref


def hub(*objects: dict[str, Any]) -> SnapshotStore:
    store = SnapshotStore("hub", [], every_kind=True)
    for obj in objects:
        store.add(obj)
    return store


def dry_deleter() -> Deleter:
    return Deleter(None, dry_run=True, budget=RunBudget(None), qps=0)


def orphan(name: str = "app-config", kind: str = "ConfigMap") -> Verdict:
    return Verdict(ref(kind, name), True, "orphaned", "gone", referrers=("default/web",))


def rb(name: str, target: str, *, uid: str = "uid-1", terminating: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": HUB_NS,
        "uid": "rb-uid",
        "resourceVersion": "7",
    }
    if terminating:
        meta["deletionTimestamp"] = "2026-07-01T11:00:00Z"
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": meta,
        "spec": {
            "resource": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": target,
                "namespace": HUB_NS,
                "uid": uid,
            }
        },
    }


def test_a_referrer_that_appeared_since_the_index_saves_the_companion() -> None:
    wd = {
        "apiVersion": "compute.datumapis.com/v1alpha",
        "kind": "WorkloadDeployment",
        "metadata": {"name": "web", "namespace": HUB_NS},
    }

    outcomes = delete_companion(orphan(), hub(wd), dry_deleter())

    assert [(o.action, o.reason) for o in outcomes] == [(Action.SKIPPED, "referrer-appeared")]


def test_the_binding_follows_when_it_names_the_companion() -> None:
    outcomes = delete_companion(
        orphan(), hub(rb("app-config-configmap", "app-config")), dry_deleter()
    )

    assert [(o.ref.kind, o.action, o.reason) for o in outcomes] == [
        ("ConfigMap", Action.WOULD_DELETE, "orphaned"),
        ("ResourceBinding", Action.WOULD_DELETE, "companion-deleted"),
    ]


def test_no_binding_is_fine() -> None:
    outcomes = delete_companion(orphan(), hub(), dry_deleter())
    assert [(o.ref.kind, o.action) for o in outcomes] == [("ConfigMap", Action.WOULD_DELETE)]


def test_a_binding_of_another_uid_is_kept() -> None:
    outcomes = delete_companion(
        orphan(), hub(rb("app-config-configmap", "app-config", uid="someone-else")), dry_deleter()
    )
    assert (outcomes[1].action, outcomes[1].reason) == (Action.SKIPPED, "binding-mismatch")


def test_a_terminating_binding_is_not_deleted_again() -> None:
    outcomes = delete_companion(
        orphan(), hub(rb("app-config-configmap", "app-config", terminating=True)), dry_deleter()
    )
    assert (outcomes[1].action, outcomes[1].reason) == (Action.SKIPPED, "terminating")


class FailingReads(SnapshotStore):
    def __init__(self, failing_kind: str, *objects: dict[str, Any]) -> None:
        super().__init__("hub", [], every_kind=True)
        self.failing_kind = failing_kind
        for obj in objects:
            self.add(obj)

    def get(self, resource, namespace, name, reduce, *, metadata_only=True):  # type: ignore[no-untyped-def]
        if resource.kind == self.failing_kind:
            raise Unavailable(f"{resource.plural} unreachable")
        return super().get(resource, namespace, name, reduce, metadata_only=metadata_only)


def test_a_failed_second_look_is_a_skip_never_a_delete() -> None:
    outcomes = delete_companion(orphan(), FailingReads("WorkloadDeployment"), dry_deleter())

    assert [(o.action, o.reason) for o in outcomes] == [(Action.SKIPPED, "lookup-failed")]
    assert "unreachable" in outcomes[0].detail


def test_a_failed_binding_lookup_is_reported_and_the_binding_left() -> None:
    outcomes = delete_companion(orphan(), FailingReads("ResourceBinding"), dry_deleter())

    assert outcomes[0].action is Action.WOULD_DELETE
    assert (outcomes[1].ref.name, outcomes[1].action, outcomes[1].reason) == (
        "app-config-configmap",
        Action.SKIPPED,
        "lookup-failed",
    )


def test_nothing_is_done_after_a_stop() -> None:
    budget = RunBudget(None)
    budget.request_stop("SIGTERM")
    deleter = Deleter(None, dry_run=False, budget=budget, qps=0)

    outcomes = delete_companion(orphan(), hub(), deleter)

    assert [(o.action, o.reason) for o in outcomes] == [(Action.SKIPPED, "stopped")]


class CountingReads(SnapshotStore):
    """The in-memory hub, counting the WorkloadDeployment names looked up."""

    def __init__(self) -> None:
        super().__init__("hub", [], every_kind=True)
        self.looked_up: list[str] = []

    def get(self, resource, namespace, name, reduce, *, metadata_only=True):  # type: ignore[no-untyped-def]
        if resource.kind == "WorkloadDeployment":
            self.looked_up.append(name)
        return super().get(resource, namespace, name, reduce, metadata_only=metadata_only)


def test_the_second_look_costs_one_get_per_distinct_name() -> None:
    # Keys differing only in their project namespace name the same hub WorkloadDeployment.
    keys = ("default/web", "proj-a/web", "proj-b/web", "default/api")
    verdict = Verdict(ref("ConfigMap", "app-config"), True, "orphaned", "gone", referrers=keys)
    store = CountingReads()

    outcomes = delete_companion(verdict, store, dry_deleter())

    assert store.looked_up == ["web", "api"]
    assert outcomes[0].action is Action.WOULD_DELETE
