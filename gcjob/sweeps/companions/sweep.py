"""Sweep 1: companions whose referrers are all gone, and their bindings."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from gcjob.decide.grace import Graced, GraceSort
from gcjob.enumerate.keyset import KeySet
from gcjob.enumerate.parallel import SERIAL, ReadAhead, result_of, wait_all
from gcjob.kube.errors import KubeError
from gcjob.kube.resources import COMPANION_RESOURCES, RESOURCEBINDINGS
from gcjob.marks import Rule
from gcjob.model import Companion, ObjectRef, Outcome, Sweep
from gcjob.reasons import Reason
from gcjob.run import Run
from gcjob.shard import WHOLE, Shard
from gcjob.sweeps import grace_actions
from gcjob.sweeps.boundary import ObjectScan, each, report_failed
from gcjob.sweeps.companions.act import (
    BindingsAhead,
    delete_companion,
    mark_companion,
    read_binding,
    unmark_companion,
    wait_companion,
)
from gcjob.sweeps.companions.judge import (
    CompanionJudgement,
    CompanionWorld,
    companion_left_scope,
    judge_companion,
)
from gcjob.sweeps.companions.scan import (
    WorkloadIndex,
    scan_companions,
    scan_marked_outside_companions,
    scan_workload_index,
)

SWEEP = Sweep.COMPANIONS
# Bindings read ahead of the marks: enough to keep the hub's readers busy, few enough that a
# mark is pinned to a read a moment old (a binding Karmada changed since is not marked).
AHEAD = 8


@dataclass(frozen=True)
class CompanionsSwept:
    """What this sweep leaves for the bindings sweep (gcjob/sweeps/__init__.py passes it on):
    which labelled companions exist, as (kind, namespace, name), None when they were not all
    read; and the uids of the bindings it already reported with their companions."""

    keys: KeySet | None
    bindings_reported: frozenset[str]


class CompanionScan(ObjectScan[Companion]):
    """Judges each companion as its page arrives; keeps what must be reported or acted on,
    and only a count of the healthy ones (unless they are to be itemised)."""

    def __init__(
        self,
        world: CompanionWorld,
        now: datetime,
        min_age: timedelta,
        grace: timedelta,
        keep_healthy: bool,
        shard: Shard = WHOLE,
    ) -> None:
        super().__init__(shard)
        self.world = world
        self.now = now
        self.min_age = min_age
        self.grace = grace
        self.keep_healthy = keep_healthy
        self.keys = KeySet()
        self.kept: list[CompanionJudgement] = []
        self.candidates: list[CompanionJudgement] = []
        self.healthy: Counter[Reason] = Counter()
        self.marked: list[CompanionJudgement] = []  # healthy, yet carrying a mark

    def take(self, companion: Companion) -> None:
        ref = companion.ref
        # First: a companion that cannot be judged (or another shard judges) still exists
        # for the bindings sweep.
        self.keys.add(ref.kind, ref.namespace, ref.name)
        if self.judged_elsewhere(companion):
            return
        judged = judge_companion(companion, self.world, self.now, self.min_age, self.grace)
        verdict = judged.verdict
        if verdict.delete:
            self.candidates.append(judged)
        elif verdict.healthy and companion.ref.mark is not None:
            self.marked.append(judged)
        elif not verdict.healthy or self.keep_healthy:
            self.kept.append(judged)
        else:
            self.healthy[verdict.reason] += 1


def _in_order(judged: CompanionJudgement) -> tuple[str, str, str]:
    return judged.verdict.ref.order


def _ref(judged: CompanionJudgement) -> ObjectRef:
    return judged.verdict.ref


def sweep(run: Run) -> CompanionsSwept:
    state = run.tally.sweeps[SWEEP]
    reported: set[str] = set()

    def noting(outcomes: list[Outcome]) -> list[Outcome]:
        """The outcomes of one object's turn; its binding's uid noted for the bindings sweep."""
        reported.update(o.ref.uid for o in outcomes if o.ref.kind == RESOURCEBINDINGS.kind)
        return outcomes

    def swept(keys: KeySet | None = None) -> CompanionsSwept:
        return CompanionsSwept(keys, frozenset(reported))

    # Beside the index: two lists the server filters from every ConfigMap and Secret, read
    # one after another in one of the hub's readers (SERIAL: it waits on no pool).
    reading_left = run.hub_reads.start(
        partial(scan_marked_outside_companions, run.hub, run.scope, SERIAL)
    )
    try:
        workloads = scan_workload_index(run.hub, run.scope, run.hub_reads)
    except KubeError as exc:
        # No index is not an empty index: every companion would look orphaned.
        run.incomplete(SWEEP, "cannot read WorkloadDeployments", exc)
        wait_all([reading_left])  # unused, but no read of this sweep outlives it
        return swept()
    try:
        left = result_of(reading_left, "the list of marked objects that left the sweep")
    except KubeError as exc:
        # A mark left behind could be counted from when the label comes back: decide nothing.
        run.incomplete(SWEEP, "cannot list marked objects that left the sweep", exc)
        return swept()
    mine = [companion for companion in left if run.shard.judges(companion.ref.namespace)]
    for graced in filter(None, map(companion_left_scope, mine)):
        for outcome in noting(unmark_companion(graced, run.hub, run.marker)):
            run.record(outcome)
    settings = run.settings

    world = WorkloadIndex(workloads)

    def start() -> CompanionScan:
        return CompanionScan(
            world, run.now, settings.min_age, settings.grace, settings.report_healthy, run.shard
        )

    try:
        scans = scan_companions(run.hub, run.scope, start, run.hub_reads)
    except KubeError as exc:
        run.incomplete(SWEEP, "cannot list companions", exc)
        return swept()
    keys = KeySet()
    by_grace: GraceSort[None] = GraceSort(Rule.COMPANION, run.now, settings.grace)

    def sort(judged: CompanionJudgement) -> None:
        if not by_grace.take(judged.verdict, judged.evidence, judged.call, None):
            run.keep(SWEEP, judged.verdict)

    for scan in scans:
        keys.update(scan.keys)
        state.scanned += scan.scanned
        state.other_shards += scan.elsewhere
        report_failed(run, SWEEP, [scan])
        kept = sorted([*scan.kept, *scan.marked], key=_in_order)
        each(run, SWEEP, kept, _ref, sort)
        for reason, count in sorted(scan.healthy.items()):
            run.reporter.count_healthy(SWEEP, reason, count)
        each(run, SWEEP, sorted(scan.candidates, key=_in_order), _ref, sort)
    keys.freeze()
    state.in_scope = state.scanned - state.other_shards
    ahead: BindingsAhead | None = None

    def read_ahead(graced: list[Graced[None]]) -> None:
        """The bindings of the companions about to be marked or waited on, read a few at once
        (one after another, 100 would-marks cost a dry run at 10k a fifth of its time)."""
        nonlocal ahead
        refs = [g.verdict.ref for g in graced]
        ahead = ReadAhead(run.hub_reads, refs, partial(read_binding, hub=run.hub), AHEAD)

    completed = grace_actions.act(
        run,
        SWEEP,
        by_grace,
        state.in_scope,
        lambda graced: COMPANION_RESOURCES[graced.verdict.ref.kind],
        lambda graced: noting(delete_companion(graced.verdict, run.hub, run.deleter)),
        mark=lambda graced: noting(mark_companion(graced, run.hub, run.marker, ahead)),
        unmark=lambda graced: noting(unmark_companion(graced, run.hub, run.marker)),
        wait=lambda graced: noting(wait_companion(graced, run.hub, run.marker, ahead)),
        before=read_ahead,
    )
    if completed:
        run.completed(SWEEP)
    return swept(keys)
