"""End to end: the companions and bindings sweeps against an API server over HTTP."""

from __future__ import annotations

import threading
from typing import Any

from testbed.cluster import TestCluster, wait_for
from testbed.faultproxy import Fault, FaultProxy
from testbed.fixtures import Collect
from testbed.objects import (
    SECRET_VALUE,
    binding,
    binding_for,
    companion,
    owned_by,
    workload,
)
from testbed.report import HubSweep, records_of, run_gcjob, start_gcjob, summary_of


def test_orphaned_companions_and_their_bindings_are_deleted(
    hub: TestCluster, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(workload(ns, "web-dfw"))
    cm_binding = hub.create_with_binding(
        companion("ConfigMap", ns, "app-config", ["default/web-gone"])
    )
    secret_binding = hub.create_with_binding(
        companion("Secret", ns, "db-creds", ["default/api-gone"])
    )
    legacy_binding = hub.create_with_binding(
        companion("ConfigMap", ns, "configmap.legacy", ["default/old-gone"])
    )
    live_binding = hub.create_with_binding(
        companion("ConfigMap", ns, "live-config", ["default/web-dfw"])
    )
    both_binding = hub.create_with_binding(
        companion("Secret", ns, "shared", ["default/web-dfw", "default/web-gone"])
    )

    result = sweep(ns, "--delete", "--sweep", "companions")

    assert result.exit_code == 0, result.stderr
    for kind, name, rb in (
        ("ConfigMap", "app-config", cm_binding),
        ("Secret", "db-creds", secret_binding),
        ("ConfigMap", "configmap.legacy", legacy_binding),
    ):
        assert hub.gone(kind, ns, name)
        assert hub.gone("ResourceBinding", ns, rb), rb
        assert result.outcome(kind, name) == ("deleted", "orphaned")
        assert result.outcome("ResourceBinding", rb) == ("deleted", "companion-deleted")
    assert legacy_binding == "configmap.legacy-configmap"  # never a stripped prefix
    for kind, name, rb in (
        ("ConfigMap", "live-config", live_binding),
        ("Secret", "shared", both_binding),
    ):
        assert hub.present(kind, ns, name)
        assert hub.present("ResourceBinding", ns, rb)
        assert result.item(kind, name) is None  # healthy: a count, not a record
    counts = result.summary["counts"]["companions"]
    assert counts["deleted"] == {"orphaned": 3, "companion-deleted": 3}
    assert counts["skipped"]["referrer-live"] == 2


def test_dry_run_reports_what_delete_would_do_and_touches_nothing(
    hub: TestCluster, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    rb = hub.create_with_binding(companion("ConfigMap", ns, "app-config", ["default/gone"]))
    hub.create(binding(ns, "gone-config-configmap", kind="ConfigMap", target="gone-config"))

    dry = sweep(ns)

    assert dry.exit_code == 0
    assert dry.summary["dry_run"] is True
    assert dry.outcome("ConfigMap", "app-config") == ("would-delete", "orphaned")
    assert dry.outcome("ResourceBinding", rb) == ("would-delete", "companion-deleted")
    assert dry.outcome("ResourceBinding", "gone-config-configmap") == ("would-delete", "orphaned")
    assert hub.present("ConfigMap", ns, "app-config")
    assert hub.present("ResourceBinding", ns, rb)
    assert hub.present("ResourceBinding", ns, "gone-config-configmap")

    real = sweep(ns, "--delete")

    acted = {(i["kind"], i["name"], i["reason"]) for i in real.items if i["action"] == "deleted"}
    would = {
        (i["kind"], i["name"], i["reason"]) for i in dry.items if i["action"] == "would-delete"
    }
    assert acted == would


def test_preserve_cases_are_kept_with_their_reasons(hub: TestCluster, sweep: HubSweep) -> None:
    ns = hub.namespace()
    cases = {
        "no-annotation": (None, "referrers-missing"),
        "empty-list": ("[]", "referrers-empty"),
        "empty-string": ("", "referrers-empty"),
        "not-json": ("not-json", "referrers-unparseable"),
        "json-object": ('{"default/web": true}', "referrers-not-string-array"),
        "null-in-list": ("[null]", "referrers-not-string-array"),
        "bare-string": ('"default/web"', "referrers-not-string-array"),
        "two-slashes": ('["default/web/x"]', "referrer-key-malformed"),
        "upper-case": ('["Default/Web"]', "referrer-key-malformed"),
    }
    for name, (raw, _) in cases.items():
        hub.create(companion("ConfigMap", ns, name, raw))
    hub.create(
        companion(
            "Secret",
            ns,
            "protected",
            ["default/gone"],
            annotations={"gcjob.datumapis.com/protect": "true"},
        )
    )
    hub.create(companion("ConfigMap", ns, "terminating", ["default/gone"]))
    hub.make_terminating("ConfigMap", ns, "terminating")
    # A terminating WorkloadDeployment still counts as live.
    hub.create(workload(ns, "leaving"))
    hub.make_terminating("WorkloadDeployment", ns, "leaving")
    hub.create(companion("ConfigMap", ns, "referrer-leaving", ["default/leaving"]))
    # A WorkloadDeployment with the companion label is not a companion.
    hub.create(
        workload(ns, "labelled-wd", labels={"compute.datumapis.com/referenced-data": "true"})
    )

    result = sweep(ns, "--delete", "--sweep", "companions")

    assert result.exit_code == 0, result.stderr
    for name, (_, reason) in cases.items():
        assert result.outcome("ConfigMap", name) == ("skipped", reason), name
        assert hub.present("ConfigMap", ns, name)
    assert result.outcome("Secret", "protected") == ("skipped", "protected")
    assert result.outcome("ConfigMap", "terminating") == ("skipped", "terminating")
    assert result.item("ConfigMap", "referrer-leaving") is None
    assert hub.present("ConfigMap", ns, "referrer-leaving")
    assert hub.present("WorkloadDeployment", ns, "labelled-wd")
    assert all(i["kind"] != "WorkloadDeployment" for i in result.items)


def test_young_orphans_are_held_back(hub: TestCluster, hub_kubeconfig: str) -> None:
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "fresh", ["default/gone"]))
    args = ["--hub-kubeconfig", hub_kubeconfig, "--no-lock", "--namespace", ns, "--delete"]
    if hub.context:
        args += ["--hub-context", hub.context]

    result = run_gcjob(*args, "--min-age", "1h")

    assert result.outcome("ConfigMap", "fresh") == ("skipped", "too-young")
    assert hub.present("ConfigMap", ns, "fresh")


def test_binding_naming_another_object_is_left_alone(hub: TestCluster, sweep: HubSweep) -> None:
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "app-config", ["default/gone"]))
    hub.create(binding(ns, "app-config-configmap", kind="ConfigMap", target="other-config"))

    result = sweep(ns, "--delete", "--sweep", "companions")

    assert result.outcome("ConfigMap", "app-config") == ("deleted", "orphaned")
    assert result.outcome("ResourceBinding", "app-config-configmap") == (
        "skipped",
        "binding-mismatch",
    )
    assert hub.present("ResourceBinding", ns, "app-config-configmap")


def test_bindings_sweep_deletes_only_city_bindings_of_absent_objects(
    hub: TestCluster, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create(binding(ns, "gone-config-configmap", kind="ConfigMap", target="gone-config"))
    hub.create(
        binding(ns, "gone-creds-secret", kind="Secret", target="gone-creds", policy_in="label")
    )
    # An unlabelled object of that name still owns its binding.
    hub.create(companion("ConfigMap", ns, "plain", None, labelled=False))
    hub.create(binding(ns, "plain-configmap", kind="ConfigMap", target="plain"))
    untouchable = {
        "other-configmap": binding(
            ns, "other-configmap", kind="ConfigMap", target="other", policy="default-policy"
        ),
        "cpp-configmap": binding(
            ns, "cpp-configmap", kind="ConfigMap", target="cpp", policy_in="cluster"
        ),
        "web-dfw-workloaddeployment": binding(
            ns, "web-dfw-workloaddeployment", kind="WorkloadDeployment", target="web-dfw"
        ),
        "web-httproute": binding(ns, "web-httproute", kind="HTTPRoute", target="web"),
        # The annotation wins over an older label: not city-*, so out of scope.
        "mixed-configmap": binding(
            ns, "mixed-configmap", kind="ConfigMap", target="mixed", policy="legacy-policy"
        ),
    }
    untouchable["mixed-configmap"]["metadata"].setdefault("labels", {})[
        "propagationpolicy.karmada.io/name"
    ] = "city-dfw"
    for obj in untouchable.values():
        hub.create(obj)
    hub.create(
        binding(ns, "leaving-configmap", kind="ConfigMap", target="leaving", karmada_finalizer=True)
    )
    hub.delete("ResourceBinding", ns, "leaving-configmap")  # Karmada's finalizer holds it

    result = sweep(ns, "--delete", "--sweep", "bindings")

    assert result.exit_code == 0, result.stderr
    assert result.outcome("ResourceBinding", "gone-config-configmap") == ("deleted", "orphaned")
    assert result.outcome("ResourceBinding", "gone-creds-secret") == ("deleted", "orphaned")
    assert hub.gone("ResourceBinding", ns, "gone-config-configmap")
    assert hub.gone("ResourceBinding", ns, "gone-creds-secret")
    assert result.item("ResourceBinding", "plain-configmap") is None
    assert hub.present("ResourceBinding", ns, "plain-configmap")
    for name in untouchable:
        assert result.item("ResourceBinding", name) is None, name
        assert hub.present("ResourceBinding", ns, name), name
    assert result.outcome("ResourceBinding", "leaving-configmap") == ("skipped", "terminating")


def test_secret_payloads_are_never_requested(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    hub.create_with_binding(companion("Secret", ns, "db-creds", ["default/gone"]))
    hub.create(binding(ns, "gone-secret", kind="Secret", target="gone"))
    faults.clear_requests()

    result = sweep(ns, "--delete")

    assert result.outcome("Secret", "db-creds") == ("deleted", "orphaned")
    secret_requests = [r for r in faults.requests if "/secrets" in r.path]
    assert {r.method for r in secret_requests} >= {"GET", "DELETE"}
    for request in secret_requests:
        accept = request.headers.get("accept", "")
        assert "as=PartialObjectMetadata" in accept, (request.method, request.path, accept)
        assert ",application/json" not in accept  # no fallback that could carry a payload
    assert SECRET_VALUE not in result.stdout + result.stderr


def test_deletes_are_pinned_to_what_was_observed(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    created = hub.create(companion("ConfigMap", ns, "app-config", ["default/gone"]))
    faults.clear_requests()

    sweep(ns, "--delete", "--sweep", "companions")

    deletes = [r for r in faults.requests if r.method == "DELETE"]
    assert len(deletes) == 1
    assert deletes[0].body["preconditions"] == {
        "uid": created["metadata"]["uid"],
        "resourceVersion": created["metadata"]["resourceVersion"],
    }
    assert deletes[0].body["propagationPolicy"] == "Orphan"


def test_a_protected_binding_stays_when_its_companion_goes(
    hub: TestCluster, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    created = hub.create(companion("ConfigMap", ns, "app", ["default/gone"]))
    hub.create(
        binding(
            ns,
            "app-configmap",
            kind="ConfigMap",
            target="app",
            target_uid=created["metadata"]["uid"],
            annotations={"gcjob.datumapis.com/protect": "true"},
        )
    )

    result = sweep(ns, "--delete")

    assert result.outcome("ConfigMap", "app") == ("deleted", "orphaned")
    assert result.outcome("ResourceBinding", "app-configmap") == ("skipped", "protected")
    assert hub.present("ResourceBinding", ns, "app-configmap")


def test_empty_lists_on_a_real_server_are_read_as_empty(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    """A real server answers an empty metadata-only list with `"items": null`: a namespace
    with no WorkloadDeployment, no ResourceBinding and no Secret is swept, not refused."""
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "lonely", ["default/gone"]))

    result = sweep(ns, "--delete")

    null_answers = [r for r in faults.requests if b'"items":null' in (r.response_body or b"")]
    assert null_answers, "the server answered no empty list: the test lost its point"
    assert result.exit_code == 0, result.stderr
    assert result.summary["sweeps"]["companions"]["status"] == "completed"
    assert result.summary["sweeps"]["bindings"]["status"] == "completed"
    assert result.outcome("ConfigMap", "lonely") == ("deleted", "orphaned")
    assert hub.gone("ConfigMap", ns, "lonely")


# -- a delete takes exactly what was judged: a companion's own binding, and nothing else ------


def _owner_uids(hub: TestCluster, kind: str, ns: str, name: str) -> set[str]:
    found = hub.get(kind, ns, name)
    assert found is not None, f"{kind} {name} is gone"
    assert not found["metadata"].get("deletionTimestamp"), f"{kind} {name} is being deleted"
    return {r["uid"] for r in found["metadata"].get("ownerReferences") or ()}


def test_a_companions_delete_takes_its_own_binding_and_nothing_else(
    hub: TestCluster, sweep: HubSweep, faults: FaultProxy, hub_collects_garbage: Collect
) -> None:
    """Karmada writes a companion's binding owned by it; gcjob deletes with propagationPolicy
    Orphan, so the hub's garbage collector takes nothing with a companion: its own binding is
    judged with it and deleted explicitly; a binding gcjob keeps (protected, or binding another
    uid) and an unlabelled object it owns stay, without the reference to it. The positive
    control first (the collector takes these kinds with a Background delete), a sentinel after
    (it has processed events since gcjob's deletes)."""
    ns = hub.namespace()
    control = hub.create(companion("ConfigMap", ns, "control", None, labelled=False))
    hub_collects_garbage(
        control,
        hub.create(binding_for(control)),
        hub.create(owned_by(companion("Secret", ns, "control-s", None, labelled=False), control)),
    )
    goes = hub.create(companion("ConfigMap", ns, "goes", ["default/gone"]))
    hub.create(binding_for(goes))
    extra = owned_by(companion("ConfigMap", ns, "goes-extra", None, labelled=False), goes)
    hub.create(extra)
    kept = hub.create(companion("ConfigMap", ns, "kept", ["default/gone"]))
    protected = binding_for(kept)
    protected["metadata"]["annotations"]["gcjob.datumapis.com/protect"] = "true"
    hub.create(protected)
    other = hub.create(companion("Secret", ns, "other", ["default/gone"]))
    mismatch = binding(ns, "other-secret", kind="Secret", target="other", target_uid="uid-else")
    hub.create(owned_by(mismatch, other, controller=True))
    faults.clear_requests()

    result = sweep(ns, "--delete", "--sweep", "companions")
    sent = [r for r in faults.requests if r.method == "DELETE"]

    assert result.exit_code == 0, result.stderr
    assert result.outcome("ConfigMap", "goes") == ("deleted", "orphaned")
    assert result.outcome("ResourceBinding", "goes-configmap") == ("deleted", "companion-deleted")
    assert result.outcome("ConfigMap", "kept") == ("deleted", "orphaned")
    assert result.outcome("ResourceBinding", "kept-configmap") == ("skipped", "protected")
    assert result.outcome("Secret", "other") == ("deleted", "orphaned")
    assert result.outcome("ResourceBinding", "other-secret") == ("skipped", "binding-mismatch")
    assert result.item("ConfigMap", "goes-extra") is None
    for kind, name in (("ConfigMap", "goes"), ("ConfigMap", "kept"), ("Secret", "other")):
        wait_for(lambda k=kind, n=name: hub.absent(k, ns, n), 60, f"for {kind} {name}")
    assert hub.gone("ResourceBinding", ns, "goes-configmap")
    sentinel = hub.create(companion("ConfigMap", ns, "sentinel", None, labelled=False))
    hub_collects_garbage(
        sentinel,
        hub.create(
            owned_by(companion("ConfigMap", ns, "sentinel-o", None, labelled=False), sentinel)
        ),
    )
    assert goes["metadata"]["uid"] not in _owner_uids(hub, "ConfigMap", ns, "goes-extra")
    assert kept["metadata"]["uid"] not in _owner_uids(hub, "ResourceBinding", ns, "kept-configmap")
    assert other["metadata"]["uid"] not in _owner_uids(hub, "ResourceBinding", ns, "other-secret")
    assert sent and all(r.body["propagationPolicy"] == "Orphan" for r in sent)


def test_a_binding_changed_between_its_read_and_its_delete_is_read_again_once(
    hub: TestCluster, gcjob_hub_args: list[str], faults: FaultProxy, hub_controllers: None
) -> None:
    """The companion's Orphan delete has the collector strip its ownerReference from the
    binding (a new resourceVersion), maybe after gcjob read the binding: its pinned delete then
    meets a real 409. gcjob reads it again, judges it again, and deletes it pinned to that
    read, once."""
    ns = hub.namespace()
    goes = hub.create(companion("ConfigMap", ns, "goes", ["default/gone"]))
    hub.create(binding_for(goes))
    gate = threading.Event()
    held = faults.add_fault(
        Fault(method="DELETE", path=f"/namespaces/{ns}/resourcebindings/goes-configmap$", hold=gate)
    )
    run = start_gcjob(*gcjob_hub_args, "--namespace", ns, "--delete", "--sweep", "companions")
    try:
        wait_for(lambda: held.hits == 1, 60, "for the binding's delete")

        def stripped() -> bool:  # the collector has orphaned it: no reference to the companion
            return not _owner_uids(hub, "ResourceBinding", ns, "goes-configmap")

        wait_for(stripped, 60, "for the collector to strip the binding's ownerReference")
        hub.patch("ResourceBinding", ns, "goes-configmap", {"metadata": {"labels": {"x": "y"}}})
    finally:
        gate.set()
    out, err = run.communicate(timeout=60)

    assert run.returncode == 0, err
    items: list[dict[str, Any]] = [
        r for r in records_of(out) if r.get("record") == "item" and r["name"] == "goes-configmap"
    ]
    assert [(i["action"], i["reason"]) for i in items] == [("deleted", "companion-deleted")]
    deletes = [
        r
        for r in faults.requests
        if r.method == "DELETE" and r.path.endswith("/resourcebindings/goes-configmap")
    ]
    assert [r.status for r in deletes] == [409, 200]
    assert (
        deletes[0].body["preconditions"]["resourceVersion"]
        != (deletes[1].body["preconditions"]["resourceVersion"])
    )
    assert hub.gone("ResourceBinding", ns, "goes-configmap")
    assert summary_of(out)["totals"]["deleted"] == 2
