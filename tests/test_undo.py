"""The deletion record's entries and the object `gcjob restore` makes of one (gcjob/undo.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob import undo
from gcjob.domain import (
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
    PROTECT_ANNOTATION,
    VALUE_NOT_KEPT,
)
from gcjob.restore import select

AT = datetime(2026, 11, 24, 3, 15, tzinfo=UTC)
HUB = "hub-uid"
CONFIGMAP = undo.Where("", "v1", "configmaps", "ConfigMap", True)
SECRET = undo.Where("", "v1", "secrets", "Secret", True)
CONNECTOR = undo.Where("networking.datumapis.com", "v1alpha1", "connectors", "Connector", True)
MARK_LABELS = {ORPHANED_LABEL: "true"}
MARK_ANNOTATIONS = {
    ORPHANED_SINCE_ANNOTATION: "2026-11-24T03:00:00Z",
    ORPHANED_REASON_ANNOTATION: "orphaned",
    ORPHANED_EVIDENCE_ANNOTATION: "companion:0123456789abcdef:uid-1",
}


def configmap(**meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "app-config",
            "namespace": "ns-1",
            "uid": "uid-1",
            "resourceVersion": "42",
            "creationTimestamp": "2026-11-20T00:00:00Z",
            "generation": 1,
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:data": {}}}],
            "labels": {"team": "web", **MARK_LABELS},
            "annotations": {"note": "kept", **MARK_ANNOTATIONS},
            **meta,
        },
        "data": {"app.conf": "listen 8080"},
    }


def recorded(entry: dict[str, Any], outcome: dict[str, Any] | None = None) -> list[undo.Recorded]:
    lines = [undo.line(entry)] + ([undo.line(outcome)] if outcome else [])
    return undo.read_record(lines)


def test_a_delete_entry_keeps_the_object_without_managed_fields() -> None:
    entry = undo.delete_entry(
        "run-1", "companions", CONFIGMAP, configmap(), AT, sensitive=False, hub=HUB
    )

    assert entry["event"] == "delete" and entry["format"] == undo.FORMAT
    assert entry["object"]["data"] == {"app.conf": "listen 8080"}
    assert "managedFields" not in entry["object"]["metadata"]
    assert entry["object"]["metadata"]["resourceVersion"] == "42"  # what the delete is pinned to
    assert entry["data_recorded"] is True
    assert entry["resource"] == {
        "group": "",
        "version": "v1",
        "plural": "configmaps",
        "kind": "ConfigMap",
        "namespaced": True,
    }


def test_a_secret_entry_is_a_reference_whatever_it_is_given() -> None:
    # Given a whole Secret by mistake, the entry still holds its metadata only, and of its
    # labels and annotations the keys (a value only where a rule of gcjob's reads it).
    secret = {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": {
            "name": "db-creds",
            "namespace": "ns-1",
            "uid": "uid-2",
            "resourceVersion": "7",
            "labels": {"a": "b"},
            "annotations": {"c": "d"},
            "managedFields": [{"manager": "x"}],
        },
        "data": {"password": "c2VjcmV0"},
        "stringData": {"password": "secret"},
    }

    entry = undo.delete_entry("run-1", "companions", SECRET, secret, AT, sensitive=True, hub=HUB)

    assert entry["object"] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "db-creds",
            "namespace": "ns-1",
            "uid": "uid-2",
            "resourceVersion": "7",
            "labels": {"a": VALUE_NOT_KEPT},
            "annotations": {"c": VALUE_NOT_KEPT},
        },
    }
    assert entry["data_recorded"] is False
    assert "c2VjcmV0" not in undo.line(entry) and 'secret"' not in undo.line(entry)


def test_restore_strips_server_fields_and_the_mark_and_protects() -> None:
    obj = {**configmap(deletionTimestamp="2026-11-24T03:15:00Z"), "status": {"x": 1}}

    body, notes = undo.restore_body(obj, {}, protect=True)

    assert body["metadata"] == {
        "name": "app-config",
        "namespace": "ns-1",
        "labels": {"team": "web"},
        "annotations": {"note": "kept", PROTECT_ANNOTATION: "true"},
    }
    assert body["data"] == obj["data"] and "status" not in body
    assert notes == []
    assert obj["metadata"]["uid"] == "uid-1"  # the record is not changed


def test_without_protect_and_with_only_a_mark_no_empty_maps_are_left() -> None:
    obj = configmap(labels=dict(MARK_LABELS), annotations=dict(MARK_ANNOTATIONS))

    body, _ = undo.restore_body(obj, {}, protect=False)

    assert "labels" not in body["metadata"] and "annotations" not in body["metadata"]


def test_owner_references_are_repointed_to_a_live_owner_or_dropped() -> None:
    anchor = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "anchor-1",
        "uid": "old-anchor",
        "blockOwnerDeletion": True,
    }
    other = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "old-deploy"}
    obj = configmap(ownerReferences=[anchor, other])

    body, notes = undo.restore_body(
        obj, {("", "ConfigMap", "anchor-1"): "new-anchor"}, protect=True
    )

    assert body["metadata"]["ownerReferences"] == [{**anchor, "uid": "new-anchor"}]
    assert notes == [
        "ownerReference to ConfigMap anchor-1 re-pointed to its live uid new-anchor",
        "ownerReference to Deployment web dropped: no live owner found",
    ]
    gone, _ = undo.restore_body(obj, {}, protect=True)
    assert "ownerReferences" not in gone["metadata"]


def test_a_record_pairs_each_delete_with_its_last_outcome() -> None:
    first = undo.delete_entry(
        "r", "companions", CONFIGMAP, configmap(), AT, sensitive=False, hub=HUB
    )
    second = undo.delete_entry(
        "r", "copies", CONNECTOR, configmap(name="web", uid="uid-9"), AT, sensitive=False, hub=HUB
    )
    lines = [
        undo.line(first),
        undo.line(undo.outcome_entry("r", "uid-1", "deleted", "", AT)),
        undo.line(second),
        undo.line(undo.outcome_entry("r", "uid-9", "skipped:changed-since-observed", "", AT)),
    ]

    read = undo.read_record(lines)

    assert [(r.label, r.outcome, r.deleted_by_gcjob) for r in read] == [
        ("ConfigMap/ns-1/app-config", "deleted", True),
        ("Connector/ns-1/web", "skipped:changed-since-observed", False),
    ]
    assert read[1].where == CONNECTOR


def test_a_delete_recorded_twice_for_one_uid_is_one_object_to_restore() -> None:
    """Issue 46 item 9: a binding's pinned delete met a 409 and was tried again, and the record
    held two `delete` entries for its uid: restore's dry run said `would-restore` twice (exit
    0), --apply restored it, then refused it (exit 1). One uid is one object: the last entry
    (as its last try found it), with the last outcome; a target by uid names it once."""
    tried = undo.delete_entry(
        "r", "bindings", CONFIGMAP, configmap(resourceVersion="42"), AT, sensitive=False, hub=HUB
    )
    again = undo.delete_entry(
        "r", "bindings", CONFIGMAP, configmap(resourceVersion="43"), AT, sensitive=False, hub=HUB
    )
    other = undo.delete_entry(
        "r",
        "companions",
        CONFIGMAP,
        configmap(name="web", uid="uid-9"),
        AT,
        sensitive=False,
        hub=HUB,
    )
    lines = [
        undo.line(tried),
        undo.line(undo.outcome_entry("r", "uid-1", "skipped:changed-since-observed", "", AT)),
        undo.line(other),
        undo.line(undo.outcome_entry("r", "uid-9", "deleted", "", AT)),
        undo.line(again),
        undo.line(undo.outcome_entry("r", "uid-1", "deleted", "", AT)),
    ]

    read = undo.read_record(lines)

    assert [(r.label, r.uid, r.outcome) for r in read] == [
        ("ConfigMap/ns-1/web", "uid-9", "deleted"),
        ("ConfigMap/ns-1/app-config", "uid-1", "deleted"),
    ]
    assert read[1].meta["resourceVersion"] == "43"
    assert [r.uid for r in select(read, [])] == ["uid-9", "uid-1"]
    assert [r.uid for r in select(read, ["uid-1"])] == ["uid-1"]


def test_a_delete_without_an_outcome_counts_as_maybe_deleted() -> None:
    entry = undo.delete_entry(
        "r", "companions", CONFIGMAP, configmap(), AT, sensitive=False, hub=HUB
    )
    assert recorded(entry)[0].deleted_by_gcjob


def test_a_last_line_cut_short_is_left_out_and_any_other_bad_line_is_refused() -> None:
    entry = undo.line(
        undo.delete_entry("r", "companions", CONFIGMAP, configmap(), AT, sensitive=False, hub=HUB)
    )
    assert len(undo.read_record([entry, entry[: len(entry) // 2]])) == 1
    with pytest.raises(undo.RecordError, match="record:1: not JSON"):
        undo.read_record([entry[:10] + "\n", entry])
    with pytest.raises(undo.RecordError, match="not a gcjob deletion record"):
        undo.read_record([json.dumps({"items": []}) + "\n"])
    with pytest.raises(undo.RecordError, match="without its resource"):
        undo.read_record([json.dumps({"format": undo.FORMAT, "event": "delete"}) + "\n"])


# -- generated: restore(record(x)) ---------------------------------------------------------

KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-./", min_size=1, max_size=20)
VALUES = st.text(max_size=30)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=10,
)
MARK_KEYS = st.sampled_from([ORPHANED_LABEL, *MARK_ANNOTATIONS])
STRING_MAPS = st.dictionaries(KEYS | MARK_KEYS, VALUES, max_size=5)
OWNERS = st.lists(
    st.fixed_dictionaries(
        {
            "apiVersion": st.sampled_from(["v1", "apps/v1", "networking.datumapis.com/v1alpha1"]),
            "kind": st.sampled_from(["ConfigMap", "Deployment", "Connector"]),
            "name": KEYS,
            "uid": KEYS,
        }
    ),
    max_size=3,
)


@st.composite
def objects(draw: st.DrawFn) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": draw(KEYS),
        "namespace": draw(KEYS),
        "uid": draw(KEYS),
        "resourceVersion": draw(st.integers(1, 10**9).map(str)),
        "creationTimestamp": "2026-11-20T00:00:00Z",
        "managedFields": [{"manager": draw(KEYS)}],
        "labels": draw(STRING_MAPS),
        "annotations": draw(STRING_MAPS),
        "ownerReferences": draw(OWNERS),
    }
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    for part in ("spec", "data", "status"):
        if draw(st.booleans()):
            obj[part] = draw(st.dictionaries(KEYS, JSON_VALUES, max_size=4))
    return obj


MARKS = {ORPHANED_LABEL, *MARK_ANNOTATIONS}


@given(
    objects(),
    st.dictionaries(st.tuples(st.just(""), st.just("ConfigMap"), KEYS), KEYS, max_size=3),
    st.booleans(),
)
def test_restore_of_a_record_keeps_content_and_never_carries_identity_or_marks(
    obj: dict[str, Any], live: dict[undo.OwnerKey, str], protect: bool
) -> None:
    entry = undo.delete_entry("r", "companions", CONFIGMAP, obj, AT, sensitive=False, hub=HUB)
    (read,) = undo.read_record([undo.line(entry)])  # through the file's own encoding

    body, notes = undo.restore_body(read.entry["object"], live, protect=protect)

    meta = body["metadata"]
    for part in ("spec", "data"):
        assert body.get(part) == obj.get(part)
    assert "status" not in body
    assert meta.get("labels", {}) == {
        k: v for k, v in obj["metadata"]["labels"].items() if k not in MARKS
    }
    kept = {k: v for k, v in obj["metadata"]["annotations"].items() if k not in MARKS}
    if protect:
        kept[PROTECT_ANNOTATION] = "true"
    assert meta.get("annotations", {}) == kept
    assert not set(meta) & set(undo.SERVER_METADATA)
    assert not (set(meta.get("labels", {})) | set(meta.get("annotations", {}))) & MARKS
    assert (meta["name"], meta["namespace"]) == (
        obj["metadata"]["name"],
        obj["metadata"]["namespace"],
    )
    owners = meta.get("ownerReferences", [])
    assert all(owner["uid"] == live[undo.owner_key(owner)] for owner in owners)
    assert len(owners) + sum("dropped" in note for note in notes) == len(
        obj["metadata"]["ownerReferences"]
    )


# -- generated: any hand-edited line is read or refused in one line, never a traceback ------


@given(
    st.dictionaries(
        st.sampled_from(["name", "namespace", "uid", "labels", "annotations", "ownerReferences"]),
        JSON_VALUES,
    ),
    st.booleans(),
)
def test_any_hand_edited_metadata_is_restorable_or_one_record_error(
    meta: dict[str, Any], namespaced: bool
) -> None:
    where = undo.Where("", "v1", "configmaps", "ConfigMap", namespaced)
    entry = undo.delete_entry(
        "r", "companions", where, {"metadata": meta}, AT, sensitive=False, hub=HUB
    )
    try:
        (read,) = undo.read_record([undo.line(entry)])
    except undo.RecordError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("record:1: ")
        return
    # Read: everything restore then does with it works, whatever the values were.
    body, _ = undo.restore_body(read.entry["object"], {}, protect=True)
    assert body["metadata"]["name"] == meta["name"]
    assert read.label and select([read], (read.uid,)) == [read]
    if namespaced:
        assert read.namespace == meta["namespace"] != ""


def test_a_line_nested_deeper_than_json_reads_is_refused_not_a_traceback() -> None:
    deep = "[" * 100_000 + "]" * 100_000 + "\n"
    with pytest.raises(undo.RecordError, match="record:1: not JSON"):
        undo.read_record([deep, "\n"])
