"""End to end (issue 47): what a delete leaves on a real hub, and what refuses one. Karmada's
deletion protection (its label `Always`) keeps an orphan with no delete sent; a
ValidatingAdmissionPolicy's 403 keeps it and the rest of its group; a finalizer holds a
delete (`delete-held`), lets go of it (`deleted`), or holds it past the bound on a later run
(`deletion-stalled`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from testbed.cluster import TestCluster, wait_for
from testbed.faultproxy import Fault, FaultProxy
from testbed.objects import companion
from testbed.report import HubSweep, explain

PROTECTED_LABEL = "resourcetemplate.karmada.io/deletion-protected"
GONE = ["default/gone-wd"]


def _labelled(obj: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    obj["metadata"].setdefault("labels", {}).update(labels)
    return obj


def test_an_orphan_karmada_protects_from_deletion_is_kept_with_no_delete_sent(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep, hub_kubeconfig: str
) -> None:
    """`Always` is the one value Karmada's webhook refuses a delete on: kept, no delete sent,
    exit 0, counted apart. Any other value of the label (`always`, empty, `true`) is one
    gcjob does not recognise: kept too, fail closed (issue 51), no delete sent, and `explain`
    says so; an orphan without the label goes."""
    ns = hub.namespace()
    hub.create_with_binding(
        _labelled(companion("ConfigMap", ns, "kept", GONE), {PROTECTED_LABEL: "Always"})
    )
    hub.create(_labelled(companion("Secret", ns, "kept-secret", GONE), {PROTECTED_LABEL: "Always"}))
    near = {"lower": "always", "empty": "", "true": "true"}
    for name, value in near.items():
        hub.create(_labelled(companion("ConfigMap", ns, name, GONE), {PROTECTED_LABEL: value}))
    hub.create(companion("ConfigMap", ns, "bare", GONE))
    faults.clear_requests()

    result = sweep(ns, "--delete", "--sweep", "companions")

    assert result.exit_code == 0, (result.stdout, result.stderr)
    for kind, name in (("ConfigMap", "kept"), ("Secret", "kept-secret")):
        assert result.outcome(kind, name) == ("skipped", "deletion-protected")
        assert hub.present(kind, ns, name)
    assert hub.present("ResourceBinding", ns, "kept-configmap")  # its group untouched
    for name in near:
        assert result.outcome("ConfigMap", name) == (
            "skipped",
            "deletion-protected-not-understood",
        )
        assert hub.present("ConfigMap", ns, name)
    assert result.outcome("ConfigMap", "bare") == ("deleted", "orphaned")
    deletes = [r.path.rsplit("/", 1)[-1] for r in faults.requests if r.method == "DELETE"]
    assert deletes == ["bare"]
    counts = result.summary["counts"]["companions"]["skipped"]
    assert counts["deletion-protected"] == 2
    assert counts["deletion-protected-not-understood"] == 3
    explained = explain(
        "ConfigMap", ns, "kept", "--hub-kubeconfig", hub_kubeconfig, "--min-age", "0s"
    )
    assert explained.verdict == ("skipped", "deletion-protected")
    explained = explain(
        "ConfigMap", ns, "lower", "--hub-kubeconfig", hub_kubeconfig, "--min-age", "0s"
    )
    assert explained.verdict == ("skipped", "deletion-protected-not-understood")
    detail = explained.doc["verdict"]["detail"]
    assert "'always' is not a value gcjob recognises" in detail, detail


TENANT = "example.com/tenant"
KEEP_LABEL = "gcjob-e2e.example.com/keep"
VAP = "/apis/admissionregistration.k8s.io/v1"


@contextmanager
def refusing_deletes(hub: TestCluster, ns: str, label: str, value: str) -> Iterator[str]:
    """A ValidatingAdmissionPolicy and its binding that deny any DELETE of a ConfigMap in `ns`
    labelled `label: value`, in force once a probe's dry-run delete is refused; removed after.
    Yields the policy's name."""
    name = f"deny-{ns}"
    hub.create_at(
        f"{VAP}/validatingadmissionpolicies",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["DELETE"],
                            "resources": ["configmaps"],
                        }
                    ],
                    "objectSelector": {"matchLabels": {label: value}},
                },
                # Forbidden: a 403, as Karmada's webhook answers (a policy's default is 422).
                "validations": [
                    {
                        "expression": "false",
                        "message": "kept by the e2e policy",
                        "reason": "Forbidden",
                    }
                ],
            },
        },
    )
    hub.create_at(
        f"{VAP}/validatingadmissionpolicybindings",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}
                },
            },
        },
    )
    probe = hub.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "probe", "namespace": ns, "labels": {label: value}},
        }
    )
    path = f"/api/v1/namespaces/{ns}/configmaps/{probe['metadata']['name']}?dryRun=All"
    try:
        wait_for(lambda: hub._call("DELETE", path)[0] == 403, 30, "the policy in force")
        yield name
    finally:
        hub._call("DELETE", f"{VAP}/validatingadmissionpolicybindings/{name}")
        hub._call("DELETE", f"{VAP}/validatingadmissionpolicies/{name}")
        wait_for(lambda: hub._call("DELETE", path)[0] == 200, 60, "the policy gone")


def test_a_delete_admission_refuses_keeps_the_object_and_the_rest_of_its_group(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    """A ValidatingAdmissionPolicy's 403 on a companion's delete: the companion kept
    (`admission-refused`, the server's words), its binding untouched (no write), the other
    orphans deleted, exit 0."""
    ns = hub.namespace()
    refused_binding = hub.create_with_binding(
        _labelled(companion("ConfigMap", ns, "refused", GONE), {KEEP_LABEL: "yes"})
    )
    free_binding = hub.create_with_binding(companion("ConfigMap", ns, "free", GONE))
    with refusing_deletes(hub, ns, KEEP_LABEL, "yes") as policy:
        faults.clear_requests()
        result = sweep(ns, "--delete", "--sweep", "companions")

        assert result.exit_code == 0, (result.stdout, result.stderr)
        assert result.outcome("ConfigMap", "refused") == ("skipped", "admission-refused")
        detail = result.item("ConfigMap", "refused")["detail"]  # type: ignore[index]
        assert f"ValidatingAdmissionPolicy '{policy}'" in detail
        assert "kept by the e2e policy" in detail
        assert hub.present("ConfigMap", ns, "refused")
        assert hub.present("ResourceBinding", ns, refused_binding)  # nothing else of its group
        assert result.item("ResourceBinding", refused_binding) is None
        written = [r for r in faults.requests if r.method in ("DELETE", "PATCH", "PUT")]
        assert not [r for r in written if r.path.endswith(f"/{refused_binding}")]
        assert result.outcome("ConfigMap", "free") == ("deleted", "orphaned")
        assert result.outcome("ResourceBinding", free_binding) == ("deleted", "companion-deleted")
        assert result.summary["counts"]["companions"]["skipped"]["admission-refused"] == 1


def test_a_label_added_after_the_judgement_meets_409_before_admission(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    """Karmada's deletion protection added between gcjob's judgement and its delete (the
    proxy holds the delete while it is written): the pinned delete answers 409 before any
    admission sees it (`changed-since-observed`, never a 403); the next run keeps it
    `deletion-protected`, sending nothing."""
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "late", GONE))
    released = threading.Event()
    path = f"/namespaces/{ns}/configmaps/late$"
    faults.add_fault(Fault(method="DELETE", path=path, hold=released))

    def protect_while_held() -> None:
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline:
                if any(r.method == "DELETE" and r.path.endswith("/late") for r in faults.requests):
                    hub.patch(
                        "ConfigMap",
                        ns,
                        "late",
                        {"metadata": {"labels": {PROTECTED_LABEL: "Always"}}},
                    )
                    return
                time.sleep(0.05)
        finally:
            released.set()

    with refusing_deletes(hub, ns, PROTECTED_LABEL, "Always"):  # as Karmada's webhook would
        writer = threading.Thread(target=protect_while_held)
        writer.start()
        result = sweep(ns, "--delete", "--sweep", "companions")
        writer.join()

        assert result.outcome("ConfigMap", "late") == ("skipped", "changed-since-observed")
        [delete] = [r for r in faults.requests if r.method == "DELETE" and "/late" in r.path]
        assert delete.status == 409
        assert result.exit_code == 0, result.stderr
        faults.clear_requests()
        again = sweep(ns, "--delete", "--sweep", "companions")
        assert again.outcome("ConfigMap", "late") == ("skipped", "deletion-protected")
        assert not [r for r in faults.requests if r.method == "DELETE"]
        assert hub.present("ConfigMap", ns, "late")
        hub.patch("ConfigMap", ns, "late", {"metadata": {"labels": {PROTECTED_LABEL: None}}})


def test_a_delete_a_finalizer_holds_is_said_held_then_stalled_on_a_later_run(
    hub: TestCluster, sweep: HubSweep, hub_kubeconfig: str
) -> None:
    """A tenant's finalizer holds a companion gcjob deletes: `delete-held` naming it, counted
    apart from `deleted`; its binding goes (the companion's delete went out) and Karmada's
    finalizer, with no Karmada to remove it, holds it too; exit 0. A later run past
    --deletion-stalled-after says `deletion-stalled`, naming the finalizer and how long, and
    `explain` says what each run said (issue 51: it never said `deletion-stalled`)."""
    ns = hub.namespace()
    held = companion("ConfigMap", ns, "held", GONE)
    held["metadata"]["finalizers"] = [TENANT]
    held_binding = hub.create_with_binding(held, karmada_finalizer=True)
    graced = ("--delete", "--sweep", "companions", "--grace", "1s")
    marked = sweep(ns, *graced)
    assert marked.outcome("ConfigMap", "held") == ("marked", "orphaned")
    time.sleep(1.5)

    result = sweep(ns, *graced)

    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.outcome("ConfigMap", "held") == ("delete-held", "orphaned")
    assert f"[{TENANT}]" in result.item("ConfigMap", "held")["detail"]  # type: ignore[index]
    # Its binding goes with it (the companion's delete went out), and Karmada's finalizer,
    # which no Karmada here removes, holds it.
    said = result.item("ResourceBinding", held_binding)
    assert said is not None and (said["action"], said["reason"]) == (
        "delete-held",
        "companion-deleted",
    )
    assert "[karmada.io/binding-controller]" in said["detail"]
    counts = result.summary["counts"]["companions"]
    assert counts["delete-held"] == {"orphaned": 1, "companion-deleted": 1}
    assert "deleted" not in counts
    assert result.summary["totals"]["delete-held"] == 2
    assert result.summary["totals"]["deleted"] == 0
    assert not hub.present("ConfigMap", ns, "held") and not hub.absent("ConfigMap", ns, "held")

    def explained(after: str) -> Any:
        return explain(
            *("ConfigMap", ns, "held", "--hub-kubeconfig", hub_kubeconfig),
            *("--min-age", "0s", "--grace", "1s", "--deletion-stalled-after", after),
        )

    early = sweep(ns, *graced, "--deletion-stalled-after", "1h")
    assert early.outcome("ConfigMap", "held") == ("skipped", "terminating")
    assert explained("1h").verdict == ("skipped", "terminating")
    time.sleep(2.5)
    later = sweep(ns, *graced, "--deletion-stalled-after", "2s")
    assert later.exit_code == 0, later.stderr
    assert later.outcome("ConfigMap", "held") == ("skipped", "deletion-stalled")
    detail = later.item("ConfigMap", "held")["detail"]  # type: ignore[index]
    assert TENANT in detail and "--deletion-stalled-after 2s" in detail
    said = explained("2s")
    assert said.exit_code == 0
    assert said.verdict == ("skipped", "deletion-stalled")
    assert TENANT in said.doc["verdict"]["detail"], said.doc["verdict"]
    assert said.doc["steps"][-1]["rule"] == "deletion-not-stalled", said.doc["steps"]


def test_a_finalizer_let_go_a_moment_after_the_delete_is_deleted(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    """As Karmada's binding controller does (about 0.1 s after the delete): the delete's
    answer names the finalizer, the item read again a moment later is `deleted`, once."""
    ns = hub.namespace()
    soon = companion("ConfigMap", ns, "soon", GONE)
    soon["metadata"]["finalizers"] = [TENANT]
    hub.create(soon)
    stop = threading.Event()

    def let_go() -> None:
        while not stop.is_set():
            obj = hub.get("ConfigMap", ns, "soon")
            if obj is not None and obj["metadata"].get("deletionTimestamp"):
                finalizers = obj["metadata"].get("finalizers") or []
                if TENANT in finalizers:
                    at = finalizers.index(TENANT)
                    hub._call(
                        "PATCH",
                        f"/api/v1/namespaces/{ns}/configmaps/soon",
                        [
                            {"op": "test", "path": f"/metadata/finalizers/{at}", "value": TENANT},
                            {"op": "remove", "path": f"/metadata/finalizers/{at}"},
                        ],
                        content_type="application/json-patch+json",
                    )
                    continue
                return
            time.sleep(0.02)

    releaser = threading.Thread(target=let_go)
    releaser.start()
    try:
        faults.clear_requests()
        result = sweep(ns, "--delete", "--sweep", "companions")
    finally:
        stop.set()
        releaser.join()

    assert result.exit_code == 0, (result.stdout, result.stderr)
    [delete] = [r for r in faults.requests if r.method == "DELETE"]
    assert TENANT.encode() in delete.response_body  # the answer named it
    assert [i["action"] for i in result.items if i["name"] == "soon"] == ["deleted"]
    assert result.outcome("ConfigMap", "soon") == ("deleted", "orphaned")
    assert hub.gone("ConfigMap", ns, "soon")
