"""The sweeps, one folder each (judge, scan, act, sweep, explain), and their order: each
folder's sweep.py declares the sweep, and one driver (driver.py) runs every one. What one
sweep needs of another, and what two sweeps read once between them (Milo's Project API), is
handed on here, never left on the Run."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any, TypeVar

from gcjob.decide.explanation import Conclusion, Explanation, Target
from gcjob.decide.trace import Trace
from gcjob.enumerate.keyset import KeySet
from gcjob.enumerate.owners import ProjectReads
from gcjob.enumerate.parallel import Reads, result_of
from gcjob.enumerate.shared import Found
from gcjob.exitcodes import ExitCode
from gcjob.kube.errors import KubeError
from gcjob.logs import log
from gcjob.model import Binding, Sweep, Verdict
from gcjob.reasons import Reason
from gcjob.run import Run, SweepState
from gcjob.sweeps.bindings import explain as bindings_explain
from gcjob.sweeps.bindings import sweep as bindings
from gcjob.sweeps.companions import explain as companions_explain
from gcjob.sweeps.companions import sweep as companions
from gcjob.sweeps.companions.scan import scan_companion_keys
from gcjob.sweeps.companions.sweep import CompanionsSwept
from gcjob.sweeps.copies import explain as copies_explain
from gcjob.sweeps.copies import sweep as copies
from gcjob.sweeps.copies.scan import Discovering
from gcjob.sweeps.driver import Declaration, Named, RoundProjects, drive
from gcjob.sweeps.explaining import ExplainContext
from gcjob.sweeps.routes import explain as routes_explain
from gcjob.sweeps.routes import sweep as routes
from gcjob.sweeps.routes.sweep import UpstreamRead

NOT_SWEPT = CompanionsSwept(None, frozenset())
R = TypeVar("R")

# Every sweep's declaration, in order: what `execute` drives (`declare`), and what the tests
# of the rules every sweep obeys iterate (tests/sweeps/test_every_sweep.py): declaring a sweep
# here adds it to them.
DECLARED: tuple[type[Declaration[Any, Any]], ...] = (
    companions.Companions,
    bindings.Bindings,
    routes.Routes,
    copies.Copies,
)


def execute(run: Run, projects: ProjectReads | None = None) -> None:
    """Every requested sweep, companions first: their bindings go with them. Reads that
    depend on nothing run at once: the routes sweep's (hub routes, then every upstream
    cluster) and, beside them, the copies sweep's (its first read of the hub, then its owners
    upstream) start before the first sweep and go on beside the others; each sweep's own
    collections are read at once too. Deciding, acting and reporting stay in this thread,
    in sweep order, whatever order the answers came in (gcjob/sweeps/driver.py `drive`)."""
    for sweep in Sweep:
        if sweep in run.settings.sweeps and (sweep is not Sweep.COPIES or copies_possible(run)):
            run.tally.sweeps[sweep] = SweepState()
    run.hub_reads = Reads(run.settings.hub_concurrency, "hub")
    run.upstream_reads = Reads(run.settings.upstream_concurrency, "upstream")
    # The routes' and the copies' reads ahead: not hub or upstream workers, they may wait on
    # those pools.
    ahead = Reads(2, "ahead")
    upstream: Future[UpstreamRead] | None = None
    owners: Future[copies.OwnersRead] | None = None
    # Milo's Project API, listed once for the routes and copies sweeps alike, at start
    # (`projects`, the run's: every round of --drain reads its answers).
    project_reads = projects or ProjectReads(run.projects, run.is_project)
    # The Gateways the routes sweep finds upstream, not read again by the copies sweep.
    found = Found() if {Sweep.ROUTES, Sweep.COPIES} <= run.tally.sweeps.keys() else None
    first: companions.Companions | None = None  # what the bindings sweep is handed

    def declare(sweep: Sweep) -> Declaration[Any, Any]:
        """The sweep, declared by its folder (one of DECLARED), with what it is handed."""
        declared = handed(sweep)
        assert type(declared) in DECLARED and declared.sweep is sweep
        return declared

    def handed(sweep: Sweep) -> Declaration[Any, Any]:
        nonlocal first
        if sweep is Sweep.COMPANIONS:
            first = companions.Companions(run)
            return first
        if sweep is Sweep.BINDINGS:
            swept = first.swept() if first is not None else NOT_SWEPT
            return bindings.Bindings(run, companion_keys(run, swept), swept.bindings_reported)
        if sweep is Sweep.ROUTES:
            return routes.Routes(run, round_projects, upstream)
        return copies.Copies(run, round_projects, found, owners)

    try:
        if Sweep.ROUTES in run.tally.sweeps and run.upstreams is not None:
            upstream = ahead.start(lambda: routes.read(run, found))
            if Sweep.COPIES in run.tally.sweeps:
                # The copies' first read and owners beside the routes' upstream reads, so the
                # upstream readers never wait between the two sweeps; their owners are read
                # once the routes' Gateways are (enumerate/shared.py), none of them twice.
                owners = ahead.start(partial(copies.read, run, found, upstream.done))
        # The projects every sweep of the round names, judged once before any acts on one.
        round_projects = RoundProjects(run, project_reads, named_ahead(upstream, owners))
        for sweep, state in run.tally.sweeps.items():
            stop = run.budget.stop_reason()
            if stop is not None:
                state.status, state.detail = "stopped", stop
                run.tally.codes.add(ExitCode.STOPPED)
                continue
            run.reporter.progress(f"{sweep.value}: sweeping")
            drive(run, declare(sweep))
            if sweep is Sweep.ROUTES:
                # What its upstream reads found is not needed past it (the index stays on the
                # run, each cluster's state, for the summary): the copies sweep's second read
                # can use the room.
                upstream = None
                if run.upstream_index is not None:
                    run.upstream_index.lookups_done()
    finally:
        for reads in (ahead, run.upstream_reads, run.hub_reads):
            reads.close()
    if ExitCode.STOPPED in run.tally.codes:
        log.warning("run stopped: %s", run.budget.stop_reason())


def named_ahead(
    upstream: Future[routes.UpstreamRead] | None, owners: Future[copies.OwnersRead] | None
) -> list[Callable[[], Named | None]]:
    """What the reads started ahead name of projects, each waited for when first asked (None:
    its read failed or stopped, and its sweep judges none)."""
    sources: list[Callable[[], Named | None]] = []
    if upstream is not None:
        sources.append(partial(_named, upstream, routes.named, "the routes' upstream read"))
    if owners is not None:
        sources.append(partial(_named, owners, copies.named, "the copies' owners read ahead"))
    return sources


def _named(future: Future[R], named: Callable[[R], Named | None], what: str) -> Named | None:
    try:
        return named(result_of(future, what))
    except Exception:  # its own sweep raises it when it reads the same future: it acts on none
        return None


def copies_possible(run: Run) -> bool:
    """The copies sweep needs the hub's discovery, which a snapshot does not hold: run by
    default only where the hub answers it; asked for by name, it says why it did not run."""
    return run.settings.sweeps_explicit or (
        isinstance(run.hub, Discovering) and not run.settings.snapshot
    )


def companion_keys(run: Run, swept: CompanionsSwept) -> KeySet:
    """The labelled companions the bindings sweep checks bindings against: the companions
    sweep's, or read for the bindings sweep when that sweep did not read them all."""
    if swept.keys is not None:
        return swept.keys
    try:
        return scan_companion_keys(run.hub, run.scope, run.hub_reads)
    except KubeError:
        return KeySet().freeze()  # every candidate is then confirmed by its own read


# What the copies sweep says of an object that is none of its own.
NOT_THE_COPIES_SWEEPS = frozenset({Reason.OUT_OF_SCOPE, Reason.NOT_A_COPY, Reason.LABELS_MISSING})


def explain(ctx: ExplainContext, target: Target, out: Explanation, trace: Trace) -> Verdict | None:
    """One object as this run's sweeps would judge it, in their order: the companions sweep
    acts on a companion's binding before the bindings sweep sees it. Each sweep's explain
    part files its steps and conclusions in `out`; the verdict, for explain's driver."""
    if target.sweep is Sweep.COMPANIONS:

        def bindings_sweep(binding: Binding, subject: str, steps: Trace) -> Conclusion:
            return bindings_explain.after_companion(ctx, binding, subject, steps)

        verdict = companions_explain.explain(ctx, target, out, trace, bindings_sweep)
        if verdict is None or verdict.reason != Reason.OUT_OF_SCOPE:
            return verdict
        # Not a companion: a ConfigMap or Secret may be a copy NSO made, or an anchor.
        copied = Explanation(out.target, out.source, out.decided_at, out.min_age)
        try:
            as_copy = copies_explain.explain(ctx, target, copied, Trace())
        except KubeError:
            return verdict  # what it is for the companions sweep stands; nothing more known
        if as_copy is None or as_copy.reason in NOT_THE_COPIES_SWEEPS:
            return verdict
        out.steps, out.verdict, out.binding = copied.steps, copied.verdict, None
        out.judged_by = Sweep.COPIES
        return as_copy
    if target.sweep is Sweep.BINDINGS:

        def companions_sweep(binding: Binding, steps: Trace) -> Conclusion | None:
            return companions_explain.binding_of_companion(ctx, binding, steps)

        return bindings_explain.explain(ctx, target, out, trace, companions_sweep)
    if target.sweep is Sweep.COPIES:
        return copies_explain.explain(ctx, target, out, trace)
    return routes_explain.explain(ctx, target, out, trace)
