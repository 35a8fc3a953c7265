"""Sweep 4, downstream copies: the judgement of one upstream owner's group (its anchors and
copies on the hub) against what the world says of that owner. Pure: no I/O, no clock.

Each rule closes a way a live object could look orphaned (docs/rules.md, "Downstream copies"):
- a copy is what NSO wrote: five labels it understands, its own name, group and kind the
  labels'; an anchor is a ConfigMap `anchor-<canonical uuid>` with the labels and nothing else;
  a label value at the 63-character limit may be cut short: it proves nothing (all three are
  decide/upstream_labels.py's, the one rule the routes sweep applies too);
- the owner is proven gone by its project (the Project API), its upstream namespace, a
  NotFound naming it, or by existing under another UID than the anchor's, once NSO has
  caught up with the new owner;
- the group goes whole or waits: copies first, the anchor last, and an anchor is kept while
  any copy it owns is kept (NSO takes a copy away by deleting its anchor: an anchor gone
  first would leave the copy without that link).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from gcjob.decide.common import CANONICAL_UUID, check_owners, hold_back, is_anchor
from gcjob.decide.grace import GraceCall, Graced, Next, due_by, grace_call, later, left_scope
from gcjob.decide.owner_gone import GroupCall, judge_owner
from gcjob.decide.trace import Trace, given
from gcjob.decide.upstream_labels import NotCopied, copy_of
from gcjob.domain import ANCHOR_PREFIX, UPSTREAM_KIND_LABEL
from gcjob.marks import Evidence, Rule, copy_evidence
from gcjob.model import (
    ObjectRef,
    OwnerFacts,
    OwnerRef,
    Replica,
    UpstreamOwner,
    Verdict,
)
from gcjob.reasons import Reason


@dataclass(frozen=True, slots=True)
class Member:
    """A replica understood as part of an owner's group."""

    replica: Replica
    owner: UpstreamOwner
    anchor_uid: str | None  # an anchor's: the owner UID its name carries; None for a copy
    anchors: tuple[str, ...] = ()  # a copy's: the anchor UIDs its ownerReferences name

    @property
    def ref(self) -> ObjectRef:
        return self.replica.ref


def understand(replica: Replica, trace: Trace | None = None) -> Member | Verdict:
    """The replica as a member of its owner's group, or a Verdict keeping it: it is not what
    NSO writes (decide/upstream_labels.py, the rule the routes sweep applies too), or another
    owner manages it, so nothing about an upstream owner can be concluded from it."""
    trace = given(trace)
    ref = replica.ref
    found = copy_of(ref.name, replica.group, ref.kind, replica.labels, replica.owners, trace)
    if isinstance(found, NotCopied):
        return Verdict(ref, False, found.reason, found.detail)
    if found.anchor_uid is not None:
        return Member(replica, found.owner, found.anchor_uid)
    held = check_owners(replica.owners, trace, ours=is_anchor, controllers_only=True)
    if held is not None:
        return Verdict(ref, False, *held)
    anchors = tuple(
        sorted({uid for o in replica.owners if is_anchor(o) for uid in [_anchor_ref_uid(o)]})
    )
    return Member(replica, found.owner, None, anchors)


def anchors_named(owners: Sequence[OwnerRef]) -> list[str]:
    """The owner UIDs in the names of an object's anchor-like ownerReferences: read loosely
    (any `anchor-` name), for keeping anchors; a loose read keeps more, never less."""
    return [o.name.removeprefix(ANCHOR_PREFIX) for o in owners if o.name.startswith(ANCHOR_PREFIX)]


def _anchor_ref_uid(owner: OwnerRef) -> str:
    return owner.name.removeprefix(ANCHOR_PREFIX)


@dataclass(frozen=True, slots=True)
class GroupJudgement:
    """One owner's group, judged whole: a verdict per member, in the order they would be
    deleted (copies first, anchors last)."""

    owner: UpstreamOwner
    call: GroupCall
    verdicts: tuple[Verdict, ...]
    traces: Mapping[str, Trace]  # by member uid: each member's own steps

    @property
    def orphans(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.delete)


def stale_anchors(
    members: Sequence[Member],
    call: GroupCall,
    facts: OwnerFacts,
    anchors_on_hub: frozenset[str],
    clock_skew: timedelta,
) -> tuple[frozenset[str], str]:
    """For an owner that exists under a new UID: the anchors of this group that belong to a
    previous owner of the same name, and, when there are none, why not. Both UIDs canonical,
    NSO caught up (`anchor-<current uid>` on the hub), and the owner created after the old
    anchor by more than the clock skew."""
    current = call.current_uid
    if not call.exists:
        return frozenset(), ""
    if not CANONICAL_UUID.fullmatch(current):
        return frozenset(), f"{call.detail}: not a canonical uid to compare"
    if current not in anchors_on_hub:
        return frozenset(), f"{call.detail}, but anchor-{current} is not on the hub yet"
    if facts.read.owner_created is None:
        return frozenset(), f"{call.detail}: its creation time is unknown"
    stale = frozenset(
        m.anchor_uid
        for m in members
        if m.anchor_uid is not None
        and m.anchor_uid != current
        and m.ref.created is not None
        and facts.read.owner_created > m.ref.created + clock_skew
    )
    return stale, "" if stale else f"{call.detail}: created before no anchor of another uid"


def judge_group(
    owner: UpstreamOwner,
    members: Sequence[Member],
    facts: OwnerFacts,
    anchors_on_hub: frozenset[str],
    now: datetime,
    min_age: timedelta,
    clock_skew: timedelta,
) -> GroupJudgement:
    """Judge an owner's anchors and copies as one. `anchors_on_hub`: the owner UIDs of every
    anchor of this owner the hub has (re-created owners: has NSO caught up?). `clock_skew`:
    how far the hub's and the upstream's clocks may be apart."""
    owner_trace = Trace()
    call = judge_owner(owner, facts, owner_trace)
    stale, not_stale = stale_anchors(members, call, facts, anchors_on_hub, clock_skew)
    traces: dict[str, Trace] = {}
    verdicts: dict[str, Verdict] = {}
    for member in sorted(members, key=_delete_order):
        trace = Trace(list(owner_trace.steps))
        traces[member.ref.uid] = trace
        verdicts[member.ref.uid] = _judge_member(
            member, call, stale, not_stale, now, min_age, trace
        )
    # An anchor goes last and only with everything it owns: a kept copy keeps its anchor.
    for member in members:
        if member.anchor_uid is None or not verdicts[member.ref.uid].delete:
            continue
        kept = [
            m
            for m in members
            if m.anchor_uid is None
            and member.anchor_uid in m.anchors
            and not verdicts[m.ref.uid].delete
        ]
        if kept:
            first = kept[0].ref
            detail = (
                f"owns {first.kind} {first.name}, which is kept: an anchor goes only after "
                "every copy it owns"
            )
            traces[member.ref.uid].hold("owns-nothing-kept", Reason.ANCHOR_OWNS_KEPT_COPY, detail)
            verdicts[member.ref.uid] = Verdict(
                member.ref, False, Reason.ANCHOR_OWNS_KEPT_COPY, detail, cluster=owner.cluster
            )
        else:
            traces[member.ref.uid].passed("owns-nothing-kept", "every copy it owns goes with it")
    ordered = tuple(verdicts[m.ref.uid] for m in sorted(members, key=_delete_order))
    return GroupJudgement(owner, call, ordered, traces)


def _delete_order(member: Member) -> tuple[bool, tuple[str, str, str]]:
    return (member.anchor_uid is not None, member.ref.order)


def _judge_member(
    member: Member,
    call: GroupCall,
    stale: frozenset[str],
    not_stale: str,
    now: datetime,
    min_age: timedelta,
    trace: Trace,
) -> Verdict:
    ref, owner = member.ref, member.owner
    cluster = owner.cluster

    def keep(reason: Reason, detail: str, healthy: bool = False) -> Verdict:
        return Verdict(ref, False, reason, detail, healthy=healthy, cluster=cluster)

    if call.proof is None and not call.exists:
        return keep(call.reason, call.detail)
    reason, detail = call.reason, call.detail
    if call.exists:
        # Only what belongs to a previous owner of this name goes: an anchor of an old uid,
        # a copy none of whose anchors is the current owner's (NSO moves copies over).
        mine = (member.anchor_uid,) if member.anchor_uid is not None else member.anchors
        if not mine or call.current_uid in mine:
            trace.held_at("same-owner", call.detail)
            return keep(Reason.OWNER_EXISTS, call.detail, healthy=True)
        if not stale or not set(mine) <= stale:
            why = not_stale or f"{call.detail}: anchor {', '.join(mine)} not proven stale"
            trace.hold("same-owner", Reason.OWNER_EXISTS, why)
            return keep(Reason.OWNER_EXISTS, why)
        reason = Reason.OWNER_RECREATED
        detail = f"{owner} was re-created (uid {call.current_uid}): this belonged to uid {mine[0]}"
        trace.passed("same-owner", detail)
    held = hold_back(ref, now, min_age, member.replica.protect, trace)
    if held is not None:
        held_reason, held_detail = held
        if held_reason in (Reason.PROTECTED, Reason.PROTECT_NOT_UNDERSTOOD):
            # A protected orphan is counted apart (it is seen): say what it would be.
            held_detail = f"{held_detail}; an orphan otherwise ({reason}: {detail})"
        return keep(held_reason, held_detail)
    return Verdict(ref, True, reason, detail, cluster=cluster)


ANCHOR_STAYS = "owns an object that stays: an anchor goes only after everything it owns"


def anchor_kept(verdict: Verdict, stays_named: bool, trace: Trace | None = None) -> Verdict:
    """An anchor its group's judgement would delete while an object that stays names it
    (`stays_named`: one outside the group, or another owner's copy): kept, or the garbage
    collector would take that object with it. The sweep and explain alike."""
    if not verdict.delete or not stays_named:
        return verdict
    given(trace).hold("owns-nothing-kept", Reason.ANCHOR_OWNS_KEPT_COPY, ANCHOR_STAYS)
    return Verdict(
        verdict.ref, False, Reason.ANCHOR_OWNS_KEPT_COPY, ANCHOR_STAYS, cluster=verdict.cluster
    )


LEFT_COPY = f"no longer labelled {UPSTREAM_KIND_LABEL}: out of the copies sweep, its mark with it"


def copy_left_scope(ref: ObjectRef) -> Graced[None] | None:
    """An object carrying this sweep's mark that it no longer selects: the mark goes."""
    return left_scope(ref, Rule.COPY, LEFT_COPY)


def last_due(
    before: datetime | None, copy: GraceCall, now: datetime, grace: timedelta
) -> datetime | None:
    """When the last copy of an anchor still in its grace period is due, with `copy` (its
    orphan's grace call) counted in: `before` when `copy` is due now (None: none waits)."""
    if copy.next is Next.DELETE:
        return before
    due = copy.due or later(now, grace)
    return due if before is None else max(before, due)


def anchor_waits(
    anchor: GraceCall, copies_due: datetime | None, trace: Trace | None = None
) -> GraceCall:
    """An orphaned anchor's grace call, given when the last of the copies it owns that are
    still in their grace period is due (None: none is). A due anchor waits for them: deleted
    first, it would have the garbage collector take them before their own grace is over."""
    if anchor.next is not Next.DELETE or copies_due is None:
        return anchor
    waits = f"waits for a copy it owns, still in its grace period: {due_by(copies_due)}"
    given(trace).held_at("copies-grace", waits)
    return replace(anchor, next=Next.WAIT, detail=f"{anchor.detail}; {waits}", due=copies_due)


@dataclass(frozen=True, slots=True)
class MemberPlan:
    """One member of a judged group, planned: its verdict (an anchor kept for what names it
    included), what an orphan's verdict rests on, and the grace rule's call."""

    member: Member
    verdict: Verdict
    evidence: Evidence | None
    call: GraceCall | None


def plan_group(
    group: Sequence[Member],
    verdicts: Sequence[Verdict],
    stays_named: Callable[[str], bool],
    now: datetime,
    grace: timedelta,
    traces: Mapping[str, Trace] | None = None,
) -> list[MemberPlan]:
    """One owner's group, judged (`verdicts` in deletion order: copies first, anchors last),
    planned: an anchor an object that stays names is kept (`anchor_kept`); each orphan goes by
    the grace rule; an anchor due while a copy it owns is still in its grace period (marked
    since, or newly: its mark was removed, it was protected) waits for that copy
    (`anchor_waits`). The sweep and explain alike, so they cannot disagree. `traces`: the
    members whose steps are recorded, by uid (explain's target)."""
    by_uid = {m.ref.uid: m for m in group}
    copies_due: dict[str, datetime | None] = {}  # anchor uid -> when its last copy is due
    plans: list[MemberPlan] = []
    for verdict in verdicts:
        member = by_uid[verdict.ref.uid]
        trace = (traces or {}).get(member.ref.uid)
        anchor = member.anchor_uid
        if verdict.delete and anchor is not None:
            verdict = anchor_kept(verdict, stays_named(anchor), trace)
        if not verdict.delete:
            call = grace_call(Rule.COPY, verdict, None, now, grace, trace)
            plans.append(MemberPlan(member, verdict, None, call))
            continue
        mine = (anchor,) if anchor is not None else member.anchors
        evidence = copy_evidence(member.owner, mine)
        orphan = grace_call(Rule.COPY, verdict, evidence, now, grace, trace)
        assert orphan is not None  # the grace rule always has its say on an orphan
        if anchor is None:
            for uid in mine:
                copies_due[uid] = last_due(copies_due.get(uid), orphan, now, grace)
        else:
            orphan = anchor_waits(orphan, copies_due.get(anchor), trace)
        plans.append(MemberPlan(member, verdict, evidence, orphan))
    return plans
