"""The life of one run, once the command line has made its Settings: open the sources (a live
hub and upstreams, or a snapshot), check the hub and read its clock, take the lock, execute the
sweeps, release the lock, finish the report, publish (metrics, webhook), return the exit code.
`explain`'s run is here too: the same sources and hub check, one object, no lock, no writes."""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import socket
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

import click

from gcjob import logs, preflight, restore, undo
from gcjob.act.deleter import Deleter
from gcjob.act.events import Events
from gcjob.act.mark_writer import Marker
from gcjob.act.record import DeletionRecord, check_record_dir
from gcjob.act.writes import Writes
from gcjob.brakes import limit_said
from gcjob.budget import RunBudget
from gcjob.decide.projects import never_a_project
from gcjob.domain import GATEWAY_GROUP, REPLICATED_KINDS
from gcjob.enumerate.owners import ProjectReads
from gcjob.enumerate.scope import Scope, check_namespaces
from gcjob.exitcodes import ExitCode
from gcjob.explain import Explainer, Target
from gcjob.kube.access import KubeAccess, ReadBudget, ReadLimits
from gcjob.kube.connect import (
    UpstreamClient,
    UpstreamResolver,
    hub_client,
    project_api_from_template,
)
from gcjob.kube.discovery import SharedDocuments
from gcjob.kube.errors import ConfigError, KubeError
from gcjob.kube.liststrategy import Choice, ListStrategy, choose
from gcjob.kube.reader import Reader
from gcjob.kube.snapshot import Snapshot, SnapshotStore, SnapshotUpstreams
from gcjob.kube.transport import RequestStats, RetryPolicy, Timeouts, Transport
from gcjob.kube.upstreams import LiveUpstreams, Shared
from gcjob.lease import DRAIN_HOLDER, LeaseLock, LockHeld, ShardLock
from gcjob.logs import log
from gcjob.preflight import NotAHub, check_hub, check_project_list
from gcjob.publish import metrics, webhook
from gcjob.redact import error_line, redact
from gcjob.report.emitter import Reporter, silence
from gcjob.report.explain_output import render_json, render_text
from gcjob.run import Run, RunContext
from gcjob.settings import IGNORED_VARIABLES, Settings
from gcjob.sweeps import ENFORCING, PREFLIGHT, execute, reads_projects, served, upstream_required
from gcjob.times import HubClock, run_clock
from gcjob.urls import keep_proxy_credentials, proxy_env
from gcjob.visible import visible

LEASE_MARGIN = timedelta(minutes=1)
DRAIN_MARGIN = 1.0  # seconds: a --drain run looks again this long after a mark is due
HUB_RETRY = RetryPolicy()
# An upstream that fails only keeps its routes until the next run: a few blackholed
# clusters must not use up the run's --timeout before the healthy ones are swept.
UPSTREAM_RETRY = RetryPolicy(attempts=3, max_total=10.0)


# glibc's mallopt parameter for the most malloc arenas (M_ARENA_MAX in malloc.h).
M_ARENA_MAX = -8
MALLOC_ARENAS = 2


def few_malloc_arenas() -> bool:
    """At most MALLOC_ARENAS malloc arenas for the rest of the process, as MALLOC_ARENA_MAX=2
    would: glibc gives each thread that allocates while another does an arena of its own (up
    to 8 a core), and each arena keeps what it grew. gcjob's reader and exchange threads
    allocate their answers at once; their arenas were a few MiB of the run's peak at 1,000
    upstream clusters (70.3 MiB, 67.5 with two). Whether it was set: not on another C
    library, nor where the operator's MALLOC_ARENA_MAX already says."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(M_ARENA_MAX, MALLOC_ARENAS))
    except (OSError, AttributeError):  # no mallopt here (musl, macOS): its own allocator
        return False


def run_sweep(settings: Settings, budget: RunBudget) -> int:
    """One run of `gcjob sweep`, Settings to exit code: each phase below, in this order.
    `budget`: the run's, SIGTERM and SIGINT already bound to it (budget.stop_on_signals: the
    cli binds them before it imports this module)."""
    run_id = str(uuid.uuid4())  # in every log line and report record of this run
    few_malloc_arenas()  # before the run's reader threads
    logs.setup(settings.log_format, run_id)
    for variable in settings.ignored_variables:
        log.warning("%s is ignored: %s", variable, IGNORED_VARIABLES[variable])
    if settings.now is not None:
        log.warning("deciding as of --now %s, not the clock", settings.now.isoformat())
    started = time.monotonic()
    stats = RequestStats()
    try:
        sources = _open_sweep_sources(settings, budget, stats)
    except ConfigError as exc:
        return _fail(ExitCode.USAGE, str(exc))
    notable = webhook.Notable()
    run = _new_run(settings, sources, run_id, budget, stats, notable)
    try:
        error, lock_held_for = _sweep(run, sources)
    finally:
        if run.deleter.record is not None:
            run.deleter.record.close()
    code, summary = _finish(run, error)
    _publish(settings, summary, notable.items, started, lock_held_for)
    return int(code)


def _open_sweep_sources(settings: Settings, budget: RunBudget, stats: RequestStats) -> Sources:
    """The sources, and the inputs a run cannot do without, checked before anything is read.
    Raises ConfigError."""
    sources = open_sources(settings, budget, stats)
    needing = upstream_required(settings.sweeps) if settings.sweeps_explicit else None
    if sources.upstreams is None and needing is not None:
        raise ConfigError(
            f"--sweep {needing.value} needs an upstream: add DIR/upstream/<cluster>/ dumps to the "
            "snapshot"
            if settings.snapshot
            else f"--sweep {needing.value} needs an upstream: pass --upstream-kubeconfig"
        )
    if settings.report_file:
        _check_writable(settings.report_file)
    if settings.record_deletions:
        try:
            check_record_dir(settings.record_deletions)
        except OSError as exc:
            raise ConfigError(
                f"--record-deletions {settings.record_deletions}: {exc.strerror or exc}"
            ) from exc
    return sources


def _new_run(
    settings: Settings,
    sources: Sources,
    run_id: str,
    budget: RunBudget,
    stats: RequestStats,
    notable: webhook.Notable,
) -> Run:
    """The run's state, with its reporter and its two writers."""
    access = sources.access
    progress = sys.stderr if settings.log_format == "text" and sys.stderr.isatty() else None
    reporter = Reporter(
        run_id=run_id,
        dry_run=not settings.delete,
        log_format=settings.log_format,
        report_healthy=settings.report_healthy,
        report_file=settings.report_file,
        progress=progress,
        observer=notable,
        # A closed stdout (`| head -1`) ends the run as a signal would: nothing further is
        # deleted unseen, and the report file is still written.
        on_stdout_closed=lambda: budget.request_stop("stdout closed"),
    )
    # One budget for every write: the marker and the deleter are paced and braked together.
    # With --shard, each brake at this shard's share of its limit: COUNT shards together
    # never pass what one run may do (gcjob/shard.py).
    shard = settings.part
    writes = Writes(
        budget,
        qps=settings.write_qps,
        max_writes=shard.share(settings.max_writes),
        said=limit_said("--max-writes", settings.max_writes, shard),
    )
    # A dry run deletes nothing, so records nothing.
    record = (
        DeletionRecord(settings.record_deletions, run_id)
        if settings.record_deletions and settings.delete and access is not None
        else None
    )
    deleter = Deleter(
        access, dry_run=not settings.delete, budget=budget, writes=writes, record=record
    )
    # A snapshot's loaded objects take the very patches a live run would send; a live dry run
    # writes nothing.
    patched = sources.snapshot_hub if settings.snapshot else access if settings.delete else None
    marker = Marker(
        patched,
        dry_run=not settings.delete,
        budget=budget,
        writes=writes,
        max_marks=shard.share(settings.max_marks),
        marks_said=limit_said("--max-marks", settings.max_marks, shard),
    )
    context = RunContext(
        settings,
        sources.hub,
        deleter,
        reporter,
        budget,
        stats,
        sources.upstreams,
        run_id,
        marker,
        projects=sources.projects,
        is_project=sources.is_project,
    )
    return Run(context, sources.clock)


def _sweep(run: Run, sources: Sources) -> tuple[str, timedelta]:
    """The hub check and its clock, the lock, the sweeps, the lock released. Returns the error
    that ended the run early ("" if none), its exit code in the run's tally; and when another run
    held the lock, for how long (for the metrics; zero when it did not)."""
    settings, hub, access = run.settings, run.hub, sources.access
    error = ""
    lock_held_for = timedelta(0)
    lock: LeaseLock | ShardLock | None = None
    try:
        check_hub(hub, served(settings.sweeps))
        if access is not None:  # a live hub: its clock, from the Date of its last answer
            run.clock = _round_clock(run, access)
        run.list_strategy = choose_list_strategy(settings, access)
        run.namespace_check = check_namespaces(hub, settings.namespaces)
        for warning in run.namespace_check.warnings():
            log.warning("%s", warning)
        if access is not None and settings.delete:
            preflight.check(access, settings, PREFLIGHT, ENFORCING)
            if settings.events and preflight.events_allowed(access, settings):
                run.events = Events(access, run.run_id)
        if access is not None and settings.delete and settings.lock:
            # Outside the run's budget: a run stopped by --timeout or SIGTERM still releases it.
            lock_access = sources.make_access(access.transport.api_client, "hub", RunBudget(None))
            # A drain says so: the CronJob's runs step aside for it (exit 0, skipped).
            drain = DRAIN_HOLDER if settings.drain else ""
            identity = f"{drain}{socket.gethostname()}/{run.run_id}"
            duration = settings.timeout + LEASE_MARGIN
            namespace, name = settings.lock_namespace, settings.lock_name
            lock = (
                LeaseLock(lock_access, namespace, name, identity, duration)
                if run.shard.whole
                else ShardLock(lock_access, namespace, name, run.shard, identity, duration)
            )
            lock.acquire(datetime.now(UTC))
        # The run's one list of Milo's projects, read now: a Project API that cannot be right
        # is a configuration error before anything is touched. Its answers are the run's, for
        # every round of --drain: one answer a project.
        projects = ProjectReads(run.projects, run.is_project)
        check_project_list(projects, reads_projects(settings.sweeps))
        execute(run, projects)
        if settings.drain:
            assert access is not None  # --drain needs --delete: never a snapshot
            _drain(run, access, lock, projects)
    except NotAHub as exc:
        run.tally.codes.add(ExitCode.USAGE)
        error = str(exc)
    except LockHeld as exc:
        lock_held_for = exc.held_for
        if exc.by_drain and not settings.drain:
            # The rollout Job is draining the backlog: this run's work is being done.
            run.tally.skipped = f"rollout holds the lock ({exc})"
            log.info("%s: skipped", run.tally.skipped)
        else:
            run.tally.codes.add(ExitCode.LOCKED)
            error = str(exc)
    except ConfigError as exc:
        run.tally.codes.add(ExitCode.USAGE)
        error = str(exc)
    except KubeError as exc:
        run.tally.codes.add(ExitCode.STOPPED if run.budget.stop_reason() else ExitCode.INCOMPLETE)
        error = f"cannot use the hub: {exc}"
    except Exception as exc:  # a bug: say so in one line, keep the report's summary
        # The message goes through redact() like every other: it can hold a header value.
        where = traceback.extract_tb(exc.__traceback__)[-1]
        run.tally.codes.add(ExitCode.INTERNAL)
        error = f"internal error: {type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})"
    finally:
        if run.events is not None:  # after every write, the lock still held: best effort
            run.events.finish()
        if lock is not None:
            try:
                lock.release()
            except KubeError as exc:
                log.warning("could not release lease: %s (it expires by itself)", exc)
    return error, lock_held_for


def _read_hub_clock(settings: Settings, access: KubeAccess) -> HubClock:
    """The hub's clock, from the Date of its last answer (the hub check's, just made), going
    on from this moment by the monotonic clock (times.HubClock); --now's, fixed. The one
    place a run, a --drain round and explain read it."""
    return run_clock(
        settings.now, access.transport.last_date, datetime.now(UTC), time.monotonic(), live=True
    )


def _round_clock(run: Run, access: KubeAccess) -> HubClock:
    """The run's (or its round's) hub clock; a problem with it is said: the run then deletes
    and marks nothing (the driver reads `run.clock_problem`)."""
    clock = _read_hub_clock(run.settings, access)
    if clock.problem:
        log.warning("%s: nothing is deleted or marked this run", clock.problem)
    return clock


def _drain(
    run: Run, access: KubeAccess, lock: LeaseLock | ShardLock | None, projects: ProjectReads
) -> None:
    """--drain (the rollout Job): after the first round, sleep until the next mark is due
    (at once while a backlog is left past the drain cap), renew the lease, and sweep again,
    a full sweep on the same rules, until no orphan waits, a round does not end cleanly, or
    --timeout would pass first (exit 5, what is left reported). An item that failed (exit 1:
    a delete, a lookup, an upstream or the Project API) is that item's, never the drain's:
    the rounds go on for the rest, and the run still exits 1."""
    budget, rounds, slept = run.budget, 1, 0.0
    while True:
        if run.exit_code() not in (ExitCode.OK, ExitCode.ITEM_FAILED):
            finished = f"round {rounds} did not end cleanly: {run.exit_code().name.lower()}"
            break
        if not run.tally.backlog and run.tally.next_due is None:
            finished = "clear"
            break
        if run.tally.backlog and not run.tally.deleted:  # --max-deletions 0: no round can help
            finished = "backlog left: this round deleted nothing (--max-deletions)"
            break
        if run.tally.backlog:
            pause = 0.0
        else:
            assert run.tally.next_due is not None
            # From the hub's time now (its clock went on through the round). The Date header
            # counts whole seconds: a second more, so the mark is surely due.
            pause = max((run.tally.next_due - run.now).total_seconds(), 0.0) + DRAIN_MARGIN
        left = budget.remaining()
        if left is not None and pause + DRAIN_MARGIN >= left:
            finished = "deadline"
            run.tally.codes.add(ExitCode.STOPPED)
            log.warning(
                "drain: %d orphans waiting and %d past the cap when --timeout comes: left to "
                "the CronJob's runs",
                run.tally.waiting,
                run.tally.backlog,
            )
            break
        log.info(
            "drain round %d: %d waiting, %d past the drain cap; sleeping %.1fs",
            rounds,
            run.tally.waiting,
            run.tally.backlog,
            pause,
        )
        waited = time.monotonic()
        if run.events is not None:  # the round's Events, in the time it waits anyway
            run.events.send(pause)
        budget.sleep(max(pause - (time.monotonic() - waited), 0.0))
        slept += time.monotonic() - waited
        stop = budget.stop_reason()
        if stop is not None:
            finished = f"stopped: {stop}"
            run.tally.codes.add(ExitCode.STOPPED)
            break
        # A fresh answer: its Date is the round's time.
        check_hub(run.hub, served(run.settings.sweeps))
        clock = _round_clock(run, access)  # read at once: the renew's time counts on it
        if lock is not None:
            lock.renew(datetime.now(UTC))
        run.next_round(clock)
        _renew_read_budgets(run)
        execute(run, projects)
        rounds += 1
    run.tally.drain = {
        "rounds": rounds,
        "slept_seconds": round(slept, 3),
        "waiting": run.tally.waiting,
        "backlog": run.tally.backlog,
        "finished": finished,
    }
    log.info("drain: %s after %d rounds", finished, rounds)


def _renew_read_budgets(run: Run) -> None:
    """Each round of --drain reads every upstream again, as a run does, and the Project API
    for the projects no earlier round asked about (a project answered keeps its answer for
    the run): each has its read budget again (a budget spent over the rounds would fail the
    Nth round's reads, and end the drain, on no fault of the cluster)."""
    if isinstance(run.upstreams, LiveUpstreams):
        run.upstreams.renew_budgets()
    if isinstance(run.projects, KubeAccess):
        run.projects.renew_budget()


def _finish(run: Run, error: str) -> tuple[ExitCode, dict[str, Any]]:
    """The report's end and its summary, the error on stderr: the exit code and the summary."""
    error = redact(error)
    code = run.exit_code()
    upstream_records = run.upstream_records()  # made as they are written, stamped now
    summary = run.summary(code, error)
    try:
        run.reporter.finish(upstream_records, summary)
    except OSError as exc:  # the report file could not be written after all
        run.tally.codes.add(ExitCode.ITEM_FAILED)
        code = run.exit_code()
        error = redact("; ".join(filter(None, [error, f"cannot write --report-file: {exc}"])))
        summary = run.summary(code, error)
        run.reporter.print_summary(run.upstream_records(), summary)
    if error:
        click.echo(f"gcjob: error: {visible(error)}", err=True)
    return code, summary


def _publish(
    settings: Settings,
    summary: dict[str, Any],
    notable: list[dict[str, Any]],
    started: float,
    lock_held_for: timedelta,
) -> None:
    """After the report, and never changing the exit code: each only warns when it fails."""
    if settings.pushgateway:
        metrics.push(
            settings.pushgateway,
            summary,
            duration=time.monotonic() - started,
            finished=time.time(),
            lock_held_seconds=lock_held_for.total_seconds(),
        )
    if settings.notify_webhook:
        webhook.notify(settings.notify_webhook, summary, notable)


def run_explain(settings: Settings, target: Target, output: str) -> int:
    """One run of `gcjob explain`: the sweep's sources and hub check, one object traced,
    printed; read-only (no lock, no writes, nothing published)."""
    logs.setup("text")
    budget = RunBudget(settings.timeout.total_seconds())
    try:
        sources = open_sources(settings, budget, RequestStats())
        if upstream_required((target.sweep,)) and sources.upstreams is None:
            what = f"explaining an {target.kind.lower()} needs its upstream"
            raise ConfigError(
                f"{what}: add DIR/upstream/<cluster>/ dumps to the snapshot"
                if settings.snapshot
                else f"{what}: pass --upstream-kubeconfig"
            )
        explainer = Explainer(
            sources.hub,
            sources.upstreams,
            sources.clock,
            settings.min_age,
            scope=Scope(settings.namespaces, frozenset(settings.exclude_namespaces)),
            suspect_min_routes=settings.suspect_min_routes,
            grace=settings.grace,
            settings=settings,
            projects=sources.projects,
            is_project=sources.is_project,
        )
        access = sources.access

        def checked(hub: Reader) -> str:
            """The sweep's own hub check, as the trace's first step; then the hub's clock."""
            seen = check_hub(hub, served(settings.sweeps))
            if access is not None:
                clock = explainer.clock = _read_hub_clock(settings, access)
                if clock.problem:
                    log.warning("%s: explaining by the pod's clock", clock.problem)
            choose_list_strategy(settings, access)
            return seen

        explanation = explainer.explain(target, checked)
    except (ConfigError, NotAHub) as exc:
        return _fail(ExitCode.USAGE, str(exc))
    except Exception as exc:  # the object's content (or a bug) must not end in a traceback
        return _fail(
            ExitCode.INCOMPLETE,
            f"cannot explain {target}: internal error on this object: {error_line(exc)}",
        )
    text = (
        render_json(explanation)
        if output == "json"
        else render_text(explanation, bold=sys.stdout.isatty())
    )
    try:
        click.echo(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `gcjob explain ... | head -1`: the reader left first
        silence(sys.stdout)
        return _fail(ExitCode.STOPPED, "stdout closed before the explanation was written out")
    return int(ExitCode.OK if explanation.known else ExitCode.INCOMPLETE)


def _record_lines(file: TextIO, source: str) -> Iterator[str]:
    """The lines of an open record, each read at most undo.MAX_LINE characters at a time: raises
    undo.RecordError on a longer one."""
    for number in itertools.count(1):
        text = file.readline(undo.MAX_LINE + 1)
        if not text:
            return
        if len(text) > undo.MAX_LINE:
            raise undo.RecordError(f"{source}:{number}: a line longer than gcjob ever writes")
        yield text


def run_restore(
    settings: Settings,
    record_file: str,
    targets: tuple[restore.RestoreTarget, ...],
    *,
    apply: bool,
    protect: bool,
    other_hub: bool = False,
    output: str = "text",
) -> int:
    """One run of `gcjob restore`: the record read, the objects chosen, each put back (or,
    without `apply`, what would be), on stdout: a line (or, `output` json, a JSON line) for
    each and a summary line."""
    logs.setup("text")
    try:
        with open(record_file, encoding="utf-8") as lines:
            recorded = undo.read_record(_record_lines(lines, record_file), record_file)
        chosen = restore.select(recorded, targets)
    except OSError as exc:
        return _fail(ExitCode.USAGE, f"cannot read {record_file}: {exc.strerror or exc}")
    except UnicodeDecodeError:
        return _fail(ExitCode.USAGE, f"cannot read {record_file}: not UTF-8 text")
    except ValueError as exc:  # RecordError included
        return _fail(ExitCode.USAGE, str(exc))
    budget = RunBudget(settings.timeout.total_seconds())
    try:
        sources = open_sources(settings, budget, RequestStats())
    except ConfigError as exc:
        return _fail(ExitCode.USAGE, str(exc))
    assert sources.access is not None, "restore reads no snapshot"
    results, code = restore.restore(
        sources.access,
        chosen,
        apply=apply,
        protect=protect,
        other_hub=other_hub,
        named=bool(targets),
    )
    if apply and settings.events:
        # An Event on what it put back, as a delete posts one (issue 51 item 13), after the
        # creates, best effort (the restore identity: cronjobs/rbac/hub-restore).
        events = Events(sources.access, str(uuid.uuid4()))
        for result in results:
            if result.action == restore.RESTORED and result.regarding is not None:
                events.note_restored(result.regarding, result.uid, datetime.now(UTC))
        events.finish()
    if output == "text":
        for result in results:
            for line in result.as_text():
                click.echo(line)
        click.echo(restore.summary_text(results, record_file, apply))
        return int(code)
    for result in results:
        click.echo(json.dumps(result.as_json(), ensure_ascii=True, sort_keys=True))
    counts: dict[str, int] = {}
    for result in results:
        counts[result.action] = counts.get(result.action, 0) + 1
    summary = {"summary": {"record": record_file, "applied": apply, "counts": counts}}
    click.echo(json.dumps(summary, ensure_ascii=True, sort_keys=True))
    return int(code)


@dataclass
class Sources:
    """Where a run reads from: a live hub (and upstreams), or a snapshot."""

    access: KubeAccess | None  # the live hub, when there is one: deletes go through it
    hub: Reader
    clock: HubClock  # a live hub's until its check reads the hub's (_read_hub_clock)
    upstreams: SnapshotUpstreams | LiveUpstreams | None
    make_access: Callable[..., KubeAccess]
    snapshot_hub: SnapshotStore | None = None
    projects: Reader | None = None  # Milo's Project API (a snapshot's dump of it)
    is_project: Callable[[str], bool] = never_a_project


# The groups gcjob asks an upstream's discovery about: those of the kinds NSO copies (the
# copies sweep's owners) and the Gateway API (the routes sweep's), the core group apart.
UPSTREAM_GROUPS = frozenset(group for group, _ in REPLICATED_KINDS if group) | {GATEWAY_GROUP}


def open_sources(settings: Settings, budget: RunBudget, stats: RequestStats) -> Sources:
    """The hub and upstreams the settings name. Raises ConfigError."""
    # Every proxy a request may go through (the webhook's and the Pushgateway's too), its
    # password redacted by value before anything is sent; a kubeconfig's `proxy-url` is kept
    # when its client is made (connect.keep_credentials).
    environment = proxy_env(os.environ)
    keep_proxy_credentials(environment.http, environment.https)
    # Only the hub's lists get --list-timeout: a whole large collection is the one answer
    # that can rightly take long. An upstream's Gateway lists are small, and a black-holed
    # upstream must be given up on after --read-timeout.
    connect, read = settings.connect_timeout.total_seconds(), settings.read_timeout.total_seconds()
    hub_timeouts = Timeouts(connect, read, settings.list_timeout.total_seconds())
    upstream_timeouts = Timeouts(connect, read)

    def make_access(
        client: Any,
        target: str,
        run_budget: RunBudget = budget,
        retry: RetryPolicy = HUB_RETRY,
        timeouts: Timeouts = hub_timeouts,
    ) -> KubeAccess:
        transport = Transport(
            client, target, stats=stats, budget=run_budget, timeouts=timeouts, retry=retry
        )
        # The hub's lists read from the cache until the run has chosen (choose_list_strategy).
        return KubeAccess(
            transport, settings.page_size, list_from_cache=settings.list_from != "pages"
        )

    limits = ReadLimits(
        pages=settings.upstream_max_pages,
        items=settings.upstream_max_items,
        bytes=settings.upstream_max_mib * 1024 * 1024,
        seconds=settings.upstream_max_time.total_seconds(),
    )

    # The run's own: upstream clusters' discovery documents shared by verified ETag, never
    # kept past this run.
    documents = SharedDocuments()

    def make_upstream_access(
        upstream: UpstreamClient, cluster: str, shared: Shared | None = None
    ) -> KubeAccess:
        """Each upstream cluster on its own read budget: a hostile or broken one runs out of
        it and is unavailable; the others go on. `shared`: the budget, discovery and count of
        requests of the cluster's earlier readers (kube/upstreams.py)."""
        read_budget = ReadBudget(limits, cluster) if shared is None else shared.budget
        transport = Transport(
            upstream.client,
            read_budget.target,  # made for this reader: not kept for the run
            server=upstream.server,
            stats=stats,
            budget=budget,
            timeouts=upstream_timeouts,
            retry=UPSTREAM_RETRY,
            max_body_bytes=limits.value,
            keeps_date=False,  # the run's clock is the hub's
            counts=shared,
        )
        return KubeAccess(
            transport,
            settings.page_size,
            # An upstream's lists are small and its version is not asked (a request more per
            # cluster): read from the cache, one request a list, unless pages are forced.
            list_from_cache=settings.list_from != "pages",
            budget=read_budget,
            max_value_chars=limits.value,
            # Two requests tell what a cluster serves, however many groups are asked about.
            aggregated_discovery=True,
            discovery_groups=UPSTREAM_GROUPS,
            discovered=None if shared is None else shared.discovered,
            documents=documents,
        )

    if settings.snapshot:
        snapshot = Snapshot(settings.snapshot)
        upstreams = SnapshotUpstreams(snapshot.upstreams) if snapshot.upstreams else None
        clock = HubClock(settings.now or snapshot.captured_at or datetime.now(UTC))
        clusters = snapshot.project_clusters
        return Sources(
            None,
            snapshot.hub,
            clock,
            upstreams,
            make_access,
            snapshot.hub,
            snapshot.projects,
            clusters.__contains__ if snapshot.projects is not None else never_a_project,
        )
    # In flight at once: each hub reader's list and the page it asks ahead, the run's own.
    connections = 2 * settings.hub_concurrency + 2
    client = hub_client(
        settings.hub_kubeconfig, settings.hub_context, budget.remaining(), connections
    )
    access = make_access(client, "hub")
    live: LiveUpstreams | None = None
    projects: KubeAccess | None = None
    is_project: Callable[[str], bool] = never_a_project
    if settings.upstream_kubeconfig or settings.upstream_server_template:
        resolver = UpstreamResolver(settings.upstream_kubeconfig, settings.upstream_server_template)
        live = LiveUpstreams(resolver, make_upstream_access, limits)
        api = settings.project_api or project_api_from_template(settings.upstream_server_template)
        if api is not None and resolver.server_template:
            # Counted with the upstreams; no cluster can be named with parentheses.
            projects = make_upstream_access(resolver.project_api_client(api), "(project api)")
            is_project = resolver.is_project
    clock = HubClock(settings.now or datetime.now(UTC))
    return Sources(access, access, clock, live, make_access, None, projects, is_project)


def choose_list_strategy(settings: Settings, access: KubeAccess | None) -> Choice | None:
    """How the hub's lists are read this run, chosen once, after the hub check: under
    --list-from auto from the hub's `/version` (one GET). The report's summary names it
    (list_strategy). None for a snapshot: no server."""
    if access is None:
        return None
    answer = access.server_version() if settings.list_from == "auto" else None
    choice = choose(settings.list_from, answer)
    access.list_from_cache = choice.strategy is ListStrategy.CACHE
    return choice


def _check_writable(path: str) -> None:
    """A report that cannot be written is found out before anything is touched."""
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise ConfigError(f"--report-file {path}: {exc.strerror or exc}") from exc


def _fail(code: ExitCode, message: str) -> int:
    click.echo(f"gcjob: error: {visible(redact(message))}", err=True)
    return int(code)
