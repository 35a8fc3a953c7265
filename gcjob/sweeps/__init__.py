"""The sweeps, one folder each (judge, scan, act, sweep, explain), each declared once in its
folder's `__init__.py` (`REGISTERED`, gcjob/sweeps/registry.py), and their order (`REGISTRY`):
one driver (driver.py) runs every one. What one sweep needs of another, and what two sweeps read
once between them (Milo's Project API, the Gateways found upstream), a round provides
(registry.py `Round`), handed on here, never left on the Run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from gcjob.decide.explanation import Conclusion, Explanation, Target
from gcjob.decide.projects import ProjectCalls, ProjectJudgement
from gcjob.decide.trace import Trace
from gcjob.enumerate.keyset import KeySet
from gcjob.enumerate.owners import ProjectReads
from gcjob.enumerate.parallel import Reads, result_of
from gcjob.enumerate.shared import Found
from gcjob.exitcodes import ExitCode
from gcjob.kube.errors import KubeError
from gcjob.kube.resources import Resource
from gcjob.logs import log
from gcjob.model import Binding, Sweep, Verdict
from gcjob.preflight import Needs
from gcjob.reasons import Reason
from gcjob.run import Run, SweepState
from gcjob.sweeps import bindings, companions, copies, namespaces, routes
from gcjob.sweeps.bindings import explain as bindings_explain
from gcjob.sweeps.companions import explain as companions_explain
from gcjob.sweeps.companions.scan import scan_companion_keys
from gcjob.sweeps.companions.sweep import Companions
from gcjob.sweeps.copies import explain as copies_explain
from gcjob.sweeps.driver import Declaration, Named, RoundProjects, drive
from gcjob.sweeps.explaining import ANSWERS_USED, ExplainContext
from gcjob.sweeps.registry import Handed, Registered, Round, Shared

R = TypeVar("R")

# Every sweep, in run order, each declared once by its folder: what `execute` drives, what
# `explain` asks, what the preflight, the sweep choices, the report schema, the docs and the
# RBAC are derived from or held to (tests/sweeps/test_registry.py), and what the tests of the
# rules every sweep obeys iterate (tests/sweeps/test_every_sweep.py). Adding a sweep is its
# folder and its line here.
REGISTRY: tuple[Registered, ...] = (
    companions.REGISTERED,
    bindings.REGISTERED,
    routes.REGISTERED,
    copies.REGISTERED,
    namespaces.REGISTERED,
)
REGISTERED: Mapping[Sweep, Registered] = {r.name: r for r in REGISTRY}
DECLARED: tuple[type[Declaration[Any, Any]], ...] = tuple(r.declaration for r in REGISTRY)
# What the preflight asks of the hub identity for each sweep (the copies sweep asks for
# its own, once it knows which kinds the hub serves).
PREFLIGHT: Mapping[Sweep, Needs] = {r.name: r.needs for r in REGISTRY if not r.asks_itself}
# What it asks besides for each sweep a --delete run enforces (a report-only sweep's deletes).
ENFORCING: Mapping[Sweep, Needs] = {
    r.name: r.enforcing for r in REGISTRY if not r.asks_itself and r.enforcing
}


def served(sweeps: tuple[Sweep, ...]) -> list[Resource]:
    """What the hub must serve for these sweeps besides a Karmada hub's bindings."""
    return [resource for sweep in sweeps for resource in REGISTERED[sweep].served]


def upstream_required(sweeps: tuple[Sweep, ...]) -> Sweep | None:
    """The first of these sweeps that cannot run without an upstream (None: none)."""
    return next((sweep for sweep in sweeps if REGISTERED[sweep].upstream_required), None)


def reads_projects(sweeps: tuple[Sweep, ...]) -> bool:
    """Whether a sweep of these rests on Milo's Project API (its list is read at start)."""
    return any(Shared.PROJECTS in REGISTERED[sweep].reads for sweep in sweeps)


def execute(run: Run, projects: ProjectReads | None = None) -> None:
    """Every requested sweep, in the registry's order. Reads that depend on nothing run at
    once: each sweep's read ahead (the routes sweep's hub routes and upstream clusters, and
    beside them the copies sweep's first read of the hub and its owners upstream) starts
    before the first sweep and goes on beside the others; each sweep's own collections are
    read at once too. Deciding, acting and reporting stay in this thread, in sweep order,
    whatever order the answers came in (gcjob/sweeps/driver.py `drive`)."""
    swept = tuple(r for r in REGISTRY if r.name in run.settings.sweeps and r.runs(run))
    for registered in swept:
        run.tally.sweeps[registered.name] = SweepState()
    run.hub_reads = Reads(run.settings.hub_concurrency, "hub")
    run.upstream_reads = Reads(run.settings.upstream_concurrency, "upstream")
    # The reads ahead: not hub or upstream workers, they may wait on those pools.
    ahead = Reads(2, "ahead")
    round = Round(run, swept, found=_found(swept))
    # Milo's Project API, listed once for every sweep that rests on it, at start (`projects`,
    # the run's: every round of --drain reads its answers).
    project_reads = projects or ProjectReads(run.projects, run.is_project)
    drove: dict[Sweep, Declaration[Any, Any]] = {}
    round.handed = partial(_handed, run, drove)
    try:
        for registered in swept:
            started = registered.ahead(run, round) if registered.ahead is not None else None
            if started is not None:
                round.ahead[registered.name] = ahead.start(started)
        # The projects every sweep of the round names, judged once before any acts on one.
        round.projects = RoundProjects(run, project_reads, named_ahead(round))
        for registered in swept:
            sweep, state = registered.name, run.tally.sweeps[registered.name]
            stop = run.budget.stop_reason()
            if stop is not None:
                state.status, state.detail = "stopped", stop
                run.tally.codes.add(ExitCode.STOPPED)
                continue
            run.reporter.progress(f"{sweep.value}: sweeping")
            declared = registered.declare(run, round)
            assert type(declared) is registered.declaration and declared.sweep is sweep
            drive(run, declared)
            if Shared.HANDED in registered.provides:
                drove[sweep] = declared  # what it hands on, asked for by a later sweep
            del declared  # nothing else of it is held past its drive
            if registered.done is not None:
                # Its read ahead is not needed past it: the later sweeps can use the room.
                round.ahead.pop(sweep, None)
                registered.done(run)
    finally:
        for reads in (ahead, run.upstream_reads, run.hub_reads):
            reads.close()
    if ExitCode.STOPPED in run.tally.codes:
        log.warning("run stopped: %s", run.budget.stop_reason())


def _found(swept: tuple[Registered, ...]) -> Found | None:
    """Where the Gateways one sweep finds are kept for another, when both run this round."""
    provided = any(Shared.GATEWAYS in r.provides for r in swept)
    read = any(Shared.GATEWAYS in r.reads for r in swept)
    return Found() if provided and read else None


def named_ahead(round: Round) -> list[Callable[[], Named | None]]:
    """What the reads started ahead name of projects, each waited for when first asked (None:
    its read failed or stopped, and its sweep judges none)."""
    sources: list[Callable[[], Named | None]] = []
    for registered in round.registered:
        future = round.ahead.get(registered.name)
        if future is not None and registered.named is not None:
            what = f"the {registered.name.value} sweep's read ahead"
            sources.append(partial(_named, future, registered.named, what))
    return sources


def _named(future: Future[R], named: Callable[[R], Named | None], what: str) -> Named | None:
    try:
        return named(result_of(future, what))
    except Exception:  # its own sweep raises it when it reads the same future: it acts on none
        return None


def _handed(run: Run, drove: Mapping[Sweep, Declaration[Any, Any]]) -> Handed:
    """What the companions sweep hands the bindings sweep: the labelled companions it read
    (or, when it did not read them all, read for the bindings sweep) and the bindings it
    reported with them."""
    first = drove.get(companions.REGISTERED.name)
    swept = first.swept() if isinstance(first, Companions) else None
    if swept is not None and swept.keys is not None:
        return Handed(swept.keys, swept.bindings_reported)
    reported = swept.bindings_reported if swept is not None else frozenset()
    try:
        keys = scan_companion_keys(run.hub, run.scope, run.hub_reads)
    except KubeError:
        keys = KeySet().freeze()  # every candidate is then confirmed by its own read
    return Handed(keys, reported)


# What the copies sweep says of an object that is none of its own.
NOT_THE_COPIES_SWEEPS = frozenset({Reason.OUT_OF_SCOPE, Reason.NOT_A_COPY, Reason.LABELS_MISSING})


@dataclass(frozen=True)
class ExplainJudges:
    """What `gcjob explain` judges projects through (driver.py `Judges`): a judgement of its
    own, under the run's --max-projects-gone, and which clusters are projects."""

    projects_judged: ProjectJudgement
    is_project: Callable[[str], bool]


class Handing:
    """What one sweep's part of `gcjob explain` is handed of another's (registry.py `Hand`)."""

    def __init__(self, ctx: ExplainContext) -> None:
        self.ctx = ctx
        self._projects: RoundProjects | None = None

    def project_calls(self, sweep: Sweep, named: Named) -> ProjectCalls:
        """The round's one judgement of projects (driver.py `RoundProjects`), as a run of
        every sweep makes it (explain takes no --sweep): over what every other sweep that
        rests on a project names, each read when first needed, its reads filed under
        `answers-used`."""
        ctx = self.ctx
        if self._projects is None:
            sources = [
                partial(_explain_named, registered, ctx)
                for registered in REGISTRY
                if registered.name != sweep and Shared.PROJECTS in registered.reads
            ]
            judges = ExplainJudges(ProjectJudgement(ctx.max_projects_gone), ctx.is_project)
            self._projects = RoundProjects(judges, ctx.project_reads(), sources)
        return self._projects.calls(named)

    def binding_after_companion(self, binding: Binding, subject: str, steps: Trace) -> Conclusion:
        return bindings_explain.after_companion(self.ctx, binding, subject, steps)

    def binding_of_companion(self, binding: Binding, steps: Trace) -> Conclusion | None:
        return companions_explain.binding_of_companion(self.ctx, binding, steps)

    def as_copy(self, target: Target, out: Explanation) -> Verdict | None:
        copied = Explanation(out.target, out.source, out.decided_at, out.min_age)
        try:
            as_copy = copies_explain.explain(self.ctx, target, copied, Trace(), self)
        except KubeError:
            return None  # what it is for the companions sweep stands; nothing more known
        if as_copy is None or as_copy.reason in NOT_THE_COPIES_SWEEPS:
            return None
        # The hub's check stays first: the copies sweep's judgement rests on it as the
        # companions sweep's does (a run checks the hub before any sweep).
        checked = [step for step in out.steps if step.step.rule == "karmada-hub"]
        out.steps, out.verdict, out.binding = [*checked, *copied.steps], copied.verdict, None
        out.judged_by = copies.REGISTERED.name
        return as_copy


def _explain_named(registered: Registered, ctx: ExplainContext) -> Named | None:
    """What a sweep's objects name of projects, read as its run's read ahead reads them
    (None: none, or its reads failed: as in a run, that sweep then names none)."""
    if registered.explain_named is None:
        return None
    ctx.reads_for(ANSWERS_USED)
    try:
        return registered.explain_named(ctx)
    except KubeError:
        return None


def explain(ctx: ExplainContext, target: Target, out: Explanation, trace: Trace) -> Verdict | None:
    """One object as this run's sweeps would judge it: the sweep its kind names (a KeyError
    for a sweep not registered), handed what it needs of the others. Each sweep's explain
    part files its steps and conclusions in `out`; the verdict, for explain's driver."""
    return REGISTERED[target.sweep].explain(ctx, target, out, trace, Handing(ctx))
