"""gcjob/sweeps/copies/judge.py: an owner's anchors and copies, judged as one group."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.decide.trace import StepOutcome, Trace
from gcjob.domain import (
    GATEWAY_SYNC_LABEL,
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_NAME_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
)
from gcjob.model import (
    ObjectRef,
    OwnerFacts,
    OwnerRead,
    OwnerRef,
    Presence,
    ProjectCall,
    ProjectState,
    Replica,
    UpstreamOwner,
    Verdict,
)
from gcjob.reasons import Reason
from gcjob.settings import CLOCK_SKEW
from gcjob.sweeps.copies.judge import (
    ANCHOR_STAYS,
    Member,
    anchor_kept,
    judge_group,
    understand,
)
from testbed.model import HUB_NS, MIN_AGE, NOW, OLD, PROTECTED, YOUNG
from testbed.model import ref as ref_of

OLD_UID = "11111111-1111-4111-8111-111111111111"
NEW_UID = "22222222-2222-4222-8222-222222222222"
LIVE = ProjectCall(ProjectState.PRESENT, "project p1 exists")
GONE = ProjectCall(ProjectState.GONE, "project p1 not found by the Project API")


def labels(kind: str = "Connector", group: str = "networking.datumapis.com", name: str = "web"):
    return {
        UPSTREAM_CLUSTER_LABEL: "cluster-p1",
        UPSTREAM_GROUP_LABEL: group,
        UPSTREAM_KIND_LABEL: kind,
        UPSTREAM_NAME_LABEL: name,
        UPSTREAM_NAMESPACE_LABEL: "default",
    }


def obj(kind: str, name: str, uid: str, *, api_version: str, created=OLD, terminating=False):
    return ObjectRef(api_version, kind, HUB_NS, name, uid, "7", created, terminating)


def copy(
    name: str = "web",
    uid: str = "c-1",
    anchors: tuple[str, ...] = (OLD_UID,),
    *,
    created=OLD,
    protected: bool = False,
    terminating: bool = False,
    extra_owners: tuple[OwnerRef, ...] = (),
) -> Replica:
    owners = tuple(OwnerRef("v1", "ConfigMap", f"anchor-{a}", False) for a in anchors)
    ref = obj(
        "Connector",
        name,
        uid,
        api_version="networking.datumapis.com/v1alpha1",
        created=created,
        terminating=terminating,
    )
    return Replica(
        ref,
        "networking.datumapis.com",
        labels(name=name),
        owners + extra_owners,
        PROTECTED if protected else (),
    )


def anchor(owner_uid: str = OLD_UID, uid: str = "a-1", *, created=OLD) -> Replica:
    ref = obj("ConfigMap", f"anchor-{owner_uid}", uid, api_version="v1", created=created)
    return Replica(ref, "", labels())


def members(*replicas: Replica) -> list[Member]:
    out = []
    for replica in replicas:
        member = understand(replica)
        assert isinstance(member, Member), member
        out.append(member)
    return out


OWNER = UpstreamOwner("p1", "networking.datumapis.com", "Connector", "default", "web")


def facts(project: ProjectCall = LIVE, **kw) -> OwnerFacts:
    base = dict(
        cluster_available=True,
        resolved=True,
        resolve_detail="connectors.networking.datumapis.com",
        namespace=Presence.PRESENT,
        owner=Presence.GONE,
    )
    base.update(kw)
    return OwnerFacts(project, OwnerRead(**base))  # type: ignore[arg-type]


def by_name(verdicts: tuple[Verdict, ...]) -> dict[str, Verdict]:
    return {v.ref.name: v for v in verdicts}


def judge(replicas, world: OwnerFacts, on_hub=frozenset({OLD_UID})):
    return judge_group(
        OWNER, members(*replicas), world, frozenset(on_hub), NOW, MIN_AGE, CLOCK_SKEW
    )


# -- what is a copy, what is an anchor ------------------------------------------------


def test_a_copy_names_its_owner_and_its_anchor():
    member = understand(copy())
    assert isinstance(member, Member)
    assert member.owner == OWNER and member.anchors == (OLD_UID,) and member.anchor_uid is None


def test_an_anchor_carries_the_owner_uid_in_its_name():
    member = understand(anchor())
    assert isinstance(member, Member) and member.anchor_uid == OLD_UID


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({UPSTREAM_GROUP_LABEL: "core"}, Reason.UPSTREAM_GROUP_NOT_UNDERSTOOD),
        ({UPSTREAM_GROUP_LABEL: "v1"}, Reason.UPSTREAM_GROUP_NOT_UNDERSTOOD),
        ({UPSTREAM_NAME_LABEL: "other"}, Reason.NOT_A_COPY),
        ({UPSTREAM_KIND_LABEL: "HTTPProxy"}, Reason.NOT_A_COPY),
        ({UPSTREAM_CLUSTER_LABEL: "p1"}, Reason.CLUSTER_LABEL_MALFORMED),
        ({UPSTREAM_NAMESPACE_LABEL: "Default"}, Reason.UPSTREAM_NAMESPACE_MALFORMED),
        ({UPSTREAM_NAMESPACE_LABEL: "n" * 63}, Reason.LABEL_AT_LIMIT),
    ],
)
def test_labels_not_understood_keep_the_object(change, reason):
    replica = copy()
    replica = Replica(replica.ref, replica.group, {**replica.labels, **change}, replica.owners)
    verdict = understand(replica)
    assert isinstance(verdict, Verdict) and not verdict.delete and verdict.reason is reason


def test_a_missing_label_keeps_it():
    replica = copy()
    partial = {k: v for k, v in replica.labels.items() if k != UPSTREAM_GROUP_LABEL}
    verdict = understand(Replica(replica.ref, replica.group, partial, replica.owners))
    assert isinstance(verdict, Verdict) and verdict.reason is Reason.LABELS_MISSING


def test_a_tenant_configmap_named_anchor_something_is_no_anchor():
    ref = obj("ConfigMap", "anchor-web", "u", api_version="v1")
    verdict = understand(Replica(ref, "", labels(kind="ConfigMap", group="", name="anchor-web")))
    # Not an anchor (no uuid) and not a synced ConfigMap copy: kept.
    assert isinstance(verdict, Verdict) and verdict.reason is Reason.NOT_A_COPY


def test_a_synced_configmap_named_like_an_anchor_is_a_copy_not_an_anchor():
    name = f"anchor-{OLD_UID}"
    ref = obj("ConfigMap", name, "u", api_version="v1")
    replica = Replica(
        ref, "", {**labels(kind="ConfigMap", group="", name=name), GATEWAY_SYNC_LABEL: "x"}
    )
    member = understand(replica)
    assert isinstance(member, Member) and member.anchor_uid is None


def test_a_foreign_controller_keeps_the_copy():
    foreign = OwnerRef("apps/v1", "Deployment", "web", True)
    verdict = understand(copy(extra_owners=(foreign,)))
    assert isinstance(verdict, Verdict) and verdict.reason is Reason.OWNED


# -- the owner's group -----------------------------------------------------------------


def test_owner_gone_takes_copies_first_and_the_anchor_last():
    result = judge([anchor(), copy("web", "c-1")], facts(owner=Presence.GONE))
    assert [v.ref.kind for v in result.verdicts] == ["Connector", "ConfigMap"]
    assert all(v.delete and v.reason is Reason.OWNER_GONE for v in result.verdicts)


def test_project_gone_is_proof_even_with_the_cluster_unreachable():
    world = facts(project=GONE, cluster_available=False, owner=Presence.UNKNOWN)
    result = judge([anchor(), copy()], world)
    assert all(v.delete and v.reason is Reason.PROJECT_GONE for v in result.verdicts)


@pytest.mark.parametrize(
    ("world", "reason"),
    [
        (facts(project=ProjectCall(ProjectState.TERMINATING, "t")), Reason.PROJECT_TERMINATING),
        (facts(cluster_available=False), Reason.UPSTREAM_UNAVAILABLE),
        (facts(resolved=False), Reason.OWNER_UNRESOLVED),
        (facts(namespace=Presence.TERMINATING), Reason.UPSTREAM_NAMESPACE_TERMINATING),
        (facts(namespace=Presence.UNKNOWN), Reason.LOOKUP_FAILED),
        (facts(owner=Presence.UNKNOWN), Reason.LOOKUP_FAILED),
        (facts(owner=Presence.TERMINATING), Reason.OWNER_TERMINATING),
        (facts(owner=Presence.PRESENT, owner_uid=OLD_UID), Reason.OWNER_EXISTS),
    ],
)
def test_an_owner_not_proven_gone_keeps_the_whole_group(world, reason):
    result = judge([anchor(), copy()], world)
    assert not result.orphans
    assert {v.reason for v in result.verdicts} == {reason}


def test_namespace_gone_is_its_own_reason():
    result = judge([anchor(), copy()], facts(namespace=Presence.GONE, owner=Presence.UNKNOWN))
    assert all(v.delete and v.reason is Reason.UPSTREAM_NAMESPACE_GONE for v in result.verdicts)


def test_a_kept_copy_keeps_its_anchor():
    result = judge([anchor(), copy("web", "c-1", created=YOUNG)], facts())
    verdicts = by_name(result.verdicts)
    assert verdicts["web"].reason is Reason.TOO_YOUNG
    assert verdicts[f"anchor-{OLD_UID}"].reason is Reason.ANCHOR_OWNS_KEPT_COPY
    assert not result.orphans


def test_a_protected_orphan_says_what_it_would_be():
    result = judge([copy(protected=True)], facts(project=GONE))
    (verdict,) = result.verdicts
    assert verdict.reason is Reason.PROTECTED and "project-gone" in verdict.detail


def test_a_copy_without_an_anchor_goes_on_owner_evidence():
    result = judge([copy(anchors=())], facts(owner=Presence.GONE))
    assert [v.reason for v in result.orphans] == [Reason.OWNER_GONE]


def recreated(**kw) -> OwnerFacts:
    base = dict(
        owner=Presence.PRESENT, owner_uid=NEW_UID, owner_created=OLD + timedelta(minutes=30)
    )
    base.update(kw)
    return facts(**base)


def test_a_recreated_owner_takes_only_the_old_anchor_and_its_copies():
    old_anchor = anchor(OLD_UID, "a-old", created=OLD)
    new_anchor = anchor(NEW_UID, "a-new", created=OLD + timedelta(minutes=31))
    moved = copy("web", "c-moved", anchors=(OLD_UID, NEW_UID))
    stale = copy("web", "c-stale", anchors=(OLD_UID,))
    result = judge([old_anchor, new_anchor, moved, stale], recreated(), {OLD_UID, NEW_UID})
    gone = {v.ref.uid for v in result.orphans}
    assert gone == {"c-stale"}  # a-old owns c-moved, which NSO is moving over: kept
    verdicts = {v.ref.uid: v for v in result.verdicts}
    assert verdicts["a-old"].reason is Reason.ANCHOR_OWNS_KEPT_COPY
    assert verdicts["c-stale"].reason is Reason.OWNER_RECREATED
    assert verdicts["a-new"].healthy and verdicts["c-moved"].healthy


def test_a_recreated_owner_and_no_new_anchor_yet_keeps_everything():
    result = judge([anchor(OLD_UID), copy()], recreated(), {OLD_UID})
    assert not result.orphans


def test_a_recreated_owner_within_the_clock_skew_keeps_everything():
    world = recreated(owner_created=OLD + CLOCK_SKEW)
    result = judge([anchor(OLD_UID), copy()], world, {OLD_UID, NEW_UID})
    assert not result.orphans


def test_an_owner_uid_that_is_not_canonical_proves_nothing():
    shouted = "AAAAAAAA-2222-4222-8222-222222222222"  # the same uuid, not as Kubernetes writes it
    world = recreated(owner_uid=shouted)
    result = judge([anchor(OLD_UID), copy()], world, {OLD_UID, shouted})
    assert not result.orphans


# -- generated: no input ends the judgement; what stays is never deleted ----------------

TEXT = st.text(max_size=70)
LABEL_VALUES = st.one_of(
    TEXT,
    st.sampled_from(
        ["", "core", "v1", "cluster-p1", "Connector", "web", "default", "networking.datumapis.com"]
    ),
)


@st.composite
def replicas(draw):
    keys = [
        UPSTREAM_CLUSTER_LABEL,
        UPSTREAM_GROUP_LABEL,
        UPSTREAM_KIND_LABEL,
        UPSTREAM_NAME_LABEL,
        UPSTREAM_NAMESPACE_LABEL,
        GATEWAY_SYNC_LABEL,
    ]
    base = copy() if draw(st.booleans()) else anchor()
    chosen = dict(base.labels)
    for key in draw(st.lists(st.sampled_from(keys), max_size=4)):
        if draw(st.booleans()):
            chosen[key] = draw(LABEL_VALUES)
        else:
            chosen.pop(key, None)
    name = draw(st.one_of(st.just(base.ref.name), TEXT))
    owners = tuple(
        draw(
            st.lists(
                st.builds(
                    OwnerRef,
                    st.sampled_from(["v1", "apps/v1", ""]),
                    st.sampled_from(["ConfigMap", "Deployment"]),
                    st.one_of(st.just(f"anchor-{OLD_UID}"), st.just(f"anchor-{NEW_UID}"), TEXT),
                    st.booleans(),
                ),
                max_size=3,
            )
        )
    )
    ref = ObjectRef(
        base.ref.api_version,
        base.ref.kind,
        HUB_NS,
        name,
        draw(st.sampled_from(["u1", "u2", "u3", ""])),
        draw(st.sampled_from(["7", ""])),
        draw(st.sampled_from([OLD, YOUNG, None])),
        draw(st.booleans()),
    )
    protect = draw(
        st.sampled_from([(), PROTECTED, (("label gcjob.datumapis.com/protect", "yes"),)])
    )
    return Replica(ref, base.group, chosen, owners, protect)


WORLDS = st.builds(
    facts,
    project=st.sampled_from(
        [
            LIVE,
            GONE,
            ProjectCall(ProjectState.UNKNOWN, "u"),
            ProjectCall(ProjectState.TERMINATING, "t"),
            ProjectCall(ProjectState.NOT_A_PROJECT, "n"),
        ]
    ),
    cluster_available=st.booleans(),
    resolved=st.booleans(),
    namespace=st.sampled_from(list(Presence)),
    owner=st.sampled_from(list(Presence)),
    owner_uid=st.sampled_from([OLD_UID, NEW_UID, "", "x"]),
    owner_created=st.sampled_from([None, OLD, OLD + timedelta(hours=1)]),
)


@given(st.lists(replicas(), max_size=6), WORLDS, st.frozensets(st.sampled_from([OLD_UID, NEW_UID])))
def test_generated_groups_never_delete_what_must_stay(replicas_, world, on_hub):
    understood = []
    for replica in replicas_:
        result = understand(replica)  # never raises
        if isinstance(result, Member) and result.owner == OWNER:
            understood.append(result)
    # Distinct uids, as the hub has them.
    unique = {m.ref.uid: m for m in understood if m.ref.uid}
    judged = judge_group(OWNER, list(unique.values()), world, on_hub, NOW, MIN_AGE, CLOCK_SKEW)
    verdicts = {v.ref.uid: v for v in judged.verdicts}
    proven = world.project.state is ProjectState.GONE or (
        world.project.state is not ProjectState.TERMINATING
        and world.read.cluster_available
        and world.read.resolved
        and (
            world.read.namespace is Presence.GONE
            or (
                world.read.namespace is Presence.PRESENT
                and world.read.owner in (Presence.GONE, Presence.PRESENT)
            )
        )
    )
    for member in unique.values():
        verdict = verdicts[member.ref.uid]
        if not verdict.delete:
            continue
        assert proven
        ref = member.ref
        assert not ref.terminating and ref.created is not None and ref.created <= NOW - MIN_AGE
        assert member.replica.protect == ()
        if world.read.owner is Presence.PRESENT and verdict.reason is Reason.OWNER_RECREATED:
            mine = (member.anchor_uid,) if member.anchor_uid else member.anchors
            assert world.read.owner_uid not in mine and world.read.owner_uid in on_hub
        if member.anchor_uid is not None:
            # Nothing it owns stays.
            for other in unique.values():
                if other.anchor_uid is None and member.anchor_uid in other.anchors:
                    assert verdicts[other.ref.uid].delete
    # Copies before anchors.
    anchors_seen = [unique[v.ref.uid].anchor_uid is not None for v in judged.verdicts]
    assert anchors_seen == sorted(anchors_seen)


def test_an_anchor_named_by_what_stays_is_kept_by_the_sweep_and_explain_alike() -> None:
    """anchor_kept: the one rule both sweep.py (a group's plan) and explain.py apply."""
    anchor = Verdict(
        ref_of("ConfigMap", "anchor-1"), True, Reason.PROJECT_GONE, "gone", cluster="c"
    )
    trace = Trace()
    kept = anchor_kept(anchor, True, trace)
    assert (kept.delete, kept.reason, kept.detail) == (
        False,
        Reason.ANCHOR_OWNS_KEPT_COPY,
        ANCHOR_STAYS,
    )
    assert kept.cluster == "c"
    assert [(s.rule, s.outcome) for s in trace.steps] == [("owns-nothing-kept", StepOutcome.HELD)]
    assert anchor_kept(anchor, False) is anchor  # nothing that stays names it: it goes
    unsure = Verdict(anchor.ref, False, Reason.UPSTREAM_UNAVAILABLE, "cannot tell")
    assert anchor_kept(unsure, True) is unsure  # kept already, for its own reason
