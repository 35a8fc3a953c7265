"""gcjob.marks: the mark an orphan carries through its grace period, the evidence it rests on,
the conditional JSON Patches that write it, and the grace rule. Pure: `now` is passed in."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import jsonpatch
import pytest

from gcjob import marks
from gcjob.domain import (
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
    REFERRERS_ANNOTATION,
)
from gcjob.kube import reduce
from gcjob.kube.resources import CONFIGMAPS
from gcjob.marks import Rule
from gcjob.model import Mark, ObjectRef, ParentRef

NOW = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
GRACE = timedelta(minutes=10)
RAW = '["default/web"]'


def configmap(
    labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "app-config",
        "namespace": "ns-1",
        "uid": "uid-1",
        "resourceVersion": "7",
        "creationTimestamp": "2026-11-01T00:00:00Z",
    }
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def ref_of(obj: dict[str, Any]) -> ObjectRef:
    return reduce.object_ref(obj, CONFIGMAPS)


def apply(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """As the server does: all or nothing, then a new resourceVersion."""
    patched: dict[str, Any] = jsonpatch.apply_patch(obj, ops)
    patched["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
    return patched


def mark_at(
    when: datetime, evidence: marks.Evidence | None = None, label: str | None = "true"
) -> Mark:
    evidence = evidence or marks.companion_evidence(RAW)
    return Mark(label, marks.since_value(when), "orphaned", evidence.digest)


# -- evidence ----------------------------------------------------------------------------------


def test_the_digest_is_short_names_its_rule_and_changes_with_the_facts() -> None:
    one = marks.companion_evidence(RAW)
    assert one.digest == marks.companion_evidence(RAW).digest
    assert one.digest.startswith("companion:") and len(one.digest) == len("companion:") + 16
    assert marks.companion_evidence('["default/web","default/api"]').digest != one.digest
    assert marks.companion_evidence('["default/web"] ').digest != one.digest  # verbatim


def test_a_binding_digest_differs_by_the_rule_that_marked_it() -> None:
    companion = ref_of(configmap())
    by_companion = marks.companion_binding_evidence(companion)
    by_bindings = marks.binding_evidence("ConfigMap", "app-config")
    assert by_companion.facts == by_bindings.facts
    assert by_companion.digest != by_bindings.digest
    assert by_bindings.guards == (
        ("/spec/resource/kind", "ConfigMap"),
        ("/spec/resource/name", "app-config"),
    )
    assert marks.binding_evidence("Secret", "app-config").digest != by_bindings.digest


def test_route_evidence_is_its_parent_gateways_in_any_order() -> None:
    parents = (ParentRef("b", None, None, None), ParentRef("a", None, None, None))
    evidence = marks.route_evidence("single", "default", ("b", "a"), parents)
    assert evidence.digest == marks.route_evidence("single", "default", ("a", "b"), parents).digest
    assert evidence.digest != marks.route_evidence("other", "default", ("a", "b"), parents).digest
    assert evidence.digest != marks.route_evidence("single", "prod", ("a", "b"), parents).digest
    assert evidence.guards == (("/spec/parentRefs/0/name", "b"), ("/spec/parentRefs/1/name", "a"))


def test_the_companion_guard_is_the_referrers_annotation_by_its_escaped_pointer() -> None:
    [(path, value)] = marks.companion_evidence(RAW).guards
    assert path == "/metadata/annotations/compute.datumapis.com~1referenced-by"
    assert value == RAW


# -- patches -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "annotations"),
    [(None, None), ({}, {}), ({"app": "web"}, {"team": "payments", REFERRERS_ANNOTATION: RAW})],
    ids=["no-maps", "empty-maps", "other-keys"],
)
def test_a_mark_patch_writes_the_mark_and_nothing_else(
    labels: dict[str, str] | None, annotations: dict[str, str] | None
) -> None:
    obj = configmap(labels, annotations)
    evidence = marks.Evidence(Rule.COMPANION, (("referrers", RAW),))  # no guard: no annotation
    mark = marks.new_mark(evidence, "orphaned", NOW)

    patched = apply(obj, marks.mark_patch(ref_of(obj), mark, evidence))

    assert patched["metadata"]["labels"] == {**(labels or {}), ORPHANED_LABEL: "true"}
    assert patched["metadata"]["annotations"] == {
        **(annotations or {}),
        ORPHANED_SINCE_ANNOTATION: "2026-11-23T10:00:00Z",
        ORPHANED_REASON_ANNOTATION: "orphaned",
        ORPHANED_EVIDENCE_ANNOTATION: evidence.digest,
    }
    assert patched["data"] == obj["data"]
    assert ref_of(patched).mark == mark


def test_a_mark_patch_is_guarded_by_uid_resource_version_and_evidence() -> None:
    obj = configmap({}, {REFERRERS_ANNOTATION: RAW})
    evidence = marks.companion_evidence(RAW)
    ops = marks.mark_patch(ref_of(obj), marks.new_mark(evidence, "orphaned", NOW), evidence)

    assert ops[:3] == [
        {"op": "test", "path": "/metadata/uid", "value": "uid-1"},
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
        {
            "op": "test",
            "path": "/metadata/annotations/compute.datumapis.com~1referenced-by",
            "value": RAW,
        },
    ]
    for change in (
        {"uid": "uid-2"},
        {"resourceVersion": "8"},
        {"annotations": {REFERRERS_ANNOTATION: '["default/api"]'}},
    ):
        moved = copy.deepcopy(obj)
        moved["metadata"].update(change)
        with pytest.raises(jsonpatch.JsonPatchTestFailed):
            jsonpatch.apply_patch(moved, ops)


def test_marking_again_replaces_the_old_mark() -> None:
    old = marks.companion_evidence(RAW)
    obj = configmap(
        {ORPHANED_LABEL: "true"},
        {
            REFERRERS_ANNOTATION: '["default/api"]',
            ORPHANED_SINCE_ANNOTATION: "2026-11-20T00:00:00Z",
            ORPHANED_REASON_ANNOTATION: "orphaned",
            ORPHANED_EVIDENCE_ANNOTATION: old.digest,
        },
    )
    new = marks.companion_evidence('["default/api"]')
    mark = marks.new_mark(new, "orphaned", NOW)

    patched = apply(obj, marks.mark_patch(ref_of(obj), mark, new))

    assert ref_of(patched).mark == mark


def test_unmark_removes_every_part_seen_and_keeps_the_rest() -> None:
    obj = configmap(
        {"app": "web", ORPHANED_LABEL: "true"},
        {"team": "payments", ORPHANED_SINCE_ANNOTATION: "garbage"},  # a partial mark
    )

    patched = apply(obj, marks.unmark_patch(ref_of(obj)))

    assert patched["metadata"]["labels"] == {"app": "web"}
    assert patched["metadata"]["annotations"] == {"team": "payments"}
    assert ref_of(patched).mark is None


def test_no_patch_without_a_pin() -> None:
    evidence = marks.companion_evidence(RAW)
    unpinned = ObjectRef("v1", "ConfigMap", "ns", "x", "", "", None)
    with pytest.raises(ValueError, match="no uid/resourceVersion"):
        marks.mark_patch(unpinned, marks.new_mark(evidence, "orphaned", NOW), evidence)
    with pytest.raises(ValueError, match="no uid/resourceVersion"):
        marks.unmark_patch(unpinned)
