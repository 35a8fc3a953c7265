"""gcjob.marks: the mark an orphan carries through its grace period, the evidence it rests on,
the conditional JSON Patches that write it, and the grace rule. Pure: `now` is passed in."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
from gcjob.marks import Next, Rule
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


# -- the grace rule ----------------------------------------------------------------------------

EVIDENCE = marks.companion_evidence(RAW)


def rule(mark: Mark | None, evidence: marks.Evidence | None = EVIDENCE, **kw: Any) -> Any:
    return marks.grace_rule(
        Rule.COMPANION, evidence, mark, kw.get("now", NOW), kw.get("grace", GRACE)
    )


def test_a_new_orphan_is_marked_now() -> None:
    call = rule(None)
    assert (call.next, call.since, call.due) == (Next.MARK, NOW, NOW + GRACE)


def test_inside_the_grace_period_it_waits() -> None:
    call = rule(mark_at(NOW - GRACE + timedelta(seconds=1)))
    assert call.next is Next.WAIT
    assert call.since == NOW - GRACE + timedelta(seconds=1)
    assert "deleted from 2026-11-23T10:00:01Z" in call.detail


def test_at_the_end_of_the_grace_period_it_is_deleted() -> None:
    assert rule(mark_at(NOW - GRACE)).next is Next.DELETE
    assert rule(mark_at(NOW - 10 * GRACE)).since == NOW - 10 * GRACE


def test_changed_evidence_restarts_the_grace_period() -> None:
    other = marks.companion_evidence('["default/web","default/api"]')
    call = rule(mark_at(NOW - 10 * GRACE, other))
    assert (call.next, call.since) == (Next.MARK, NOW)
    assert "evidence changed" in call.detail


@pytest.mark.parametrize(
    "mark",
    [
        Mark(None, marks.since_value(NOW - 2 * GRACE), "orphaned", EVIDENCE.digest),  # no label
        Mark("false", marks.since_value(NOW - 2 * GRACE), "orphaned", EVIDENCE.digest),
        Mark("true", "yesterday", "orphaned", EVIDENCE.digest),
        Mark("true", "2026-11-23T09:00:00", "orphaned", EVIDENCE.digest),  # no zone
        Mark("true", None, "orphaned", EVIDENCE.digest),
        Mark("true", marks.since_value(NOW - 2 * GRACE), "orphaned", None),
    ],
)
def test_a_broken_mark_is_never_trusted_it_is_written_again(mark: Mark) -> None:
    call = rule(mark)
    assert (call.next, call.since) == (Next.MARK, NOW)


def test_a_mark_from_the_future_waits() -> None:
    assert rule(mark_at(NOW + timedelta(days=1))).next is Next.WAIT


def test_grace_zero_deletes_on_the_first_look() -> None:
    assert rule(None, grace=timedelta(0)).next is Next.DELETE
    assert rule(mark_at(NOW), grace=timedelta(0)).next is Next.DELETE


def test_no_longer_an_orphan_is_unmarked_and_never_marked_is_left_alone() -> None:
    assert rule(mark_at(NOW - GRACE), None).next is Next.UNMARK
    assert rule(Mark(label="true"), None).next is Next.UNMARK  # any part of gcjob's mark
    assert rule(None, None).next is Next.NOTHING


def test_a_mark_of_another_rule_is_left_to_it() -> None:
    companions = marks.companion_binding_evidence(ref_of(configmap()))
    mark = mark_at(NOW - GRACE, companions)
    call = marks.grace_rule(Rule.BINDING, None, mark, NOW, GRACE)
    assert call.next is Next.NOTHING
    assert "companion-binding" in call.detail
    # ... but an orphan by this rule carries this rule's mark from now on
    mine = marks.binding_evidence("ConfigMap", "app-config")
    assert marks.grace_rule(Rule.BINDING, mine, mark, NOW, GRACE).next is Next.MARK


# -- property: across runs and world changes ---------------------------------------------------

REFERRER_SETS = ('["default/web"]', '["default/api","default/web"]', '["default/api"]')


@dataclass
class World:
    """One companion on a hub, its referrers and whether any of them exists, as runs see it."""

    obj: dict[str, Any]
    orphan: bool = False
    # The truth: since when it has been an orphan on its current evidence (None: not one).
    orphan_since: datetime | None = None
    clean_since: datetime | None = None  # no failed run since it became an orphan
    first_seen: datetime | None = None  # the first run that saw this orphan
    deleted_at: datetime | None = None
    log: list[str] = field(default_factory=list)

    @property
    def raw(self) -> str:
        return str(self.obj["metadata"]["annotations"][REFERRERS_ANNOTATION])


steps = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=15 * 60),  # seconds to the next run
        st.sampled_from(["none", "none", "orphan", "referrer-back", "evidence", "unlabel"]),
        st.sampled_from(["ok", "ok", "ok", "read-fails", "mark-fails"]),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=400, deadline=None)
@given(steps=steps, grace_minutes=st.sampled_from([0, 1, 5, 10]))
def test_nothing_is_deleted_before_it_was_an_orphan_on_the_same_evidence_for_grace(
    steps: list[tuple[int, str, str]], grace_minutes: int
) -> None:
    """World changes happen right before a run (so every world state is looked at by a run,
    which is all a stateless job can promise). A run can fail to read the object's referrers
    (then it is no orphan this run: its mark goes), or fail to write a mark. Removing a mark is
    retried on a conflict (gcjob/act): a hub that refuses it fails the run, out of this model.
    Safety: a delete only after `grace` of being an orphan, continuously, on one evidence.
    Liveness: with every run since it became an orphan clean, the first run at least `grace`
    after the run that first saw it deletes it."""
    grace = timedelta(minutes=grace_minutes)
    world = World(configmap({}, {REFERRERS_ANNOTATION: REFERRER_SETS[0]}))
    now = NOW
    for seconds, change, fault in steps:
        now += timedelta(seconds=seconds)
        _change(world, change, now)
        if fault != "ok" and world.orphan:
            world.clean_since = None
        _run(world, now, grace, fault)
        if world.deleted_at is not None:
            assert world.orphan_since is not None, world.log
            assert now - world.orphan_since >= grace, world.log
            return
        if world.orphan and world.clean_since is not None and world.first_seen is not None:
            assert now < world.first_seen + grace, ("not deleted when due", world.log)


def _change(world: World, change: str, now: datetime) -> None:
    meta = world.obj["metadata"]
    if change == "orphan" and not world.orphan:
        world.orphan, world.orphan_since, world.clean_since = True, now, now
        world.first_seen = None
    elif change == "referrer-back":
        world.orphan, world.orphan_since, world.clean_since = False, None, None
    elif change == "evidence":  # another referrer key set, as the operator rewrites it
        raw = REFERRER_SETS[(REFERRER_SETS.index(world.raw) + 1) % len(REFERRER_SETS)]
        meta["annotations"][REFERRERS_ANNOTATION] = raw
        if world.orphan:
            world.orphan_since, world.clean_since, world.first_seen = now, now, None
    elif change == "unlabel":  # someone takes the mark's label off: marked again, later
        meta.get("labels", {}).pop(ORPHANED_LABEL, None)
        world.clean_since = None
    else:
        return
    meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
    world.log.append(f"{now:%H:%M:%S} world: {change}")


def _run(world: World, now: datetime, grace: timedelta, fault: str) -> None:
    ref = ref_of(world.obj)
    evidence = None
    if world.orphan and fault != "read-fails":
        evidence = marks.companion_evidence(world.raw)
    call = marks.grace_rule(Rule.COMPANION, evidence, ref.mark, now, grace)
    world.log.append(f"{now:%H:%M:%S} run ({fault}): {call.next} {call.detail}")
    if evidence is not None and world.first_seen is None:
        world.first_seen = now
    if call.next is Next.DELETE:
        world.deleted_at = now
        return
    if call.next is Next.MARK:
        assert evidence is not None
        ops = marks.mark_patch(ref, marks.new_mark(evidence, "orphaned", now), evidence)
    elif call.next is Next.UNMARK:
        ops = marks.unmark_patch(ref)
    else:
        return
    if call.next is Next.UNMARK or fault != "mark-fails":
        world.obj = apply(world.obj, ops)
