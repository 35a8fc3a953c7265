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
from collections.abc import Callable, Collection, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field

from gcjob import preflight
from gcjob.act.deleter import Deleter
from gcjob.decide.common import anchored_claims
from gcjob.decide.grace import Graced, grace_call
from gcjob.decide.owner_gone import judge_owner
from gcjob.domain import REPLICATED_KINDS, REPLICATED_PLURALS, sorted_names
from gcjob.enumerate.keyset import KeySet
from gcjob.enumerate.owners import OwnerLookups, ProjectReads
from gcjob.enumerate.parallel import ReadAhead, result_of
from gcjob.enumerate.shared import Found
from gcjob.exitcodes import ExitCode
from gcjob.kube.access import KubeAccess
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.resources import HTTPROUTES, Resource
from gcjob.logs import log
from gcjob.marks import Rule
from gcjob.model import (
    Looked,
    ObjectRef,
    Outcome,
    OwnerFacts,
    Presence,
    ProjectCall,
    Replica,
    SecondLook,
    Sweep,
    UpstreamOwner,
    Verdict,
)
from gcjob.reasons import Reason
from gcjob.run import Run
from gcjob.shard import WHOLE, Shard, copy_key
from gcjob.sweeps.boundary import ObjectScan
from gcjob.sweeps.copies.act import (
    MemberDeletion,
    OwnersWanted,
    Rechecks,
    delete_member,
    first_read,
    named_by,
)
from gcjob.sweeps.copies.judge import (
    Member,
    anchors_named,
    copy_left_scope,
    judge_group,
    plan_group,
    understand,
)
from gcjob.sweeps.copies.scan import (
    HubKinds,
    discovers,
    hub_kinds,
    scan_kind,
    scan_marked_outside_copies,
)
from gcjob.sweeps.driver import (
    Candidates,
    Counted,
    Declaration,
    Exits,
    Failed,
    Healthy,
    Incomplete,
    Judged,
    Leaving,
    Named,
    NotConfigured,
    Noted,
    Planned,
    Projects,
    RoundProjects,
    Scan,
    drive,
)

SWEEP = Sweep("copies")
# Every kind it may sweep, and what the RBAC must grant it on the hub for each: read and mark
# (cronjobs/rbac/hub), and `delete` only where it is enforced (`ENFORCING`: the component
# cronjobs/components/enforce-copies). It asks for its own once it knows which kinds the hub
# serves (`_denied`), and a hub identity not granted them yet skips this sweep, not the run.
SWEPT = tuple(
    Resource(group, "", REPLICATED_PLURALS[(group, kind)], kind) for group, kind in REPLICATED_KINDS
)
NEEDS: preflight.Needs = (
    *((resource, preflight.READ_MARK) for resource in SWEPT),
    (HTTPROUTES, ("list",)),
)
ENFORCING: preflight.Needs = tuple((resource, preflight.DELETE) for resource in SWEPT)
# How many owners' live second looks are read ahead of their groups' deletes (as the routes').
AHEAD = 16
ANCHOR_SHAPED = frozenset({"ConfigMap"})


@dataclass
class SecondRead:
    """The second read of one kind in one namespace: kept verdicts to report (each with its
    resource: a mark of an earlier run is removed from it), healthy counts, anchors named by
    what stays, and the members of owners proven gone, for their groups."""

    kept: list[tuple[Verdict, Resource]] = field(default_factory=list)
    healthy: Counter[Reason] = field(default_factory=Counter)
    # Digests, not strings (a string and a set's slot were about 150 bytes a copy that stays):
    # a shared digest keeps an anchor, never the other way round (enumerate/keyset.py).
    named: KeySet = field(default_factory=KeySet)
    members: dict[UpstreamOwner, list[Member]] = field(default_factory=lambda: defaultdict(list))

    def update(self, other: SecondRead) -> None:
        self.kept += other.kept
        self.healthy.update(other.healthy)
        self.named.update(other.named)
        for owner, found in other.members.items():
            self.members[owner] += found


class FactsOf(Mapping[UpstreamOwner, OwnerFacts]):
    """Each owner's facts (its project's call, its cluster's answer), made from what was read
    each time they are asked for, not held: a map of them was about 110 bytes an owner, at
    the sweep's peak."""

    def __init__(
        self,
        owners: Collection[UpstreamOwner],
        calls: Mapping[str, ProjectCall],
        lookups: OwnerLookups,
    ) -> None:
        self._owners = owners
        self._calls = calls
        self._lookups = lookups

    def __getitem__(self, owner: UpstreamOwner) -> OwnerFacts:
        if owner not in self._owners:
            raise KeyError(owner)
        return OwnerFacts(self._calls[owner.cluster], self._lookups.read(owner))

    def __contains__(self, owner: object) -> bool:
        return owner in self._owners

    def __iter__(self) -> Iterator[UpstreamOwner]:
        return iter(self._owners)

    def __len__(self) -> int:
        return len(self._owners)


class CopyScan(ObjectScan[Replica]):
    def __init__(
        self,
        resource: Resource,
        facts: Mapping[UpstreamOwner, OwnerFacts],
        keep_healthy: bool,
        shard: Shard = WHOLE,
    ) -> None:
        super().__init__(shard)
        self.resource = resource
        self.facts = facts
        self.keep_healthy = keep_healthy
        self.judged = SecondRead()
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
        facts = self.facts.get(member.owner)
        if facts is None:  # appeared between the two reads: nobody asked about its owner
            detail = f"{member.owner} not looked up this run: it appeared while the run read"
            verdict = Verdict(replica.ref, False, Reason.UPSTREAM_NOT_READ, detail)
            self.judged.kept.append((verdict, self.resource))
            self._names(replica)
            return
        call = judge_owner(member.owner, facts)
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
        for uid in anchors_named(replica.owners):
            self.judged.named.add(uid)


# A kept object's target is its resource alone: what removing an earlier run's mark needs.
CopyTarget = MemberDeletion | Resource
Kept = tuple[Verdict, Resource]  # a kept verdict, with its resource


def _kept_ref(kept: Kept) -> ObjectRef:
    return kept[0].ref


class Copies(Declaration[Kept, CopyTarget]):
    """Sweep 4, declared (gcjob/sweeps/driver.py runs it): which kinds the hub serves and may
    be swept, the first read (the owners the copies name), the owners upstream and the
    Project API once, then the second read, judging each object as it streams in (CopyScan),
    and the marked objects that left the sweep; each owner proven gone has its group judged
    whole. Before the deletes, each owner (or its project) is looked at again, live, once, a
    few ahead; an owner's anchors and copies pass the drain cap together or wait together.

    `projects`: the round's one judgement of projects, shared with the routes sweep (its
    Project API: `projects.reads`); `found`: what the routes
    sweep's upstream reads found this round, not read again (enumerate/shared.py); `ahead`:
    the reads before judging (`read`), started beside the routes sweep's, if they were."""

    sweep = SWEEP
    rule = Rule.COPY

    def __init__(
        self,
        run: Run,
        projects: RoundProjects,
        found: Found | None = None,
        ahead: Future[OwnersRead] | None = None,
    ) -> None:
        super().__init__(run)
        self.projects = projects
        self.found = found
        self.ahead = ahead
        self.rechecks = Rechecks(self.recheck)
        self.looks: ReadAhead[tuple[UpstreamOwner, Reason], SecondLook] | None = None
        self.facts: dict[UpstreamOwner, OwnerFacts] = {}
        self.lookups: OwnerLookups | None = None

    def scan(self) -> Scan[Kept, CopyTarget]:
        run, settings = self.run, self.run.settings
        if self.ahead is not None:
            try:
                owners = result_of(self.ahead, "the copies' owners read ahead")
            except Stopped as exc:  # not started: the run is ending
                raise Incomplete("stopped while reading upstream owners", exc) from exc
        else:
            owners = read(run, self.found)
        kinds = owners.kinds
        yield Noted("; ".join(f"{name} skipped: {why}" for name, why in kinds.not_served))
        if owners.unswept is not None:
            raise owners.unswept
        assert owners.wanted is not None and owners.lookups is not None  # else unswept
        wanted, named_elsewhere = owners.wanted, owners.named_elsewhere
        lookups = self.lookups = owners.lookups
        del owners  # the judgements below hold what they need of it
        clusters = sorted_names(o.cluster for o in wanted.owners)
        try:
            # The round's one judgement of projects, for the routes sweep too; with --shard,
            # the projects brake counts the projects gone in the whole hub.
            calls_by_cluster = self.projects.calls(named_by(wanted, lookups))
        except Stopped as exc:
            raise Incomplete("stopped while reading the Project API", exc) from exc
        failed = self.projects.reads.failed(clusters)
        del clusters  # not held through the second read
        yield Projects(calls_by_cluster, calls_by_cluster.brake, failed)
        facts = FactsOf(wanted.owners, calls_by_cluster, lookups)
        # Each owner's call is made again for each object that names it (a pure function of
        # its facts), not kept: a call and its detail were about 250 bytes an owner.
        if any(judge_owner(owner, fact).unknown for owner, fact in facts.items()):
            yield Exits(ExitCode.ITEM_FAILED)  # a failed upstream read fails the run
        try:
            scans = _second_read(run, kinds, facts)
        except KubeError as exc:
            raise Incomplete("cannot list the copies", exc) from exc
        try:
            left = scan_marked_outside_copies(run.hub, kinds.swept, run.scope, run.hub_reads)
        except KubeError as exc:
            # A mark left behind could be counted from when the label comes back: decide nothing.
            raise Incomplete("cannot list marked objects that left the sweep", exc) from exc
        leaving = [(copy_left_scope(ref), kind) for kind, ref in left]
        yield Leaving([Graced(g.verdict, g.call, None, kind) for g, kind in leaving if g])
        judged = SecondRead()
        for scan in scans:
            judged.update(scan.judged)
            scan.facts = {}
        judged.named.freeze()
        # Only the owners whose groups are judged are looked at again (live_look).
        self.facts = {owner: facts[owner] for owner in judged.members}
        del facts
        yield Counted(
            sum(s.scanned for s in scans),
            sum(s.in_scope for s in scans),
            sum(s.elsewhere for s in scans),
        )
        yield Failed(scans)
        yield Judged(sorted(judged.kept, key=lambda kept: _in_order(kept[0])), _kept_ref)
        yield Healthy(judged.healthy)

        # Which owners' copies name each anchor: a copy of another owner naming it is kept by
        # its own group's judgement, whatever that is, so the anchor stays (as explain judges
        # it).
        namers: dict[str, set[UpstreamOwner]] = defaultdict(set)
        for owner, members in judged.members.items():
            for member in members:
                for uid in member.anchors:
                    namers[uid].add(owner)

        def stays_named(anchor: str, owner: UpstreamOwner) -> bool:
            """An anchor named by an object that stays, or by another owner's copy (or may be:
            a shared digest keeps it)."""
            return (
                (anchor,) in judged.named
                or ("anchor", "", anchor) in named_elsewhere
                or bool(namers.get(anchor, set()) - {owner})
            )

        def group_plans(owner: UpstreamOwner) -> list[Planned[CopyTarget]]:
            group = judged.members[owner]
            anchors = wanted.anchors_of(owner)
            result = judge_group(
                owner,
                group,
                self.facts[owner],
                anchors,
                run.now,
                settings.min_age,
                settings.clock_skew,
            )
            return self.group_plan(kinds, group, result.verdicts, stays_named)

        def first_member(owner: UpstreamOwner) -> ObjectRef:
            return judged.members[owner][0].ref

        yield Candidates(sorted(judged.members), first_member, group_plans)

    def plan(self, kept: Kept) -> Planned[CopyTarget]:
        verdict, resource = kept
        run = self.run
        call = grace_call(self.rule, verdict, None, run.now, run.settings.grace)
        return Planned(verdict, None, call, resource, None)  # kept: no orphan

    def group_plan(
        self,
        kinds: HubKinds,
        group: list[Member],
        verdicts: tuple[Verdict, ...],
        stays_named: Callable[[str, UpstreamOwner], bool],
    ) -> list[Planned[CopyTarget]]:
        """One owner's group, judged and planned by judge.py `plan_group` (as explain plans
        it), in deletion order (copies first, anchors last), each with what its delete takes."""
        resources = {(r.group, r.kind): r for r in kinds.swept}
        planned = plan_group(
            group,
            verdicts,
            lambda anchor: stays_named(anchor, group[0].owner),  # one owner's group
            self.run.now,
            self.run.settings.grace,
        )
        plans: list[Planned[CopyTarget]] = []
        for step in planned:
            member = step.member
            anchor = member.anchor_uid
            target = MemberDeletion(
                resources[(member.replica.group, member.ref.kind)],
                member.owner,
                (anchor,) if anchor is not None else member.anchors,
                anchor is not None,
            )
            replica = member.replica
            claims = anchored_claims(replica.owners, replica.protect)
            plans.append(Planned(step.verdict, step.evidence, step.call, target, claims))
        return plans

    def resource(self, graced: Graced[CopyTarget]) -> Resource:
        target = graced.target
        return target if isinstance(target, Resource) else target.resource

    def group(self, graced: Graced[CopyTarget]) -> UpstreamOwner:
        assert isinstance(graced.target, MemberDeletion)  # only orphans are grouped
        return graced.target.owner

    def delete(self, graced: Graced[CopyTarget], deleter: Deleter) -> list[Outcome]:
        assert isinstance(graced.target, MemberDeletion)  # an orphan always has its target
        return [delete_member(graced.verdict, graced.target, deleter, self.rechecks)]

    def ahead_of_deletes(self, graced: list[Graced[CopyTarget]]) -> None:
        """The owners of the groups about to go, their second looks read a few at once on the
        upstream readers, in the order their groups are deleted."""
        keys = [
            (g.target.owner, g.verdict.reason)
            for g in graced
            if isinstance(g.target, MemberDeletion)
        ]
        reads = self.run.upstream_reads
        self.looks = ReadAhead(reads, list(dict.fromkeys(keys)), self.live_look, AHEAD)

    def live_look(self, key: tuple[UpstreamOwner, Reason]) -> SecondLook:
        """An owner's live second look: in an upstream reader thread when read ahead."""
        owner, reason = key
        assert self.lookups is not None  # the groups were judged on them
        return _recheck(self.projects.reads, self.lookups, self.facts[owner], owner, reason)

    def recheck(self, owner: UpstreamOwner, reason: Reason) -> SecondLook:
        found = self.looks.take((owner, reason)) if self.looks is not None else None
        look = found.result() if found is not None else self.live_look((owner, reason))
        if reason == Reason.PROJECT_GONE and look.found is Looked.FAILED:
            self.run.project_api_failed(SWEEP, look.detail)
        return look


def sweep(run: Run, projects: ProjectReads, found: Found | None = None) -> None:
    """The copies sweep alone, driven as gcjob/sweeps/__init__.py `execute` drives it."""
    drive(run, Copies(run, RoundProjects(run, projects), found))


@dataclass
class OwnersRead:
    """What the copies sweep reads before it judges: the kinds it sweeps, the owners the
    copies name (the first read of the hub) and what the upstream clusters say of them; or
    why the sweep cannot go on (`unswept`, once the kinds are known). It reports nothing and
    changes nothing of the run, so it can be read ahead, beside the routes sweep."""

    kinds: HubKinds
    wanted: OwnersWanted | None = None
    named_elsewhere: KeySet = field(default_factory=lambda: KeySet().freeze())
    lookups: OwnerLookups | None = None
    unswept: Incomplete | None = None


def named(owners: OwnersRead) -> Named | None:
    """The projects the copies name, for the round's one judgement of projects (driver.py
    `RoundProjects`); None when the copies' reads failed (the sweep then judges none)."""
    if owners.unswept is not None or owners.wanted is None or owners.lookups is None:
        return None
    return named_by(owners.wanted, owners.lookups)


def read(
    run: Run, found: Found | None = None, routes_ended: Callable[[], bool] | None = None
) -> OwnersRead:
    """The kinds swept (raises NotConfigured or Incomplete), the first read of the hub (on
    the hub's readers), then the owners upstream (on the upstream readers). `found`: what the
    routes sweep's upstream reads found this round; `routes_ended`: whether those reads ended,
    when they run beside this one: no owner is read before their Gateways are (or they
    ended)."""
    settings = run.settings
    kinds = swept_kinds(run)
    assert run.upstreams is not None  # swept_kinds said so otherwise
    try:
        wanted, named_elsewhere = first_read(run.hub, kinds, run.scope, run.hub_reads, run.shard)
    except KubeError as exc:
        return OwnersRead(kinds, unswept=Incomplete("cannot list the copies", exc))
    if found is not None and routes_ended is not None:
        found.wait_settled(routes_ended)
    lookups = OwnerLookups(run.upstreams, run.upstream_reads, settings.read_upstream_secrets, found)
    try:
        lookups.load(wanted.owners)
    except Stopped as exc:
        stopped = Incomplete("stopped while reading upstream owners", exc)
        return OwnersRead(kinds, wanted, named_elsewhere, lookups, stopped)
    return OwnersRead(kinds, wanted, named_elsewhere, lookups)


def swept_kinds(run: Run) -> HubKinds:
    """The kinds this run sweeps, read from the hub's discovery. Raises NotConfigured where
    the sweep cannot run (no upstream, a snapshot, permissions missing), Incomplete when
    discovery failed."""
    if run.upstreams is None:
        raise NotConfigured("no upstream configured (--upstream-kubeconfig)")
    if not discovers(run.hub):
        raise NotConfigured(
            "not swept from a snapshot without the hub's discovery (its APIResourceLists)",
            "not run",
        )
    try:
        kinds = hub_kinds(run.hub, run.settings.drop_copy_kinds)
    except KubeError as exc:
        raise Incomplete("cannot tell which kinds the hub serves", exc) from exc
    denied = _denied(run, kinds)
    if denied:
        # Its deletes alone missing: cronjobs/rbac/hub is applied, the component enforcing it not.
        deletes = all(d.startswith("'delete' ") for d in denied)
        grant = "cronjobs/components/enforce-copies" if deletes else "cronjobs/rbac/hub"
        raise NotConfigured(
            f"the hub identity may not {'; '.join(denied)}: grant it ({grant}) to "
            + ("enforce downstream copies" if deletes else "sweep downstream copies"),
            "not run",
        )
    denied = _projects_denied(run)
    if denied:
        raise NotConfigured(
            f"the Project API identity may not {'; '.join(denied)}: grant it "
            "(cronjobs/rbac/projects) to sweep downstream copies",
            "not run",
        )
    return kinds


def _denied(run: Run, kinds: HubKinds) -> list[str]:
    """What the hub identity may not do of what this sweep needs, as SelfSubjectAccessReviews
    answer; [] when the hub cannot say (each request then fails safe on its own 403)."""
    if not isinstance(run.hub, KubeAccess):
        return []
    verbs: tuple[str, ...] = preflight.READ
    if run.settings.delete:
        verbs = preflight.READ_MARK
        if SWEEP in run.settings.enforce:
            verbs += preflight.DELETE
    needs = [(r, verbs) for r in kinds.swept] + [(r, ("list",)) for r in kinds.owners_only]
    try:
        return preflight.missing(run.hub, preflight.needed_for(needs, run.settings))
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
        return preflight.missing(run.projects, needs)
    except KubeError as exc:
        log.warning("cannot check the Project API identity's permissions (%s): going on", exc)
        return []


def _second_read(
    run: Run, kinds: HubKinds, facts: Mapping[UpstreamOwner, OwnerFacts]
) -> list[CopyScan]:
    scans: list[CopyScan] = []
    for resource in kinds.swept:

        def start(resource: Resource = resource) -> CopyScan:
            return CopyScan(resource, facts, run.settings.report_healthy, run.shard)

        scans += scan_kind(run.hub, resource, run.scope, start, run.hub_reads)
    return scans


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
