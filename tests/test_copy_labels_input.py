"""Generated name/label pairs (hypothesis) for every kind NSO copies and for routes: nothing that
is not NSO's copy of an upstream object is ever looked up under another name or deleted, in
either sweep that reads the `upstream-*` labels (issue 30 item 1; docs/threat-model.md).

The names and labels are drawn the way the world can write them: the label equal to the
object's name, another name, the name cut at 63 characters, in capitals, with non-ASCII
characters, empty, missing, or with a suffix; namespaces empty (a cluster-scoped owner),
malformed or at the limit; groups and kinds right or not; anchors' names."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given
from hypothesis import strategies as st

from gcjob.decide.upstream_labels import LABEL_LIMIT, Copied, copy_of
from gcjob.domain import (
    GATEWAY_GROUP,
    GATEWAY_SYNC_LABEL,
    HTTPROUTE_KIND,
    REPLICATED_KINDS,
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_NAME_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
)
from gcjob.model import (
    ClusterStatus,
    ObjectRef,
    OwnerFacts,
    OwnerRead,
    OwnerRef,
    ParentRef,
    Presence,
    ProjectCall,
    ProjectState,
    Replica,
    Route,
    RouteTarget,
    UpstreamView,
)
from gcjob.settings import CLOCK_SKEW
from gcjob.sweeps.copies.act import OwnersWanted
from gcjob.sweeps.copies.judge import Member, judge_group, understand
from gcjob.sweeps.routes.judge import judge_route
from gcjob.sweeps.routes.sweep import RouteTargets
from testbed.model import HUB_NS, MIN_AGE, NOW, OLD

ROUTE_KIND = (GATEWAY_GROUP, HTTPROUTE_KIND)
KINDS = [*REPLICATED_KINDS, ROUTE_KIND]
GONE = ProjectCall(ProjectState.GONE, "project p1 not found by the Project API")

NAMES = st.one_of(
    st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True),
    st.integers(LABEL_LIMIT - 3, LABEL_LIMIT + 12).map(lambda n: "w" * n),
    st.uuids().map(lambda u: f"anchor-{u}"),
)
RELATIONS = ("other", "cut", "upper", "unicode", "empty", "missing", "suffix")


@dataclass(frozen=True)
class Drawn:
    group: str
    kind: str
    name: str
    labels: dict[str, str] = field(hash=False)
    owners: tuple[OwnerRef, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/v1" if self.group else "v1"

    @property
    def label_names_it(self) -> bool:
        return self.labels.get(UPSTREAM_NAME_LABEL) == self.name


ANCHOR_OWNER = OwnerRef("v1", "ConfigMap", "anchor-8a1f0c2e-3b4d-4e5f-9a6b-7c8d9e0f1a2b", False)
# What is changed from the labels NSO writes: mostly one thing, often nothing.
CHANGES = ("none", "none", "name", "name", "name", "cluster", "group", "kind", "namespace")


@st.composite
def drawn(draw: st.DrawFn, kinds: list[tuple[str, str]] = KINDS) -> Drawn:
    group, kind = draw(st.sampled_from(kinds))
    name = draw(NAMES)
    changed = set(draw(st.lists(st.sampled_from(CHANGES), min_size=1, max_size=2)))
    label_name: str | None = name
    if "name" in changed:
        label_name = {
            "other": draw(NAMES),
            "cut": name[:LABEL_LIMIT],
            "upper": name.upper(),
            "unicode": draw(st.text(min_size=1, max_size=8)) + name[:3],
            "empty": "",
            "missing": None,
            "suffix": name + "-v1",
        }[draw(st.sampled_from(RELATIONS))]
    labels = {
        UPSTREAM_CLUSTER_LABEL: "cluster-p1",
        UPSTREAM_GROUP_LABEL: group,
        UPSTREAM_KIND_LABEL: kind,
        UPSTREAM_NAMESPACE_LABEL: draw(st.sampled_from(["default", "default", ""])),
    }
    if "cluster" in changed:
        labels[UPSTREAM_CLUSTER_LABEL] = draw(
            st.sampled_from(["cluster-", "p1", "cluster-" + "p" * 55, "cluster-P1"])
        )
    if "group" in changed:
        labels[UPSTREAM_GROUP_LABEL] = draw(st.sampled_from(["", "core", "other.example"]))
    if "kind" in changed:
        labels[UPSTREAM_KIND_LABEL] = draw(st.sampled_from([kind.lower(), "Other", ""]))
    if "namespace" in changed:
        labels[UPSTREAM_NAMESPACE_LABEL] = draw(
            st.sampled_from(["Default", "n" * LABEL_LIMIT, "ns-é", "a.b"])
        )
    if ("", "ConfigMap") in kinds and draw(st.integers(0, 5)) == 0:
        # An anchor, or what looks like one: its labels name another object, by design.
        group, kind = "", "ConfigMap"
        name = draw(st.uuids().map(lambda u: f"anchor-{u}"))
        labels[UPSTREAM_GROUP_LABEL] = "networking.datumapis.com"
        labels[UPSTREAM_KIND_LABEL] = "Connector"
    if label_name is not None:
        labels[UPSTREAM_NAME_LABEL] = label_name
    if kind in ("ConfigMap", "Secret") and draw(st.booleans()):
        labels[GATEWAY_SYNC_LABEL] = "true"
    owners = draw(
        st.sampled_from([(), (ANCHOR_OWNER,), (OwnerRef("apps/v1", "Deployment", "web", True),)])
    )
    return Drawn(group, kind, name, labels, owners)


def replica_of(d: Drawn) -> Replica:
    ref = ObjectRef(d.api_version, d.kind, HUB_NS, d.name, "u1", "7", OLD)
    return Replica(ref, d.group, d.labels, d.owners)


def route_of(d: Drawn) -> Route:
    ref = ObjectRef(f"{GATEWAY_GROUP}/v1", HTTPROUTE_KIND, HUB_NS, d.name, "u1", "7", OLD)
    controllers = tuple(o for o in d.owners if o.controller)
    return Route(ref, d.labels, (ParentRef("gw", None, None, None),), (), controllers)


def all_gone() -> OwnerFacts:
    """A world in which every owner asked about is proven gone, by its project and itself."""
    read = OwnerRead(True, resolved=True, namespace=Presence.PRESENT, owner=Presence.GONE)
    return OwnerFacts(GONE, read)


@given(drawn())
def test_only_an_object_under_its_labels_name_is_a_copy_anchors_apart(d: Drawn) -> None:
    found = copy_of(d.name, d.group, d.kind, d.labels, d.owners)
    if not isinstance(found, Copied):
        return
    assert all(len(d.labels[key]) < LABEL_LIMIT for key in d.labels if key != GATEWAY_SYNC_LABEL)
    if found.anchor_uid is None:
        owner = found.owner
        assert (owner.name, owner.group, owner.kind) == (d.name, d.group, d.kind)
    else:
        assert d.name == f"anchor-{found.anchor_uid}" and (d.group, d.kind) == ("", "ConfigMap")
        assert not d.owners and not d.label_names_it


@given(st.lists(drawn([k for k in KINDS if k != ROUTE_KIND]), max_size=5))
def test_the_copies_sweep_asks_upstream_only_for_what_an_object_copies(
    generated: list[Drawn],
) -> None:
    """The first read (the owners to look up) names only an object's own name, or, for an
    anchor, the owner its labels name; the judgement, in a world where every owner asked
    about is gone, deletes nothing else."""
    for d in generated:
        wanted = OwnersWanted()
        wanted.take(replica_of(d))
        member = understand(replica_of(d))
        if not isinstance(member, Member):
            assert wanted.owners == set() and not member.delete
            continue
        assert wanted.owners == {member.owner}
        if member.anchor_uid is None:
            assert member.owner.name == d.name and d.label_names_it
        judged = judge_group(
            member.owner, [member], all_gone(), frozenset(), NOW, MIN_AGE, CLOCK_SKEW
        )
        for verdict in judged.verdicts:
            assert verdict.ref.name == d.name
            if verdict.delete:
                assert d.label_names_it or member.anchor_uid is not None


class EverythingGone:
    """The routes judgement's world: every Gateway gone, the upstream HTTPRoute and the
    project gone; it remembers every route it was asked about."""

    def __init__(self) -> None:
        self.asked: list[RouteTarget] = []

    def view(self, target: RouteTarget) -> UpstreamView:
        self.asked.append(target)
        owner = OwnerRead(True, resolved=True, namespace=Presence.PRESENT, owner=Presence.GONE)
        return UpstreamView(
            ClusterStatus.OK,
            gateways=frozenset(),
            namespace_exists=True,
            project=GONE,
            owner=owner,
        )


@given(drawn([ROUTE_KIND]), st.booleans())
def test_a_route_that_is_not_nsos_copy_is_never_looked_up_or_deleted(
    d: Drawn, gateway_found: bool
) -> None:
    """Not under its label's name (or any label at the limit): the sweep asks upstream about
    nothing of it, neither its Gateways nor an HTTPRoute of another name, and no rule
    deletes it, in a world where all of it is gone."""
    route = route_of(d)
    targets = RouteTargets()
    targets.take(route)
    world = EverythingGone()
    judged = judge_route(route, world, NOW, MIN_AGE, MIN_AGE)
    copied = copy_of(d.name, GATEWAY_GROUP, HTTPROUTE_KIND, d.labels)
    in_scope = (d.labels[UPSTREAM_GROUP_LABEL], d.labels[UPSTREAM_KIND_LABEL]) == ROUTE_KIND
    for target in targets.owned:
        assert target.owner is not None and target.owner.name == d.name
    if isinstance(copied, Copied) and in_scope and d.labels[UPSTREAM_NAMESPACE_LABEL]:
        return  # NSO's copy: judged on what upstream says of it
    assert not judged.verdict.delete
    assert world.asked == []
    assert targets.owned == set() and not targets.wanted.groups
