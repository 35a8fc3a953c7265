"""gcjob/sweeps/bindings/act.py: a binding is deleted only while its object is still absent."""

from __future__ import annotations

from gcjob.act.deleter import Deleter
from gcjob.budget import RunBudget
from gcjob.kube.snapshot import SnapshotStore
from gcjob.model import Action, Verdict
from gcjob.sweeps.bindings.act import delete_binding
from testbed.model import HUB_NS, ref
from tests.sweeps.companions.test_act import FailingReads

VERDICT = Verdict(ref("ResourceBinding", "app-config-configmap"), True, "orphaned", "gone")


def deleter() -> Deleter:
    return Deleter(None, dry_run=True, budget=RunBudget(None), qps=0)


def test_still_absent_is_deleted() -> None:
    outcome = delete_binding(
        VERDICT, ("ConfigMap", "app-config"), SnapshotStore("h", [], every_kind=True), deleter()
    )
    assert (outcome.action, outcome.reason) == (Action.WOULD_DELETE, "orphaned")


def test_an_object_that_appeared_keeps_its_binding() -> None:
    store = SnapshotStore("h", [], every_kind=True)
    store.add(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "app-config", "namespace": HUB_NS},
        }
    )

    outcome = delete_binding(VERDICT, ("ConfigMap", "app-config"), store, deleter())

    assert (outcome.action, outcome.reason) == (Action.SKIPPED, "object-appeared")


def test_a_failed_second_look_is_a_skip() -> None:
    outcome = delete_binding(VERDICT, ("Secret", "app-config"), FailingReads("Secret"), deleter())
    assert (outcome.action, outcome.reason) == (Action.SKIPPED, "lookup-failed")
