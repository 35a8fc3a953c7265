"""Sweep 2: city-* bindings of ConfigMaps/Secrets that no longer exist."""

from __future__ import annotations

from collections import Counter
from collections.abc import Set
from datetime import datetime, timedelta

from gcjob.act.deleter import Deleter
from gcjob.decide.common import Claims, binding_claims
from gcjob.decide.grace import Graced, grace_call
from gcjob.enumerate.keyset import KeySet
from gcjob.kube import reduce
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.resources import RESOURCEBINDINGS, Resource
from gcjob.marks import Evidence, Rule
from gcjob.model import Binding, ObjectRef, Outcome, Sweep, Verdict
from gcjob.reasons import Reason
from gcjob.run import Run
from gcjob.shard import WHOLE, Shard
from gcjob.sweeps.bindings.act import delete_binding
from gcjob.sweeps.bindings.judge import (
    Answered,
    Existence,
    binding_left_scope,
    bound_target,
    judge_binding,
)
from gcjob.sweeps.bindings.scan import bound_object_exists, scan_bindings
from gcjob.sweeps.boundary import ObjectScan
from gcjob.sweeps.driver import (
    Candidates,
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

SWEEP = Sweep("bindings")
LABELLED = Answered(Existence.EXISTS)  # a labelled companion of that name exists
BoundName = tuple[str, str]  # (kind, name) of the object a binding is for
NO_TARGET: BoundName = ("", "")  # a healthy binding's: nothing is written to it


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
        self.left: list[Graced[None]] = []  # out of the sweep, carrying its mark

    def take(self, binding: Binding) -> None:
        if binding.ref.uid in self.handled:
            return  # already reported with its companion this run
        target = bound_target(binding)
        if target is None:  # not ours; a mark of ours goes, or it would count from its time
            leaving = binding_left_scope(binding)
            if leaving is not None:
                self.left.append(leaving)
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


# A binding judged: its verdict, the (kind, name) it binds, and what an orphan's verdict rests
# on (None: not an orphan).
BindingJudged = tuple[Verdict, BoundName, Evidence | None]
Unconfirmed = tuple[Binding, BoundName]


def _judged_ref(judged: BindingJudged) -> ObjectRef:
    return judged[0].ref


def _unconfirmed_ref(unconfirmed: Unconfirmed) -> ObjectRef:
    return unconfirmed[0].ref


class Bindings(Declaration[BindingJudged, BoundName]):
    """Sweep 2, declared (gcjob/sweeps/driver.py runs it): every binding in scope, listed
    (BindingScan judges those of labelled companions as they arrive); each other candidate
    judged once its object was read by name, and the binding whole; deletes through act.py.

    `labelled`: the labelled companions, as (kind, namespace, name) (empty when they could
    not be read: every candidate is then confirmed by its own read); `reported`: the uids of
    the bindings the companions sweep already reported this run, with their companions."""

    sweep = SWEEP
    rule = Rule.BINDING

    def __init__(self, run: Run, labelled: KeySet, reported: Set[str]) -> None:
        super().__init__(run)
        self.labelled = labelled
        self.reported = reported

    def scan(self) -> Scan[BindingJudged, BoundName]:
        run, settings = self.run, self.run.settings

        def start() -> BindingScan:
            return BindingScan(
                self.labelled,
                self.reported,
                run.now,
                settings.min_age,
                settings.report_healthy,
                run.shard,
            )

        try:
            scans = scan_bindings(run.hub, run.scope, start, run.hub_reads)
        except KubeError as exc:
            raise Incomplete("cannot list ResourceBindings", exc) from exc
        for scan in scans:
            yield Counted(scan.scanned, scan.in_scope + len(scan.failed), scan.elsewhere)
            yield Failed([scan])
            yield Leaving(sorted(scan.left, key=lambda graced: _in_order(graced.verdict)))
            # The healthy ones itemised (no mark: the grace rule has nothing to say), then the
            # healthy ones carrying a mark (it goes), then the counts.
            kept = [(verdict, NO_TARGET, None) for verdict in sorted(scan.kept, key=_in_order)]
            yield Judged(kept, _judged_ref)
            marked = sorted(scan.marked, key=lambda m: _in_order(m[0]))
            yield Judged([(verdict, target, None) for verdict, target in marked], _judged_ref)
            yield Healthy(scan.healthy)
            unconfirmed = sorted(scan.unconfirmed, key=lambda u: u[0].ref.order)
            yield Candidates(
                unconfirmed, _unconfirmed_ref, self.confirm, "stopped while confirming absences"
            )

    def confirm(self, unconfirmed: Unconfirmed) -> list[Planned[BoundName]]:
        """A labelled list only nominates: an unlabelled object still owns the binding."""
        run = self.run
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
                    return []  # gone since it was listed: nothing to decide
                binding = live
        judged = judge_binding(binding, Answered(presence, error), run.now, run.settings.min_age)
        claims = binding_claims(binding)
        return [self._planned((judged.verdict, (kind, name), judged.evidence), claims)]

    def plan(self, judged: BindingJudged) -> Planned[BoundName]:
        """A binding of a labelled companion, kept: no orphan, no claims to hold it to."""
        return self._planned(judged, None)

    def _planned(self, judged: BindingJudged, claims: Claims | None) -> Planned[BoundName]:
        verdict, target, evidence = judged
        call = grace_call(self.rule, verdict, evidence, self.run.now, self.run.settings.grace)
        return Planned(verdict, evidence, call, target, claims)

    def resource(self, graced: Graced[BoundName]) -> Resource:
        return RESOURCEBINDINGS

    def delete(self, graced: Graced[BoundName], deleter: Deleter) -> list[Outcome]:
        return [delete_binding(graced.verdict, graced.target, self.run.hub, deleter)]


def sweep(run: Run, labelled: KeySet, reported: Set[str]) -> None:
    """The bindings sweep alone, driven as gcjob/sweeps/__init__.py `execute` drives it."""
    drive(run, Bindings(run, labelled, reported))
