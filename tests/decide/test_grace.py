"""gcjob.decide.grace: the grace rule, case by case, and as a property over random sequences
of runs and world changes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gcjob import marks
from gcjob.decide.grace import GraceSort, Next, deletes_at, due_by, grace_call, grace_rule
from gcjob.decide.trace import StepOutcome, Trace
from gcjob.domain import ORPHANED_LABEL, REFERRERS_ANNOTATION
from gcjob.marks import Rule
from gcjob.model import Mark, Verdict
from gcjob.reasons import Reason
from tests.test_marks import GRACE, NOW, RAW, UID, apply, configmap, mark_at, ref_of

# -- the grace rule ----------------------------------------------------------------------------

EVIDENCE = marks.companion_evidence(RAW)


def rule(mark: Mark | None, evidence: marks.Evidence | None = EVIDENCE, **kw: Any) -> Any:
    """The companions' grace rule on configmap() carrying `mark`."""
    ref = replace(ref_of(configmap()), mark=mark)
    return grace_rule(Rule.COMPANION, evidence, ref, kw.get("now", NOW), kw.get("grace", GRACE))


def test_a_new_orphan_is_marked_now() -> None:
    call = rule(None)
    assert (call.next, call.since, call.due) == (Next.MARK, NOW, NOW + GRACE)


def test_a_mark_keeps_fractions_of_a_second_so_grace_is_exact() -> None:
    now = NOW + timedelta(microseconds=250_000)
    call = rule(None, now=now)
    assert call.since == now
    since = marks.since_value(now)
    assert since == "2026-11-23T10:00:00.250000Z"
    mark = Mark("true", since, "orphaned", EVIDENCE.on(UID).digest)
    assert rule(mark, now=now + GRACE - timedelta(microseconds=1)).next is Next.WAIT
    assert rule(mark, now=now + GRACE).next is Next.DELETE


def test_a_new_mark_never_predates_its_object() -> None:
    """Issue 46: the hub's Date counts whole seconds, so its time now can be a moment behind
    a creationTimestamp it stamped; a mark from before its object reads void ("a copied
    mark") the next run. The mark starts when the object was created, never before; a later
    `now` is the mark's time as always."""
    ref = ref_of(configmap())
    assert ref.created is not None
    behind = ref.created - timedelta(milliseconds=700)
    call = grace_rule(Rule.COMPANION, EVIDENCE, ref, behind, GRACE)
    assert (call.next, call.since, call.due) == (Next.MARK, ref.created, ref.created + GRACE)
    mark = marks.new_mark(EVIDENCE.on(ref.uid), "orphaned", call.since)
    reading = marks.read_mark(mark, ref.uid, ref.created, ref.created)
    assert reading.state is marks.MarkState.BOUND
    later_on = ref.created + timedelta(seconds=3)
    assert grace_rule(Rule.COMPANION, EVIDENCE, ref, later_on, GRACE).since == later_on


def test_inside_the_grace_period_it_waits() -> None:
    call = rule(mark_at(NOW - GRACE + timedelta(seconds=1)))
    assert call.next is Next.WAIT
    assert call.since == NOW - GRACE + timedelta(seconds=1)
    assert "due for deletion at 2026-11-23T10:00:01Z if still orphaned" in call.detail


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


def test_a_mark_from_the_future_is_void_and_marked_afresh() -> None:
    call = rule(mark_at(NOW + timedelta(days=1)))
    assert (call.next, call.since) == (Next.MARK, NOW)
    assert "void mark" in call.detail and "after now" in call.detail


def test_grace_zero_deletes_on_the_first_look() -> None:
    assert rule(None, grace=timedelta(0)).next is Next.DELETE
    assert rule(mark_at(NOW), grace=timedelta(0)).next is Next.DELETE


def test_no_longer_an_orphan_is_unmarked_and_never_marked_is_left_alone() -> None:
    assert rule(mark_at(NOW - GRACE), None).next is Next.UNMARK
    # A void mark (a forged label alone, a copy) counts for nothing: no write is spent on it.
    assert rule(Mark(label="true"), None).next is Next.NOTHING
    assert rule(None, None).next is Next.NOTHING


def test_a_mark_of_another_rule_is_left_to_it() -> None:
    companions = marks.companion_binding_evidence(ref_of(configmap()))
    mark = mark_at(NOW - GRACE, companions)
    ref = replace(ref_of(configmap()), mark=mark)
    call = grace_rule(Rule.BINDING, None, ref, NOW, GRACE)
    assert call.next is Next.NOTHING
    assert "companion-binding" in call.detail
    # ... but an orphan by this rule carries this rule's mark from now on
    mine = marks.binding_evidence("ConfigMap", "app-config")
    assert grace_rule(Rule.BINDING, mine, ref, NOW, GRACE).next is Next.MARK


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


@settings(deadline=None)
@given(steps=steps, grace_minutes=st.sampled_from([0, 1, 5, 10]))
def test_nothing_is_deleted_before_it_was_an_orphan_on_the_same_evidence_for_grace(
    steps: list[tuple[int, str, str]], grace_minutes: int
) -> None:
    """World changes happen right before a run (so every world state is looked at by a run,
    which is all a stateless job can promise). A run can fail to read the object's referrers
    (then it is no orphan this run: its mark goes), or fail to write a mark (then an old mark
    is removed instead). Removing a mark is retried on a conflict (gcjob/act/mark_writer.py): a hub
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
    call = grace_rule(Rule.COMPANION, evidence, ref, now, grace)
    world.log.append(f"{now:%H:%M:%S} run ({fault}): {call.next} {call.detail}")
    if evidence is not None and world.first_seen is None:
        world.first_seen = now
    if call.next is Next.DELETE:
        world.deleted_at = now
        return
    if call.next is Next.MARK:
        assert evidence is not None
        bound = evidence.on(ref.uid)
        ops = marks.mark_patch(ref, marks.new_mark(bound, "orphaned", now), bound)
    elif call.next is Next.UNMARK:
        ops = marks.unmark_patch(ref)
    else:
        return
    if call.next is Next.UNMARK or fault != "mark-fails":
        world.obj = apply(world.obj, ops)
    elif ref.mark is not None:  # a new mark not written: the old one is removed (act/marker)
        world.obj = apply(world.obj, marks.unmark_patch(ref))


# -- void and legacy marks (issue 20 items 3, 5, 13) ------------------------------------------

ITEM_13_SINCES = [
    "2099-01-01T00:00:00Z",
    "2026-11-23 18:00:00+00:00",
    "2026-W47-1T18:00:00Z",
    "2026-11-23T09:00:00+01:00",
    "9999-12-31T23:59:59Z",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-23:59",
]


@pytest.mark.parametrize("since", ITEM_13_SINCES)
def test_a_void_mark_is_marked_afresh_and_the_detail_names_it(since: str) -> None:
    call = rule(Mark("true", since, "orphaned", EVIDENCE.on(UID).digest))
    assert (call.next, call.since, call.due) == (Next.MARK, NOW, NOW + GRACE)
    assert call.detail.startswith("void mark: ") and since.strip() in call.detail
    assert not call.upgrade  # a new mark: the marks brake counts it


@pytest.mark.parametrize("since", ITEM_13_SINCES)
def test_with_no_grace_period_a_void_since_is_no_since_and_nothing_raises(since: str) -> None:
    call = rule(Mark("true", since, "orphaned", EVIDENCE.on(UID).digest), grace=timedelta(0))
    assert call.next is Next.DELETE and call.since is None


def test_a_mark_copied_from_another_object_never_deletes() -> None:
    """Exported with its mark and created again: the mark names the original's uid, and its
    time is before this object was created. Either makes it void."""
    copied = mark_at(NOW - 100 * GRACE, EVIDENCE.on("uid-of-the-original"))
    call = rule(copied)
    assert (call.next, call.since) == (Next.MARK, NOW)
    assert "void mark" in call.detail


def test_an_older_gcjobs_mark_is_marked_again_outside_the_marks_brake() -> None:
    legacy = Mark("true", marks.since_value(NOW - 10 * GRACE), "orphaned", EVIDENCE.facts_digest)
    call = rule(legacy)
    assert (call.next, call.since, call.upgrade) == (Next.MARK, NOW, True)
    assert "older gcjob" in call.detail
    # with other evidence it would have been marked again anyway: a new mark
    other = marks.companion_evidence('["default/api"]')
    changed = rule(legacy, other)
    assert (changed.next, changed.upgrade) == (Next.MARK, False)


def test_grace_sort_keeps_upgrades_apart_from_new_marks() -> None:
    sort: GraceSort[str] = GraceSort(Rule.COMPANION, NOW, GRACE)
    legacy = Mark("true", marks.since_value(NOW - GRACE), "orphaned", EVIDENCE.facts_digest)
    sort.orphan(_verdict(True, legacy), EVIDENCE, "legacy")
    sort.orphan(_verdict(True, None), EVIDENCE, "new")
    sort.orphan(_verdict(True, Mark("true", "2099-01-01T00:00:00Z", "x", "y")), EVIDENCE, "void")
    assert [g.target for g in sort.upgrades] == ["legacy"]
    assert [g.target for g in sort.new_marks] == ["new", "void"]
    # what the marker writes names the object
    assert all(g.evidence is not None and g.evidence.uid == UID for g in sort.to_mark)


def test_a_huge_grace_does_not_overflow() -> None:
    call = rule(None, grace=timedelta(days=999_999_999))
    assert call.next is Next.MARK and call.due is not None and call.due.year == 9999
    assert rule(mark_at(NOW), grace=timedelta(days=999_999_999)).next is Next.WAIT


# -- when it goes, said the same in every mode (issue 23 item 2) -----------------------------

OTHER_EVIDENCE = marks.companion_evidence('["default/web","default/api"]')


@pytest.mark.parametrize(
    "mark,start",
    [
        (None, "found orphaned"),
        (Mark("true", "2099-01-01T00:00:00Z", "orphaned", EVIDENCE.on(UID).digest), "void mark"),
        (mark_at(NOW - 10 * GRACE, OTHER_EVIDENCE), "evidence changed since it was marked"),
        (
            Mark("true", marks.since_value(NOW - GRACE), "orphaned", EVIDENCE.facts_digest),
            "mark of an older gcjob",
        ),
    ],
)
def test_a_new_mark_says_when_it_goes_and_never_that_it_was_marked(
    mark: Mark | None, start: str
) -> None:
    """The call's detail leads a `would-mark` item in a dry run, a `marked` one in a
    --delete run, and explain's grace step: it says when, and leaves the write to the action."""
    call = rule(mark)
    assert call.next is Next.MARK and call.detail.startswith(start)
    assert call.detail.endswith("; due for deletion at 2026-11-23T10:10:00Z if still orphaned")
    assert deletes_at(call, NOW) == NOW + GRACE
    said = call.detail.replace("since it was marked", "")
    assert "marked" not in said and "mark removed" not in said


def test_a_waiting_orphan_goes_at_its_marks_time_plus_grace_and_a_due_one_now() -> None:
    marked = NOW - timedelta(minutes=4)
    waits = rule(mark_at(marked))
    assert (waits.next, deletes_at(waits, NOW)) == (Next.WAIT, marked + GRACE)
    assert waits.detail == (
        "orphaned since 2026-11-23T09:56:00Z; "
        "due for deletion at 2026-11-23T10:06:00Z if still orphaned"
    )
    long_ago = rule(mark_at(NOW - 10 * GRACE))
    assert long_ago.next is Next.DELETE
    assert long_ago.due == NOW - 9 * GRACE and deletes_at(long_ago, NOW) == NOW  # now, not past
    assert deletes_at(rule(None, grace=timedelta(0)), NOW) == NOW
    unmark = grace_rule(
        Rule.COMPANION, None, replace(ref_of(configmap()), mark=mark_at(NOW)), NOW, GRACE
    )
    assert unmark.next is Next.UNMARK and deletes_at(unmark, NOW) is None


# -- property: any mark, any object, any clock --------------------------------------------------

MOMENTS = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)


def _since_texts(around: list[datetime]) -> st.SearchStrategy[str | None]:
    near = st.sampled_from(around).flatmap(
        lambda m: st.integers(-86_400 * 30, 86_400 * 30).map(
            lambda s: marks.since_value(m + timedelta(seconds=s))
        )
    )
    return st.one_of(
        st.none(), st.text(max_size=40), near, MOMENTS.map(marks.since_value),
        MOMENTS.map(lambda m: m.isoformat()), st.sampled_from(ITEM_13_SINCES),
    )  # fmt: skip


@settings(deadline=None)
@given(data=st.data())
def test_the_grace_rule_never_raises_and_deletes_only_on_gcjobs_own_mark_due(
    data: st.DataObject,
) -> None:
    created = data.draw(st.one_of(st.none(), MOMENTS), "created")
    now = data.draw(MOMENTS, "now")
    grace = data.draw(
        st.one_of(
            st.just(timedelta(0)),
            st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=999_999_999)),
        ),
        "grace",
    )
    uid = data.draw(st.one_of(st.just(UID), st.text(max_size=40)), "uid")
    facts = data.draw(st.sampled_from([RAW, '["default/api"]', "", "\udcff"]), "referrers")
    evidence = marks.companion_evidence(facts)
    digest = data.draw(
        st.one_of(
            st.none(),
            st.text(max_size=60),
            st.sampled_from([evidence.facts_digest, evidence.on(uid).digest]),
            st.text(max_size=40).map(lambda u: evidence.on(u).digest),
            st.sampled_from([marks.companion_evidence('["default/x"]').on(uid).digest]),
        ),
        "digest",
    )
    around = [now] + ([created] if created else [])
    mark = data.draw(
        st.one_of(
            st.none(),
            st.builds(
                Mark,
                st.sampled_from(["true", "false", "True", "", None]),
                _since_texts(around),
                st.one_of(st.none(), st.text(max_size=20)),
                st.just(digest),
            ),
        ),
        "mark",
    )
    ref = replace(ref_of(configmap()), uid=uid, created=created, mark=mark)
    orphan = data.draw(st.booleans(), "orphan")

    call = grace_rule(Rule.COMPANION, evidence if orphan else None, ref, now, grace)

    if call.next is Next.DELETE and grace > timedelta(0):
        assert mark is not None and mark.label == "true"
        assert mark.evidence == evidence.on(uid).digest  # bound to this uid, same evidence
        since = marks.parse_since(mark.since)
        assert since is not None and marks.since_value(since) == mark.since  # gcjob's format
        assert created is not None and created <= since <= now
        assert now - since >= grace
        assert call.since == since
    if call.next is Next.MARK:  # from now, never before its object (issue 46)
        assert call.since == (now if created is None else max(now, created))
        assert call.due is not None and call.due >= call.since
    # When it goes if it stays orphaned: the rule's own due time, never before now.
    goes = deletes_at(call, now)
    if call.next in (Next.MARK, Next.WAIT):
        assert goes == call.due and goes is not None and goes > now - timedelta(microseconds=1)
        assert due_by(goes) in call.detail
    elif call.next is Next.DELETE:
        assert goes == now
    else:
        assert goes is None
    for moment in (call.since, call.due):
        if moment is not None:
            marks.since_value(moment)  # reportable


def test_grace_call_is_traced_as_a_step_of_its_own_and_silent_on_nothing_to_do() -> None:
    """The batch (GraceSort) and explain ask the same grace_call; explain shows its step."""
    ref = ref_of(configmap())
    trace = Trace()
    kept = Verdict(ref, False, Reason.REFERRER_LIVE, "lives")
    assert grace_call(Rule.COMPANION, kept, None, NOW, GRACE, trace) is None  # no mark
    assert trace.steps == []
    orphan = Verdict(ref, True, Reason.ORPHANED, "gone")
    evidence = marks.companion_evidence(RAW)
    call = grace_call(Rule.COMPANION, orphan, evidence, NOW, GRACE, trace)
    assert call is not None and call.next is Next.MARK
    [step] = trace.steps
    assert step.rule == "grace" and step.outcome is StepOutcome.HELD
    assert step.evidence.startswith("no mark; now companion:")
