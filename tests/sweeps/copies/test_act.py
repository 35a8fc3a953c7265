"""gcjob/sweeps/copies/act.py: what judging a group rests on, read before it (the owners the
copies name, the anchors named elsewhere), and the deletes: an anchor after every copy it
owns, the owner looked at again once per owner."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gcjob.act.deleter import Deleter
from gcjob.budget import RunBudget
from gcjob.kube.resources import JUDGED_RESOURCES
from gcjob.model import Action, Looked, ObjectRef, SecondLook, UpstreamOwner, Verdict
from gcjob.reasons import Reason
from gcjob.sweeps.copies.act import (
    FEW_UIDS,
    AnchorsNamed,
    MemberDeletion,
    OwnersWanted,
    Rechecks,
    Uids,
    delete_member,
    uids_of,
    with_uids,
)
from gcjob.sweeps.copies.scan import replica
from testbed.milo import NET, labels

CONNECTORS = JUDGED_RESOURCES["Connector"]
CONFIGMAPS = JUDGED_RESOURCES["ConfigMap"]
U1 = "0b6a2c1e-1111-4222-8333-944455556666"
U9 = "9f8e7d6c-5b4a-4392-8187-a6b5c4d3e2f1"
OWNER = UpstreamOwner("proj-a", NET, "Connector", "app", "web")


def _obj(kind: str, name: str, uid: str, *, owner_uid: str = "", anchor: bool = False) -> Any:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": uid,
        "resourceVersion": "1",
        "creationTimestamp": "2026-07-01T10:00:00Z",
        "labels": labels("proj-a", NET, "Connector", "app", "web"),
    }
    if owner_uid:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": f"anchor-{owner_uid}",
                "uid": owner_uid,
            }
        ]
    api = "v1" if anchor else f"{NET}/v1alpha1"
    return {"apiVersion": api, "kind": kind, "metadata": meta}


def test_the_first_read_gathers_each_owner_and_its_anchors() -> None:
    wanted = OwnersWanted()
    anchor = replica(CONFIGMAPS)(_obj("ConfigMap", f"anchor-{U1}", "a-1", anchor=True))
    copied = replica(CONNECTORS)(_obj("Connector", "web", "c-1", owner_uid=U1))
    wanted.add(anchor)
    wanted.add(copied)
    assert wanted.scanned == 2 and not wanted.failed
    assert len(wanted.owners) == 1
    (owner,) = wanted.owners
    assert (owner.cluster, owner.kind, owner.namespace, owner.name) == (
        "proj-a",
        "Connector",
        "app",
        "web",
    )
    assert wanted.anchors_of(owner) == {U1}  # the upstream uid its name carries


def test_objects_read_only_for_their_anchors_name_them() -> None:
    named = AnchorsNamed()
    named.add(replica(CONNECTORS)(_obj("Connector", "kept", "c-2", owner_uid=U9)))
    assert ("anchor", "", U9) in named.named.freeze()
    assert ("anchor", "", U1) not in named.named


def _verdict(kind: str, name: str, uid: str) -> Verdict:
    ref = ObjectRef(f"{NET}/v1alpha1", kind, "ns", name, uid, "1", None)
    return Verdict(ref, True, Reason.PROJECT_GONE, "project proj-a is gone")


def test_the_owner_is_looked_at_again_once_and_an_anchor_waits_for_its_kept_copy() -> None:
    looks: list[UpstreamOwner] = []

    def look(owner: UpstreamOwner, reason: Reason) -> SecondLook:
        looks.append(owner)
        return SecondLook(Looked.NO_LONGER if len(looks) == 1 else Looked.PROVEN, "read again")

    rechecks = Rechecks(look)
    deleter = Deleter(None, dry_run=True, budget=RunBudget(None), qps=0)
    copy_target = MemberDeletion(CONNECTORS, OWNER, (U1,), is_anchor=False)
    kept = delete_member(_verdict("Connector", "web", "c-1"), copy_target, deleter, rechecks)
    assert kept.action is Action.SKIPPED  # the owner is no longer proven gone
    assert rechecks.anchors_keeping == {U1}
    anchor_target = MemberDeletion(CONFIGMAPS, OWNER, (U1,), is_anchor=True)
    anchor_verdict = _verdict("ConfigMap", f"anchor-{U1}", "a-1")
    held = delete_member(anchor_verdict, anchor_target, deleter, rechecks)
    assert (held.action, held.reason) == (Action.SKIPPED, Reason.ANCHOR_OWNS_KEPT_COPY)
    assert looks == [OWNER]  # one look for the owner, whatever its members


def test_a_copy_still_proven_gone_would_be_deleted_in_a_dry_run() -> None:
    rechecks = Rechecks(lambda owner, reason: SecondLook(Looked.PROVEN, "still gone"))
    deleter = Deleter(None, dry_run=True, budget=RunBudget(None), qps=0)
    target = MemberDeletion(CONNECTORS, OWNER, (U1,), is_anchor=False)
    outcome = delete_member(_verdict("Connector", "web", "c-1"), target, deleter, rechecks)
    assert (outcome.action, outcome.reason) == (Action.WOULD_DELETE, Reason.PROJECT_GONE)
    assert rechecks.anchors_keeping == set()


@given(batches=st.lists(st.lists(st.sampled_from([f"uid-{n}" for n in range(12)]), max_size=6)))
def test_an_owners_anchor_uids_are_each_kept_once_in_a_tuple_while_few(
    batches: list[list[str]],
) -> None:
    """What the first read keeps of an owner's anchors: every UID named, once; one as its
    string (an owner has one anchor, almost always), a tuple while few, a set past them, so
    that many copies naming one owner cost no more than a set."""
    uids: Uids = ()
    for batch in batches:
        uids = with_uids(uids, batch)
    named = {uid for batch in batches for uid in batch}
    assert uids_of(uids) == named
    if len(named) == 1:
        assert isinstance(uids, str)
    elif len(named) <= FEW_UIDS:
        assert isinstance(uids, tuple) and len(uids) == len(named)
    else:
        assert isinstance(uids, set)
