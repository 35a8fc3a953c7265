"""One run: check the hub, take the lock, then each sweep enumerate -> decide -> act -> report."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gcjob import __version__
from gcjob.act.bindings import delete_binding
from gcjob.act.brake import BrakeLimits, brake_reason
from gcjob.act.companions import delete_companion
from gcjob.act.deleter import Deleter
from gcjob.act.routes import delete_route
from gcjob.budget import RunBudget
from gcjob.decide.bindings import Presence, bound_target, decide_binding
from gcjob.decide.companions import decide_companion
from gcjob.decide.routes import ClusterStatus, RouteTarget, decide_route, in_scope, route_target
from gcjob.enumerate.hub import read_bindings, read_companions, read_routes, read_workload_index
from gcjob.enumerate.scope import Scope
from gcjob.enumerate.upstream import UpstreamIndex, UpstreamSource
from gcjob.exitcodes import DESCRIPTIONS, ExitCode, most_severe
from gcjob.kube import reduce
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.reader import Reader
from gcjob.kube.resources import (
    COMPANION_RESOURCES,
    HTTPROUTES,
    RESOURCEBINDINGS,
    WORKLOADDEPLOYMENTS,
)
from gcjob.kube.transport import RequestStats
from gcjob.logs import log
from gcjob.model import Action, Companion, Outcome, Sweep, Verdict
from gcjob.report.emitter import Reporter
from gcjob.report.records import rfc3339
from gcjob.settings import Settings

# Skips that mean something went wrong, not that a rule held the object back.
ERROR_REASONS = frozenset({"lookup-failed", "upstream-unavailable"})


class NotAHub(Exception):
    """The target does not serve the hub's APIs: refuse before touching anything."""


def check_hub(hub: Reader, sweeps: Iterable[Sweep]) -> None:
    """Raises NotAHub, or KubeError when the hub cannot be asked."""
    required = [RESOURCEBINDINGS]
    if Sweep.COMPANIONS in sweeps:
        required.append(WORKLOADDEPLOYMENTS)
    for resource in required:
        if not hub.served(resource):
            raise NotAHub(
                f"{hub.server} is not a Karmada hub: it does not serve "
                f"{resource.api_version} {resource.plural}"
            )


@dataclass
class SweepState:
    status: str = "not-run"
    detail: str = ""
    scanned: int = 0
    in_scope: int = 0


@dataclass
class Run:
    settings: Settings
    hub: Reader
    deleter: Deleter
    reporter: Reporter
    budget: RunBudget
    stats: RequestStats
    now: datetime
    upstreams: UpstreamSource | None
    run_id: str
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    codes: set[ExitCode] = field(default_factory=set)
    sweeps: dict[Sweep, SweepState] = field(default_factory=dict)
    deleted: int = 0  # deletions this run, for --max-deletions (a companion + binding: one)
    acted_on: set[str] = field(default_factory=set)  # uids already reported this run
    upstream_index: UpstreamIndex | None = None
    _companions: list[Companion] | None = None

    @property
    def scope(self) -> Scope:
        return Scope(self.settings.namespaces, frozenset(self.settings.exclude_namespaces))

    @property
    def limits(self) -> BrakeLimits:
        s = self.settings
        return BrakeLimits(s.max_deletions, s.max_delete_percent, s.brake_min_objects)

    # -- reporting ---------------------------------------------------------------------

    def record(self, outcome: Outcome) -> None:
        self.reporter.outcome(outcome, self.now)
        if outcome.ref.uid:
            self.acted_on.add(outcome.ref.uid)
        if outcome.action is Action.FAILED or outcome.reason in ERROR_REASONS:
            self.codes.add(ExitCode.ITEM_FAILED)
        if outcome.reason == "stopped":
            self.codes.add(ExitCode.STOPPED)

    def keep(self, sweep: Sweep, verdict: Verdict) -> None:
        self.record(Outcome.of(sweep, verdict, Action.SKIPPED))

    def incomplete(self, sweep: Sweep, detail: str, exc: KubeError | None = None) -> None:
        state = self.sweeps[sweep]
        if isinstance(exc, Stopped):
            state.status, state.detail = "stopped", f"{detail}: {exc}"
            self.codes.add(ExitCode.STOPPED)
        else:
            state.status = "incomplete"
            state.detail = f"{detail}: {exc}; nothing deleted" if exc else detail
            self.codes.add(ExitCode.INCOMPLETE)
        log.error("%s sweep %s: %s", sweep.value, state.status, state.detail)

    # -- acting ------------------------------------------------------------------------

    def braked(self, sweep: Sweep, candidates: list[Verdict], in_scope: int) -> bool:
        reason = brake_reason(len(candidates), in_scope, self.deleted, self.limits)
        if reason is None:
            return False
        for verdict in candidates:
            self.record(Outcome.of(sweep, verdict, Action.WOULD_DELETE, "brake", reason))
        self.sweeps[sweep].status = "braked"
        self.sweeps[sweep].detail = reason
        if not self.settings.delete:
            return True  # a dry run reports the brake and exits as usual
        self.codes.add(ExitCode.BRAKE)
        log.warning("%s sweep: safety brake engaged: %s", sweep.value, reason)
        return True

    def count_deletion(self, outcomes: list[Outcome]) -> None:
        if outcomes and outcomes[0].action in (Action.DELETED, Action.WOULD_DELETE):
            self.deleted += 1
        for outcome in outcomes:
            self.record(outcome)

    # -- sweeps ------------------------------------------------------------------------

    def companions(self) -> list[Companion]:
        if self._companions is None:
            self._companions = read_companions(self.hub, self.scope)
        return self._companions

    def sweep_companions(self) -> None:
        sweep = Sweep.COMPANIONS
        try:
            companions = self.companions()
        except KubeError as exc:
            return self.incomplete(sweep, "cannot list companions", exc)
        try:
            workloads = read_workload_index(self.hub, self.scope)
        except KubeError as exc:
            # No index is not an empty index: every companion would look orphaned.
            return self.incomplete(sweep, "cannot read WorkloadDeployments", exc)
        state = self.sweeps[sweep]
        state.scanned = state.in_scope = len(companions)
        min_age = self.settings.min_age
        verdicts = [
            decide_companion(c, workloads.get(c.ref.namespace, frozenset()), self.now, min_age)
            for c in companions
        ]
        for verdict in verdicts:
            if not verdict.delete:
                self.keep(sweep, verdict)
        candidates = [v for v in verdicts if v.delete]
        if self.braked(sweep, candidates, len(companions)):
            return None
        for verdict in candidates:
            self.count_deletion(delete_companion(verdict, self.hub, self.deleter))
        state.status = "completed"
        return None

    def sweep_bindings(self) -> None:
        sweep = Sweep.BINDINGS
        try:
            bindings = read_bindings(self.hub, self.scope)
        except KubeError as exc:
            return self.incomplete(sweep, "cannot list ResourceBindings", exc)
        try:
            labelled = {(c.ref.kind, c.ref.namespace, c.ref.name) for c in self.companions()}
        except KubeError:
            labelled = set()  # every candidate is then confirmed by its own read
        state = self.sweeps[sweep]
        state.scanned = len(bindings)
        candidates: list[tuple[Verdict, tuple[str, str]]] = []
        for binding in bindings:
            target = bound_target(binding)
            if target is None or binding.ref.uid in self.acted_on:
                continue
            state.in_scope += 1
            kind, name = target
            error = ""
            if (kind, binding.ref.namespace, name) in labelled:
                presence = Presence.EXISTS
            else:
                # A labelled list only nominates: an unlabelled object still owns the binding.
                try:
                    found = self.hub.get(
                        COMPANION_RESOURCES[kind], binding.ref.namespace, name, reduce.name_of
                    )
                except Stopped as exc:
                    return self.incomplete(sweep, "stopped while confirming absences", exc)
                except KubeError as exc:
                    presence, error = Presence.UNKNOWN, str(exc)
                else:
                    presence = Presence.EXISTS if found is not None else Presence.ABSENT
            verdict = decide_binding(binding, presence, self.now, self.settings.min_age, error)
            if verdict.delete:
                candidates.append((verdict, target))
            else:
                self.keep(sweep, verdict)
        if self.braked(sweep, [v for v, _ in candidates], state.in_scope):
            return None
        for verdict, target in candidates:
            self.count_deletion([delete_binding(verdict, target, self.hub, self.deleter)])
        state.status = "completed"
        return None

    def sweep_routes(self) -> None:
        sweep = Sweep.ROUTES
        state = self.sweeps[sweep]
        if self.upstreams is None:
            state.status = "not-configured"
            state.detail = "no upstream configured (--upstream-kubeconfig)"
            log.warning("routes sweep not configured: %s", state.detail)
            return None
        try:
            if not self.hub.served(HTTPROUTES):
                return self.incomplete(
                    sweep, f"hub does not serve {HTTPROUTES.api_version} httproutes"
                )
            routes = read_routes(self.hub, self.scope)
        except KubeError as exc:
            return self.incomplete(sweep, "cannot list HTTPRoutes", exc)
        state.scanned = len(routes)
        shaped: list[tuple[Any, RouteTarget]] = []
        for route in routes:
            if not in_scope(route):
                continue
            state.in_scope += 1
            target = route_target(route)
            if isinstance(target, Verdict):
                self.keep(sweep, target)
            else:
                shaped.append((route, target))
        index = self.upstream_index = UpstreamIndex(self.upstreams)
        try:
            index.load((t for _, t in shaped), self.settings.suspect_min_routes)
        except Stopped as exc:
            return self.incomplete(sweep, "stopped while reading upstream Gateways", exc)
        candidates: list[tuple[Verdict, RouteTarget]] = []
        for route, target in shaped:
            view = index.view(target)
            if (
                view.cluster_status is ClusterStatus.OK
                and view.gateways is not None
                and not (set(target.gateways) & view.gateways)
            ):
                index.namespace_exists(target.cluster, target.namespace)
                view = index.view(target)
            verdict = decide_route(route, target, view, self.now, self.settings.min_age)
            if verdict.delete:
                candidates.append((verdict, target))
            else:
                self.keep(sweep, verdict)
                if verdict.reason == "upstream-suspect" and self.settings.delete:
                    self.codes.add(ExitCode.BRAKE)
        if self.braked(sweep, [v for v, _ in candidates], state.in_scope):
            return None
        for verdict, target in candidates:
            self.count_deletion([delete_route(verdict, target, index, self.deleter)])
        state.status = "completed"
        return None

    def execute(self) -> None:
        runners = {
            Sweep.COMPANIONS: self.sweep_companions,
            Sweep.BINDINGS: self.sweep_bindings,
            Sweep.ROUTES: self.sweep_routes,
        }
        for sweep in Sweep:  # companions before bindings: their bindings go with them
            if sweep in self.settings.sweeps:
                self.sweeps[sweep] = SweepState()
        for sweep in self.sweeps:
            stop = self.budget.stop_reason()
            if stop is not None:
                self.sweeps[sweep].status, self.sweeps[sweep].detail = "stopped", stop
                self.codes.add(ExitCode.STOPPED)
                continue
            self.reporter.progress(f"{sweep.value}: sweeping")
            runners[sweep]()
        if self.budget.stop_reason() is not None and self.codes & {ExitCode.STOPPED}:
            log.warning("run stopped: %s", self.budget.stop_reason())

    # -- summary -----------------------------------------------------------------------

    def exit_code(self) -> ExitCode:
        return most_severe(self.codes)

    def summary(self, exit_code: ExitCode, error: str = "") -> dict[str, Any]:
        finished = datetime.now(UTC)
        summary: dict[str, Any] = {
            "record": "summary",
            "run_id": self.run_id,
            "version": __version__,
            "hub": self.hub.server,
            "dry_run": not self.settings.delete,
            "started": rfc3339(self.started),
            "finished": rfc3339(finished),
            "decided_at": rfc3339(self.now),
            "min_age_seconds": int(self.settings.min_age.total_seconds()),
            "sweeps": {
                sweep.value: {
                    "status": st.status,
                    "detail": st.detail,
                    "scanned": st.scanned,
                    "in_scope": st.in_scope,
                }
                for sweep, st in self.sweeps.items()
            },
            "counts": self.reporter.tally.as_dict(),
            "totals": self.reporter.tally.totals(),
            "upstream_clusters": self.upstream_index.summary() if self.upstream_index else {},
            "api_requests": {
                "total": self.stats.total,
                "by_target": dict(sorted(self.stats.by_target.items())),
            },
            "exit_code": int(exit_code),
            "exit_reason": error or DESCRIPTIONS[exit_code],
        }
        return summary
