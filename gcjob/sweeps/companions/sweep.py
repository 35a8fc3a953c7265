"""Sweep 1: companions whose referrers are all gone, and their bindings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from gcjob.act.deleter import Deleter
from gcjob.decide.grace import Graced
from gcjob.enumerate.keyset import KeySet
from gcjob.enumerate.parallel import SERIAL, ReadAhead, result_of, wait_all
from gcjob.kube.errors import KubeError
from gcjob.kube.resources import COMPANION_RESOURCES, RESOURCEBINDINGS, Resource
from gcjob.marks import Rule
from gcjob.model import Companion, ObjectRef, Outcome, Sweep
from gcjob.reasons import Reason
from gcjob.run import Run
from gcjob.shard import WHOLE, Shard
from gcjob.sweeps.boundary import ObjectScan
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
from gcjob.sweeps.driver import (
    Counted,
    Declaration,
    Failed,
    Healthy,
    Incomplete,
    Judged,
    Leaving,
    Planned,
    Scan,
    drive,
)

SWEEP = Sweep("companions")
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
    """Judges each companion as its page arrives, at the hub's time then (`now`: after the
    index it is judged by and its own page came back); keeps what must be reported or acted
    on, and only a count of the healthy ones (unless they are to be itemised)."""

    def __init__(
        self,
        world: CompanionWorld,
        now: Callable[[], datetime],  # the hub's time now (run.Run.now)
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
        judged = judge_companion(companion, self.world, self.now(), self.min_age, self.grace)
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


class Companions(Declaration[CompanionJudgement, None]):
    """Sweep 1, declared (gcjob/sweeps/driver.py runs it): the marked ConfigMaps and Secrets
    that left the sweep (read beside the index), every WorkloadDeployment (the index), then
    the labelled companions, each judged as its page arrives (CompanionScan). Its writes take
    each companion's binding along (act.py), its bindings read a few ahead of the waits and
    marks; what it leaves for the bindings sweep is `swept`."""

    sweep = SWEEP
    rule = Rule.COMPANION
    marks_each = 2  # a new orphan's mark, and its binding's

    def __init__(self, run: Run) -> None:
        super().__init__(run)
        self.keys: KeySet | None = None  # the labelled companions, once all were read
        self.reported: set[str] = set()  # the uids of the bindings reported with them
        self.bindings: BindingsAhead | None = None

    def swept(self) -> CompanionsSwept:
        return CompanionsSwept(self.keys, frozenset(self.reported))

    def scan(self) -> Scan[CompanionJudgement, None]:
        run, settings = self.run, self.run.settings
        # Beside the index: two lists the server filters from every ConfigMap and Secret, read
        # one after another in one of the hub's readers (SERIAL: it waits on no pool).
        reading_left = run.hub_reads.start(
            partial(scan_marked_outside_companions, run.hub, run.scope, SERIAL)
        )
        try:
            workloads = scan_workload_index(run.hub, run.scope, run.hub_reads)
        except KubeError as exc:
            # No index is not an empty index: every companion would look orphaned.
            wait_all([reading_left])  # unused, but no read of this sweep outlives it
            raise Incomplete("cannot read WorkloadDeployments", exc) from exc
        try:
            left = result_of(reading_left, "the list of marked objects that left the sweep")
        except KubeError as exc:
            # A mark left behind could be counted from when the label comes back: decide nothing.
            raise Incomplete("cannot list marked objects that left the sweep", exc) from exc
        yield Leaving(list(filter(None, map(companion_left_scope, left))))
        world = WorkloadIndex(workloads)

        def start() -> CompanionScan:
            return CompanionScan(
                world,
                run.clock.now,
                settings.min_age,
                settings.grace,
                settings.report_healthy,
                run.shard,
            )

        try:
            scans = scan_companions(run.hub, run.scope, start, run.hub_reads)
        except KubeError as exc:
            raise Incomplete("cannot list companions", exc) from exc
        keys = KeySet()
        for scan in scans:
            keys.update(scan.keys)
            # Every companion listed is the sweep's: with --shard, its shard's or another's.
            yield Counted(scan.scanned, scan.scanned - scan.elsewhere, scan.elsewhere)
            yield Failed([scan])
            yield Judged(sorted([*scan.kept, *scan.marked], key=_in_order), _ref)
            yield Healthy(scan.healthy)
            yield Judged(sorted(scan.candidates, key=_in_order), _ref)
        self.keys = keys.freeze()

    def plan(self, judged: CompanionJudgement) -> Planned[None]:
        return Planned(judged.verdict, judged.evidence, judged.call, None, judged.claims)

    def resource(self, graced: Graced[None]) -> Resource:
        return COMPANION_RESOURCES[graced.verdict.ref.kind]

    def delete(self, graced: Graced[None], deleter: Deleter) -> list[Outcome]:
        return self._noting(delete_companion(graced.verdict, self.run.hub, deleter))

    def mark(self, graced: Graced[None]) -> list[Outcome]:
        run = self.run
        return self._noting(mark_companion(graced, run.hub, run.marker, self.bindings))

    def unmark(self, graced: Graced[None]) -> list[Outcome]:
        return self._noting(unmark_companion(graced, self.run.hub, self.run.marker))

    def wait(self, graced: Graced[None]) -> list[Outcome]:
        run = self.run
        return self._noting(wait_companion(graced, run.hub, run.marker, self.bindings))

    def ahead_of_marks(self, graced: list[Graced[None]]) -> None:
        """The bindings of the companions about to be marked or waited on, read a few at once
        (one after another, 100 would-marks cost a dry run at 10k a fifth of its time)."""
        refs = [g.verdict.ref for g in graced]
        read = partial(read_binding, hub=self.run.hub)
        self.bindings = ReadAhead(self.run.hub_reads, refs, read, AHEAD)

    def _noting(self, outcomes: list[Outcome]) -> list[Outcome]:
        """The outcomes of one object's turn; its binding's uid noted for the bindings sweep."""
        self.reported.update(o.ref.uid for o in outcomes if o.ref.kind == RESOURCEBINDINGS.kind)
        return outcomes


def sweep(run: Run) -> CompanionsSwept:
    """The companions sweep alone, driven as gcjob/sweeps/__init__.py `execute` drives it."""
    declared = Companions(run)
    drive(run, declared)
    return declared.swept()
