"""Sweep 2: city-* bindings of ConfigMaps/Secrets that no longer exist."""

from __future__ import annotations

from collections import Counter
from collections.abc import Set
from datetime import datetime, timedelta

from gcjob.decide.grace import Graced, GraceSort
from gcjob.enumerate.keyset import KeySet
from gcjob.kube import reduce
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.resources import RESOURCEBINDINGS
from gcjob.marks import Rule
from gcjob.model import Binding, ObjectRef, Outcome, Sweep, Verdict
from gcjob.reasons import Reason
from gcjob.run import Run
from gcjob.shard import WHOLE, Shard
from gcjob.sweeps import grace_actions
from gcjob.sweeps.bindings.act import delete_binding
from gcjob.sweeps.bindings.judge import (
    Answered,
    Existence,
    binding_left_scope,
    bound_target,
    judge_binding,
)
from gcjob.sweeps.bindings.scan import bound_object_exists, scan_bindings
from gcjob.sweeps.boundary import ObjectScan, each, report_failed

SWEEP = Sweep.BINDINGS
LABELLED = Answered(Existence.EXISTS)  # a labelled companion of that name exists
BoundName = tuple[str, str]  # (kind, name) of the object a binding is for


class BindingScan(ObjectScan[Binding]):
    """Keeps the in-scope bindings whose object is not a known companion: those need a read
    of that exact name. Bindings of known companions are healthy: counted, not kept."""

    def __init__(
        self,
        labelled: KeySet,
        handled: Set[str],
        now: datetime,
        min_age: timedelta,
        keep_healthy: bool,
        shard: Shard = WHOLE,
    ) -> None:
        super().__init__(shard)
        self.labelled = labelled
        self.handled = handled
        self.now = now
        self.min_age = min_age
        self.keep_healthy = keep_healthy
        self.in_scope = 0
        self.unconfirmed: list[tuple[Binding, BoundName]] = []
        self.kept: list[Verdict] = []
        self.healthy: Counter[Reason] = Counter()
        self.marked: list[tuple[Verdict, BoundName]] = []  # healthy, yet carrying a mark
        self.left: list[Verdict] = []  # out of the sweep, carrying its mark

    def take(self, binding: Binding) -> None:
        if binding.ref.uid in self.handled:
            return  # already reported with its companion this run
        target = bound_target(binding)
        if target is None:  # not ours; a mark of ours goes, or it would count from its time
            leaving = binding_left_scope(binding)
            if leaving is not None and self.shard.judges(binding.ref.namespace):
                self.left.append(leaving.verdict)
            return
        if self.judged_elsewhere(binding):
            return
        self.in_scope += 1
        kind, name = target
        if (kind, binding.ref.namespace, name) not in self.labelled:
            self.unconfirmed.append((binding, target))
            return
        verdict = judge_binding(binding, LABELLED, self.now, self.min_age).verdict
        if binding.ref.mark is not None:
            self.marked.append((verdict, target))
        elif self.keep_healthy:
            self.kept.append(verdict)
        else:
            self.healthy[verdict.reason] += 1


def _in_order(verdict: Verdict) -> tuple[str, str, str]:
    return verdict.ref.order


def _ref(verdict: Verdict) -> ObjectRef:
    return verdict.ref


def sweep(run: Run, labelled: KeySet, reported: Set[str]) -> None:
    """`labelled`: the labelled companions, as (kind, namespace, name) (empty when they could
    not be read: every candidate is then confirmed by its own read); `reported`: the uids of
    the bindings the companions sweep already reported this run, with their companions."""
    state = run.tally.sweeps[SWEEP]
    settings = run.settings

    def start() -> BindingScan:
        return BindingScan(
            labelled, reported, run.now, settings.min_age, settings.report_healthy, run.shard
        )

    try:
        scans = scan_bindings(run.hub, run.scope, start, run.hub_reads)
    except KubeError as exc:
        return run.incomplete(SWEEP, "cannot list ResourceBindings", exc)
    sort: GraceSort[BoundName] = GraceSort(Rule.BINDING, run.now, settings.grace)

    def unmark_left(verdict: Verdict) -> None:
        run.record(run.marker.unmark(SWEEP, verdict, RESOURCEBINDINGS))

    def keep_unless_unmarked(marked: tuple[Verdict, BoundName]) -> None:
        verdict, target = marked
        if not sort.not_orphan(verdict, target):
            run.keep(SWEEP, verdict)

    def confirm(unconfirmed: tuple[Binding, BoundName]) -> None:
        """A labelled list only nominates: an unlabelled object still owns the binding."""
        binding, (kind, name) = unconfirmed
        error = ""
        try:
            found = bound_object_exists(run.hub, kind, binding.ref.namespace, name)
        except Stopped:
            raise
        except KubeError as exc:
            presence, error = Existence.UNKNOWN, str(exc)
        else:
            presence = Existence.EXISTS if found else Existence.ABSENT
        if presence is Existence.ABSENT:
            # The list was metadata only: read this binding in full for its spec.resource.
            try:
                live = run.hub.get(
                    RESOURCEBINDINGS,
                    binding.ref.namespace,
                    binding.ref.name,
                    reduce.binding,
                    metadata_only=False,
                )
            except Stopped:
                raise
            except KubeError as exc:
                presence, error = Existence.UNKNOWN, f"cannot read the binding: {exc}"
            else:
                if live is None:
                    return  # gone since it was listed: nothing to decide
                binding = live
        judged = judge_binding(binding, Answered(presence, error), run.now, settings.min_age)
        verdict = judged.verdict
        if judged.evidence is not None:
            sort.orphan(verdict, judged.evidence, (kind, name))
        elif not sort.not_orphan(verdict, (kind, name)):
            run.keep(SWEEP, verdict)

    for scan in scans:
        state.scanned += scan.scanned
        state.in_scope += scan.in_scope + len(scan.failed)
        state.other_shards += scan.elsewhere
        report_failed(run, SWEEP, [scan])
        each(run, SWEEP, sorted(scan.left, key=_in_order), _ref, unmark_left)
        each(run, SWEEP, sorted(scan.kept, key=_in_order), _ref, lambda v: run.keep(SWEEP, v))
        marked = sorted(scan.marked, key=lambda m: m[0].ref.order)
        each(run, SWEEP, marked, lambda m: m[0].ref, keep_unless_unmarked)
        for reason, count in sorted(scan.healthy.items()):
            run.reporter.count_healthy(SWEEP, reason, count)
        unconfirmed = sorted(scan.unconfirmed, key=lambda u: u[0].ref.order)
        try:
            each(run, SWEEP, unconfirmed, lambda u: u[0].ref, confirm)
        except Stopped as exc:
            return run.incomplete(SWEEP, "stopped while confirming absences", exc)

    def delete(graced: Graced[BoundName]) -> list[Outcome]:
        return [delete_binding(graced.verdict, graced.target, run.hub, run.deleter)]

    if grace_actions.act(run, SWEEP, sort, state.in_scope, lambda _: RESOURCEBINDINGS, delete):
        run.completed(SWEEP)
    return None
