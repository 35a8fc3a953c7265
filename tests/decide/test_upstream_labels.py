"""gcjob/decide/upstream_labels.py: whether a hub object is NSO's copy of an upstream object,
the one rule the routes and copies sweeps apply to the `upstream-*` labels (issue 30 item 1)."""

from __future__ import annotations

import pytest

from gcjob.decide.trace import Trace
from gcjob.decide.upstream_labels import LABEL_LIMIT, Copied, NotCopied, anchor_uid_of, copy_of
from gcjob.domain import (
    GATEWAY_SYNC_LABEL,
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_NAME_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
)
from gcjob.model import OwnerRef, UpstreamOwner
from gcjob.reasons import Reason

NET = "networking.datumapis.com"
GW = "gateway.networking.k8s.io"
UID = "8a1f0c2e-3b4d-4e5f-9a6b-7c8d9e0f1a2b"


def labels(
    name: str = "web",
    *,
    group: str = NET,
    kind: str = "Connector",
    namespace: str = "default",
    cluster: str = "cluster-p1",
    **extra: str,
) -> dict[str, str]:
    return {
        UPSTREAM_CLUSTER_LABEL: cluster,
        UPSTREAM_GROUP_LABEL: group,
        UPSTREAM_KIND_LABEL: kind,
        UPSTREAM_NAME_LABEL: name,
        UPSTREAM_NAMESPACE_LABEL: namespace,
        **extra,
    }


def test_a_copy_under_its_own_name_copies_what_its_labels_name() -> None:
    trace = Trace()
    found = copy_of("web", NET, "Connector", labels(), (), trace)
    assert found == Copied(UpstreamOwner("p1", NET, "Connector", "default", "web"))
    assert [(s.rule, s.outcome.value) for s in trace.steps] == [
        ("labels", "passed"),
        ("copy", "passed"),
    ]


def test_a_route_under_its_own_name_is_a_copy_and_under_another_is_none() -> None:
    route = labels(group=GW, kind="HTTPRoute")
    assert isinstance(copy_of("web", GW, "HTTPRoute", route), Copied)
    other = copy_of("web", GW, "HTTPRoute", {**route, UPSTREAM_NAME_LABEL: "web-v1"})
    assert isinstance(other, NotCopied)
    assert (other.reason, other.rule, other.cluster) == (Reason.NOT_A_COPY, "copy", "p1")
    assert "does not copy" in other.detail


@pytest.mark.parametrize(
    ("name", "group", "kind"),
    [
        ("web-v1", NET, "Connector"),  # another name
        ("WEB", NET, "Connector"),  # a label value may have capitals; a name may not
        ("web", "gateway.envoyproxy.io", "Connector"),  # another group
        ("web", NET, "HTTPProxy"),  # another kind
        ("web", NET, "connector"),  # a kind is case-sensitive
    ],
)
def test_an_object_that_is_not_what_its_labels_name_is_not_a_copy(
    name: str, group: str, kind: str
) -> None:
    found = copy_of("web", NET, "Connector", labels(name, group=group, kind=kind))
    assert isinstance(found, NotCopied) and found.reason is Reason.NOT_A_COPY


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({UPSTREAM_NAME_LABEL: None}, Reason.LABELS_MISSING),
        ({UPSTREAM_NAMESPACE_LABEL: None}, Reason.LABELS_MISSING),
        ({UPSTREAM_NAME_LABEL: "w" * LABEL_LIMIT}, Reason.LABEL_AT_LIMIT),
        ({UPSTREAM_CLUSTER_LABEL: "cluster-" + "p" * 55}, Reason.LABEL_AT_LIMIT),
        ({UPSTREAM_NAMESPACE_LABEL: "n" * 64}, Reason.LABEL_AT_LIMIT),
        ({UPSTREAM_GROUP_LABEL: "core"}, Reason.UPSTREAM_GROUP_NOT_UNDERSTOOD),
        ({UPSTREAM_GROUP_LABEL: "Net.Example"}, Reason.UPSTREAM_GROUP_NOT_UNDERSTOOD),
        ({UPSTREAM_CLUSTER_LABEL: "p1"}, Reason.CLUSTER_LABEL_MALFORMED),
        ({UPSTREAM_CLUSTER_LABEL: "cluster-x_.._y"}, Reason.CLUSTER_LABEL_MALFORMED),
        ({UPSTREAM_NAMESPACE_LABEL: "Default"}, Reason.UPSTREAM_NAMESPACE_MALFORMED),
        ({UPSTREAM_NAMESPACE_LABEL: "a.b"}, Reason.UPSTREAM_NAMESPACE_MALFORMED),
        ({UPSTREAM_NAME_LABEL: ""}, Reason.NOT_A_COPY),
        ({UPSTREAM_KIND_LABEL: ""}, Reason.NOT_A_COPY),
        ({UPSTREAM_NAME_LABEL: "é"}, Reason.NOT_A_COPY),
    ],
)
def test_labels_that_name_no_upstream_object_for_sure_keep_it(
    changes: dict[str, str | None], reason: Reason
) -> None:
    chosen = {k: v for k, v in {**labels(), **changes}.items() if v is not None}
    found = copy_of("web", NET, "Connector", chosen)
    assert isinstance(found, NotCopied) and found.reason is reason


def test_a_name_longer_than_a_label_holds_is_never_proven_by_its_cut_label() -> None:
    """A copy of a 70-character name: its label can hold 63 of them. Cut, it names another
    object (or none); whole, it could not be a label."""
    name = "w" * 70
    cut = copy_of(name, NET, "Connector", labels(name[:LABEL_LIMIT]))
    assert isinstance(cut, NotCopied) and cut.reason is Reason.LABEL_AT_LIMIT
    shorter = copy_of(name, NET, "Connector", labels("w" * 40))
    assert isinstance(shorter, NotCopied) and shorter.reason is Reason.NOT_A_COPY
    # A label of exactly 63 characters proves nothing even when it is the object's name.
    exact = copy_of("w" * 63, NET, "Connector", labels("w" * 63))
    assert isinstance(exact, NotCopied) and exact.reason is Reason.LABEL_AT_LIMIT


def test_a_copy_of_a_cluster_scoped_owner_has_an_empty_namespace_label() -> None:
    found = copy_of("web", NET, "Connector", labels(namespace=""))
    assert isinstance(found, Copied) and found.owner.namespace == ""


def test_an_anchor_is_the_one_object_whose_name_is_not_its_label() -> None:
    name = f"anchor-{UID}"
    found = copy_of(name, "", "ConfigMap", labels())
    assert found == Copied(UpstreamOwner("p1", NET, "Connector", "default", "web"), UID)
    assert anchor_uid_of(name) == UID


@pytest.mark.parametrize(
    ("name", "group", "kind", "extra", "owners", "reason"),
    [
        # No canonical uuid: an ordinary ConfigMap, and no copy (its name is not its label's).
        ("anchor-web", "", "ConfigMap", {}, (), Reason.NOT_A_COPY),
        (f"anchor-{UID.upper()}", "", "ConfigMap", {}, (), Reason.NOT_A_COPY),
        # Synced, or of another kind: judged as a copy, and its name is not its label's.
        (f"anchor-{UID}", "", "ConfigMap", {GATEWAY_SYNC_LABEL: "x"}, (), Reason.NOT_A_COPY),
        (f"anchor-{UID}", "", "Secret", {}, (), Reason.NOT_A_COPY),
        # Owned: nothing owns an anchor.
        (
            f"anchor-{UID}",
            "",
            "ConfigMap",
            {},
            (OwnerRef("v1", "ConfigMap", "x", False),),
            Reason.OWNED,
        ),
    ],
)
def test_what_merely_looks_like_an_anchor_is_none(
    name: str,
    group: str,
    kind: str,
    extra: dict[str, str],
    owners: tuple[OwnerRef, ...],
    reason: Reason,
) -> None:
    found = copy_of(name, group, kind, labels(**extra), owners)
    assert isinstance(found, NotCopied) and found.reason is reason


def test_a_configmap_or_secret_is_a_copy_only_when_synced() -> None:
    core = labels(group="", kind="ConfigMap")
    assert isinstance(copy_of("web", "", "ConfigMap", core), NotCopied)
    synced = copy_of("web", "", "ConfigMap", {**core, GATEWAY_SYNC_LABEL: ""})
    assert isinstance(synced, Copied)


def test_a_rule_that_keeps_the_object_is_traced_as_held() -> None:
    trace = Trace()
    copy_of("web", NET, "Connector", labels("web-v1"), (), trace)
    assert [(s.rule, s.outcome.value) for s in trace.steps] == [
        ("labels", "passed"),
        ("copy", "held back"),
    ]
