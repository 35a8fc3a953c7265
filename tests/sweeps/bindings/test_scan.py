"""gcjob/sweeps/bindings/scan.py: every ResourceBinding in scope, into one sink per listed
namespace; and whether a binding's object exists, by name, labelled or not."""

from __future__ import annotations

from gcjob.enumerate.scope import Scope
from gcjob.kube.access import Collected
from gcjob.kube.snapshot import SnapshotStore
from gcjob.model import Binding
from gcjob.sweeps.bindings.scan import bound_object_exists, scan_bindings
from testbed.objects import binding, companion


def store(*objects: dict[str, object]) -> SnapshotStore:
    hub = SnapshotStore("hub", [], every_kind=True)
    for obj in objects:
        hub.add(obj)
    return hub


def test_bindings_are_scanned_per_listed_namespace_and_kept_to_the_scope() -> None:
    hub = store(
        binding("ns-a", "app-configmap", kind="ConfigMap", target="app"),
        binding("ns-b", "db-secret", kind="Secret", target="db"),
        binding("kube-system", "x-configmap", kind="ConfigMap", target="x"),
    )
    sinks: list[Collected[Binding]] = scan_bindings(hub, Scope(), Collected)
    names = sorted(b.ref.name for sink in sinks for b in sink.records)
    assert names == ["app-configmap", "db-secret"]  # a reserved namespace is never swept
    one = scan_bindings(hub, Scope(("ns-b",)), Collected)
    assert [[b.ref.name for b in sink.records] for sink in one] == [["db-secret"]]
    bound = next(b for sink in sinks for b in sink.records if b.ref.name == "app-configmap")
    assert bound.ref.kind == "ResourceBinding" and bound.policy_annotation == "city-dfw"


def test_an_object_exists_by_its_name_labelled_or_not() -> None:
    hub = store(
        companion("ConfigMap", "ns-a", "labelled", ["default/web"]),
        companion("Secret", "ns-a", "plain", None, labelled=False),
    )
    assert bound_object_exists(hub, "ConfigMap", "ns-a", "labelled")
    assert bound_object_exists(hub, "Secret", "ns-a", "plain")
    assert not bound_object_exists(hub, "ConfigMap", "ns-a", "plain")  # another kind
    assert not bound_object_exists(hub, "Secret", "ns-b", "plain")  # another namespace
