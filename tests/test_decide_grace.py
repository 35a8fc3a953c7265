"""gcjob.decide.grace: the grace rule, case by case, and as a property over random sequences
of runs and world changes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gcjob import marks
from gcjob.decide.grace import GraceSort, Next, grace_rule
from gcjob.domain import ORPHANED_LABEL, REFERRERS_ANNOTATION
from gcjob.marks import Rule
from gcjob.model import Mark, Verdict
from tests.test_marks import GRACE, NOW, RAW, apply, configmap, mark_at, ref_of

# -- the grace rule ----------------------------------------------------------------------------

EVIDENCE = marks.companion_evidence(RAW)


def rule(mark: Mark | None, evidence: marks.Evidence | None = EVIDENCE, **kw: Any) -> Any:
    return grace_rule(Rule.COMPANION, evidence, mark, kw.get("now", NOW), kw.get("grace", GRACE))


def test_a_new_orphan_is_marked_now() -> None:
    call = rule(None)
    assert (call.next, call.since, call.due) == (Next.MARK, NOW, NOW + GRACE)


def test_a_mark_keeps_fractions_of_a_second_so_grace_is_exact() -> None:
    now = NOW + timedelta(microseconds=250_000)
    call = rule(None, now=now)
    assert call.since == now
    since = marks.since_value(now)
    assert since == "2026-11-23T10:00:00.250000Z"
    mark = Mark("true", since, "orphaned", EVIDENCE.digest)
    assert rule(mark, now=now + GRACE - timedelta(microseconds=1)).next is Next.WAIT
    assert rule(mark, now=now + GRACE).next is Next.DELETE


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
    call = grace_rule(Rule.BINDING, None, mark, NOW, GRACE)
    assert call.next is Next.NOTHING
    assert "companion-binding" in call.detail
    # ... but an orphan by this rule carries this rule's mark from now on
    mine = marks.binding_evidence("ConfigMap", "app-config")
    assert grace_rule(Rule.BINDING, mine, mark, NOW, GRACE).next is Next.MARK


# -- sorting a sweep's verdicts ---------------------------------------------------------------


def _verdict(delete: bool, mark: Mark | None, **ref_changes: Any) -> Verdict:
    ref = replace(ref_of(configmap()), mark=mark, **ref_changes)
    return Verdict(ref, delete, "orphaned" if delete else "referrer-live", "")


def test_grace_sort_puts_each_verdict_where_the_rule_says() -> None:
    sort: GraceSort[str] = GraceSort(Rule.COMPANION, NOW, GRACE)
    sort.orphan(_verdict(True, None), EVIDENCE, "new")
    sort.orphan(_verdict(True, mark_at(NOW - GRACE)), EVIDENCE, "due")
    sort.orphan(_verdict(True, mark_at(NOW - GRACE / 2)), EVIDENCE, "waiting")
    assert sort.not_orphan(_verdict(False, mark_at(NOW)), "back") is True
    assert sort.not_orphan(_verdict(False, None), "never-marked") is False

    assert [g.target for g in sort.to_mark] == ["new"]
    assert [g.target for g in sort.due] == ["due"]
    assert [g.target for g in sort.waiting] == ["waiting"]
    assert [g.target for g in sort.to_unmark] == ["back"]


@pytest.mark.parametrize(
    "changes",
    [{"terminating": True}, {"uid": ""}, {"resource_version": ""}],
    ids=["terminating", "no-uid", "no-resource-version"],
)
def test_a_mark_is_left_on_what_cannot_or_need_not_be_patched(changes: dict[str, Any]) -> None:
    sort: GraceSort[None] = GraceSort(Rule.COMPANION, NOW, GRACE)
    assert sort.not_orphan(_verdict(False, mark_at(NOW), **changes), None) is False
    assert sort.to_unmark == []


def test_a_binding_marked_with_its_companion_is_not_the_bindings_sweeps_to_unmark() -> None:
    sort: GraceSort[None] = GraceSort(Rule.BINDING, NOW, GRACE)
    companions = marks.companion_binding_evidence(ref_of(configmap()))
    assert sort.not_orphan(_verdict(False, mark_at(NOW, companions)), None) is False


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
    (then it is no orphan this run: its mark goes), or fail to write a mark (then an old mark
    is removed instead). Removing a mark is retried on a conflict (gcjob/act/marker.py): a hub
    that refuses it fails the run, out of this model.
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
    call = grace_rule(Rule.COMPANION, evidence, ref.mark, now, grace)
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
    elif ref.mark is not None:  # a new mark not written: the old one is removed (act/marker)
        world.obj = apply(world.obj, marks.unmark_patch(ref))
