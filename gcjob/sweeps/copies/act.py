"""Deleting a downstream copy or an anchor: the owner (and its project: one GET of it) proven
gone again, live, once per owner right before its group's first deletion; copies first, the
anchor only when every copy it owns went; deletes pinned to uid and resourceVersion."""

from __future__ import annotations

from collections.abc import Callable, Iterable, KeysView
from dataclasses import dataclass, field
from functools import partial

from gcjob.act.deleter import Deleter, second_look
from gcjob.domain import sorted_names
from gcjob.enumerate.keyset import KeySet
from gcjob.enumerate.owners import OwnerLookups
from gcjob.enumerate.parallel import SERIAL, Reads
from gcjob.enumerate.scope import Scope
from gcjob.kube.reader import Reader
from gcjob.kube.resources import CONFIGMAPS, Resource
from gcjob.model import Action, Outcome, Replica, SecondLook, Sweep, UpstreamOwner, Verdict
from gcjob.reasons import Reason
from gcjob.shard import WHOLE, Shard, copy_key
from gcjob.sweeps.boundary import ObjectScan
from gcjob.sweeps.copies.judge import Member, anchors_named, understand
from gcjob.sweeps.copies.scan import HubKinds, scan_kind
from gcjob.sweeps.driver import Named

SWEEP = Sweep("copies")
# A copy whose delete a finalizer holds went out: it is being deleted, its anchor may follow.
GONE = (Action.DELETED, Action.DELETE_HELD, Action.WOULD_DELETE, Action.ALREADY_GONE)


@dataclass(frozen=True, slots=True)
class MemberDeletion:
    """What deleting one member needs: its resource, its owner, the anchor UIDs it names (an
    anchor: its own), and whether it is an anchor."""

    resource: Resource
    owner: UpstreamOwner
    anchors: tuple[str, ...]
    is_anchor: bool


@dataclass
class Rechecks:
    """The live second look at each owner (or its project), once per owner per run, and which
    anchors keep a copy this run did not delete (the anchor then stays: an anchor goes only
    after every copy it owns, docs/rules.md)."""

    owner_still_gone: Callable[[UpstreamOwner, Reason], SecondLook]
    seen: dict[UpstreamOwner, SecondLook] = field(default_factory=dict)
    anchors_keeping: set[str] = field(default_factory=set)

    def look(self, owner: UpstreamOwner, reason: Reason) -> SecondLook:
        if owner not in self.seen:
            self.seen[owner] = self.owner_still_gone(owner, reason)
        return self.seen[owner]


def delete_member(
    verdict: Verdict,
    target: MemberDeletion,
    deleter: Deleter,
    rechecks: Rechecks,
) -> Outcome:
    held = deleter.held(SWEEP, verdict)
    if held is not None:
        return held
    if target.is_anchor and set(target.anchors) & rechecks.anchors_keeping:
        detail = "a copy it owns was not deleted this run: the anchor goes after it"
        return Outcome.of(SWEEP, verdict, Action.SKIPPED, Reason.ANCHOR_OWNS_KEPT_COPY, detail)
    # Kept unless a read that answered still proves it: `owner-appeared` only on such a
    # read, a lookup failure (exit 1) when it could not be read.
    kept = second_look(SWEEP, verdict, rechecks.look(target.owner, verdict.reason))
    if kept is not None:
        _keeping(rechecks, target)
        return kept
    # Not enforced (the driver's deleter says `would-delete`): what enforcing would do, its
    # anchor included, nothing kept back for it.
    outcome = deleter.delete(SWEEP, verdict, CONFIGMAPS if target.is_anchor else target.resource)
    if outcome.action not in GONE or outcome.reason == Reason.BRAKE:
        _keeping(rechecks, target)
    return outcome


def _keeping(rechecks: Rechecks, target: MemberDeletion) -> None:
    if not target.is_anchor:
        rechecks.anchors_keeping.update(target.anchors)


# -- what judging the groups rests on, read before them (the sweep and explain alike) ------


# UIDs, each once: one UID as its string (almost always: an owner has one anchor), a tuple
# while few (FEW_UIDS), a set past them (a tuple of one is 48 bytes an owner, held for the
# run; a set 216, and a set bounds what many copies naming one owner cost). Read through
# `uids_of`: a string iterated is its characters.
Uids = str | tuple[str, ...] | set[str]
FEW_UIDS = 8


def uids_of(uids: Uids) -> frozenset[str]:
    return frozenset((uids,)) if isinstance(uids, str) else frozenset(uids)


def with_uids(uids: Uids, more: Iterable[str]) -> Uids:
    """`uids` with `more` added, each once; a set given may be changed in place."""
    for uid in more:
        if isinstance(uids, set):
            uids.add(uid)
        elif isinstance(uids, str):
            uids = uids if uid == uids else (uids, uid)
        elif not uids:
            uids = uid
        elif uid not in uids:
            uids = (*uids, uid) if len(uids) < FEW_UIDS else {*uids, uid}
    return uids


class OwnersWanted(ObjectScan[Replica]):
    """The first read: the owners the copies name, and the anchors the hub has of each. With
    --shard, only the owners of this shard's projects; the others' projects are only named,
    for the projects brake (it holds for the whole hub)."""

    def __init__(self, shard: Shard = WHOLE) -> None:
        super().__init__(shard)
        # Every owner the copies name, with its anchors' UIDs (almost always one; () when
        # none): one map, not a set of the owners beside it (about 50 bytes an owner).
        self._anchors: dict[UpstreamOwner, Uids] = {}
        self.elsewhere_clusters: set[str] = set()  # the clusters other shards ask

    def shard_key(self, record: Replica) -> str:
        return copy_key(record.labels, record.ref.namespace)

    def take(self, replica: Replica) -> None:
        member = understand(replica)
        if self.judged_elsewhere(replica):
            if isinstance(member, Member):
                self.elsewhere_clusters.add(member.owner.cluster)
            return
        if isinstance(member, Member):
            uids = self._anchors.get(member.owner, ())
            if member.anchor_uid is not None:
                uids = with_uids(uids, (member.anchor_uid,))
            self._anchors[member.owner] = uids

    def update(self, other: OwnersWanted) -> None:
        """`other`'s owners and anchors added; `other` is not to be used after."""
        self.elsewhere_clusters |= other.elsewhere_clusters
        for owner, uids in other._anchors.items():
            mine = self._anchors.get(owner)
            # An owner first seen here keeps the other's UIDs as they are, not a copy.
            self._anchors[owner] = uids if mine is None else with_uids(mine, uids_of(uids))

    @property
    def owners(self) -> KeysView[UpstreamOwner]:
        """The owners to ask about."""
        return self._anchors.keys()

    def anchors_of(self, owner: UpstreamOwner) -> frozenset[str]:
        """The UIDs of the anchors the hub has of `owner`."""
        return uids_of(self._anchors.get(owner, ()))


class AnchorsNamed(ObjectScan[Replica]):
    """Objects of kinds read only for their anchors (dropped kinds, the routes sweep's
    HTTPRoutes): the anchor UIDs they name stay, so no anchor goes from under them."""

    def __init__(self) -> None:
        super().__init__()
        self.named = KeySet()

    def take(self, replica: Replica) -> None:
        for uid in anchors_named(replica.owners):
            self.named.add("anchor", "", uid)


def named_by(wanted: OwnersWanted, lookups: OwnerLookups) -> Named:
    """The clusters of the owners the copies name (for the round's one judgement of projects,
    the run's and explain's), those that answered (what vouches for the
    Project API) and, with --shard, the clusters other shards judge."""
    return Named(
        sorted_names(o.cluster for o in wanted.owners),
        lookups.answered(),
        sorted_names(wanted.elsewhere_clusters),
    )


def first_read(
    hub: Reader, kinds: HubKinds, scope: Scope, reads: Reads = SERIAL, shard: Shard = WHOLE
) -> tuple[OwnersWanted, KeySet]:
    """Which owners to ask about (with --shard: of this shard's projects), the anchors the hub
    has of each; and the anchors named by the kinds read only for that (every one of them,
    whichever shard: what keeps an anchor is read whole)."""
    wanted = OwnersWanted(shard)
    for resource in kinds.swept:
        scans = scan_kind(hub, resource, scope, partial(OwnersWanted, shard), reads)
        while scans:  # each scan dropped once merged: not every scan's map beside the merged one
            wanted.update(scans.pop())
    named = KeySet()
    for resource in kinds.owners_only:
        for named_scan in scan_kind(hub, resource, scope, AnchorsNamed, reads):
            named.update(named_scan.named)
    return wanted, named.freeze()
