"""Sweep 4: downstream copies of every kind NSO copies, and their anchors, whose upstream owner
or whole project is proven gone.

The hub is read twice, kind by kind, metadata only. The first read learns which owners to ask
about; then the upstream clusters are read (one list per owner kind and namespace) and the
Project API once. The second read judges each object as it streams in: whatever's owner is not
proven gone is reported or counted and dropped; only the groups of owners proven gone (or
re-created) are kept, and judged whole (judge.py). Memory grows with the owners asked about
and the orphans, not with the copies.

It lands report-only: a --delete run marks and reports what it would delete, and deletes
only where the operator enforces it (`--enforce copies`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from gcjob import preflight
from gcjob.decide.grace import Graced, GraceSort, grace_call
from gcjob.decide.projects import project_calls
from gcjob.enumerate.owners import OwnerLookups, ProjectReads
from gcjob.enumerate.parallel import ReadAhead
from gcjob.enumerate.shared import Found
from gcjob.exitcodes import ExitCode
from gcjob.kube.access import KubeAccess
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.resources import Resource
from gcjob.logs import log
from gcjob.marks import Rule, copy_evidence
from gcjob.model import (
    Looked,
    ObjectRef,
    Outcome,
    OwnerFacts,
    Presence,
    Replica,
    SecondLook,
    Sweep,
    UpstreamOwner,
    Verdict,
)
from gcjob.reasons import Reason
from gcjob.run import Run
from gcjob.shard import WHOLE, Shard, copy_key
from gcjob.sweeps import grace_actions
from gcjob.sweeps.boundary import ObjectScan, each, report_failed
from gcjob.sweeps.copies.act import (
    MemberDeletion,
    Rechecks,
    delete_member,
    first_read,
)
from gcjob.sweeps.copies.judge import (
    GroupCall,
    Member,
    anchor_waits,
    anchors_named,
    copy_left_scope,
    judge_group,
    judge_owner,
    last_due,
    understand,
)
from gcjob.sweeps.copies.scan import (
    Discovering,
    HubKinds,
    hub_kinds,
    scan_kind,
    scan_marked_outside_copies,
)

SWEEP = Sweep.COPIES
# How many owners' live second looks are read ahead of their groups' deletes (as the routes').
AHEAD = 16
ANCHOR_SHAPED = frozenset({"ConfigMap"})


@dataclass
class Judged:
    """The second read of one kind in one namespace: kept verdicts to report (each with its
    resource: a mark of an earlier run is removed from it), healthy counts, anchors named by
    what stays, and the members of owners proven gone, for their groups."""

    kept: list[tuple[Verdict, Resource]] = field(default_factory=list)
    healthy: Counter[Reason] = field(default_factory=Counter)
    named: set[str] = field(default_factory=set)
    members: dict[UpstreamOwner, list[Member]] = field(default_factory=lambda: defaultdict(list))

    def update(self, other: Judged) -> None:
        self.kept += other.kept
        self.healthy.update(other.healthy)
        self.named |= other.named
        for owner, found in other.members.items():
            self.members[owner] += found


class CopyScan(ObjectScan[Replica]):
    def __init__(
        self,
        resource: Resource,
        calls: dict[UpstreamOwner, GroupCall],
        keep_healthy: bool,
        shard: Shard = WHOLE,
    ) -> None:
        super().__init__(shard)
        self.resource = resource
        self.calls = calls
        self.keep_healthy = keep_healthy
        self.judged = Judged()
        self.in_scope = 0

    def shard_key(self, record: Replica) -> str:
        return copy_key(record.labels, record.ref.namespace)

    def take(self, replica: Replica) -> None:
        if self.judged_elsewhere(replica):
            # Another shard judges it; the anchors it names stay (as an anchor named by
            # another owner's copy stays, whatever that copy's judgement).
            self._names(replica)
            return
        self.in_scope += 1
        member = understand(replica)
        if isinstance(member, Verdict):
            self.judged.kept.append((member, self.resource))
            self._names(replica)
            return
        call = self.calls.get(member.owner)
        if call is None:  # appeared between the two reads: nobody asked about its owner
            detail = f"{member.owner} not looked up this run: it appeared while the run read"
            verdict = Verdict(replica.ref, False, Reason.UPSTREAM_NOT_READ, detail)
            self.judged.kept.append((verdict, self.resource))
            self._names(replica)
            return
        mine = (member.anchor_uid,) if member.anchor_uid is not None else member.anchors
        if call.proof is not None or (call.exists and call.current_uid not in mine and mine):
            self.judged.members[member.owner].append(member)
            return
        self._names(replica)
        verdict = Verdict(
            replica.ref,
            False,
            call.reason,
            call.detail,
            healthy=call.exists,
            cluster=member.owner.cluster,
        )
        if verdict.healthy and replica.ref.mark is None and not self.keep_healthy:
            self.judged.healthy[verdict.reason] += 1
        else:
            self.judged.kept.append((verdict, self.resource))

    def _names(self, replica: Replica) -> None:
        self.judged.named.update(anchors_named(replica.owners))


def sweep(run: Run, projects: ProjectReads, found: Found | None = None) -> None:
    """`projects`: the run's Project API, shared with the routes sweep; `found`: what the
    routes sweep's upstream reads found this round, not read again (enumerate/shared.py)."""
    state = run.tally.sweeps[SWEEP]
    settings = run.settings
    if run.upstreams is None:
        state.status = "not-configured"
        state.detail = "no upstream configured (--upstream-kubeconfig)"
        log.warning("copies sweep not configured: %s", state.detail)
        return None
    if not isinstance(run.hub, Discovering) or run.settings.snapshot:
        # A dump of collections says which kinds were dumped, not which the hub serves.
        state.status = "not-configured"
        state.detail = "not swept from a snapshot: it needs the hub's and upstreams' discovery"
        log.warning("copies sweep not run: %s", state.detail)
        return None
    try:
        kinds = hub_kinds(run.hub, settings.drop_copy_kinds)
    except KubeError as exc:
        return run.incomplete(SWEEP, "cannot tell which kinds the hub serves", exc)
    state.detail = "; ".join(f"{name} skipped: {why}" for name, why in kinds.not_served)
    denied = _denied(run, kinds)
    if denied:
        state.status = "not-configured"
        state.detail = (
            f"the hub identity may not {'; '.join(denied)}: grant it (cronjobs/rbac/hub) to "
            "sweep downstream copies"
        )
        log.warning("copies sweep not run: %s", state.detail)
        return None
    denied = _projects_denied(run)
    if denied:
        state.status = "not-configured"
        state.detail = (
            f"the Project API identity may not {'; '.join(denied)}: grant it "
            "(cronjobs/rbac/projects) to sweep downstream copies"
        )
        log.warning("copies sweep not run: %s", state.detail)
        return None
    try:
        wanted, named_elsewhere = first_read(run.hub, kinds, run.scope, run.hub_reads, run.shard)
    except KubeError as exc:
        return run.incomplete(SWEEP, "cannot list the copies", exc)
    lookups = OwnerLookups(run.upstreams, run.upstream_reads, settings.read_upstream_secrets, found)
    try:
        lookups.load(wanted.owners)
    except Stopped as exc:
        return run.incomplete(SWEEP, "stopped while reading upstream owners", exc)
    clusters = {o.cluster for o in wanted.owners}
    run.tally.clusters_read[SWEEP.value] = len(clusters)
    try:
        # With --shard, the projects brake counts the projects gone in the whole hub.
        answers = projects.answers(clusters | wanted.elsewhere_clusters)
    except Stopped as exc:
        return run.incomplete(SWEEP, "stopped while reading the Project API", exc)
    calls_by_cluster, brake = project_calls(
        clusters,
        run.is_project,
        answers,
        lookups.answered(),
        settings.max_projects_gone,
        elsewhere=wanted.elsewhere_clusters,
    )
    run.count_projects(calls_by_cluster, brake)
    run.project_api_failed(SWEEP, projects.failed(clusters))
    if brake:
        run.hold_brake(SWEEP, brake)
    facts = {o: OwnerFacts(calls_by_cluster[o.cluster], lookups.read(o)) for o in wanted.owners}
    calls = {owner: judge_owner(owner, fact) for owner, fact in facts.items()}
    if any(call.unknown for call in calls.values()):
        run.tally.codes.add(ExitCode.ITEM_FAILED)  # a failed upstream read fails the run
    try:
        scans = _second_read(run, kinds, calls)
    except KubeError as exc:
        return run.incomplete(SWEEP, "cannot list the copies", exc)
    try:
        left = scan_marked_outside_copies(run.hub, kinds.swept, run.scope, run.hub_reads)
    except KubeError as exc:
        # A mark left behind could be counted from when the label comes back: decide nothing.
        return run.incomplete(SWEEP, "cannot list marked objects that left the sweep", exc)
    for kind, ref in [(kind, ref) for kind, ref in left if run.shard.judges(ref.namespace)]:
        leaving = copy_left_scope(ref)
        if leaving is not None:
            run.record(run.marker.unmark(SWEEP, leaving.verdict, kind))
    judged = Judged()
    for scan in scans:
        state.scanned += scan.scanned
        state.in_scope += scan.in_scope
        state.other_shards += scan.elsewhere
        judged.update(scan.judged)
    report_failed(run, SWEEP, scans)
    # A kept object's target is its resource alone: what removing an earlier run's mark needs.
    sort: GraceSort[MemberDeletion | Resource] = GraceSort(Rule.COPY, run.now, settings.grace)

    def keep_unless_unmarked(kept: tuple[Verdict, Resource]) -> None:
        verdict, resource = kept
        if not sort.not_orphan(verdict, resource):
            run.keep(SWEEP, verdict)

    each(
        run,
        SWEEP,
        sorted(judged.kept, key=lambda kept: _in_order(kept[0])),
        lambda kept: kept[0].ref,
        keep_unless_unmarked,
    )
    for reason, count in sorted(judged.healthy.items()):
        run.reporter.count_healthy(SWEEP, reason, count)

    # Which owners' copies name each anchor: a copy of another owner naming it is kept by its
    # own group's judgement, whatever that is, so the anchor stays (as explain judges it).
    namers: dict[str, set[UpstreamOwner]] = defaultdict(set)
    for owner, members in judged.members.items():
        for member in members:
            for uid in member.anchors:
                namers[uid].add(owner)

    def stays_named(anchor: str, owner: UpstreamOwner) -> bool:
        """An anchor named by an object that stays, or by another owner's copy (or may be:
        a shared digest keeps it)."""
        return (
            anchor in judged.named
            or ("anchor", "", anchor) in named_elsewhere
            or bool(namers.get(anchor, set()) - {owner})
        )

    for owner in sorted(judged.members):

        def sort_group(owner: UpstreamOwner = owner) -> None:
            group = judged.members[owner]
            anchors = frozenset(wanted.anchors[owner])
            result = judge_group(
                owner, group, facts[owner], anchors, run.now, settings.min_age, settings.clock_skew
            )
            _sort_group(sort, kinds, group, result.verdicts, stays_named, run)

        each(run, SWEEP, [owner], lambda o: judged.members[o][0].ref, lambda _: sort_group())
    enforced = SWEEP in settings.enforce

    looks: ReadAhead[tuple[UpstreamOwner, Reason], SecondLook] | None = None

    def live_look(key: tuple[UpstreamOwner, Reason]) -> SecondLook:
        """An owner's live second look: in an upstream reader thread when read ahead."""
        owner, reason = key
        return _recheck(projects, lookups, facts[owner], owner, reason)

    def read_ahead(due: list[Graced[MemberDeletion | Resource]]) -> None:
        """The owners of the groups about to go, their second looks read a few at once on the
        upstream readers, in the order their groups are deleted."""
        nonlocal looks
        keys = [
            (g.target.owner, g.verdict.reason) for g in due if isinstance(g.target, MemberDeletion)
        ]
        looks = ReadAhead(run.upstream_reads, list(dict.fromkeys(keys)), live_look, AHEAD)

    def recheck(owner: UpstreamOwner, reason: Reason) -> SecondLook:
        found = looks.take((owner, reason)) if looks is not None else None
        look = found.result() if found is not None else live_look((owner, reason))
        if reason == Reason.PROJECT_GONE and look.found is Looked.FAILED:
            run.project_api_failed(SWEEP, look.detail)
        return look

    rechecks = Rechecks(recheck)

    def delete(graced: Graced[MemberDeletion | Resource]) -> list[Outcome]:
        assert isinstance(graced.target, MemberDeletion)  # an orphan always has its target
        return [delete_member(graced.verdict, graced.target, run.deleter, rechecks, enforced)]

    def resource(graced: Graced[MemberDeletion | Resource]) -> Resource:
        target = graced.target
        return target if isinstance(target, Resource) else target.resource

    def owner_of(graced: Graced[MemberDeletion | Resource]) -> UpstreamOwner:
        assert isinstance(graced.target, MemberDeletion)  # only orphans are grouped
        return graced.target.owner

    # An owner's anchors and copies pass the drain cap together or wait together.
    if grace_actions.act(
        run,
        SWEEP,
        sort,
        state.in_scope,
        resource,
        delete,
        group=owner_of,
        before_delete=read_ahead,
    ):
        run.completed(SWEEP)
    return None


def _denied(run: Run, kinds: HubKinds) -> list[str]:
    """What the hub identity may not do of what this sweep needs, as SelfSubjectAccessReviews
    answer; [] when the hub cannot say (each request then fails safe on its own 403)."""
    if not isinstance(run.hub, KubeAccess):
        return []
    verbs: tuple[str, ...] = ("get", "list")
    if run.settings.delete:
        verbs += ("patch", "delete") if SWEEP in run.settings.enforce else ("patch",)
    needs = [(r, verbs) for r in kinds.swept] + [(r, ("list",)) for r in kinds.owners_only]
    try:
        return preflight.missing(
            run.hub, preflight.needed_for(needs, run.settings), run.settings.lock_name
        )
    except KubeError as exc:
        log.warning("cannot check the copies sweep's permissions (%s): going on", exc)
        return []


def _projects_denied(run: Run) -> list[str]:
    """What the Project API's identity may not do of reading projects, as its
    SelfSubjectAccessReviews answer: without `get` or `list` no project is ever proven gone, so
    the sweep says so up front rather than keeping every copy of a deleted project as
    unavailable. [] when there is no Project API or it cannot say."""
    if not isinstance(run.projects, KubeAccess):
        return []
    needs = [
        preflight.Permission(verb, resource, None)
        for resource, verbs in preflight.PROJECT_NEEDS
        for verb in verbs
    ]
    try:
        return preflight.missing(run.projects, needs, run.settings.lock_name)
    except KubeError as exc:
        log.warning("cannot check the Project API identity's permissions (%s): going on", exc)
        return []


def _second_read(
    run: Run, kinds: HubKinds, calls: dict[UpstreamOwner, GroupCall]
) -> list[CopyScan]:
    scans: list[CopyScan] = []
    for resource in kinds.swept:

        def start(resource: Resource = resource) -> CopyScan:
            return CopyScan(resource, calls, run.settings.report_healthy, run.shard)

        scans += scan_kind(run.hub, resource, run.scope, start, run.hub_reads)
    return scans


def _sort_group(
    sort: GraceSort[MemberDeletion | Resource],
    kinds: HubKinds,
    group: list[Member],
    verdicts: tuple[Verdict, ...],
    stays_named: Callable[[str, UpstreamOwner], bool],
    run: Run,
) -> None:
    """One owner's group, judged: its orphans to the grace rule, in deletion order (copies
    first, anchors last), the rest kept. An anchor due while a copy it owns is still in its
    grace period (marked since, or newly: its mark was removed, it was protected) waits for
    that copy: deleted first, the anchor would take the copy with it (the garbage collector),
    before the copy's own grace period is over."""
    resources = {(r.group, r.kind): r for r in kinds.swept}
    by_uid = {m.ref.uid: m for m in group}
    copies_due: dict[str, datetime | None] = {}  # anchor uid -> when its last copy is due
    for verdict in verdicts:
        member = by_uid[verdict.ref.uid]
        anchor = member.anchor_uid
        if verdict.delete and anchor is not None and stays_named(anchor, member.owner):
            detail = "owns an object that stays: an anchor goes only after everything it owns"
            verdict = Verdict(
                verdict.ref, False, Reason.ANCHOR_OWNS_KEPT_COPY, detail, cluster=verdict.cluster
            )
        anchors = (anchor,) if anchor is not None else member.anchors
        target = MemberDeletion(
            resources[(member.replica.group, member.ref.kind)],
            member.owner,
            anchors,
            anchor is not None,
        )
        if verdict.delete:
            evidence = copy_evidence(member.owner, anchors)
            call = grace_call(sort.rule, verdict, evidence, sort.now, sort.grace)
            assert call is not None  # the grace rule always has its say on an orphan
            if anchor is None:
                for uid in anchors:
                    copies_due[uid] = last_due(copies_due.get(uid), call, sort.now, sort.grace)
            else:
                call = anchor_waits(call, copies_due.get(anchor))
            sort.take(verdict, evidence, call, target)
        elif not sort.not_orphan(verdict, target):
            run.keep(SWEEP, verdict)


def _recheck(
    projects: ProjectReads,
    lookups: OwnerLookups,
    facts: OwnerFacts,
    owner: UpstreamOwner,
    reason: Reason,
) -> SecondLook:
    """A live second look at what proves the owner gone for `reason`: its project (one GET
    of it), or the owner and its namespace on its cluster."""
    if reason == Reason.PROJECT_GONE:
        return projects.still_gone(owner.cluster)
    if reason == Reason.UPSTREAM_NAMESPACE_GONE:
        return lookups.second_look(owner, lambda read: read.namespace is Presence.GONE)
    if reason == Reason.OWNER_GONE:
        return lookups.second_look(owner, lambda read: read.owner is Presence.GONE)
    if reason == Reason.OWNER_RECREATED:
        return lookups.second_look(
            owner,
            lambda read: read.owner is Presence.PRESENT and read.owner_uid == facts.read.owner_uid,
        )
    return SecondLook(Looked.FAILED, f"no second look for {reason}")


def _in_order(verdict: Verdict) -> tuple[str, str, str]:
    return verdict.ref.order


def _ref(verdict: Verdict) -> ObjectRef:
    return verdict.ref
