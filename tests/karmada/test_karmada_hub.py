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
