"""One driver for every sweep. A sweep folder declares itself (its `sweep.py`, a `Declaration`):

- `scan`: what it reads, in report order, and what it found, as steps (`Step`): the objects it
  could not judge, the marks of objects that left the sweep, its judgements, its healthy
  counts, the candidates it judges one by one after the reads each needs, what the Project API
  said and the exit codes its reads call for. A scan that cannot read what it needs raises
  `Incomplete` or `NotConfigured` (kopf's handlers raise their outcome too): the driver says
  so in the sweep's state, and nothing is acted on. A scan records no outcome, state or
  exit code on the run: the driver does.
- `plan`: what follows from one judgement (`Planned`): its verdict, the evidence an orphan's
  verdict rests on, the grace rule's call and what acting on it needs (a copy's owner and the
  anchors it names, a route's upstream target, a binding's object). decide/plan.py turns the
  verdict and call into the write and the reported action, for this driver and for
  `gcjob explain` alike; a companion's binding, the one linked object written after its
  companion, gets its plan the same way (companions/judge.py `binding_plan`).
- its writes: the delete, and where the object alone is not all (a companion's binding goes
  with it) the mark, unmark and wait; what goes whole or not at all (`group`); the reads made
  a moment ahead of the waits and marks, or of the deletes.

`drive` runs the rest, the same for every sweep: each object in its own boundary
(boundary.py), the rules every sweep obeys (an orphan another owner manages or that is
protected is kept, `guarded`, on the claims its plan declares; a sweep not in --enforce
deletes nothing, `deleter_for`), the grace rule's sort, the marks of objects that left, the
healthy counts, the brakes (drain cap, percent breaker, marks brake), the marks, the deletes,
the report and the sweep's state. Adding a sweep is adding a folder that declares these:
nothing here changes. (kopf's declared handlers run by one reactor are the model.)"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Generator, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, ClassVar, Generic, Protocol, TypeAlias, TypeVar

from gcjob.act.deleter import Deleter
from gcjob.act.mark_writer import waiting
from gcjob.brakes import Pending, drain_cut, group_brake, limit_said
from gcjob.decide.common import Claims, claimed, deletion_stalled
from gcjob.decide.grace import (
    GraceCall,
    Graced,
    GraceSort,
    Next,
    deletes_at,
    due_by,
    due_if_enforced,
    grace_call,
)
from gcjob.decide.plan import Plan, graced_plan
from gcjob.decide.projects import ProjectCalls, ProjectJudgement
from gcjob.domain import sorted_names
from gcjob.enumerate.owners import ProjectReads
from gcjob.exitcodes import ExitCode
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.resources import Resource
from gcjob.logs import log
from gcjob.marks import Evidence, Rule
from gcjob.model import Action, ObjectRef, Outcome, ProjectCall, Sweep, Verdict
from gcjob.reasons import Reason
from gcjob.run import Run
from gcjob.sweeps.boundary import ObjectScan, each, report_failed

J = TypeVar("J")  # one judgement, as the sweep's scan keeps it
T = TypeVar("T")  # what acting on one judged object needs beyond its verdict
C = TypeVar("C")  # one candidate, judged once the sweep read what its judgement needs


@dataclass(frozen=True, slots=True)
class Planned(Generic[T]):
    """What follows from one judgement: its verdict, the evidence an orphan's verdict rests
    on, the grace rule's call (None: it has nothing to say), what acting on it needs, and what
    the rules every sweep obeys read of the object (`claims`: its owners and protect key,
    which the driver holds an orphan to, `guarded`; None only for an object kept, and an
    orphan declared without them is kept)."""

    verdict: Verdict
    evidence: Evidence | None
    call: GraceCall | None
    target: T
    claims: Claims | None

    @property
    def plan(self) -> Plan:
        """The write and the reported action (decide/plan.py, as explain says them)."""
        return graced_plan(self.verdict, self.call)


# -- what a scan finds, step by step, in report order -----------------------------------------


@dataclass(frozen=True, slots=True)
class Counted:
    """Objects listed, and those of them that are the sweep's own (the breaker's collection);
    with --shard, `in_scope` is this shard's part and `other_shards` the others'."""

    scanned: int
    in_scope: int
    other_shards: int = 0


@dataclass(frozen=True, slots=True)
class Failed:
    """Scans whose objects could not be judged: each such object kept (`internal-error`)."""

    scans: Sequence[ObjectScan[Any]]


@dataclass(frozen=True, slots=True)
class Leaving:
    """Objects carrying the sweep's mark that it no longer selects: their marks go (`unmark`)."""

    items: Sequence[Graced[Any]]


@dataclass(frozen=True, slots=True)
class Judged(Generic[J]):
    """Judgements to plan and act on (or report), in report order."""

    items: Sequence[J]
    ref: Callable[[J], ObjectRef]


@dataclass(frozen=True, slots=True)
class Healthy:
    """Healthy objects, counted by reason, not itemised."""

    counts: Counter[Reason]


@dataclass(frozen=True, slots=True)
class Candidates(Generic[C, T]):
    """Objects judged and planned one by one, after the reads each judgement needs (`judge`:
    none, one, or a group's). A stop in those reads ends the sweep (`stopped`: what its state
    says); with no `stopped`, it ends the run as any stop does."""

    items: Sequence[C]
    ref: Callable[[C], ObjectRef]
    judge: Callable[[C], Sequence[Planned[T]]]
    stopped: str | None = None


@dataclass(frozen=True, slots=True)
class Projects:
    """What Milo's Project API said of the projects the sweep's objects name (`calls`),
    behind the projects brake (`brake`: its reason, "" when it held nothing), and the read of
    it that failed (`failed`, "" when none did): counted for the summary, said in the sweep's
    state."""

    calls: Mapping[str, ProjectCall]
    brake: str
    failed: str


@dataclass(frozen=True, slots=True)
class Named:
    """The projects one sweep's objects name: the clusters it judges, those of them whose
    control planes answered it (what vouches for the Project API), and, with --shard, the
    clusters other shards judge (`elsewhere`: the projects brake counts the whole hub)."""

    clusters: Sequence[str]
    answered: Sequence[str]
    elsewhere: Sequence[str] = ()


class Judges(Protocol):
    """What a round judges projects through: the run's one judgement and which clusters are
    projects (a `Run`; `gcjob explain`'s own, gcjob/sweeps/__init__.py `Handing`)."""

    @property
    def projects_judged(self) -> ProjectJudgement: ...

    @property
    def is_project(self) -> Callable[[str], bool]: ...


class RoundProjects:
    """Milo's projects, judged once a round for every sweep that rests on one, through the
    run's one judgement (`run.projects_judged`, decide/projects.py `ProjectJudgement`), before
    any sweep acts on any of them. The first sweep to ask waits for what every other sweep of
    the round names (`sources`: their reads started ahead; None when one could not name them,
    and that sweep then acts on none), so that one Project API check vouches for all, the
    projects brake counts them together, and each project has one call that every sweep
    reads. `reads`: the run's Project API, its answers kept for the run."""

    def __init__(
        self,
        run: Judges,  # a Run; or `gcjob explain`'s, judging through the very same
        reads: ProjectReads,
        sources: Sequence[Callable[[], Named | None]] = (),
    ) -> None:
        self.run = run
        self.reads = reads
        self._sources = sources
        self._named = Named((), ())  # every project the round judged, sorted, each once
        self._judged: ProjectCalls | None = None

    def calls(self, named: Named) -> ProjectCalls:
        """The calls of `named`'s clusters, from the round's one judgement (raises Stopped
        while the Project API is read). A sweep that names a project no judgement of the
        round was made over is judged again with all of them (the brake counts it too)."""
        judged, was = self._judged, self._named
        if (
            judged is None
            or not _within(was.clusters, named.clusters)
            or not _within(was.elsewhere, named.elsewhere)
            or not _within(was.answered, named.answered)
        ):
            every = [was, named, *filter(None, (source() for source in self._sources))]
            self._sources = ()  # what they hold is not kept past the judgement
            now = self._named = Named(
                sorted_names(c for n in every for c in n.clusters),
                sorted_names(c for n in every for c in n.answered),
                sorted_names(c for n in every for c in n.elsewhere),
            )
            del every
            run = self.run
            answers = self.reads.answers([*now.clusters, *now.elsewhere])
            judged = self._judged = run.projects_judged.judge(
                now.clusters, run.is_project, answers, now.answered, now.elsewhere
            )
        return judged.of(named.clusters)


def _within(names: Sequence[str], some: Iterable[str]) -> bool:
    """Whether every one of `some` is among `names` (sorted, each once)."""
    for name in some:
        at = bisect_left(names, name)
        if at == len(names) or names[at] != name:
            return False
    return True


@dataclass(frozen=True, slots=True)
class Noted:
    """What the sweep's state says of it so far (the kinds the copies sweep skips)."""

    detail: str


@dataclass(frozen=True, slots=True)
class Exits:
    """The run exits with this code at least (a failed upstream read; a brake that held
    something back in a run that deletes), whatever its items say."""

    code: ExitCode


Step: TypeAlias = (
    Counted | Failed | Leaving | Judged[J] | Healthy | Candidates[Any, T] | Projects | Noted | Exits
)
# A scan: its steps, in report order. One that cannot read what its judgements need raises
# Incomplete or NotConfigured instead: nothing is then acted on.
Scan: TypeAlias = Generator[Step[J, T], None, None]


class Unswept(Exception):
    """What ends a sweep's scan before it read all its judgements need (as kopf's handlers
    raise their outcome): the sweep's state says why, and nothing is acted on."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class Incomplete(Unswept):
    """A read failed (`error`, when one was raised) or a stop came: `incomplete` (exit 3),
    or `stopped`."""

    def __init__(self, detail: str, error: KubeError | None = None) -> None:
        super().__init__(detail)
        self.error = error


class NotConfigured(Unswept):
    """The sweep cannot run here (no upstream, a snapshot, no permission): `not-configured`,
    and a warning (`said`: how it says it)."""

    def __init__(self, detail: str, said: str = "not configured") -> None:
        super().__init__(detail)
        self.said = said


class Declaration(Generic[J, T]):
    """A sweep, declared: what it reads and judges (`scan`), what follows from a judgement
    (`plan`), and its writes. The writes default to acting on the object alone."""

    sweep: ClassVar[Sweep]
    rule: ClassVar[Rule]  # the grace rule its marks are of
    # The most marks one new orphan's `mark` writes (a companion writes its binding's too):
    # the marks brake counts them all before any is written.
    marks_each: ClassVar[int] = 1

    def __init__(self, run: Run) -> None:
        self.run = run

    def scan(self) -> Scan[J, T]:
        raise NotImplementedError

    def plan(self, judged: J) -> Planned[T]:
        raise NotImplementedError

    def resource(self, graced: Graced[T]) -> Resource:
        raise NotImplementedError

    def delete(self, graced: Graced[T], deleter: Deleter) -> list[Outcome]:
        """Deletes one object (and what goes with it) through `deleter`, the one the driver
        hands it (`deleter_for`: for a sweep not enforced, one that deletes nothing)."""
        raise NotImplementedError

    def mark(self, graced: Graced[T]) -> list[Outcome]:
        assert graced.evidence is not None
        call = graced.call
        assert call.since is not None  # a new mark's time
        mark = self.run.marker.mark(
            self.sweep,
            graced.verdict,
            self.resource(graced),
            graced.evidence,
            call.since,
            call.detail,
            upgrade=call.upgrade,
        )
        return [mark]

    def unmark(self, graced: Graced[T]) -> list[Outcome]:
        return [self.run.marker.unmark(self.sweep, graced.verdict, self.resource(graced))]

    def wait(self, graced: Graced[T]) -> list[Outcome]:
        return [waiting(self.sweep, graced.verdict, graced.call.detail, graced.call.since)]

    def group(self, graced: Graced[T]) -> Hashable:
        """What must be deleted together or not at all this run: by default each object."""
        return id(graced)

    def ahead_of_marks(self, graced: list[Graced[T]]) -> None:
        """Told of the objects about to be waited on, then of the new marks the marks brake
        let through, in the order they are acted on: what their writes read can be read
        ahead."""

    def ahead_of_deletes(self, graced: list[Graced[T]]) -> None:
        """Told of the objects about to be deleted, in the order they are: their live second
        looks can be read ahead."""


def drive(run: Run, declared: Declaration[J, T]) -> None:
    """One sweep, as every sweep runs: its reads and judging, the grace rule, the brakes, the
    writes, the report, its state."""
    sweep = declared.sweep
    state = run.tally.sweeps[sweep]
    sort: GraceSort[T] = GraceSort(declared.rule, run.now, run.settings.grace)

    def file(planned: Planned[T]) -> None:
        planned = stalled(run, guarded(run, declared.rule, planned))
        if planned.plan.next is Next.NOTHING or not sort.take(
            planned.verdict, planned.evidence, planned.call, planned.target
        ):
            run.keep(sweep, planned.verdict)

    def unmark(graced: Graced[T]) -> None:
        for outcome in declared.unmark(graced):
            run.record(outcome)

    steps = declared.scan()
    while True:
        try:
            step = next(steps)
        except StopIteration:
            break
        except Incomplete as unswept:
            return run.incomplete(sweep, unswept.detail, unswept.error)
        except NotConfigured as unswept:
            state.status, state.detail = "not-configured", unswept.detail
            log.warning("%s sweep %s: %s", sweep.value, unswept.said, unswept.detail)
            return None
        if isinstance(step, Counted):
            state.scanned += step.scanned
            state.in_scope += step.in_scope
            state.other_shards += step.other_shards
        elif isinstance(step, Failed):
            report_failed(run, sweep, step.scans)
        elif isinstance(step, Leaving):
            # With --shard, each marked object that left the sweep is the shard's of its hub
            # namespace: one removes its mark.
            mine = [g for g in step.items if run.shard.judges(g.verdict.ref.namespace)]
            each(run, sweep, mine, _ref, unmark)
        elif isinstance(step, Judged):
            each(run, sweep, step.items, step.ref, lambda judged: file(declared.plan(judged)))
        elif isinstance(step, Healthy):
            for reason, count in sorted(step.counts.items()):
                run.reporter.count_healthy(sweep, reason, count)
        elif isinstance(step, Projects):
            run.tally.clusters_read[sweep.value] = len(step.calls)  # with --shard: its own
            run.count_projects(step.calls, step.brake)
            run.project_api_failed(sweep, step.failed)
            if step.brake:
                run.hold_brake(sweep, step.brake)
        elif isinstance(step, Noted):
            state.detail = step.detail
        elif isinstance(step, Exits):
            run.tally.codes.add(step.code)
        else:
            candidates: Candidates[Any, T] = step

            def judge_and_file(candidate: Any, step: Candidates[Any, T] = candidates) -> None:
                for planned in step.judge(candidate):
                    file(planned)

            try:
                each(run, sweep, candidates.items, candidates.ref, judge_and_file)
            except Stopped as exc:
                if candidates.stopped is None:
                    raise
                steps.close()
                return run.incomplete(sweep, candidates.stopped, exc)
    if act(run, declared, sort, state.in_scope):
        run.completed(sweep)
    return None


def act(run: Run, declared: Declaration[Any, T], sort: GraceSort[T], in_scope: int) -> bool:
    """Acts on what `sort` holds, through the sweep's writes: marks removed first (always
    safe), then the waits, the deletes (the oldest marks first, up to the drain cap, behind
    the percent breaker, which weighs every orphan pending), then the new marks (behind the
    marks brake, every mark they write counted). False when a brake held something back."""
    sweep = declared.sweep
    enforced = sweep in run.settings.enforce
    deleter = deleter_for(run, sweep)

    def when(graced: Graced[T], outcomes: list[Outcome]) -> list[Outcome]:
        at = deletes_at(graced.call, run.now)
        if enforced:
            return on_its_way(outcomes, at)
        return [not_enforced(o, graced.call.due) for o in on_its_way(outcomes, at)]

    def unmark(graced: Graced[T]) -> None:
        for outcome in declared.unmark(graced):
            run.record(outcome)

    def wait(graced: Graced[T]) -> None:
        for outcome in when(graced, declared.wait(graced)):
            run.record(outcome)

    def delete(graced: Graced[T]) -> None:
        since = graced.call.since
        outcomes = [replace(o, orphaned_since=since) for o in declared.delete(graced, deleter)]
        run.count_deletion(when(graced, outcomes))

    def mark(graced: Graced[T]) -> None:
        run.count_mark(when(graced, declared.mark(graced)))

    def upgrade(graced: Graced[T]) -> None:
        for outcome in when(graced, declared.mark(graced)):
            run.record(outcome)

    each(run, sweep, sort.to_unmark, _ref, unmark)
    declared.ahead_of_marks(sort.waiting)
    each(run, sweep, sort.waiting, _ref, wait)
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
    if enforced:
        cap = run.limits.max_deletions  # with --shard, this shard's share of --max-deletions
        room = max(cap - run.tally.deleted, 0)
        pace = run.drain_pace(sweep, in_scope)
    else:
        # A sweep not enforced deletes nothing: it takes no place in the drain cap, has no
        # pace and no group too large for the cap; every due orphan says it would go.
        cap = room = len(sort.due)
        pace = None
    paced = pace is not None and pace < room
    cut = drain_cut(
        sort.due,
        min(room, pace) if pace is not None else room,
        cap,
        lambda graced: graced.call.since,
        declared.group,
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
    # The breaker weighs every orphan the sweep would delete, now or later, not one run's
    # share: engaged as soon as they are too many, due or not, and then it deletes none.
    pending = Pending(len(sort.due), len(sort.waiting), len(sort.to_mark))
    breaker = run.percent_braked(sweep, pending, in_scope)
    if breaker is not None and not enforced:
        # A sweep not enforced deletes nothing: each says the brake enforcing it would meet,
        # and no exit 4 fires, run after run, for deletions nobody asked for.
        run.hold_back(sweep, [g.verdict for g in [*cut.now, *cut.later]], breaker, enforced=False)
    elif breaker is not None:
        clear = False
        run.hold_brake(sweep, breaker)
        run.hold_back(sweep, [g.verdict for g in [*cut.now, *cut.later]], breaker)
    else:
        declared.ahead_of_deletes(cut.now)
        try:
            each(run, sweep, cut.now, _ref, delete)
        finally:  # a deletion a finalizer held, read again once its sweep's deletes are sent
            run.settle_held()
        backlog = [(g.verdict, g.call.since) for g in cut.later]
        run.drain_backlog(sweep, backlog, pace if paced else None)
    if enforced:  # what a drain waits for: never what a sweep not enforced would delete
        run.note_due(g.call.due for g in [*sort.waiting, *sort.to_mark])
    # Rewriting an older gcjob's mark is no new orphan: outside the marks brake and its count.
    each(run, sweep, sort.upgrades, _ref, upgrade)
    if run.marks_braked(sweep, [g.verdict for g in sort.new_marks], declared.marks_each):
        return False
    declared.ahead_of_marks(sort.new_marks)
    each(run, sweep, sort.new_marks, _ref, mark)
    return clear


def guarded(run: Run, rule: Rule, planned: Planned[T]) -> Planned[T]:
    """An orphan held to the rules every sweep obeys, here for every declared sweep whatever
    its judgement said: owned by something its sweep does not recognise (`owned`) or carrying
    the protect key (`protected`, `protect-not-understood`), it is kept, neither marked nor
    deleted (a mark of its rule goes, as for any object kept); declared without its claims, it
    is kept too (`internal-error`), and so is one no write could be pinned to (`unpinnable`).
    Every delete is pinned to the uid and resourceVersion judged (act/deleter.py), so what was
    held here is what a delete would have taken."""
    verdict = planned.verdict
    if not verdict.delete:
        return planned
    if not verdict.ref.uid or not verdict.ref.resource_version:
        held = (Reason.UNPINNABLE, "no uid or resourceVersion to pin a delete or a mark to")
    elif planned.claims is None:
        held = (Reason.INTERNAL_ERROR, "kept: its sweep declared no owners or protect key for it")
    else:
        found = claimed(planned.claims)
        if found is None:
            return planned
        held = found
    kept = replace(verdict, delete=False, reason=held[0], detail=held[1], healthy=False)
    call = grace_call(rule, kept, None, run.now, run.settings.grace)
    return Planned(kept, None, call, planned.target, planned.claims)


def stalled(run: Run, planned: Planned[T]) -> Planned[T]:
    """An object gcjob deleted (its mark) still Terminating longer than
    --deletion-stalled-after, here for every declared sweep whatever its judgement said: kept
    as `deletion-stalled`, naming its finalizers and how long (decide/common.py
    `deletion_stalled`); a metric counts it and an alert fires on it."""
    kept = stalled_verdict(planned.verdict, run.now, run.settings.deletion_stalled_after)
    if kept is None:
        return planned
    return Planned(kept, None, planned.call, planned.target, planned.claims)


def stalled_verdict(verdict: Verdict, now: datetime, after: timedelta) -> Verdict | None:
    """The verdict `stalled` keeps an object by (`deletion-stalled`), or None when it says
    nothing of it: the run's and `gcjob explain`'s, alike. Pure."""
    if verdict.delete or not verdict.ref.terminating:
        return None
    why = deletion_stalled(verdict.ref, now, after)
    if why is None:
        return None
    return replace(verdict, reason=Reason.DELETION_STALLED, detail=why, healthy=False)


def deleter_for(run: Run, sweep: Sweep) -> Deleter:
    """The deleter a sweep's writes delete through, chosen here for every sweep: the run's
    when the sweep is enforced (--enforce); else one that deletes nothing and says
    `would-delete` (act/deleter.py `report_only`), whatever the sweep's writes do. Its marks
    are written all the same (docs/operating.md: the others mark and report `would-delete`)."""
    if sweep in run.settings.enforce:
        return run.deleter
    return run.deleter.report_only()


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


def _ref(graced: Graced[Any]) -> ObjectRef:
    return graced.verdict.ref
