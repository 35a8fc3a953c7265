"""Acting on one sweep's verdicts through the grace rule: remove marks, report waits, delete
what is due (the oldest marks first, up to the drain cap, behind the percent breaker), mark new
orphans (behind the marks brake)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import replace
from datetime import datetime
from typing import TypeVar

from gcjob.act.mark_writer import waiting
from gcjob.brakes import drain_cut, group_brake, limit_said
from gcjob.decide.grace import Graced, GraceSort, deletes_at, due_by, due_if_enforced
from gcjob.kube.resources import Resource
from gcjob.model import Action, ObjectRef, Outcome, Sweep
from gcjob.reasons import Reason
from gcjob.run import Run
from gcjob.sweeps.boundary import each

T = TypeVar("T")
Act = Callable[[Graced[T]], list[Outcome]]


def act(
    run: Run,
    sweep: Sweep,
    sort: GraceSort[T],
    in_scope: int,
    resource: Callable[[Graced[T]], Resource],
    delete: Act[T],
    *,
    mark: Act[T] | None = None,
    unmark: Act[T] | None = None,
    wait: Act[T] | None = None,
    group: Callable[[Graced[T]], Hashable] | None = None,
    before: Callable[[list[Graced[T]]], None] | None = None,
    before_delete: Callable[[list[Graced[T]]], None] | None = None,
) -> bool:
    """Acts on what `sort` holds; False when a brake held something back. `mark`, `unmark`
    and `wait` default to acting on the object alone (a companion's take its binding along).
    `group`: what must be deleted together or not at all this run (the copies sweep's
    owner); by default each object (a companion with its binding) is its own group.
    `before`: told of the objects about to be waited on, then of the new marks once the
    marks brake let them through, in the order they are acted on (what their acts will read
    can be read ahead). `before_delete`: told of the objects about to be deleted, in the order
    they are (their live second looks can be read ahead)."""

    def mark_one(graced: Graced[T]) -> list[Outcome]:
        assert graced.evidence is not None
        call = graced.call
        assert call.since is not None  # a new mark's time
        mark = run.marker.mark(
            sweep,
            graced.verdict,
            resource(graced),
            graced.evidence,
            call.since,
            call.detail,
            upgrade=call.upgrade,
        )
        return [mark]

    def unmark_one(graced: Graced[T]) -> list[Outcome]:
        return [run.marker.unmark(sweep, graced.verdict, resource(graced))]

    enforced = sweep in run.settings.enforce

    def when(graced: Graced[T], outcomes: list[Outcome]) -> list[Outcome]:
        at = deletes_at(graced.call, run.now)
        if enforced:
            return on_its_way(outcomes, at)
        return [not_enforced(o, graced.call.due) for o in on_its_way(outcomes, at)]

    def unmark_and_record(graced: Graced[T]) -> None:
        for outcome in (unmark or unmark_one)(graced):
            run.record(outcome)

    def wait_and_record(graced: Graced[T]) -> None:
        default = [waiting(sweep, graced.verdict, graced.call.detail, graced.call.since)]
        for outcome in when(graced, wait(graced) if wait else default):
            run.record(outcome)

    def delete_and_record(graced: Graced[T]) -> None:
        since = graced.call.since
        outcomes = [replace(o, orphaned_since=since) for o in delete(graced)]
        run.count_deletion(when(graced, outcomes))

    def mark_and_record(graced: Graced[T]) -> None:
        run.count_mark(when(graced, (mark or mark_one)(graced)))

    def upgrade_and_record(graced: Graced[T]) -> None:
        for outcome in when(graced, (mark or mark_one)(graced)):
            run.record(outcome)

    each(run, sweep, sort.to_unmark, _ref, unmark_and_record)  # always safe: first
    if before is not None:
        before(sort.waiting)
    each(run, sweep, sort.waiting, _ref, wait_and_record)
    if run.clock_problem:  # no hub clock: no mark is measured or written against the pod's
        for graced in [*sort.due, *sort.to_mark]:
            run.record(
                Outcome.of(
                    sweep,
                    graced.verdict,
                    Action.SKIPPED,
                    Reason.HUB_CLOCK_UNKNOWN,
                    run.clock_problem,
                )
            )
        run.incomplete(sweep, f"{run.clock_problem}: nothing deleted or marked")
        return False
    clear = True
    cap = run.limits.max_deletions  # with --shard, this shard's share of --max-deletions
    room = max(cap - run.tally.deleted, 0)
    pace = run.drain_pace(sweep, in_scope)
    paced = pace is not None and pace < room
    cut = drain_cut(
        sort.due,
        min(room, pace) if pace is not None else room,
        cap,
        lambda graced: graced.call.since,
        group or id,
    )
    for members in cut.oversized:
        clear = False
        run.hold_back(
            sweep,
            [g.verdict for g in members],
            group_brake(
                len(members),
                cap,
                limit_said("--max-deletions", run.settings.max_deletions, run.shard),
            ),
        )
    breaker = run.percent_braked(sweep, len(cut.now), in_scope)
    if breaker is not None:
        clear = False
        run.hold_back(sweep, [g.verdict for g in [*cut.now, *cut.later]], breaker)
    else:
        if before_delete is not None:
            before_delete(cut.now)
        each(run, sweep, cut.now, _ref, delete_and_record)
        backlog = [(g.verdict, g.call.since) for g in cut.later]
        run.drain_backlog(sweep, backlog, pace if paced else None)
    run.note_due(g.call.due for g in [*sort.waiting, *sort.to_mark])
    # Rewriting an older gcjob's mark is no new orphan: outside the marks brake and its count.
    each(run, sweep, sort.upgrades, _ref, upgrade_and_record)
    if run.marks_braked(sweep, [g.verdict for g in sort.new_marks]):
        return False
    if before is not None:
        before(sort.new_marks)
    each(run, sweep, sort.new_marks, _ref, mark_and_record)
    return clear


def on_its_way(outcomes: list[Outcome], at: datetime | None) -> list[Outcome]:
    """`outcomes` with `would_delete_at` on each orphan left in place on its way out (marked,
    waiting, or would-delete: a dry run, a sweep not enforced): when it goes if it stays
    orphaned. Not on one a brake held back, nor one that failed, was kept on a second look,
    or is gone: for those the time would be a promise the run did not make."""
    if at is None:
        return outcomes
    return [replace(o, would_delete_at=at) if _left_on_its_way(o) else o for o in outcomes]


def not_enforced(outcome: Outcome, due: datetime | None) -> Outcome:
    """An outcome of a sweep that is not enforced (report-only): its time on its way out is
    when it would go were the sweep enforced (`if_enforced`), and its detail says so."""
    if outcome.would_delete_at is None:
        return outcome
    detail = outcome.detail
    if due is not None:
        detail = detail.replace(due_by(due), due_if_enforced(due, outcome.sweep.value))
    return replace(outcome, if_enforced=True, detail=detail)


def _left_on_its_way(outcome: Outcome) -> bool:
    if outcome.reason == Reason.BRAKE:
        return False
    pending = (Action.WOULD_DELETE, Action.MARKED, Action.WOULD_MARK)
    return outcome.action in pending or outcome.reason == Reason.GRACE_PERIOD


def _ref(graced: Graced[T]) -> ObjectRef:
    return graced.verdict.ref
