"""The Karmada hub itself (testbed/karmada.py): Karmada's webhook answers for the hub, as it
does in production; what the deletion-protection tests rest on."""

from __future__ import annotations

from testbed.cluster import ApiFailure
from testbed.fixtures import Karmada
from testbed.objects import companion

PROTECTED = "resourcetemplate.karmada.io/deletion-protected"


def test_karmadas_webhook_refuses_to_delete_what_it_protects(karmada: Karmada) -> None:
    """A delete of an object labelled `resourcetemplate.karmada.io/deletion-protected: Always`
    is refused by Karmada's webhook (403, naming it); any other value it lets through."""
    hub = karmada.cluster
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "kept", None, labels={PROTECTED: "Always"}))
    hub.create(companion("ConfigMap", ns, "goes", None, labels={PROTECTED: "always"}))

    try:
        hub.delete("ConfigMap", ns, "kept")
        refused = ""
    except ApiFailure as failure:
        refused = str(failure)
    hub.delete("ConfigMap", ns, "goes")

    assert ": 403 " in refused, refused
    assert 'admission webhook "resourcedeletionprotection.karmada.io" denied' in refused
    assert hub.present("ConfigMap", ns, "kept")
    assert hub.absent("ConfigMap", ns, "goes")
    hub.patch("ConfigMap", ns, "kept", {"metadata": {"labels": {PROTECTED: None}}})


def test_an_orphan_karmada_protects_is_kept_with_no_delete_sent(karmada: Karmada) -> None:
    """issue 47 item 4, on the hub where Karmada's webhook answers: an orphaned companion
    labelled `Always` (and its binding, which Karmada made) is kept `deletion-protected`, no
    DELETE of it reaches the hub, exit 0. One labelled another value, which Karmada would let
    through, is kept too (issue 51: a value gcjob does not recognise, fail closed); one
    without the label is deleted as an orphan is."""
    hub = karmada.cluster
    ns = hub.namespace()
    karmada.propagate(ns)
    gone = ["default/web-gone"]
    kept = hub.create(companion("ConfigMap", ns, "kept", gone, labels={PROTECTED: "Always"}))
    never = hub.create(companion("ConfigMap", ns, "never", gone, labels={PROTECTED: "Never"}))
    goes = hub.create(companion("ConfigMap", ns, "goes", gone))
    karmada.bound(kept)
    karmada.bound(never)
    karmada.bound(goes)

    result = karmada.sweep(ns, "--delete", "--sweep", "companions")

    assert result.exit_code == 0, result.stderr
    assert result.outcome("ConfigMap", "kept") == ("skipped", "deletion-protected")
    assert result.outcome("ConfigMap", "never") == ("skipped", "deletion-protected-not-understood")
    assert result.outcome("ConfigMap", "goes") == ("deleted", "orphaned")
    assert hub.present("ConfigMap", ns, "kept")
    assert hub.present("ConfigMap", ns, "never")
    assert hub.present("ResourceBinding", ns, "kept-configmap")
    deletes = [r.path for r in karmada.faults.requests if r.method == "DELETE"]
    assert not [p for p in deletes if p.endswith("/configmaps/kept")], deletes
    assert not [p for p in deletes if p.endswith("/resourcebindings/kept-configmap")], deletes
    assert not [p for p in deletes if p.endswith("/configmaps/never")], deletes
    assert result.summary["totals"].get("failed", 0) == 0
