"""Sweep 1: companions whose referrers are all gone, and their bindings."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from gcjob.act.companions import delete_companion
from gcjob.decide.companions import decide_companion
from gcjob.enumerate.hub import read_workload_index, scan_companions
from gcjob.kube.errors import KubeError
from gcjob.model import Companion, Sweep, Verdict
from gcjob.run import Run

SWEEP = Sweep.COMPANIONS
CompanionKey = tuple[str, str, str]  # (kind, namespace, name)


class CompanionKeys:
    """Keeps only which companions exist: what the bindings sweep needs of them."""

    def __init__(self) -> None:
        self.keys: set[CompanionKey] = set()

    def add(self, companion: Companion) -> None:
        ref = companion.ref
        self.keys.add((ref.kind, ref.namespace, ref.name))


class CompanionScan(CompanionKeys):
    """Decides each companion as its page arrives; keeps what must be reported or acted on,
    and only a count of the healthy ones (unless they are to be itemised)."""

    def __init__(
        self,
        workloads: dict[str, frozenset[str]],
        now: datetime,
        min_age: timedelta,
        keep_healthy: bool,
    ) -> None:
        super().__init__()
        self.workloads = workloads
        self.now = now
        self.min_age = min_age
        self.keep_healthy = keep_healthy
        self.scanned = 0
        self.kept: list[Verdict] = []
        self.candidates: list[Verdict] = []
        self.healthy: Counter[str] = Counter()

    def add(self, companion: Companion) -> None:
        super().add(companion)
        self.scanned += 1
        live = self.workloads.get(companion.ref.namespace, frozenset())
        verdict = decide_companion(companion, live, self.now, self.min_age)
        if verdict.delete:
            self.candidates.append(verdict)
        elif not verdict.healthy or self.keep_healthy:
            self.kept.append(verdict)
        else:
            self.healthy[verdict.reason] += 1


def companion_keys(run: Run) -> set[CompanionKey]:
    """Labelled companions, by key: from this run's companions sweep, or read for the bindings
    sweep alone. Raises KubeError."""
    if run.companion_keys is None:
        run.companion_keys = set()
        for scan in scan_companions(run.hub, run.scope, CompanionKeys):
            run.companion_keys |= scan.keys
    return run.companion_keys


def sweep(run: Run) -> None:
    state = run.sweeps[SWEEP]
    try:
        workloads = read_workload_index(run.hub, run.scope)
    except KubeError as exc:
        # No index is not an empty index: every companion would look orphaned.
        return run.incomplete(SWEEP, "cannot read WorkloadDeployments", exc)
    settings = run.settings

    def start() -> CompanionScan:
        return CompanionScan(workloads, run.now, settings.min_age, settings.report_healthy)

    try:
        scans = scan_companions(run.hub, run.scope, start)
    except KubeError as exc:
        return run.incomplete(SWEEP, "cannot list companions", exc)
    run.companion_keys = set()
    candidates: list[Verdict] = []
    for scan in scans:
        run.companion_keys |= scan.keys
        state.scanned += scan.scanned
        for verdict in scan.kept:
            run.keep(SWEEP, verdict)
        for reason, count in scan.healthy.items():
            run.reporter.count_healthy(SWEEP, reason, count)
        candidates.extend(scan.candidates)
    state.in_scope = state.scanned
    if run.braked(SWEEP, candidates, state.in_scope):
        return None
    for verdict in candidates:
        run.count_deletion(delete_companion(verdict, run.hub, run.deleter))
    state.status = "completed"
    return None
