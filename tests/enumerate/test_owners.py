"""gcjob/enumerate/owners.py: what is kept of each upstream cluster for the run. Clusters
that answered with the very same (interned) discovery answers share one kept state; one whose
answers are merely equal never takes another's, one that did not answer keeps no kinds, and
the table is bounded (gcjob/kube/oneofeach.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.decide.upstream_labels import anchor_uid_of
from gcjob.domain import decode_cluster_label
from gcjob.enumerate import owners
from gcjob.enumerate.owners import Kinds, answered
from gcjob.kube.resources import GATEWAYS
from gcjob.kube.snapshot import SnapshotStore
from gcjob.model import OwnerRead, Presence, ProjectAnswer

SERVED: list[Kinds | None] = [{"Gateway": (GATEWAYS,)}, {"Gateway": ()}, None]


@pytest.fixture(autouse=True)
def empty_table() -> Iterator[None]:
    owners.SHARED_ANSWERS.clear()
    yield
    owners.SHARED_ANSWERS.clear()


@given(
    picks=st.lists(
        st.dictionaries(
            st.sampled_from(["", "gateway.networking.k8s.io", "net"]), st.integers(0, 2)
        ),
        max_size=6,
    )
)
def test_a_clusters_state_is_shared_only_with_the_very_same_answers(
    picks: list[dict[str, int]],
) -> None:
    owners.SHARED_ANSWERS.clear()
    made = [{group: SERVED[n] for group, n in pick.items()} for pick in picks]
    kept = [answered(True, "", kinds) for kinds in made]
    for kinds, got in zip(made, kept, strict=True):
        assert got.available and got.kinds == kinds  # what it resolves to is what it said
        assert all(got.kinds[group] is kinds[group] for group in kinds)
    for i, a in enumerate(made):
        for j, b in enumerate(made):
            assert (kept[i] is kept[j]) == (a == b)  # SERVED's answers differ from each other


def test_merely_equal_answers_are_not_shared_and_the_table_is_bounded() -> None:
    first = {"net": {"Connector": ()}}
    equal_not_same = {"net": {"Connector": ()}}
    assert answered(True, "", first).kinds is first
    assert answered(True, "", equal_not_same).kinds is equal_not_same  # its own document
    owners.SHARED_ANSWERS.bound = len(owners.SHARED_ANSWERS)
    try:
        past = {"other": None}
        assert answered(True, "", past).kinds is past
        assert answered(True, "", {"other": None}).kinds is not past  # the table is full
    finally:
        owners.SHARED_ANSWERS.bound = 4096


def test_a_cluster_that_did_not_answer_is_never_shared_and_keeps_no_kinds() -> None:
    kinds: dict[str, Kinds | None] = {"net": SERVED[0]}
    a, b = answered(False, "403 Forbidden", kinds), answered(False, "403 Forbidden", kinds)
    assert a is not b and not a.available and a.detail == "403 Forbidden" and not a.kinds
    with_detail = answered(True, "partly", kinds)
    assert with_detail.detail == "partly" and with_detail is not answered(True, "", kinds)


def test_reads_kept_without_identity_are_one_object_for_equal_ones_and_carry_no_uid() -> None:
    """The routes sweep keeps an HTTPRoute's presence, not its uid or creation."""
    owners.SHARED_READS.clear()

    def present(uid: str) -> OwnerRead:
        return OwnerRead(
            True,
            resolved=True,
            resolve_detail="httproutes.gateway.networking.k8s.io/v1",
            namespace=Presence.PRESENT,
            owner=Presence.PRESENT,
            owner_uid=uid,
            owner_created=datetime(2026, 1, 1, tzinfo=UTC),
        )

    a, b = owners._anonymous(present("u-1")), owners._anonymous(present("u-2"))
    assert a is b and a.owner is Presence.PRESENT and not a.owner_uid and a.owner_created is None
    gone = owners._anonymous(OwnerRead(True, resolved=True, owner=Presence.GONE))
    assert gone is not a and gone.owner is Presence.GONE


@given(
    uid=st.text(max_size=40),
    created=st.none() | st.datetimes(timezones=st.just(UTC)),
    owner=st.sampled_from(list(Presence)),
    namespace=st.sampled_from(list(Presence)),
    identity=st.booleans(),
)
def test_a_read_kept_with_identity_comes_back_whole_and_without_it_never_carries_one(
    uid: str, created: datetime | None, owner: Presence, namespace: Presence, identity: bool
) -> None:
    """The copies sweep keeps each owner's uid and creation beside one shared read (its
    re-created owners rest on them): `read` gives back exactly what was read. The routes
    sweep's reads keep neither."""
    read = OwnerRead(
        True,
        resolved=True,
        resolve_detail="gateways.gateway.networking.k8s.io/v1",
        namespace=namespace,
        owner=owner,
        owner_uid=uid,
        owner_created=created,
    )
    back = owners._restored(owners._kept(read, identity))
    if identity:
        assert back == read
    else:
        assert back.owner_uid == "" and back.owner_created is None
        assert back == OwnerRead(
            True,
            resolved=True,
            resolve_detail=read.resolve_detail,
            namespace=namespace,
            owner=owner,
        )


def test_a_uid_kept_with_identity_is_the_string_its_anchors_name_gives() -> None:
    """The copies sweep holds each owner's uid twice (in its anchors' names, in its read): one
    interned string serves both. Interned where it is kept, not where it is read: a read kept
    without identity (a route's HTTPRoute) leaves nothing in the interpreter's table."""
    uid = "".join(["8a6b3c1e-2f4d-4e5a-9b7c-", "0d1e2f3a4b5c"])  # made at run time, as read
    read = OwnerRead(True, resolved=True, owner=Presence.PRESENT, owner_uid=uid)
    kept = owners._kept(read, identity=True)
    assert isinstance(kept, tuple)
    assert kept[1] == uid
    assert kept[1] is anchor_uid_of(
        "anchor-" + "".join(["8a6b3c1e-2f4d-4e5a-9b7c-", "0d1e2f3a4b5c"])
    )


@given(
    listed=st.dictionaries(st.sampled_from(["p-a", "p-b", "p-c", "p-d"]), st.booleans()),
    asked=st.lists(st.sampled_from(["p-a", "p-b", "p-c", "p-d", "p-e", "ctx"]), max_size=8),
)
def test_each_projects_answer_is_read_from_the_list_or_its_own_get(
    listed: dict[str, bool], asked: list[str]
) -> None:
    """The answers handed to a sweep are read from the round's list and GETs when asked, not
    copied: each project listed is found (or being deleted), one not listed is NotFound by its
    GET, and a cluster that is no project is not among them."""
    api = SnapshotStore("milo", [], every_kind=True)
    for name, terminating in listed.items():
        meta: dict[str, object] = {"name": name, "uid": f"u-{name}"}
        if terminating:
            meta["deletionTimestamp"] = "2026-11-27T00:00:00Z"
        api.add(
            {
                "apiVersion": "resourcemanager.miloapis.com/v1alpha1",
                "kind": "Project",
                "metadata": meta,
            }
        )
    reads = owners.ProjectReads(api, lambda name: name.startswith("p-"))
    answers = reads.answers(asked)
    expected = {
        name: (
            ProjectAnswer.NOT_FOUND
            if name not in listed
            else ProjectAnswer.TERMINATING
            if listed[name]
            else ProjectAnswer.FOUND
        )
        for name in sorted(set(asked))
        if name.startswith("p-")
    }
    assert dict(answers) == expected
    assert list(answers) == list(expected) and len(answers) == len(expected)
    assert "ctx" not in answers and "p-z" not in answers


def test_a_listed_projects_name_is_the_string_its_hub_cluster_label_gives() -> None:
    """Each project listed and each cluster the hub's labels name are held for the run: a
    project with copies or routes on the hub is both, and one string serves both."""
    api = SnapshotStore("milo", [], every_kind=True)
    name = "".join(["proj-", "7f3a9c"])  # made at run time, as a decoded answer is
    api.add(
        {
            "apiVersion": "resourcemanager.miloapis.com/v1alpha1",
            "kind": "Project",
            "metadata": {"name": name, "uid": "u-1"},
        }
    )
    reads = owners.ProjectReads(api, lambda _: True)
    assert reads.list_at_start() is None
    cluster = decode_cluster_label("".join(["cluster-", "proj-", "7f3a9c"]))
    (listed,) = [key for key in reads._listed or {} if key == cluster]
    assert listed is cluster
