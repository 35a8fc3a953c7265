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


UID = "uid-1"  # configmap()'s


def mark_at(
    when: datetime, evidence: marks.Evidence | None = None, label: str | None = "true"
) -> Mark:
    """gcjob's mark on configmap(), as of `when`: bound to its uid unless `evidence` is."""
    evidence = evidence or marks.companion_evidence(RAW)
    bound = evidence if evidence.uid else evidence.on(UID)
    return Mark(label, marks.since_value(when), "orphaned", bound.digest)


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


# -- reading a mark: only gcjob's own, on this very object ------------------------------------

CREATED = datetime(2026, 11, 1, tzinfo=UTC)  # configmap()'s creationTimestamp


@pytest.mark.parametrize(
    "value",
    ["2026-11-23T10:00:00Z", "2026-11-23T10:00:00.250000Z", "0001-01-01T00:00:00Z"],
)
def test_since_is_read_back_exactly_as_it_is_written(value: str) -> None:
    moment = marks.parse_since(value)
    assert moment is not None and moment.tzinfo is UTC
    assert marks.since_value(moment) == value


@pytest.mark.parametrize(
    "value",
    [
        "2026-11-23 18:00:00+00:00",  # a space, an offset
        "2026-11-23T18:00:00+00:00",  # an offset, even +00:00
        "2026-11-23T18:00:00-05:00",
        "2026-W47-1T18:00:00Z",  # ISO week date
        "2026-327T18:00:00Z",  # ordinal date
        "20261123T180000Z",  # basic format
        "2026-11-23T18:00:00.5Z",  # a fraction gcjob does not write
        "2026-11-23T18:00:00.000000Z",  # a zero fraction gcjob leaves out
        "2026-11-23T18:00:00.1234567Z",
        "2026-11-23T18:00:00z",
        "2026-11-23T18:00:00Z\n",
        " 2026-11-23T18:00:00Z",
        "2026-11-23T18:00Z",
        "2026-02-30T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "0000-01-01T00:00:00Z",
        "2026-11-23T24:00:00Z",
        "2026-11-23T23:59:60Z",
        "\uff12\uff10\uff12\uff16-11-23T18:00:00Z",  # fullwidth digits
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-23:59",
        "",
    ],
)
def test_a_since_gcjob_did_not_write_is_not_read(value: str) -> None:
    assert marks.parse_since(value) is None


def read(mark: Mark | None, uid: str = UID, **kw: Any) -> marks.MarkReading:
    return marks.read_mark(mark, uid, kw.get("created", CREATED), kw.get("now", NOW))


def test_gcjobs_mark_on_this_object_is_bound() -> None:
    reading = read(mark_at(NOW - GRACE))
    assert reading.state is marks.MarkState.BOUND
    assert reading.since == NOW - GRACE
    assert reading.evidence == marks.companion_evidence(RAW).facts_digest


def test_a_mark_written_before_marks_named_their_object_is_legacy() -> None:
    evidence = marks.companion_evidence(RAW)
    legacy = Mark("true", marks.since_value(NOW - GRACE), "orphaned", evidence.facts_digest)
    reading = read(legacy)
    assert reading.state is marks.MarkState.LEGACY
    assert reading.evidence == evidence.facts_digest


@pytest.mark.parametrize(
    ("since", "why"),
    [
        ("2099-01-01T00:00:00Z", "after now"),
        ("9999-12-31T23:59:59Z", "after now"),
        ("2026-11-23 18:00:00+00:00", "not a time gcjob writes"),
        ("2026-W47-1T18:00:00Z", "not a time gcjob writes"),
        ("2026-11-23T09:00:00+01:00", "not a time gcjob writes"),
        ("9999-12-31T23:59:59-23:59", "not a time gcjob writes"),
        ("0001-01-01T00:00:00+01:00", "not a time gcjob writes"),
        ("0001-01-01T00:00:00Z", "before the object was created"),
        ("2026-10-31T23:59:59Z", "before the object was created"),
    ],
)
def test_a_time_gcjob_did_not_write_or_out_of_range_voids_the_mark(since: str, why: str) -> None:
    evidence = marks.companion_evidence(RAW).on(UID)
    reading = read(Mark("true", since, "orphaned", evidence.digest))
    assert reading.state is marks.MarkState.VOID
    assert reading.since is None
    assert why in reading.why and reading.why.startswith("void mark: ")


@pytest.mark.parametrize("ahead", [timedelta(milliseconds=1), timedelta(milliseconds=900)])
def test_a_mark_a_fraction_of_a_second_after_now_counts_its_grace_not_begun(
    ahead: timedelta,
) -> None:
    """The hub's clock is known to the second (its Date), carried on by the monotonic clock: a
    run's mark, written late in one second, reads a fraction of a second after the next run's
    now (it was marked again, run after run, never reaching its grace period). It counts,
    its grace period not yet begun; a second or more after now, it is void."""
    reading = read(mark_at(NOW + ahead))
    assert reading.state is marks.MarkState.BOUND and reading.since == NOW + ahead
    late = read(mark_at(NOW + marks.HUB_CLOCK_RESOLUTION + ahead))
    assert late.state is marks.MarkState.VOID and "after now" in late.why


def test_a_mark_copied_from_another_object_is_void() -> None:
    theirs = marks.companion_evidence(RAW).on("uid-of-the-original")
    reading = read(mark_at(NOW - GRACE, theirs))
    assert reading.state is marks.MarkState.VOID
    assert "another object" in reading.why and "uid-of-the-original" in reading.why


@pytest.mark.parametrize(
    "mark",
    [
        Mark("true", marks.since_value(NOW), "orphaned", "companion:xyz"),
        Mark("true", marks.since_value(NOW), "orphaned", "companion:0123456789ABCDEF"),
        Mark("true", marks.since_value(NOW), "orphaned", "companion:0123456789abcdef:"),
        Mark("True", marks.since_value(NOW), "orphaned", "companion:0123456789abcdef:uid-1"),
        Mark(None, marks.since_value(NOW), "orphaned", "companion:0123456789abcdef:uid-1"),
        Mark("true", None, "orphaned", "companion:0123456789abcdef:uid-1"),
        Mark("true", marks.since_value(NOW), "orphaned", None),
    ],
)
def test_a_malformed_or_incomplete_mark_is_void(mark: Mark) -> None:
    assert read(mark).state is marks.MarkState.VOID


def test_an_object_without_a_creation_time_has_no_mark_that_counts() -> None:
    assert read(mark_at(NOW - GRACE), created=None).state is marks.MarkState.VOID


def test_no_mark_is_absent() -> None:
    assert read(None).state is marks.MarkState.ABSENT


def test_a_void_mark_detail_is_one_short_line() -> None:
    since = "x" * 10_000 + "\n" + "y"
    reading = read(Mark("true", since, "orphaned", "companion:0123456789abcdef:uid-1"))
    assert "\n" not in reading.why and len(reading.why) < 200
