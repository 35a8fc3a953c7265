"""End to end (issue 47): what a delete leaves on a real hub, and what refuses one. Karmada's
deletion protection (its label `Always`) keeps an orphan with no delete sent."""

from __future__ import annotations

from typing import Any

from testbed.cluster import TestCluster
from testbed.faultproxy import FaultProxy
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
    exit 0, counted apart; any other value Karmada lets through, and so does gcjob."""
    ns = hub.namespace()
    hub.create_with_binding(
        _labelled(companion("ConfigMap", ns, "kept", GONE), {PROTECTED_LABEL: "Always"})
    )
    hub.create(_labelled(companion("Secret", ns, "kept-secret", GONE), {PROTECTED_LABEL: "Always"}))
    hub.create(_labelled(companion("ConfigMap", ns, "lower", GONE), {PROTECTED_LABEL: "always"}))
    faults.clear_requests()

    result = sweep(ns, "--delete", "--sweep", "companions")

    assert result.exit_code == 0, (result.stdout, result.stderr)
    for kind, name in (("ConfigMap", "kept"), ("Secret", "kept-secret")):
        assert result.outcome(kind, name) == ("skipped", "deletion-protected")
        assert hub.present(kind, ns, name)
    assert hub.present("ResourceBinding", ns, "kept-configmap")  # its group untouched
    assert result.outcome("ConfigMap", "lower") == ("deleted", "orphaned")
    deletes = [r.path.rsplit("/", 1)[-1] for r in faults.requests if r.method == "DELETE"]
    assert deletes == ["lower"]
    counts = result.summary["counts"]["companions"]["skipped"]
    assert counts["deletion-protected"] == 2
    explained = explain(
        "ConfigMap", ns, "kept", "--hub-kubeconfig", hub_kubeconfig, "--min-age", "0s"
    )
    assert explained.verdict == ("skipped", "deletion-protected")
