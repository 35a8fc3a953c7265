"""End to end on a Karmada hub (testbed/karmada.py): the bindings gcjob judges are made by
Karmada v1.16.0's own resource detector for a real `city-*` PropagationPolicy, carry what
Karmada puts on them, and are taken apart by Karmada's binding controller and the hub's
garbage collector. Each test makes its world, waits until Karmada has settled it, then runs
gcjob: Karmada's writes race the collector's (issue 47), and a test judges a world, not a
race."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from testbed.cluster import TestCluster, wait_for
from testbed.faultproxy import Fault
from testbed.fixtures import Karmada
from testbed.objects import KARMADA_FINALIZER, companion, owner_reference, workload
from testbed.report import records_of, start_gcjob
from tests.e2e.test_undo_e2e import by_object, record_of, restore

POLICY_PERMANENT_ID = "propagationpolicy.karmada.io/permanent-id"
BINDING_PERMANENT_ID = "resourcebinding.karmada.io/permanent-id"
GONE = ["default/gone"]


def _absent(cluster: TestCluster, kind: str, ns: str, name: str) -> None:
    """Until it is not there at all: Karmada's finalizer and the collector's let go."""
    wait_for(lambda: cluster.absent(kind, ns, name), 60, f"for {kind} {ns}/{name} to go")


def _held_by_karmada(item: dict[str, Any] | None, reason: str) -> None:
    """A delete went out and karmada-controller-manager, stopped, could not let its finalizer
    go: `delete-held`, naming it (issue 47 item 3), never `deleted`, failed or kept."""
    assert item is not None
    assert (item["action"], item["reason"]) == ("delete-held", reason), item
    assert KARMADA_FINALIZER in item["detail"], item


def _binding_path(ns: str, name: str) -> str:
    return f"/namespaces/{ns}/resourcebindings/{name}$"


def _items(out: str) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in records_of(out) if r.get("record") == "item"}


def test_karmada_binds_a_companion_as_gcjob_expects(karmada: Karmada) -> None:
    """What Karmada puts on the binding it makes (a controller ownerReference to the template
    that blocks its deletion, its finalizer, both permanent ids, the policy named in
    annotations) and on the template; gcjob takes that binding as its companion's: a live
    companion's is not judged, an orphan's would go with it."""
    hub = karmada.cluster
    ns = hub.namespace()
    policy = karmada.propagate(ns)
    hub.create(workload(ns, "web-dfw"))
    live = hub.create(companion("ConfigMap", ns, "live", ["default/web-dfw"]))
    orphan = hub.create(companion("Secret", ns, "orphan", GONE))
    live_binding, orphan_binding = karmada.bound(live), karmada.bound(orphan)

    meta = orphan_binding["metadata"]
    assert meta["name"] == "orphan-secret"
    assert meta["ownerReferences"] == [
        {**owner_reference(orphan, controller=True), "blockOwnerDeletion": True}
    ]
    assert meta["finalizers"] == [KARMADA_FINALIZER]
    assert meta["labels"][POLICY_PERMANENT_ID] == policy["metadata"]["labels"][POLICY_PERMANENT_ID]
    assert meta["labels"][BINDING_PERMANENT_ID]  # Karmada's webhook's
    assert meta["annotations"]["propagationpolicy.karmada.io/name"] == "city-dfw"
    assert meta["annotations"]["propagationpolicy.karmada.io/namespace"] == ns
    resource = orphan_binding["spec"]["resource"]
    assert (resource["kind"], resource["name"], resource["uid"]) == (
        "Secret",
        "orphan",
        orphan["metadata"]["uid"],
    )
    template = hub.get("Secret", ns, "orphan")
    assert template is not None
    assert template["metadata"]["annotations"]["propagationpolicy.karmada.io/name"] == "city-dfw"
    assert POLICY_PERMANENT_ID in template["metadata"]["labels"]

    result = karmada.sweep(ns)

    assert result.exit_code == 0, result.stderr
    assert result.outcome("Secret", "orphan") == ("would-delete", "orphaned")
    assert result.outcome("ResourceBinding", "orphan-secret") == (
        "would-delete",
        "companion-deleted",
    )
    assert result.item("ConfigMap", "live") is None  # healthy: counted, not listed
    assert result.item("ResourceBinding", live_binding["metadata"]["name"]) is None
    assert hub.present("ResourceBinding", ns, "orphan-secret")


def test_the_companions_sweep_takes_a_companion_and_the_binding_karmada_made(
    karmada: Karmada,
) -> None:
    """gcjob deletes the orphaned companion, then the binding Karmada made for it; Karmada's
    binding controller lets its finalizer go and the binding is gone, not Terminating. A live
    companion and its binding stay as they were. gcjob runs with karmada-controller-manager
    stopped: with it running, its detector may put the owner back on the binding after the
    companion's delete and the collector take the binding before gcjob's read or delete of it
    (the race the tests below make deterministic); here the binding is gcjob's to delete."""
    hub = karmada.cluster
    ns = hub.namespace()
    karmada.propagate(ns)
    hub.create(workload(ns, "web-dfw"))
    orphan = hub.create(companion("ConfigMap", ns, "app-config", GONE))
    live = hub.create(companion("ConfigMap", ns, "live", ["default/web-dfw"]))
    karmada.bound(orphan)
    kept = karmada.bound(live)

    with karmada.hub.controllers_stopped():
        result = karmada.sweep(ns, "--delete", "--sweep", "companions")
        left = hub.get("ResourceBinding", ns, "app-config-configmap")
        assert left is not None, "gone without Karmada"
        assert KARMADA_FINALIZER in left["metadata"]["finalizers"]

    assert result.exit_code == 0, result.stderr
    assert result.outcome("ConfigMap", "app-config") == ("deleted", "orphaned")
    _held_by_karmada(result.item("ResourceBinding", "app-config-configmap"), "companion-deleted")
    assert result.summary["totals"].get("delete-held") == 1
    _absent(hub, "ConfigMap", ns, "app-config")
    _absent(hub, "ResourceBinding", ns, "app-config-configmap")  # Karmada let it go
    still = hub.get("ResourceBinding", ns, "live-configmap")
    assert still is not None and still["metadata"]["uid"] == kept["metadata"]["uid"]
    assert not still["metadata"].get("deletionTimestamp")
    assert result.item("ConfigMap", "live") is None


def test_a_binding_whose_template_went_with_cascade_orphan_is_deleted(karmada: Karmada) -> None:
    """`kubectl delete --cascade=orphan` of a companion: the collector takes its ownerReference
    off the binding Karmada made, and the binding stays, with Karmada's finalizer, forever.
    Made with karmada-controller-manager stopped, so that its detector cannot put the owner
    back (and the collector then take the binding itself); judged with it running. The
    bindings sweep deletes it, and Karmada lets it go."""
    hub = karmada.cluster
    ns = hub.namespace()
    karmada.propagate(ns)
    template = hub.create(companion("ConfigMap", ns, "app-config", GONE))
    karmada.bound(template)
    with karmada.hub.controllers_stopped():
        hub.delete("ConfigMap", ns, "app-config", "Orphan")
        _absent(hub, "ConfigMap", ns, "app-config")

        def orphaned() -> bool:
            left = hub.get("ResourceBinding", ns, "app-config-configmap")
            assert left is not None, "the binding went with its template"
            return not left["metadata"].get("ownerReferences")

        wait_for(orphaned, 60, "for the collector to orphan the binding")
    left = hub.get("ResourceBinding", ns, "app-config-configmap")
    assert left is not None and not left["metadata"].get("deletionTimestamp")
    assert left["metadata"]["finalizers"] == [KARMADA_FINALIZER]

    result = karmada.sweep(ns, "--delete", "--sweep", "bindings")

    assert result.exit_code == 0, result.stderr
    # Judged with Karmada running: its binding controller lets go, and the re-read sees it.
    assert result.outcome("ResourceBinding", "app-config-configmap") == ("deleted", "orphaned")
    _absent(hub, "ResourceBinding", ns, "app-config-configmap")


def test_a_binding_the_collector_takes_first_is_already_gone(karmada: Karmada) -> None:
    """Karmada's detector rewrites a binding's ownerReferences: after a companion's Orphan
    delete, it may put the owner back once the collector has removed it, and the collector
    then deletes the binding itself, under gcjob's pinned delete. Made deterministic: with
    karmada-controller-manager stopped, gcjob's delete of the binding is held at the proxy
    while the detector's write is made here (the owner put back, as the detector writes it)
    and the collector deletes the binding; Karmada, started again, lets it go; then gcjob's
    delete goes out (404). The item is `already-gone`, never `failed`."""
    hub = karmada.cluster
    ns = hub.namespace()
    karmada.propagate(ns)
    template = hub.create(companion("ConfigMap", ns, "app-config", GONE))
    karmada.bound(template)
    gate = threading.Event()
    path = _binding_path(ns, "app-config-configmap")
    held = karmada.faults.add_fault(Fault(method="DELETE", path=path, hold=gate))
    try:
        with karmada.hub.controllers_stopped():
            run = start_gcjob(*karmada.args, "--namespace", ns, "--delete", "--sweep", "companions")
            wait_for(lambda: held.hits == 1, 60, "for the binding's delete")
            _detector_puts_the_owner_back(hub, template)
        _absent(hub, "ResourceBinding", ns, "app-config-configmap")
    finally:
        gate.set()
    out, err = run.communicate(timeout=60)

    assert run.returncode == 0, err
    items = _items(out)
    assert (items["app-config"]["action"], items["app-config"]["reason"]) == ("deleted", "orphaned")
    binding = items["app-config-configmap"]
    assert (binding["action"], binding["reason"]) == ("already-gone", "already-gone")
    sent = [
        r.status
        for r in karmada.faults.requests
        if r.method == "DELETE" and "resourcebindings" in r.path
    ]
    assert sent == [404]


def test_a_binding_gone_when_read_again_after_a_409_is_already_gone(karmada: Karmada) -> None:
    """The same race, caught later: gcjob's pinned delete of the binding meets it changed
    (the collector has deleted it: Terminating on Karmada's finalizer), a 409; by gcjob's
    read after the 409, Karmada has let it go. The item is `already-gone` (someone else
    deleted it), not a conflict `decided again next run`. Deterministic: each of gcjob's two
    requests is held at the proxy until the world is as said."""
    hub = karmada.cluster
    ns = hub.namespace()
    karmada.propagate(ns)
    template = hub.create(companion("ConfigMap", ns, "app-config", GONE))
    karmada.bound(template)
    deleting, reading = threading.Event(), threading.Event()
    path = _binding_path(ns, "app-config-configmap")
    delete = karmada.faults.add_fault(Fault(method="DELETE", path=path, hold=deleting))
    try:
        with karmada.hub.controllers_stopped():
            run = start_gcjob(*karmada.args, "--namespace", ns, "--delete", "--sweep", "companions")
            wait_for(lambda: delete.hits == 1, 60, "for the binding's delete")
            _detector_puts_the_owner_back(hub, template)
            read = karmada.faults.add_fault(Fault(method="GET", path=path, hold=reading))
            deleting.set()
            wait_for(lambda: read.hits == 1, 60, "for the binding's read after the 409")
        _absent(hub, "ResourceBinding", ns, "app-config-configmap")
    finally:
        deleting.set()
        reading.set()
    out, err = run.communicate(timeout=60)

    assert run.returncode == 0, err
    binding = _items(out)["app-config-configmap"]
    assert (binding["action"], binding["reason"]) == ("already-gone", "already-gone"), binding
    sent = [
        (r.method, r.status)
        for r in karmada.faults.requests
        if r.path.endswith("/resourcebindings/app-config-configmap")
    ]
    assert sent[-2:] == [("DELETE", 409), ("GET", 404)], sent
    assert [m for m, _ in sent].count("DELETE") == 1


def _detector_puts_the_owner_back(hub: TestCluster, template: dict[str, Any]) -> None:
    """Once the companion is gone and the collector has taken its ownerReference off the
    binding, the owner put back as Karmada's detector writes it; the collector then deletes
    the binding (Terminating on Karmada's finalizer while karmada-controller-manager is
    stopped)."""
    meta = template["metadata"]
    ns, name = meta["namespace"], f"{meta['name']}-{template['kind'].lower()}"
    _absent(hub, template["kind"], ns, meta["name"])

    def stripped() -> bool:
        binding = hub.get("ResourceBinding", ns, name)
        assert binding is not None
        return not binding["metadata"].get("ownerReferences")

    wait_for(stripped, 60, "for the collector to take the owner off the binding")
    owner = {**owner_reference(template, controller=True), "blockOwnerDeletion": True}
    hub.patch("ResourceBinding", ns, name, {"metadata": {"ownerReferences": [owner]}})

    def deleted() -> bool:
        binding = hub.get("ResourceBinding", ns, name)
        assert binding is not None, "Karmada let go while stopped"
        return bool(binding["metadata"].get("deletionTimestamp"))

    wait_for(deleted, 60, "for the collector to delete the binding")


def test_a_restored_karmada_binding_is_karmadas_again(karmada: Karmada, tmp_path: Path) -> None:
    """A companion and the binding Karmada made for it, deleted with a record (with
    karmada-controller-manager stopped: no race, the binding is deleted by gcjob, then let go
    by Karmada), then restored (`gcjob restore --apply`, Karmada stopped again, so that its
    detector does not make a new binding first): the binding comes back owned by the restored
    companion, and Karmada takes it as its own again (the binding it keeps, its spec.resource
    now naming the new uid), protected from gcjob's next run."""
    hub = karmada.cluster
    ns = hub.namespace()
    karmada.propagate(ns)
    template = hub.create(companion("ConfigMap", ns, "app-config", GONE))
    made = karmada.bound(template)
    records = tmp_path / "records"
    records.mkdir()
    with karmada.hub.controllers_stopped():  # no detector's race: the binding is gcjob's to delete
        deleted = karmada.sweep(ns, "--delete", "--record-deletions", str(records))
    assert deleted.outcome("ConfigMap", "app-config") == ("deleted", "orphaned")
    _held_by_karmada(deleted.item("ResourceBinding", "app-config-configmap"), "companion-deleted")
    _absent(hub, "ResourceBinding", ns, "app-config-configmap")
    record, recorded = record_of(records)
    entry = next(r for r in recorded if r.kind == "ResourceBinding")
    assert entry.meta["finalizers"] == [KARMADA_FINALIZER]  # recorded as Karmada made it
    assert (
        entry.meta["labels"][BINDING_PERMANENT_ID]
        == made["metadata"]["labels"][BINDING_PERMANENT_ID]
    )

    with karmada.hub.controllers_stopped():
        code, lines = restore(karmada.kubeconfig, record, "--apply")
        assert code == 0, lines
        restored = by_object(lines)
        assert {line["action"] for line in restored.values()} == {"restored"}, lines

    companion_now = hub.get("ConfigMap", ns, "app-config")
    assert companion_now is not None
    new_uid = companion_now["metadata"]["uid"]
    assert new_uid != template["metadata"]["uid"]
    karmada_binding = karmada.bound(companion_now)
    meta = karmada_binding["metadata"]
    binding_line = restored[f"ResourceBinding/{ns}/app-config-configmap"]
    assert meta["uid"] == binding_line["new_uid"]  # the restored binding, adopted, not remade
    assert karmada_binding["spec"]["resource"]["uid"] == new_uid
    assert meta["finalizers"] == [KARMADA_FINALIZER]
    assert meta["labels"][BINDING_PERMANENT_ID] == made["metadata"]["labels"][BINDING_PERMANENT_ID]
    assert meta["annotations"]["gcjob.datumapis.com/protect"] == "true"

    again = karmada.sweep(ns, "--delete")

    assert again.outcome("ConfigMap", "app-config") == ("skipped", "protected")
    assert hub.present("ResourceBinding", ns, "app-config-configmap")


def test_a_binding_karmadas_finalizer_holds_is_reported_held(karmada: Karmada) -> None:
    """Without karmada-controller-manager, a deleted binding stays Terminating on Karmada's
    finalizer: gcjob's item says its deletion is held and names the finalizer, not
    `deleted`; once Karmada runs again, it goes."""
    hub = karmada.cluster
    ns = hub.namespace()
    karmada.propagate(ns)
    karmada.bound(hub.create(companion("ConfigMap", ns, "app-config", GONE)))
    with karmada.hub.controllers_stopped():
        result = karmada.sweep(ns, "--delete", "--sweep", "companions")
        left = hub.get("ResourceBinding", ns, "app-config-configmap")
        assert left is not None and left["metadata"].get("deletionTimestamp")
        assert KARMADA_FINALIZER in left["metadata"]["finalizers"]
        item = result.item("ResourceBinding", "app-config-configmap")
        assert item is not None
        assert KARMADA_FINALIZER in item["detail"]
        assert item["action"] == "delete-held", item
        assert result.summary["totals"].get("delete-held") == 1
        assert result.exit_code == 0
    _absent(hub, "ResourceBinding", ns, "app-config-configmap")
