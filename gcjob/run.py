"""One run's state: its context (what it reads by and writes through, fixed once the lifecycle
has opened the sources), the facts of its round (the hub's clock, how lists are read), and its
tallies (outcomes, each sweep's state, the brakes engaged, the exit codes), from which the
summary is made. The lifecycle (gcjob/lifecycle.py) checks the hub and takes the lock; the
sweeps (gcjob/sweeps/) record what they did here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from gcjob import __version__
from gcjob.act.deleter import Deleter
from gcjob.act.events import Events
from gcjob.act.mark_writer import Marker
from gcjob.brakes import (
    BrakeLimits,
    Pending,
    deletion_brake,
    drain_pace,
    limit_said,
    percent_brake,
)
from gcjob.budget import RunBudget
from gcjob.decide.projects import ProjectJudgement, never_a_project
from gcjob.enumerate.parallel import SERIAL, Reads
from gcjob.enumerate.scope import NamespaceCheck, Scope
from gcjob.enumerate.upstream import UpstreamIndex, UpstreamSource
from gcjob.exitcodes import DESCRIPTIONS, ExitCode, most_severe
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.liststrategy import Choice
from gcjob.kube.reader import Reader
from gcjob.kube.transport import RequestStats
from gcjob.kube.upstreams import LiveUpstreams
from gcjob.logs import log
from gcjob.model import (
    PROJECT_BRAKE_HELD,
    PROJECT_COUNT_STATES,
    PROJECT_COUNTED_AS,
    Action,
    Outcome,
    ProjectCall,
    ProjectState,
    Sweep,
    Verdict,
)
from gcjob.reasons import ERROR_REASONS, Reason
from gcjob.redact import redact
from gcjob.report.emitter import Reporter
from gcjob.report.records import DueTally, rfc3339, upstream_record
from gcjob.settings import SHARED_LIMITS, Settings
from gcjob.shard import Shard
from gcjob.times import HubClock

# How a sweep's detail says that a Project API read it rests on failed (once a sweep).
PROJECT_API_FAILED = "the Project API could not be read"


@dataclass
class SweepState:
    status: str = "not-run"
    detail: str = ""
    scanned: int = 0
    in_scope: int = 0  # the objects of the sweep this run judged (with --shard: its shard's)
    other_shards: int = 0  # with --shard: the objects of the sweep another shard judges


@dataclass(frozen=True)
class RunContext:
    """What one run reads by and writes through: set once, when the lifecycle has opened the
    sources, and never changed."""

    settings: Settings
    hub: Reader
    deleter: Deleter
    reporter: Reporter
    budget: RunBudget
    stats: RequestStats
    upstreams: UpstreamSource | None
    run_id: str
    marker: Marker
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    projects: Reader | None = None  # Milo's Project API, when there is one
    is_project: Callable[[str], bool] = never_a_project  # reached through the template

    @property
    def scope(self) -> Scope:
        return Scope(self.settings.namespaces, frozenset(self.settings.exclude_namespaces))

    @property
    def limits(self) -> BrakeLimits:
        """The deletion brakes, as this run holds them: with --shard, its share of the drain
        cap (the shares add up to --max-deletions)."""
        s = self.settings
        return BrakeLimits(
            s.part.share(s.max_deletions), s.max_delete_percent, s.brake_min_objects, s.drain_pace
        )


@dataclass
class Tally:
    """What one run counted, as it went: the summary is made of it."""

    codes: set[ExitCode] = field(default_factory=set)
    sweeps: dict[Sweep, SweepState] = field(default_factory=dict)
    deleted: int = 0  # deletions this round, for --max-deletions (a companion + binding: one)
    backlog: int = 0  # due orphans left past the drain cap this round
    next_due: datetime | None = None  # when the first orphan still waiting becomes due
    waiting: int = 0  # orphans marked, not yet due
    skipped: str = ""  # why this run swept nothing and exits 0 (a drain holds the lock)
    drain: dict[str, Any] | None = None  # a --drain run's rounds, for the summary
    # Each sweep's collection as its first round found it: a drain's later rounds weigh their
    # deletions against it, not against what earlier rounds left (which shrinks as it drains).
    first_scope: dict[Sweep, int] = field(default_factory=dict)
    # Marks written (a dry run: that it would write), sweep -> reason -> count: every one,
    # a companion's binding too; a mark held back by a brake is no mark.
    marks: dict[str, dict[str, int]] = field(default_factory=dict)
    brakes: list[str] = field(default_factory=list)  # each brake that engaged, named, once
    # Project -> counted state, for the run (every sweep and round): each project once.
    project_counts: dict[str, str] = field(default_factory=dict)
    # The run's one judgement of Milo's projects (its API check and projects brake): every
    # sweep and round of --drain judges through it (gcjob/sweeps/driver.py RoundProjects).
    projects_judged: ProjectJudgement | None = None
    # The upstream clusters (projects) each sweep read this round: with --shard, its shard's.
    clusters_read: dict[str, int] = field(default_factory=dict)
    # Deletes a finalizer held at their answer, not yet reported: each is read again once the
    # sweep's deletes are sent (`settle_held`), and reported once, as it then is.
    held: list[Outcome] = field(default_factory=list)


@dataclass
class Run:
    """One run: its context (read-only), the facts of its round, which the lifecycle sets
    before the sweeps (the hub's clock, the namespaces found, how lists are read) and
    sweeps.execute for a round's length (the read pools), and its tallies."""

    context: RunContext
    clock: HubClock  # the hub's clock this round (its `now`: the hub's time now)
    namespace_check: NamespaceCheck = field(default_factory=NamespaceCheck)  # --namespace found?
    list_strategy: Choice | None = None  # how the hub's lists were read; None: not chosen
    hub_reads: Reads = SERIAL  # set by sweeps.execute for the round's length
    upstream_reads: Reads = SERIAL
    upstream_index: UpstreamIndex | None = None  # what the routes sweep read upstream
    events: Events | None = None  # a --delete run's Events (act/events.py), sent after writes
    tally: Tally = field(default_factory=Tally)

    @property
    def now(self) -> datetime:
        """The hub's time now (times.HubClock), read afresh each time: a judgement made once
        the reads it rests on came back carries a time no earlier than its evidence."""
        return self.clock.now()

    @property
    def clock_problem(self) -> str:
        """Why `now` is not the hub's ("" when it is): then nothing is deleted or marked."""
        return self.clock.problem

    # The context, read-only, as the sweeps read it.
    @property
    def settings(self) -> Settings:
        return self.context.settings

    @property
    def hub(self) -> Reader:
        return self.context.hub

    @property
    def deleter(self) -> Deleter:
        return self.context.deleter

    @property
    def reporter(self) -> Reporter:
        return self.context.reporter

    @property
    def budget(self) -> RunBudget:
        return self.context.budget

    @property
    def stats(self) -> RequestStats:
        return self.context.stats

    @property
    def upstreams(self) -> UpstreamSource | None:
        return self.context.upstreams

    @property
    def run_id(self) -> str:
        return self.context.run_id

    @property
    def marker(self) -> Marker:
        return self.context.marker

    @property
    def projects(self) -> Reader | None:
        return self.context.projects

    @property
    def is_project(self) -> Callable[[str], bool]:
        return self.context.is_project

    @property
    def scope(self) -> Scope:
        return self.context.scope

    @property
    def shard(self) -> Shard:
        return self.settings.part

    @property
    def limits(self) -> BrakeLimits:
        return self.context.limits

    @property
    def projects_judged(self) -> ProjectJudgement:
        """The run's one judgement of Milo's projects, for every sweep and round."""
        if self.tally.projects_judged is None:
            self.tally.projects_judged = ProjectJudgement(self.settings.max_projects_gone)
        return self.tally.projects_judged

    # -- reporting ---------------------------------------------------------------------

    def record(self, outcome: Outcome) -> None:
        self.reporter.outcome(outcome, self.now)
        if self.events is not None:
            self.events.note(outcome, datetime.now(UTC))
        if (
            outcome.action is Action.FAILED
            or outcome.reason in ERROR_REASONS
            or outcome.reason == Reason.RECORD_FAILED  # kept, but the undo it needs is broken
        ):
            self.tally.codes.add(ExitCode.ITEM_FAILED)
        if outcome.reason == Reason.STOPPED:
            self.tally.codes.add(ExitCode.STOPPED)
        if outcome.reason == Reason.INTERNAL_ERROR:
            self.tally.codes.add(ExitCode.INCOMPLETE)
        if outcome.action in (Action.MARKED, Action.WOULD_MARK) and outcome.reason != Reason.BRAKE:
            by_reason = self.tally.marks.setdefault(outcome.sweep.value, {})
            by_reason[outcome.reason] = by_reason.get(outcome.reason, 0) + 1
        if outcome.reason == Reason.BRAKE:
            self._brake_held(outcome.sweep, outcome.detail)

    def hold_brake(self, sweep: Sweep, reason: str) -> None:
        """A brake of the sweep's own (not one item's) held something back."""
        self._brake_held(sweep, reason)

    def _brake_held(self, sweep: Sweep, reason: str) -> None:
        """A brake held something of `sweep` back: said in its state (once per brake), and
        exit 4 for a run that deletes."""
        state = self.tally.sweeps.get(sweep)
        said = f"{sweep.value} sweep: {reason}"
        if said not in self.tally.brakes:
            self.tally.brakes.append(said)
            if self.settings.delete:
                log.warning("%s", said)
        if state is not None:
            state.status = "braked"
            if reason not in state.detail:
                state.detail = "; ".join(filter(None, [state.detail, reason]))
        if self.settings.delete:
            self.tally.codes.add(ExitCode.BRAKE)

    def project_api_failed(self, sweep: Sweep, detail: str) -> None:
        """A read of Milo's Project API that `sweep` rests on failed, was refused or ran out
        of its read budget (`detail`; "" when none did): nothing is proven by it, and the run
        says so, in the sweep's detail (the first such failure) and with exit 1."""
        if not detail:
            return
        self.tally.codes.add(ExitCode.ITEM_FAILED)
        state = self.tally.sweeps.get(sweep)
        if state is None or PROJECT_API_FAILED in state.detail:
            return
        said = f"{PROJECT_API_FAILED}: {detail}"
        state.detail = "; ".join(filter(None, [state.detail, said]))
        log.warning("%s sweep: %s", sweep.value, said)

    def completed(self, sweep: Sweep) -> None:
        """The end of a sweep that went through its candidates: `completed`, unless a stop
        (--timeout, SIGTERM) left some undone; then it is `stopped`, never `completed` with
        items `stopped`."""
        state = self.tally.sweeps[sweep]
        if state.status == "braked":
            return  # a write or marks brake held back its last objects: said so already
        actions = self.reporter.tally.counts.get(sweep.value, {})
        skipped = actions.get(Action.SKIPPED.value, {})
        undone = skipped.get(Reason.STOPPED, 0)
        failed = skipped.get(Reason.INTERNAL_ERROR, 0)
        if undone:
            state.status = "stopped"
            state.detail = (
                f"{undone} object{'s' if undone != 1 else ''} left undone: run stopped "
                f"({self.budget.stop_reason() or 'stop requested'})"
            )
        elif failed:
            state.status = "incomplete"
            state.detail = "; ".join(
                filter(
                    None,
                    [
                        state.detail,
                        f"{failed} object{'s' if failed != 1 else ''} kept on an internal error "
                        f"({Reason.INTERNAL_ERROR} items)",
                    ],
                )
            )
        else:
            state.status = "completed"

    def keep(self, sweep: Sweep, verdict: Verdict) -> None:
        self.record(Outcome.of(sweep, verdict, Action.SKIPPED))

    def incomplete(self, sweep: Sweep, detail: str, exc: KubeError | None = None) -> None:
        state = self.tally.sweeps[sweep]
        if isinstance(exc, Stopped):
            state.status, state.detail = "stopped", f"{detail}: {exc}"
            self.tally.codes.add(ExitCode.STOPPED)
        else:
            state.status = "incomplete"
            state.detail = f"{detail}: {exc}; nothing deleted" if exc else detail
            self.tally.codes.add(ExitCode.INCOMPLETE)
        log.error("%s sweep %s: %s", sweep.value, state.status, state.detail)

    # -- acting ------------------------------------------------------------------------

    def percent_braked(self, sweep: Sweep, orphans: Pending, in_scope: int) -> str | None:
        """The percent breaker: why a sweep whose orphans, every one it would delete now or
        later (`orphans`), are too large a share of its collection must delete none of them,
        or None. In a --drain run the collection is the larger of this round's and the first
        round's: the hub the drain began on."""
        collection = max(in_scope, self.tally.first_scope.setdefault(sweep, in_scope))
        # With --shard: --brake-min-objects is held to the sweep's collection in the whole hub.
        state = self.tally.sweeps.get(sweep)
        whole = collection + (state.other_shards if state is not None else 0)
        reason = percent_brake(orphans, collection, self.limits, whole)
        if reason is not None and not self.shard.whole:
            reason = f"shard {self.shard}: {reason}"
        return None if reason is None else deletion_brake(reason)

    def drain_pace(self, sweep: Sweep, in_scope: int) -> int | None:
        """In a --drain run, the most deletions of `sweep` this round (`drain_pace`), else
        None: the CronJob's runs have the breaker, never a pace."""
        if not self.settings.drain:
            return None
        return drain_pace(self.tally.first_scope.setdefault(sweep, in_scope), self.limits)

    def note_due(self, dues: Iterable[datetime | None]) -> None:
        """When orphans still waiting become due: the earliest is when a drain looks again."""
        for due in dues:
            if due is None:
                continue
            self.tally.waiting += 1
            if self.tally.next_due is None or due < self.tally.next_due:
                self.tally.next_due = due

    def next_round(self, clock: HubClock) -> None:
        """A --drain run's next round: a full sweep again, with its own drain cap, on the
        hub's `clock` read again; what was reported stays reported. The summary describes the
        hub as the last round left it, with every round's marks and deletions added up, and its
        projects counted once for the run (the projects brake counts them so)."""
        self.reporter.next_round()
        self.clock = clock
        self.tally.deleted = 0
        self.tally.backlog = 0
        self.tally.next_due = None
        self.tally.waiting = 0

    def hold_back(
        self, sweep: Sweep, candidates: list[Verdict], reason: str, enforced: bool = True
    ) -> None:
        """A deletion brake holds these back: each reported, the brake engaged. A sweep not
        `enforced` deletes nothing, and no brake of its is engaged (no exit 4, no brake metric,
        no notification, run after run, for deletions nobody asked for): each is a plain
        would-delete of its own reason that says the brake enforcing the sweep would meet, and
        so does the sweep's state."""
        if not enforced:
            said = f"not deleted: this sweep is not enforced; were it enforced, {reason}"
            state = self.tally.sweeps.get(sweep)
            if state is not None and said not in state.detail:
                state.detail = "; ".join(filter(None, [state.detail, said]))
            for verdict in candidates:
                held = Outcome.of(sweep, verdict, Action.WOULD_DELETE)
                self.record(replace(held, detail=f"{said}: {held.detail}", if_enforced=True))
            return
        for verdict in candidates:
            self.record(Outcome.of(sweep, verdict, Action.WOULD_DELETE, Reason.BRAKE, reason))

    def drain_backlog(
        self, sweep: Sweep, backlog: list[tuple[Verdict, datetime | None]], paced: int | None = None
    ) -> None:
        """Due orphans past the drain cap (or, `paced`, past a --drain round's pace): reported,
        left for the next run or round; no brake."""
        s = self.settings
        past = (
            f"past the drain cap ({limit_said('--max-deletions', s.max_deletions, self.shard)} "
            "this run): a later run"
            if paced is None
            else f"past this round's pace (--drain-pace {s.drain_pace:g} of "
            f"the {sweep.value} sweep's {self.tally.first_scope.get(sweep, 0)} objects as the "
            f"drain found them: {paced} a round): a later round"
        )
        for verdict, since in backlog:
            detail = f"due, {past} deletes it, oldest marks first: {verdict.detail}"
            self.record(
                Outcome.of(
                    sweep, verdict, Action.SKIPPED, Reason.BACKLOG, detail, orphaned_since=since
                )
            )
        self.tally.backlog += len(backlog)

    def marks_braked(self, sweep: Sweep, candidates: list[Verdict], each: int = 1) -> bool:
        """The marks brake: a mass of new orphans is the early warning to send, so a sweep
        that would mark too many marks none of them. `each`: the most marks one of them
        writes (a companion writes its binding's too): every one counted before any is
        written, so the brake stops the sweep whole or not at all."""
        reason = self.marker.brake.holds(len(candidates) * each, len(candidates))
        if reason is None:
            return False
        for verdict in candidates:
            self.record(Outcome.of(sweep, verdict, Action.WOULD_MARK, Reason.BRAKE, reason))
        return True

    def count_mark(self, outcomes: list[Outcome]) -> None:
        """The outcomes of one mark (a companion's: with its binding's)."""
        for outcome in outcomes:
            self.record(outcome)

    def count_deletion(self, outcomes: list[Outcome]) -> None:
        """One deletion's outcomes; it takes a place in the drain cap (a dry run's would-delete
        too, and one a finalizer holds: its delete went out), unless its sweep is not
        enforced: that deletes nothing, dry run or not. One a finalizer held at its answer is
        reported once read again (`settle_held`)."""
        first = outcomes[0] if outcomes else None
        if (
            first
            and first.action in (Action.DELETED, Action.DELETE_HELD, Action.WOULD_DELETE)
            and first.reason != Reason.BRAKE
            and not first.if_enforced
        ):
            self.tally.deleted += 1
        for outcome in outcomes:
            if outcome.action is Action.DELETE_HELD:
                self.tally.held.append(outcome)  # reported once read again: settle_held
            else:
                self.record(outcome)

    def settle_held(self) -> None:
        """The deletes a finalizer held at their answer, read again (act/deleter.py `settle`:
        one wait for them all) and each reported once, as it now is: `deleted`, or still
        `delete-held`, naming what holds it."""
        held, self.tally.held = self.tally.held, []
        for outcome in self.deleter.settle(held) if held else []:
            self.record(outcome)

    def count_projects(self, calls: Mapping[str, ProjectCall], brake: str) -> None:
        """What a sweep found of each Milo project among `calls` (`brake`: the projects brake's
        reason, "" when it held nothing), for the summary's `projects`: each project once a
        run, by the most cautious call any sweep or round of --drain made of it."""
        for name, call in calls.items():
            if call.state is ProjectState.NOT_A_PROJECT:
                continue
            if brake and call.detail == brake:
                state = PROJECT_BRAKE_HELD
            else:
                state = PROJECT_COUNTED_AS[call.state]
            before = self.tally.project_counts.get(name)
            if before is None or PROJECT_COUNT_STATES.index(state) < PROJECT_COUNT_STATES.index(
                before
            ):
                self.tally.project_counts[name] = state

    # -- summary -----------------------------------------------------------------------

    def exit_code(self) -> ExitCode:
        return most_severe(self.tally.codes)

    def summary(self, exit_code: ExitCode, error: str = "") -> dict[str, Any]:
        """Totals and counts only: what grows with the hub (per-cluster states) has its own
        records (upstream_records), so the summary stays one bounded line."""
        finished = datetime.now(UTC)
        upstream_counts = self.upstream_index.status_counts() if self.upstream_index else {}
        summary: dict[str, Any] = {
            "record": "summary",
            "run_id": self.run_id,
            "time": rfc3339(finished, "milliseconds"),
            "version": __version__,
            "hub": redact(self.hub.server),
            "dry_run": not self.settings.delete,
            "started": rfc3339(self.context.started),
            "finished": rfc3339(finished),
            "decided_at": rfc3339(self.clock.at),
            "min_age_seconds": int(self.settings.min_age.total_seconds()),
            "grace_seconds": int(self.settings.grace.total_seconds()),
            "namespaces": {
                "included": list(self.settings.namespaces) or "all but reserved",
                "excluded": list(self.settings.exclude_namespaces),
                **self.namespace_check.summary(),
            },
            "sweeps": {
                sweep.value: {
                    "status": st.status,
                    "detail": st.detail,
                    "scanned": st.scanned,
                    "in_scope": st.in_scope,
                    **({} if self.shard.whole else {"other_shards": st.other_shards}),
                }
                for sweep, st in self.tally.sweeps.items()
            },
            "counts": self.reporter.tally.as_dict(),
            "marks": {sweep: dict(sorted(r.items())) for sweep, r in self.tally.marks.items()},
            "would_delete": self.reporter.due.as_dict(
                [sweep.value for sweep in self.tally.sweeps if sweep in self.settings.enforce]
            ),
            # What the sweeps that are not enforced (report-only) would delete, were they.
            "would_delete_if_enforced": (self.reporter.due.if_enforced or DueTally()).as_dict(
                [sweep.value for sweep in self.tally.sweeps if sweep not in self.settings.enforce]
            ),
            "writes": {"counted": self.marker.writes.counted, "max": self.settings.max_writes},
            "totals": self.reporter.tally.totals(),
            "list_strategy": self.list_strategy.as_dict() if self.list_strategy else None,
            "deletion_backlog": self.tally.backlog,
            "upstream_counts": dict(sorted(upstream_counts.items())),
            "projects": {
                state: sum(1 for s in self.tally.project_counts.values() if s == state)
                for state in PROJECT_COUNT_STATES
            },
            "api_requests": {
                "total": self.stats.total,
                "by_target": dict(sorted(self.stats.by_target.items())),
            },
            "exit_code": int(exit_code),
            "exit_reason": redact(error or self._exit_reason(exit_code)),
        }
        if not self.shard.whole:
            summary["shard"] = self._shard_summary()
        if self.tally.skipped:
            summary["skipped"] = redact(self.tally.skipped)
        if self.tally.drain is not None:
            summary["drain"] = self.tally.drain
        return summary

    def _shard_summary(self) -> dict[str, Any]:
        """Which shard this run was and what it covered: the upstream clusters (projects) each
        sweep read, the objects it judged (each sweep's in_scope; other_shards: the rest), and
        the share of each absolute limit it held."""
        s = self.settings
        return {
            "index": self.shard.index,
            "count": self.shard.count,
            "keys": "routes and copies by project, companions and bindings by hub namespace",
            "clusters_read": dict(self.tally.clusters_read),
            "limits": {
                field: {"run": getattr(s, field), "shard": self.shard.share(getattr(s, field))}
                for field in SHARED_LIMITS
            },
        }

    def _exit_reason(self, exit_code: ExitCode) -> str:
        """The exit code's description; for a brake, which brakes engaged, by name."""
        if exit_code is ExitCode.BRAKE and self.tally.brakes:
            return "safety brake engaged: " + "; ".join(self.tally.brakes)
        if exit_code is ExitCode.OK and self.tally.brakes:
            # A dry run is never braked to exit 4, but what it found must not read "completed".
            return "dry run: a run that deletes would exit 4, safety brake engaged: " + "; ".join(
                self.tally.brakes
            )
        if exit_code is ExitCode.OK and self.tally.skipped:
            return f"skipped: {self.tally.skipped}"
        return DESCRIPTIONS[exit_code]

    def upstream_records(self) -> Iterator[dict[str, Any]]:
        """One record per upstream cluster the routes sweep asked about, by name, each made
        as it is written (all of them at once were tens of MiB at 10,000 clusters)."""
        if self.upstream_index is None:
            return iter(())
        emitted = datetime.now(UTC)
        upstreams = self.upstreams
        return (
            upstream_record(
                cluster,
                _redacted(state),
                upstreams.requests_to(cluster) if isinstance(upstreams, LiveUpstreams) else 0,
                self.run_id,
                emitted,
            )
            for cluster, state in self.upstream_index.summaries()
        )


def _redacted(state: dict[str, Any]) -> dict[str, Any]:
    return {
        key: redact(value) if key in ("server", "detail") and isinstance(value, str) else value
        for key, value in state.items()
    }
