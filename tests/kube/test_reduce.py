"""gcjob.kube.reduce: raw API objects -> records, never raising on malformed input.

An odd field must become a value the decisions refuse to delete on: an empty uid, no
creation time, an unreadable referrers annotation, a parent that is not a Gateway.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from gcjob.decide.common import hold_back
from gcjob.domain import (
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
    PROTECT_ANNOTATION,
    REFERRERS_ANNOTATION,
    ROUTE_LABELS,
    secret_as_kept,
)
from gcjob.kube import reduce
from gcjob.kube.resources import CONFIGMAPS, RESOURCEBINDINGS, SECRETS
from gcjob.model import Mark, ParentRef, Verdict
from gcjob.sweeps.companions.judge import binding_names_companion, companion_verdict
from gcjob.sweeps.routes.judge import is_gateway, route_target
from testbed.model import HUB_NS, MIN_AGE
from testbed.objects import configmap, httproute, resourcebinding

NOW = datetime(2026, 11, 20, 12, 0, 0, tzinfo=UTC)


def _decide(obj: dict[str, Any]) -> Verdict:
    return companion_verdict(reduce.companion(CONFIGMAPS)(obj), frozenset(), NOW, MIN_AGE)


# -- realistic objects ----------------------------------------------------------------------


def test_realistic_companion() -> None:
    record = reduce.companion(CONFIGMAPS)(configmap())
    assert record.ref.api_version == "v1"
    assert record.ref.kind == "ConfigMap"
    assert (record.ref.namespace, record.ref.name) == (HUB_NS, "app-config")
    assert record.ref.uid == "79fe62ff-c667-52f3-9e89-927a2484143e"
    assert record.ref.resource_version == "48213137"
    assert record.ref.created == datetime(2026, 11, 12, 9, 14, 27, tzinfo=UTC)
    assert record.ref.terminating is False
    assert record.referrers_raw == '["default/web-dfw"]'
    assert record.protect == ()
    # sanity: a well-formed orphan is deletable, so the refusals below are meaningful
    assert _decide(configmap()).delete is True


def test_secret_companion_keeps_only_metadata() -> None:
    obj = configmap(name="db-creds")
    obj["kind"] = "Secret"
    obj["data"] = {"DATABASE_URL": "cG9zdGdyZXM6Ly9zM2NyM3Q="}
    record = reduce.companion(SECRETS)(obj)
    assert record.ref.kind == "Secret"
    assert "cG9zdGdyZXM6Ly9zM2NyM3Q=" not in repr(record)


def test_no_mark_and_the_maps_as_found() -> None:
    ref = reduce.companion(CONFIGMAPS)(configmap()).ref
    assert ref.mark is None
    assert ref.has_labels and ref.has_annotations
    bare = reduce.object_ref({"metadata": {"name": "x", "uid": "u"}}, CONFIGMAPS)
    assert not bare.has_labels and not bare.has_annotations and bare.mark is None


def test_the_mark_is_read_verbatim_part_by_part() -> None:
    obj = configmap()
    obj["metadata"]["labels"][ORPHANED_LABEL] = "true"
    obj["metadata"]["annotations"][ORPHANED_SINCE_ANNOTATION] = "2026-11-20T11:50:00Z"
    obj["metadata"]["annotations"][ORPHANED_EVIDENCE_ANNOTATION] = "companion:0123456789abcdef"
    ref = reduce.companion(CONFIGMAPS)(obj).ref
    assert ref.mark == Mark(
        label="true",
        since="2026-11-20T11:50:00Z",
        reason=None,
        evidence="companion:0123456789abcdef",
    )
    only_reason = configmap()
    only_reason["metadata"]["annotations"][ORPHANED_REASON_ANNOTATION] = "orphaned"
    assert reduce.companion(CONFIGMAPS)(only_reason).ref.mark == Mark(reason="orphaned")


def test_terminating_object() -> None:
    record = reduce.companion(CONFIGMAPS)(configmap(deletionTimestamp="2026-11-20T11:59:00Z"))
    assert record.ref.terminating is True
    assert _decide(configmap(deletionTimestamp="2026-11-20T11:59:00Z")).delete is False


def test_realistic_binding() -> None:
    record = reduce.binding(resourcebinding())
    assert record.ref.api_version == "work.karmada.io/v1alpha2"
    assert record.ref.kind == "ResourceBinding"
    assert record.policy_annotation == "city-dfw"
    assert record.policy_label is None
    assert record.cluster_policy is False
    assert record.resource is not None
    assert (record.resource.kind, record.resource.name) == ("ConfigMap", "app-config")
    assert record.resource.uid == "79fe62ff-c667-52f3-9e89-927a2484143e"


def test_binding_policy_in_label_and_cluster_policy() -> None:
    legacy = reduce.binding(
        resourcebinding(annotations={}, labels={"propagationpolicy.karmada.io/name": "city-ord"})
    )
    assert legacy.policy_annotation is None
    assert legacy.policy_label == "city-ord"
    by_label = reduce.binding(
        resourcebinding(labels={"clusterpropagationpolicy.karmada.io/name": "global"})
    )
    by_annotation = reduce.binding(
        resourcebinding(annotations={"clusterpropagationpolicy.karmada.io/name": "global"})
    )
    assert by_label.cluster_policy is True
    assert by_annotation.cluster_policy is True


def test_realistic_route() -> None:
    record = reduce.route(httproute())
    assert record.ref.kind == "HTTPRoute"
    assert record.ref.api_version == "gateway.networking.k8s.io/v1"
    assert record.parent_refs == (ParentRef("web-gateway", None, None, None),)
    assert record.protect == ()


def test_route_keeps_only_the_labels_gcjob_reads() -> None:
    obj = httproute()
    obj["metadata"]["labels"]["meta.datumapis.com/http01-solver"] = "true"
    record = reduce.route(obj)
    assert set(record.labels) == set(ROUTE_LABELS)
    assert all(key.startswith("meta.datumapis.com/") for key in record.labels)
    assert "app.kubernetes.io/managed-by" not in record.labels
    assert "meta.datumapis.com/something-else" not in record.labels
    assert record.labels["meta.datumapis.com/upstream-cluster-name"] == "cluster-single"


def test_route_drops_non_string_label_values() -> None:
    obj = httproute()
    obj["metadata"]["labels"]["meta.datumapis.com/upstream-name"] = 42
    record = reduce.route(obj)
    assert "meta.datumapis.com/upstream-name" not in record.labels
    target = route_target(record)
    assert isinstance(target, Verdict)
    assert target.reason == "labels-missing"


# -- protect annotation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "protect"),
    [
        ({PROTECT_ANNOTATION: "true"}, ((f"annotation {PROTECT_ANNOTATION}", "true"),)),
        ({PROTECT_ANNOTATION: "false"}, ((f"annotation {PROTECT_ANNOTATION}", "false"),)),
        ({PROTECT_ANNOTATION: ""}, ((f"annotation {PROTECT_ANNOTATION}", ""),)),
        ({PROTECT_ANNOTATION: 1}, ((f"annotation {PROTECT_ANNOTATION}", "<not a string>"),)),
        (
            {"gcjob.datumapis.com/Protect": "yes"},
            (("annotation gcjob.datumapis.com/Protect", "yes"),),
        ),
        ({}, ()),
        (None, ()),
        ("not-a-dict", (("annotations (not a map)", "<unreadable>"),)),
    ],
)
def test_protect_is_read_verbatim_wherever_it_is(annotations: Any, protect: Any) -> None:
    assert reduce.protect(configmap(annotations=annotations)) == protect
    assert reduce.companion(CONFIGMAPS)(configmap(annotations=annotations)).protect == protect
    assert reduce.binding(resourcebinding(annotations=annotations)).protect == protect
    assert reduce.route(httproute(annotations=annotations)).protect == protect


def test_protect_as_a_label_is_read_too() -> None:
    obj = httproute()
    obj["metadata"]["labels"][PROTECT_ANNOTATION] = "true"
    assert reduce.route(obj).protect == ((f"label {PROTECT_ANNOTATION}", "true"),)
    obj = configmap()
    obj["metadata"]["labels"] = {PROTECT_ANNOTATION: "True"}
    assert _decide(obj).reason == "protect-not-understood"


@pytest.mark.parametrize(
    "value,reason",
    [
        ("Always", "deletion-protected"),
        ("always", "deletion-protected-not-understood"),
        (" Always", "deletion-protected-not-understood"),
        ("true", "deletion-protected-not-understood"),
        ("", "deletion-protected-not-understood"),
    ],
)
def test_karmadas_deletion_protection_survives_the_reduction_whatever_its_value(
    value: str, reason: str
) -> None:
    """Karmada's webhook refuses a delete only on exactly `Always`: that value keeps the
    object (no delete Karmada would refuse); any other value is one gcjob does not
    recognise, kept too (fail closed, issue 51). A Secret keeps the label's value through
    its reduction."""
    label = "resourcetemplate.karmada.io/deletion-protected"
    obj = configmap()
    obj["metadata"]["labels"] = {label: value}
    verdict = _decide(obj)
    assert (verdict.delete, verdict.reason) == (False, reason)
    kept = secret_as_kept({"metadata": {"labels": {label: value}}})
    assert kept["metadata"]["labels"] == {label: value}
    assert reduce.protect(kept) == ((f"label {label}", value),)


def test_protected_companion_is_held_back() -> None:
    obj = configmap()
    obj["metadata"]["annotations"][PROTECT_ANNOTATION] = "true"
    verdict = _decide(obj)
    assert (verdict.delete, verdict.reason) == (False, "protected")


# -- malformed metadata ---------------------------------------------------------------------


@pytest.mark.parametrize("metadata", ["missing", None, "a string", ["a", "list"], 7])
def test_metadata_missing_or_not_a_dict(metadata: Any) -> None:
    obj = configmap()
    if metadata == "missing":
        del obj["metadata"]
    else:
        obj["metadata"] = metadata
    record = reduce.companion(CONFIGMAPS)(obj)
    assert record.ref.uid == ""
    assert record.ref.resource_version == ""
    assert record.ref.created is None
    assert record.referrers_raw is None
    assert record.protect == ()
    assert _decide(obj).delete is False
    assert hold_back(record.ref, NOW, MIN_AGE, ()) == (
        "unpinnable",
        "no uid or resourceVersion to pin a delete to",
    )
    assert reduce.binding(copy.deepcopy(obj)).ref.uid == ""
    assert reduce.route(copy.deepcopy(obj)).labels == {}
    assert reduce.name_of(obj) is None
    assert reduce.namespace_and_name(obj) is None


def test_empty_object() -> None:
    assert reduce.companion(CONFIGMAPS)({}).ref.uid == ""
    assert reduce.binding({}).resource is None
    assert reduce.route({}).parent_refs == ()


@pytest.mark.parametrize("field", ["uid", "resourceVersion"])
@pytest.mark.parametrize("value", [None, 12345, {"x": 1}])
def test_non_string_uid_or_resource_version_is_unpinnable(field: str, value: Any) -> None:
    obj = configmap(**{field: value})
    record = reduce.companion(CONFIGMAPS)(obj)
    assert getattr(record.ref, "uid" if field == "uid" else "resource_version") == ""
    verdict = _decide(obj)
    assert (verdict.delete, verdict.reason) == (False, "unpinnable")


@pytest.mark.parametrize("annotations", [None, "a string", ["x"], 3])
def test_annotations_not_a_dict(annotations: Any) -> None:
    obj = configmap(annotations=annotations)
    record = reduce.companion(CONFIGMAPS)(obj)
    assert record.referrers_raw is None
    verdict = _decide(obj)
    assert (verdict.delete, verdict.reason) == (False, "referrers-missing")


@pytest.mark.parametrize("value", [["default/web-dfw"], 1, True, {"default": "web-dfw"}])
def test_non_string_referrers_annotation_is_unreadable(value: Any) -> None:
    obj = configmap(annotations={REFERRERS_ANNOTATION: value})
    record = reduce.companion(CONFIGMAPS)(obj)
    assert isinstance(record.referrers_raw, str)
    verdict = _decide(obj)
    assert verdict.delete is False
    assert verdict.reason.startswith("referrers-")


def test_non_string_policy_annotation_is_not_a_city_policy() -> None:
    record = reduce.binding(
        resourcebinding(annotations={"propagationpolicy.karmada.io/name": ["city-dfw"]})
    )
    assert record.policy_annotation is not None
    assert not record.policy_annotation.startswith("city-")


# -- timestamps -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "timestamp",
    [
        "missing",
        None,
        "",
        "yesterday",
        "2026-13-45T00:00:00Z",
        "2026-11-12T09:14:27",  # naive: no zone, its age cannot be proven
        "2026-11-12",
        1763000000,
        ["2026-11-12T09:14:27Z"],
    ],
)
def test_bad_creation_timestamp_means_age_unknown(timestamp: Any) -> None:
    obj = configmap()
    if timestamp == "missing":
        del obj["metadata"]["creationTimestamp"]
    else:
        obj["metadata"]["creationTimestamp"] = timestamp
    record = reduce.companion(CONFIGMAPS)(obj)
    assert record.ref.created is None
    verdict = _decide(obj)
    assert (verdict.delete, verdict.reason) == (False, "age-unknown")


# -- bindings: spec.resource ----------------------------------------------------------------


@pytest.mark.parametrize("spec", ["missing", None, "str", {}, {"resource": None}, {"resource": 1}])
def test_binding_without_spec_resource(spec: Any) -> None:
    obj = resourcebinding()
    if spec == "missing":
        del obj["spec"]
    else:
        obj["spec"] = spec
    record = reduce.binding(obj)
    assert record.resource is None
    companion = reduce.companion(CONFIGMAPS)(configmap())
    assert binding_names_companion(record.resource, companion.ref) is not None


def test_binding_spec_resource_with_odd_fields() -> None:
    obj = resourcebinding()
    obj["spec"]["resource"] = {"kind": 5, "name": None}
    record = reduce.binding(obj)
    assert record.resource is not None
    assert (record.resource.kind, record.resource.name, record.resource.uid) == ("", "", "")
    companion = reduce.companion(CONFIGMAPS)(configmap())
    assert binding_names_companion(record.resource, companion.ref) is not None


# -- routes: parentRefs ---------------------------------------------------------------------


@pytest.mark.parametrize("refs", [None, "web-gateway", {"name": "web-gateway"}, 3, []])
def test_parent_refs_not_a_list_means_no_parents(refs: Any) -> None:
    obj = httproute()
    obj["spec"]["parentRefs"] = refs
    record = reduce.route(obj)
    assert record.parent_refs == ()
    verdict = route_target(record)
    assert isinstance(verdict, Verdict)
    assert (verdict.delete, verdict.reason) == (False, "no-parent-refs")


@pytest.mark.parametrize("spec", ["missing", None, "str", []])
def test_route_spec_missing_or_not_a_dict(spec: Any) -> None:
    obj = httproute()
    if spec == "missing":
        del obj["spec"]
    else:
        obj["spec"] = spec
    assert reduce.route(obj).parent_refs == ()


@pytest.mark.parametrize("item", ["web-gateway", None, 1, ["web-gateway"]])
def test_parent_ref_item_not_a_dict_is_no_gateway(item: Any) -> None:
    record = reduce.route(httproute([{"name": "web-gateway"}, item]))
    assert len(record.parent_refs) == 2
    assert not is_gateway(record.parent_refs[1])
    verdict = route_target(record)
    assert isinstance(verdict, Verdict)
    assert (verdict.delete, verdict.reason) == (False, "non-gateway-parent")


def test_parent_ref_absent_keys_are_none() -> None:
    (parent,) = reduce.route(httproute([{"name": "web-gateway"}])).parent_refs
    assert parent == ParentRef("web-gateway", None, None, None)
    assert is_gateway(parent)


def test_parent_ref_explicit_gateway() -> None:
    ref = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "web-gateway"}
    (parent,) = reduce.route(httproute([ref])).parent_refs
    assert parent == ParentRef("web-gateway", "gateway.networking.k8s.io", "Gateway", None)
    assert is_gateway(parent)


def test_parent_ref_empty_group_is_the_core_group() -> None:
    ref = {"group": "", "kind": "Service", "name": "web"}
    (parent,) = reduce.route(httproute([ref])).parent_refs
    assert parent.group == ""
    assert not is_gateway(parent)
    (only_group,) = reduce.route(httproute([{"group": "", "name": "gw"}])).parent_refs
    assert only_group.group == "" and only_group.kind is None
    assert not is_gateway(only_group)


def test_parent_ref_empty_namespace_is_set() -> None:
    record = reduce.route(httproute([{"name": "web-gateway", "namespace": ""}]))
    assert record.parent_refs[0].namespace == ""
    verdict = route_target(record)
    assert isinstance(verdict, Verdict)
    assert (verdict.delete, verdict.reason) == (False, "cross-namespace-parent")


@pytest.mark.parametrize("key", ["group", "kind"])
@pytest.mark.parametrize("value", [None, 1, ["Gateway"]])
def test_parent_ref_non_string_group_or_kind_is_no_gateway(key: str, value: Any) -> None:
    record = reduce.route(httproute([{"name": "web-gateway", key: value}]))
    assert not is_gateway(record.parent_refs[0])
    verdict = route_target(record)
    assert isinstance(verdict, Verdict)
    assert verdict.reason == "non-gateway-parent"


def test_parent_ref_without_name() -> None:
    (parent,) = reduce.route(httproute([{"kind": "Gateway"}])).parent_refs
    assert parent.name == ""


# -- helpers --------------------------------------------------------------------------------


def test_name_helpers() -> None:
    obj = configmap()
    assert reduce.name_of(obj) == "app-config"
    assert reduce.namespace_and_name(obj) == (HUB_NS, "app-config")
    assert reduce.ref_of(RESOURCEBINDINGS)(resourcebinding()).kind == "ResourceBinding"
    assert reduce.name_of(configmap(name="")) is None
    assert reduce.namespace_and_name(configmap(namespace=None)) == ("", "app-config")


def test_records_read_of_one_namespace_share_one_string_for_it() -> None:
    """Each object's decoded namespace is its own string; the records keep one for them all,
    without growing the interpreter's table of interned strings (it never shrinks)."""
    import json

    texts = [
        json.dumps({"metadata": {"namespace": "ns-shared-7f3", "name": f"cm-{i}", "uid": "u"}})
        for i in range(3)
    ]
    decoded = [json.loads(text) for text in texts]
    assert decoded[0]["metadata"]["namespace"] is not decoded[1]["metadata"]["namespace"]
    refs = [reduce.object_ref(obj, CONFIGMAPS) for obj in decoded]
    assert refs[0].namespace == "ns-shared-7f3"
    assert refs[0].namespace is refs[1].namespace is refs[2].namespace
    pairs = [reduce.namespace_and_name(obj) for obj in decoded]
    assert all(pair is not None and pair[0] is refs[0].namespace for pair in pairs)


def test_a_namespace_value_longer_than_any_namespace_is_not_kept_to_be_shared() -> None:
    """A hub writer's 1.5 MB `spec.resource.namespace` is not held by the cache of shared
    strings after its record is gone (256 of them would be 384 MiB)."""
    import json

    text = json.dumps({"namespace": "n" * 64})
    first, second = json.loads(text)["namespace"], json.loads(text)["namespace"]
    assert reduce.one_string(first) is first and reduce.one_string(second) is second
    short = json.dumps({"namespace": "n" * 63})
    kept = reduce.one_string(json.loads(short)["namespace"])
    assert reduce.one_string(json.loads(short)["namespace"]) is kept
