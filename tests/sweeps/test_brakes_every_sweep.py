"""The breaker and the marks brake, held by the driver for every sweep (issue 46 items 10, 11
and 13): every sweep `execute` declares, found by running it with the driver replaced (never
listed by hand: a sweep declared tomorrow is in this test), and the toy sweep
(tests/sweeps/test_driver.py `Toy`).

- The breaker weighs every orphan a sweep would delete, now or later (due within the drain cap
  and past it, marked and waiting out their grace period, new): when they are more than
  --max-delete-percent of its collection, nothing of that sweep is deleted, run after run.
- The marks brake counts every mark a sweep's new orphans would write (a companion writes its
  binding's too: the declaration's `marks_each`) before writing any: a sweep marks all its new
  orphans or none of them."""

from __future__ import annotations

import copy
import io
from collections import Counter
from collections.abc import Hashable
from datetime import timedelta
from functools import cache
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gcjob.sweeps
from gcjob.act.deleter import Deleter
from gcjob.act.mark_writer import Marker, waiting
from gcjob.act.writes import Writes
from gcjob.brakes import drain_cut
from gcjob.budget import RunBudget
from gcjob.decide.grace import GraceCall, Graced, GraceSort, Next
from gcjob.kube.resources import CONFIGMAPS
from gcjob.kube.snapshot import Snapshot, SnapshotUpstreams
from gcjob.kube.transport import RequestStats
from gcjob.marks import companion_evidence
from gcjob.model import Action, Outcome, Sweep, Verdict
from gcjob.reasons import Reason
from gcjob.report.emitter import Reporter
from gcjob.run import Run, RunContext, SweepState
from gcjob.settings import NEVER_ENFORCED, Settings
from gcjob.sweeps.driver import Counted, Declaration, Judged, Step, act, drive
from gcjob.times import HubClock
from testbed.model import NOW, ref
from testbed.runs import DEMO, snapshot_run
from tests.sweeps.test_driver import TOY, Toy, toy_run

GRACE = timedelta(minutes=10)
EVIDENCE = companion_evidence('["default/gone"]')


@cache
def declared() -> tuple[Declaration[Any, Any], ...]:
    """Every sweep `gcjob.sweeps.execute` declares, as it declares them (over the demo
    snapshot, every sweep asked for by name), then the toy sweep."""
    ran = snapshot_run(*Sweep, sweeps_explicit=True)
    found: list[Declaration[Any, Any]] = []
    with mock.patch.object(gcjob.sweeps, "drive", lambda run, d: found.append(d)):
        gcjob.sweeps.execute(ran.run)
    assert [d.sweep for d in found] == list(Sweep)  # each sweep, once, in the run's order
    return (*found, Toy(ran.run, []))


def test_every_sweep_is_declared_and_a_companion_writes_two_marks() -> None:
    each = {type(d).__name__: d.marks_each for d in declared()}
    assert each == {
        **{"Companions": 2, "Bindings": 1, "Routes": 1, "Copies": 1, "Toy": 1},
        "Namespaces": 0,  # report-only by design: it writes no mark
    }


@cache
def _snapshot() -> Snapshot:
    return Snapshot(str(DEMO))


def _run(sweep: Sweep, **overrides: Any) -> Run:
    """A dry run with a writer that writes nowhere: each mark is counted by the marks brake
    as a written one (a dry run's marks are), and nothing is read."""
    config = Settings(grace=GRACE, sweeps=(sweep,), **overrides)
    budget = RunBudget(None)
    writes = Writes(budget, qps=0, max_writes=10**9)
    snapshot = _snapshot()
    reporter = Reporter(
        run_id="r",
        dry_run=True,
        log_format="json",
        report_healthy=False,
        report_file=None,
        stream=io.StringIO(),
    )
    context = RunContext(
        config,
        snapshot.hub,
        Deleter(None, dry_run=True, budget=budget, writes=writes),
        reporter,
        budget,
        RequestStats(),
        SnapshotUpstreams(snapshot.upstreams),
        "r",
        Marker(None, dry_run=True, budget=budget, writes=writes, max_marks=config.max_marks),
    )
    run = Run(context, HubClock(NOW))
    run.tally.sweeps[sweep] = SweepState()
    return run


class Acted:
    """What the driver asked a declaration to do: deletions, and the marks each new orphan
    wrote (every one through the run's Marker, so the marks brake counts them)."""

    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.marks: Counter[str] = Counter()  # object -> marks written
        self.braked: Counter[str] = Counter()  # object -> marks the brake held back


def _as_driven(
    declaration: Declaration[Any, Any],
    run: Run,
    marks_of: dict[str, int],
    groups: dict[str, Hashable],
) -> tuple[Declaration[Any, Any], Acted]:
    """`declaration` as declared (its sweep, rule, `marks_each`), its writes replaced by ones
    that record what they were asked and write its marks through `run`'s Marker: a new orphan
    writes `marks_of[name]` of them (at most its `marks_each`), a waiting one the rest (a
    companion marks its binding again when it lost its mark)."""
    acted = Acted()
    driven = copy.copy(declaration)
    sweep = declaration.sweep

    def write(graced: Graced[Any], count: int) -> list[Outcome]:
        name, outcomes = graced.verdict.ref.name, []
        for _ in range(count):
            assert graced.evidence is not None and graced.call.since is not None
            outcome = run.marker.mark(
                sweep, graced.verdict, CONFIGMAPS, graced.evidence, graced.call.since
            )
            if outcome.reason == Reason.BRAKE:
                acted.braked[name] += 1
            else:
                acted.marks[name] += 1
            outcomes.append(outcome)
        return outcomes

    def delete(graced: Graced[Any], deleter: Deleter) -> list[Outcome]:
        acted.deleted.append(graced.verdict.ref.name)
        return [Outcome.of(sweep, graced.verdict, Action.WOULD_DELETE)]

    def wait(graced: Graced[Any]) -> list[Outcome]:
        kept = waiting(sweep, graced.verdict, graced.call.detail, graced.call.since)
        return [kept, *write(graced, driven.marks_each - 1)]

    driven.delete = delete  # type: ignore[method-assign]
    driven.mark = lambda g: write(g, marks_of[g.verdict.ref.name])  # type: ignore[method-assign]
    driven.wait = wait  # type: ignore[method-assign]
    driven.group = lambda g: groups[g.verdict.ref.name]  # type: ignore[method-assign]
    driven.ahead_of_marks = lambda g: None  # type: ignore[method-assign]
    driven.ahead_of_deletes = lambda g: None  # type: ignore[method-assign]
    return driven, acted


def _graced(name: str, call: GraceCall) -> Graced[None]:
    uid = f"uid-{name}"
    verdict = Verdict(ref("ConfigMap", name, uid=uid), True, Reason.ORPHANED, "no referrer")
    return Graced(verdict, call, EVIDENCE.on(uid), None)


def _sort(
    due: int, waiting_: int, new: int, group_size: int
) -> tuple[GraceSort[None], dict[str, Hashable]]:
    """A sweep's orphans as the grace rule sorts them: `due` (marked at distinct times, the
    oldest first), `waiting_` marked within the grace period, `new` to be marked; the due
    ones in groups of `group_size` that go whole or not at all."""
    sort: GraceSort[None] = GraceSort(Toy.rule, NOW, GRACE)
    groups: dict[str, Hashable] = {}
    for i in range(due):
        since = NOW - GRACE - timedelta(seconds=due - i)
        sort.due.append(_graced(f"due-{i}", GraceCall(Next.DELETE, "", since, since + GRACE)))
        groups[f"due-{i}"] = i // group_size
    for i in range(waiting_):
        since = NOW - timedelta(seconds=1 + i)
        call = GraceCall(Next.WAIT, "in grace", since, since + GRACE)
        sort.waiting.append(_graced(f"waiting-{i}", call))
    for i in range(new):
        sort.to_mark.append(_graced(f"new-{i}", GraceCall(Next.MARK, "new", NOW, NOW + GRACE)))
    return sort, groups


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_sweep_holds_the_breaker_over_all_its_orphans_and_marks_all_or_none(
    data: st.DataObject,
) -> None:
    declaration = data.draw(st.sampled_from(declared()), label="sweep")
    in_scope = data.draw(st.integers(0, 400), label="in_scope")
    due = data.draw(st.integers(0, 300), label="due")
    waiting_ = data.draw(st.integers(0, 300), label="waiting")
    new = data.draw(st.integers(0, 300), label="new")
    group_size = data.draw(st.integers(1, 4), label="group_size")
    limits = {
        "max_deletions": data.draw(st.integers(0, 120), label="max_deletions"),
        "max_delete_percent": data.draw(st.integers(0, 100), label="max_delete_percent"),
        "brake_min_objects": data.draw(st.integers(0, 100), label="brake_min_objects"),
        "max_marks": data.draw(st.integers(0, 1000), label="max_marks"),
    }
    sweep = declaration.sweep
    # A sweep report-only by design cannot be enforced (Settings refuses it, exit 2).
    enforceable = sweep.value not in NEVER_ENFORCED
    enforced = enforceable and data.draw(st.booleans(), label="enforced")
    run = _run(sweep, enforce=(sweep,) if enforced else (), **limits)
    run.marker.brake.written = data.draw(st.integers(0, limits["max_marks"]), label="earlier")
    sort, groups = _sort(due, waiting_, new, group_size)
    each = declaration.marks_each
    marks_of = {
        g.verdict.ref.name: data.draw(st.integers(min(1, each), each), label="marks")
        for g in sort.to_mark
    }
    driven, acted = _as_driven(declaration, run, marks_of, groups)

    act(run, driven, sort, in_scope)

    # The breaker: every orphan pending weighed, the drain cap's batch or not.
    pending = due + waiting_ + new
    over = (
        pending > 0
        and in_scope >= limits["brake_min_objects"]
        and in_scope > 0
        and 100 * pending > limits["max_delete_percent"] * in_scope
    )
    if over and enforced:
        assert acted.deleted == []
        assert run.tally.sweeps[sweep].status == "braked"
        assert any("deletion brake" in b and f"{pending} of " in b for b in run.tally.brakes)
    elif over:
        # Not enforced, it deletes nothing: it says what enforcing it would meet, and engages
        # no brake (no exit 4 for deletions nobody asked for).
        assert acted.deleted == []
        assert not any("deletion brake" in b for b in run.tally.brakes)
        assert f"were it enforced, deletion brake: {pending} of " in run.tally.sweeps[sweep].detail
    else:
        # A sweep not enforced deletes nothing (its deleter says would-delete), so it takes
        # no place in the drain cap: every due orphan says it would go.
        room = limits["max_deletions"] if enforced else len(sort.due)
        cut = drain_cut(
            sort.due, room, room, lambda g: g.call.since, lambda g: groups[g.verdict.ref.name]
        )
        assert acted.deleted == [g.verdict.ref.name for g in cut.now]
        assert len(acted.deleted) <= room
    # The marks brake: all the new orphans marked, every mark each writes, or none at all.
    new_names = [g.verdict.ref.name for g in sort.to_mark]
    marked = [name for name in new_names if acted.marks[name]]
    assert not [name for name in new_names if acted.braked[name]]  # none stopped midway
    assert marked in ([], new_names)
    if marked:
        assert all(acted.marks[name] == marks_of[name] for name in new_names)
    elif new and each:
        assert any(b.startswith(f"{sweep.value} sweep: marks brake") for b in run.tally.brakes)
    if not each:  # a sweep that writes no mark (report-only by design) meets no marks brake
        assert not any("marks brake" in b for b in run.tally.brakes)


# -- the two findings, on the toy sweep through the whole driver ------------------------------


def _orphans(count: int) -> list[Verdict]:
    return [
        Verdict(ref("ConfigMap", f"orphan-{i:03}", uid=f"u{i}"), True, Reason.ORPHANED, "gone")
        for i in range(count)
    ]


def test_a_mass_orphaning_is_held_whole_not_drained_fifty_a_run() -> None:
    """Issue 46 item 10: 300 companions orphaned at once, nothing live, --grace 0s, the
    default brakes. Each run deleted 50 (the drain cap), 16.7% of the sweep, under
    --max-delete-percent 50, run after run. Every orphan pending is weighed: none goes."""
    steps: list[Step[Verdict, None]] = [
        Counted(300, 300),
        Judged(_orphans(300), lambda v: v.ref),
    ]
    for _ in range(3):  # run after run, the same
        ran = toy_run(grace=timedelta(0))
        toy = Toy(ran.run, steps)
        drive(ran.run, toy)
        assert toy.deleted == []
        state = ran.run.tally.sweeps[TOY]
        assert state.status == "braked"
        assert state.detail.startswith("deletion brake: 300 of 300 objects (100%) exceed ")
        assert "(300 due, 0 in their grace period, 0 new)" in state.detail
        assert "rollout Job" in state.detail  # and how to get past it
        items = ran.outcomes().values()
        assert Counter(items) == {("would-delete", "brake"): 300}


def test_orphans_waiting_out_their_grace_period_weigh_as_much_as_due_ones() -> None:
    """Marks delete nothing and are written (the marks brake lets 300 through): but the
    breaker says at once that these orphans will not be deleted when due."""
    ran = toy_run(grace=GRACE)
    toy = Toy(ran.run, [Counted(400, 400), Judged(_orphans(300), lambda v: v.ref)])
    drive(ran.run, toy)
    assert (len(toy.marked), toy.deleted) == (300, [])
    state = ran.run.tally.sweeps[TOY]
    assert state.status == "braked"
    assert "300 of 400 objects (75%)" in state.detail


class Bound(Toy):
    """The toy sweep whose objects write two marks each, as a companion does with its
    binding: both through the run's Marker."""

    marks_each = 2

    def mark(self, graced: Graced[None]) -> list[Outcome]:
        run, since = self.run, graced.call.since
        assert graced.evidence is not None and since is not None
        outcomes = []
        for _ in range(2):
            outcomes.append(
                run.marker.mark(self.sweep, graced.verdict, CONFIGMAPS, graced.evidence, since)
            )
        if all(o.reason != Reason.BRAKE for o in outcomes):
            self.marked.append(graced.verdict.ref.name)
        return outcomes


def test_a_sweep_whose_orphans_write_two_marks_each_marks_none_past_the_brake() -> None:
    """Issue 46 item 11: 300 new orphans, each writing two marks: 600, over --max-marks 500.
    Counted as 300, they passed the driver's brake and the Marker stopped at the 501st mark,
    250 objects marked; the next run marked the rest. Counted as 600, none is marked."""
    run = _run(TOY, enforce=(TOY,))
    toy = Bound(run, [Counted(1000, 1000), Judged(_orphans(300), lambda v: v.ref)])
    drive(run, toy)
    assert toy.marked == []
    assert run.marker.brake.written == 0
    assert run.tally.sweeps[TOY].status == "braked"
    [said] = run.tally.brakes
    assert "marks brake: 600 new marks of 300 new orphans (+0 earlier this run)" in said
    # 250 of them (500 marks) pass whole.
    run = _run(TOY, enforce=(TOY,))
    toy = Bound(run, [Counted(1000, 1000), Judged(_orphans(250), lambda v: v.ref)])
    drive(run, toy)
    assert (len(toy.marked), run.marker.brake.written) == (250, 500)
