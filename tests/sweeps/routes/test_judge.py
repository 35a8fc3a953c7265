"""Sweep 3 decisions (gcjob.sweeps.routes.judge), from docs/rules.md "Sweep 3"."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.brakes import is_suspect, suspect_groups
from gcjob.decide.trace import Trace
from gcjob.model import (
    ClusterStatus,
    OwnerRead,
    ParentRef,
    Presence,
    ProjectCall,
    ProjectState,
    Route,
    RouteTarget,
    UpstreamOwner,
    UpstreamView,
    Verdict,
)
from gcjob.reasons import Reason
from gcjob.sweeps.routes.judge import (
    before_delete,
    in_scope,
    is_gateway,
    route_target,
    route_verdict,
)
from testbed.model import HUB_NS, MIN_AGE, NOW, YOUNG, parent, route, route_labels

GW_GROUP = "gateway.networking.k8s.io"
CLUSTER_LABEL = "meta.datumapis.com/upstream-cluster-name"
NAMESPACE_LABEL = "meta.datumapis.com/upstream-namespace"
NAME_LABEL = "meta.datumapis.com/upstream-name"
GROUP_LABEL = "meta.datumapis.com/upstream-group"
KIND_LABEL = "meta.datumapis.com/upstream-kind"
SOLVER_LABEL = "meta.datumapis.com/http01-solver"


def ok(gateways: set[str], namespace_exists: bool | None = True) -> UpstreamView:
    return UpstreamView(
        ClusterStatus.OK, gateways=frozenset(gateways), namespace_exists=namespace_exists
    )


def target_of(r: Route) -> RouteTarget:
    target = route_target(r)
    assert isinstance(target, RouteTarget), target
    return target


def decide(r: Route, view: UpstreamView) -> Verdict:
    return route_verdict(r, target_of(r), view, NOW, MIN_AGE)


# --- in_scope ----------------------------------------------------------------------------


def test_nso_copy_of_httproute_in_scope() -> None:
    assert in_scope(route()) is True


@pytest.mark.parametrize(
    ("group", "kind"),
    [
        ("gateway.networking.k8s.io", "GRPCRoute"),
        ("gateway.networking.k8s.io", "Gateway"),
        ("example.com", "HTTPRoute"),
        ("", "HTTPRoute"),
        ("gateway.networking.k8s.io", ""),
        ("gateway.networking.k8s.io", "httproute"),
    ],
)
def test_other_owner_out_of_scope(group: str, kind: str) -> None:
    labels = route_labels(**{GROUP_LABEL: group, KIND_LABEL: kind})
    assert in_scope(route(labels=labels)) is False


@pytest.mark.parametrize("missing", [GROUP_LABEL, KIND_LABEL])
def test_missing_group_or_kind_label_out_of_scope(missing: str) -> None:
    labels = route_labels()
    del labels[missing]
    assert in_scope(route(labels=labels)) is False


# --- is_gateway --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "p",
    [
        parent("gw"),
        parent("gw", group=GW_GROUP),
        parent("gw", kind="Gateway"),
        parent("gw", group=GW_GROUP, kind="Gateway"),
    ],
)
def test_gateway_parents(p: ParentRef) -> None:
    assert is_gateway(p) is True


@pytest.mark.parametrize(
    "p",
    [
        pytest.param(parent("svc", group="", kind="Service"), id="core-service"),
        pytest.param(parent("gw", group=""), id="empty-group-is-core"),
        pytest.param(parent("gw", group="", kind="Gateway"), id="core-gateway-kind"),
        pytest.param(parent("gw", kind="Service"), id="service-default-group"),
        pytest.param(parent("gw", kind="ListenerSet"), id="listenerset"),
        pytest.param(parent("gw", kind=""), id="empty-kind"),
        pytest.param(parent("gw", kind="gateway"), id="lowercase-kind"),
        pytest.param(parent("gw", group="example.com"), id="other-group"),
    ],
)
def test_non_gateway_parents(p: ParentRef) -> None:
    assert is_gateway(p) is False


# --- route_target ------------------------------------------------------------------------


def test_route_target_of_nso_route() -> None:
    r = route(labels=route_labels(cluster="cluster-org_proj", namespace="team-a"))
    owner = UpstreamOwner("org/proj", "gateway.networking.k8s.io", "HTTPRoute", "team-a", "web")
    assert route_target(r) == RouteTarget("org/proj", "team-a", ("gw",), r.ref.namespace, owner)


def test_routes_naming_the_same_gateways_share_one_tuple_of_them() -> None:
    """Each route's target is held from the hub's read through the Gateways' reads: routes
    that name the same Gateways (in any order, any number of times) hold one tuple."""
    a = target_of(route("a", parents=(parent("gw-2"), parent("gw-1"))))
    b = target_of(route("b", parents=(parent("gw-1"), parent("gw-2"), parent("gw-1"))))
    assert a.gateways == ("gw-1", "gw-2") and a.gateways is b.gateways
    assert target_of(route("c", parents=(parent("gw-1"),))).gateways == ("gw-1",)


def test_route_target_upstream_namespace_is_the_label_not_the_hub_namespace() -> None:
    target = target_of(route(labels=route_labels(namespace="default"), namespace=HUB_NS))
    assert target.namespace == "default"


def test_route_target_legacy_cluster_label() -> None:
    assert target_of(route(labels=route_labels(cluster="cluster-_proj"))).cluster == "proj"


@pytest.mark.parametrize("missing", [CLUSTER_LABEL, NAMESPACE_LABEL, NAME_LABEL])
def test_missing_identity_label_preserved(missing: str) -> None:
    labels = route_labels()
    del labels[missing]
    verdict = route_target(route(labels=labels))
    assert isinstance(verdict, Verdict)
    assert verdict.delete is False
    assert verdict.reason == "labels-missing"
    assert missing in verdict.detail


@pytest.mark.parametrize("empty", [CLUSTER_LABEL, NAMESPACE_LABEL, NAME_LABEL])
def test_empty_identity_label_preserved(empty: str) -> None:
    verdict = route_target(route(labels=route_labels(**{empty: ""})))
    assert isinstance(verdict, Verdict)
    assert verdict.delete is False
    assert verdict.reason == "labels-missing"


def test_http01_solver_preserved() -> None:
    verdict = route_target(route(labels=route_labels(**{SOLVER_LABEL: "true"})))
    assert isinstance(verdict, Verdict)
    assert verdict.delete is False
    assert verdict.reason == "http01-solver"


def test_http01_solver_false_is_not_a_solver() -> None:
    assert isinstance(
        route_target(route(labels=route_labels(**{SOLVER_LABEL: "false"}))), RouteTarget
    )


@pytest.mark.parametrize("value", ["True", "yes", "1", " true", "", "false "])
def test_an_http01_solver_value_not_understood_keeps_the_route(value: str) -> None:
    verdict = route_target(route(labels=route_labels(**{SOLVER_LABEL: value})))
    assert isinstance(verdict, Verdict)
    assert (verdict.delete, verdict.reason) == (False, "http01-solver")
    assert "not understood" in verdict.detail


@pytest.mark.parametrize("value", ["Project-a", "project.svc", "project_a", "-a", "ns/x", "é"])
def test_an_upstream_namespace_label_that_is_no_namespace_name_keeps_the_route(value: str) -> None:
    """Such a namespace cannot exist upstream: its NotFound proves nothing of the Gateways."""
    verdict = route_target(route(labels=route_labels(**{NAMESPACE_LABEL: value})))
    assert isinstance(verdict, Verdict)
    assert (verdict.delete, verdict.reason) == (False, "upstream-namespace-malformed")


@pytest.mark.parametrize(
    "value", ["cluster-x_.._y", "cluster-a__b", "cluster-A", "cluster-a_", "cluster-a_b c"]
)
def test_a_cluster_name_with_a_part_that_is_no_object_name_keeps_the_route(value: str) -> None:
    """The name goes into a URL path: `..` or an empty part could name another project."""
    verdict = route_target(route(labels=route_labels(cluster=value)))
    assert isinstance(verdict, Verdict)
    assert (verdict.delete, verdict.reason) == (False, "cluster-label-malformed")


@pytest.mark.parametrize("value", ["single", "org_proj", "cluster-"])
def test_undecodable_cluster_label_preserved(value: str) -> None:
    verdict = route_target(route(labels=route_labels(cluster=value)))
    assert isinstance(verdict, Verdict)
    assert verdict.delete is False
    assert verdict.reason == "cluster-label-malformed"


def test_no_parent_refs_preserved() -> None:
    verdict = route_target(route(parents=()))
    assert isinstance(verdict, Verdict)
    assert verdict.delete is False
    assert verdict.reason == "no-parent-refs"


@pytest.mark.parametrize(
    "parents",
    [
        pytest.param((parent("svc", group="", kind="Service"),), id="only-service"),
        pytest.param((parent("gw"), parent("svc", group="", kind="Service")), id="gw-and-svc"),
        pytest.param((parent("svc", group="", kind="Service"), parent("gw")), id="svc-and-gw"),
        pytest.param((parent("gw"), parent("gw2", group="")), id="core-group"),
    ],
)
def test_any_non_gateway_parent_preserved(parents: tuple[ParentRef, ...]) -> None:
    verdict = route_target(route(parents=parents))
    assert isinstance(verdict, Verdict)
    assert verdict.delete is False
    assert verdict.reason == "non-gateway-parent"


@pytest.mark.parametrize(
    "parents",
    [
        pytest.param((parent("gw", namespace="default"),), id="upstream-ns"),
        pytest.param((parent("gw", namespace="ns-other"),), id="other-hub-ns"),
        pytest.param((parent("gw"), parent("gw2", namespace="ns-other")), id="one-of-two"),
    ],
)
def test_cross_namespace_parent_preserved(parents: tuple[ParentRef, ...]) -> None:
    verdict = route_target(route(parents=parents, namespace=HUB_NS))
    assert isinstance(verdict, Verdict)
    assert verdict.delete is False
    assert verdict.reason == "cross-namespace-parent"


def test_parent_with_explicit_same_namespace_is_fine() -> None:
    r = route(parents=(parent("gw", namespace=HUB_NS),), namespace=HUB_NS)
    assert target_of(r).gateways == ("gw",)


def test_duplicate_parent_refs_to_same_gateway_dedupe() -> None:
    parents = (
        ParentRef("gw", None, None, None),
        ParentRef("gw", GW_GROUP, "Gateway", None),
        ParentRef("gw", None, None, HUB_NS),
    )
    # sectionName/port are not recorded: two listeners of one Gateway are one Gateway.
    target = target_of(route(parents=parents, namespace=HUB_NS))
    assert target.gateways == ("gw",)


def test_multiple_gateways_all_listed() -> None:
    target = target_of(route(parents=(parent("b"), parent("a"))))
    assert sorted(target.gateways) == ["a", "b"]


# --- route_verdict: the seed test plan ----------------------------------------------------


def test_orphaned_route_deleted_when_upstream_gateway_missing() -> None:
    verdict = decide(route(), ok(set()))
    assert verdict.delete is True
    assert verdict.reason == "upstream-gateways-gone"
    assert verdict.cluster == "single"
    assert verdict.gateways == ("default/gw",)


def test_healthy_route_not_deleted_when_upstream_gateway_exists() -> None:
    verdict = decide(route(), ok({"gw"}))
    assert verdict.delete is False
    assert verdict.reason == "gateway-exists"
    assert verdict.healthy is True


def test_young_route_not_deleted() -> None:
    verdict = decide(route(created=YOUNG), ok(set()))
    assert verdict.delete is False
    assert verdict.reason == "too-young"


def test_route_with_multiple_parent_refs_kept_if_any_gateway_still_exists() -> None:
    r = route(parents=(parent("gw-a"), parent("gw-b"), parent("gw-c")))
    verdict = decide(r, ok({"gw-b"}))
    assert verdict.delete is False
    assert verdict.reason == "gateway-exists"


def test_route_with_multiple_parent_refs_deleted_when_every_gateway_gone() -> None:
    r = route(parents=(parent("gw-a"), parent("gw-b")))
    verdict = decide(r, ok({"unrelated"}))
    assert verdict.delete is True
    assert verdict.reason == "upstream-gateways-gone"


# --- route_verdict: upstream views --------------------------------------------------------


def test_gateway_of_another_name_does_not_keep_route() -> None:
    verdict = decide(route(), ok({"gw-other", "web"}))
    assert verdict.delete is True
    assert verdict.reason == "upstream-gateways-gone"


def test_namespace_unknown_but_gateways_listed_empty_is_orphan() -> None:
    verdict = decide(route(), ok(set(), namespace_exists=None))
    assert verdict.delete is True
    assert verdict.reason == "upstream-gateways-gone"


def test_upstream_namespace_gone_is_orphan_with_own_reason() -> None:
    verdict = decide(route(), ok(set(), namespace_exists=False))
    assert verdict.delete is True
    assert verdict.reason == "upstream-namespace-gone"


@pytest.mark.parametrize("namespace_exists", [None, True, False])
def test_failed_gateway_lookup_never_deletes(namespace_exists: bool | None) -> None:
    view = UpstreamView(
        ClusterStatus.OK, gateways=None, lookup_error="timeout", namespace_exists=namespace_exists
    )
    verdict = decide(route(), view)
    assert verdict.delete is False
    assert verdict.reason == "upstream-unavailable"


@pytest.mark.parametrize("gateways", [None, frozenset(), frozenset({"other"})])
def test_unknown_cluster_never_deletes(gateways: frozenset[str] | None) -> None:
    view = UpstreamView(ClusterStatus.UNKNOWN, "no endpoint", gateways, namespace_exists=False)
    verdict = decide(route(), view)
    assert verdict.delete is False
    assert verdict.reason == "upstream-cluster-unknown"


@pytest.mark.parametrize("gateways", [None, frozenset(), frozenset({"other"})])
def test_unavailable_cluster_never_deletes(gateways: frozenset[str] | None) -> None:
    view = UpstreamView(ClusterStatus.UNAVAILABLE, "403", gateways, namespace_exists=False)
    verdict = decide(route(), view)
    assert verdict.delete is False
    assert verdict.reason == "upstream-unavailable"


@pytest.mark.parametrize("namespace_exists", [None, True, False])
def test_suspect_cluster_never_deletes(namespace_exists: bool | None) -> None:
    view = UpstreamView(
        ClusterStatus.SUSPECT, "no Gateway", frozenset(), namespace_exists=namespace_exists
    )
    verdict = decide(route(), view)
    assert verdict.delete is False
    assert verdict.reason == "upstream-suspect"


def test_terminating_route_not_deleted() -> None:
    verdict = decide(route(terminating=True), ok(set()))
    assert verdict.delete is False
    assert verdict.reason == "terminating"


def test_protected_route_not_deleted() -> None:
    verdict = decide(route(protected=True), ok(set()))
    assert verdict.delete is False
    assert verdict.reason == "protected"


def test_route_without_uid_not_deleted() -> None:
    verdict = decide(route(uid=""), ok(set()))
    assert verdict.delete is False
    assert verdict.reason == "unpinnable"


def test_young_route_in_gone_namespace_not_deleted() -> None:
    verdict = decide(route(created=YOUNG), ok(set(), namespace_exists=False))
    assert verdict.delete is False
    assert verdict.reason == "too-young"


# --- is_suspect --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("checked", "found", "min_routes", "expected"),
    [
        (10, 0, 10, True),
        (500, 0, 10, True),
        (9, 0, 10, False),
        (10, 1, 10, False),
        (500, 3, 10, False),
        (0, 0, 10, False),
    ],
)
def test_is_suspect(checked: int, found: int, min_routes: int, expected: bool) -> None:
    assert is_suspect(checked, found, min_routes) is expected


def test_parent_ref_with_empty_namespace_is_set_and_preserved() -> None:
    from gcjob.kube.reduce import route as reduce_route

    obj = {
        "metadata": {
            "name": "r",
            "namespace": "ns-a",
            "uid": "u",
            "resourceVersion": "1",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {
                "meta.datumapis.com/upstream-cluster-name": "cluster-single",
                "meta.datumapis.com/upstream-group": "gateway.networking.k8s.io",
                "meta.datumapis.com/upstream-kind": "HTTPRoute",
                "meta.datumapis.com/upstream-name": "r",
                "meta.datumapis.com/upstream-namespace": "default",
            },
        },
        "spec": {"parentRefs": [{"name": "gw", "namespace": ""}]},
    }
    verdict = route_target(reduce_route(obj))
    assert isinstance(verdict, Verdict)
    assert verdict.reason == "cross-namespace-parent"
    assert verdict.delete is False


# --- suspect_groups (issue 20 item 9) ------------------------------------------------------


def test_a_gateway_of_one_hub_namespace_does_not_vouch_for_another() -> None:
    # Tenant A's route names tenant B's cluster and finds its Gateway there; B's ten routes
    # found none of theirs: B's stay distrusted.
    groups = {"ns-a": (1, 1), "ns-b": (10, 0)}
    assert suspect_groups(groups, 10) == {"ns-b"}


def test_unvouched_routes_are_counted_together_across_hub_namespaces() -> None:
    groups = {"ns-a": (1, 1), **{f"ns-b{i}": (1, 0) for i in range(10)}}
    assert suspect_groups(groups, 10) == {f"ns-b{i}" for i in range(10)}
    assert suspect_groups(groups, 11) == frozenset()
    assert suspect_groups(groups, 0) == frozenset()  # the rule switched off


group_counts = st.dictionaries(
    st.text(max_size=8),
    st.tuples(st.integers(0, 50), st.integers(0, 5)),
    max_size=12,
)


@given(groups=group_counts, min_routes=st.integers(0, 60), extra=st.integers(1, 50))
def test_found_gateways_vouch_only_for_the_group_that_asked(
    groups: dict[str, tuple[int, int]], min_routes: int, extra: int
) -> None:
    suspect = suspect_groups(groups, min_routes)
    unvouched = {g for g, (_, found) in groups.items() if found == 0}
    assert suspect <= unvouched  # a group that found one of its own Gateways is trusted
    # Another group that found its Gateways (a tenant naming this cluster) changes nothing
    # for the others.
    assert suspect_groups({**groups, "\x00other": (extra, extra)}, min_routes) == suspect
    # Never weaker than the rule for a whole cluster that found nothing.
    routes = sum(r for r, _ in groups.values())
    if not any(found for _, found in groups.values()) and is_suspect(routes, 0, min_routes):
        assert suspect == set(groups)


def test_a_route_whose_whole_upstream_namespace_is_gone_says_so_right_before_its_delete() -> None:
    """act.py and explain both ask before_delete, with what they read of the namespace."""
    target = RouteTarget("single", "default", ("web-gateway",), HUB_NS)
    orphan = Verdict(route().ref, True, Reason.UPSTREAM_GATEWAYS_GONE, "no Gateway")
    trace = Trace()
    gone = before_delete(orphan, target, False, trace)
    assert (gone.delete, gone.reason) == (True, "upstream-namespace-gone")
    assert [(s.rule, s.evidence) for s in trace.steps] == [
        ("upstream-namespace", "namespace default on upstream cluster single: not found")
    ]
    assert before_delete(orphan, target, True) == orphan
    assert before_delete(orphan, target, None) == orphan  # not known: the reason stays


# -- the project (issue 22): Milo's Project API proves a whole project gone ---------------


def _project_view(state: ProjectState, status: ClusterStatus) -> UpstreamView:
    return UpstreamView(
        cluster_status=status,
        cluster_detail="HTTP 404 on every path",
        gateways=None,
        project=ProjectCall(state, f"project p1 {state.value}"),
    )


def test_a_route_of_a_project_proven_gone_is_an_orphan_even_with_its_cluster_unreachable():
    r = route(labels=route_labels("cluster-p1"))
    target = route_target(r)
    assert isinstance(target, RouteTarget)
    view = _project_view(ProjectState.GONE, ClusterStatus.UNAVAILABLE)
    verdict = route_verdict(r, target, view, NOW, MIN_AGE)
    assert verdict.delete and verdict.reason is Reason.PROJECT_GONE


def test_a_route_of_a_terminating_or_unknown_project_is_kept():
    r = route(labels=route_labels("cluster-p1"))
    target = route_target(r)
    assert isinstance(target, RouteTarget)
    terminating = route_verdict(
        r, target, _project_view(ProjectState.TERMINATING, ClusterStatus.OK), NOW, MIN_AGE
    )
    assert not terminating.delete and terminating.reason is Reason.PROJECT_TERMINATING
    unknown = route_verdict(
        r, target, _project_view(ProjectState.UNKNOWN, ClusterStatus.UNAVAILABLE), NOW, MIN_AGE
    )
    assert not unknown.delete and unknown.reason is Reason.UPSTREAM_UNAVAILABLE


def test_a_young_or_protected_route_of_a_gone_project_is_still_held_back():
    young = route(labels=route_labels("cluster-p1"), created=YOUNG)
    target = route_target(young)
    assert isinstance(target, RouteTarget)
    view = _project_view(ProjectState.GONE, ClusterStatus.UNAVAILABLE)
    assert route_verdict(young, target, view, NOW, MIN_AGE).reason is Reason.TOO_YOUNG


# --- the owner-gone rule: NSO ties a route to its upstream HTTPRoute, not to the Gateway ---


def _owner(presence: Presence, available: bool = True) -> OwnerRead:
    if not available:
        return OwnerRead(False, "owner lookup failed: HTTP 403")
    namespace = Presence.GONE if presence is Presence.UNKNOWN else Presence.PRESENT
    return OwnerRead(True, resolved=True, namespace=namespace, owner=presence)


def test_a_route_whose_upstream_httproute_is_gone_is_an_orphan_though_its_gateway_exists() -> None:
    r = route()
    verdict = decide(r, replace(ok({"gw"}), owner=_owner(Presence.GONE)))
    assert verdict.delete and verdict.reason is Reason.OWNER_GONE
    assert "HTTPRoute.gateway.networking.k8s.io default/web" in verdict.detail
    assert verdict.gateways == ("default/gw",) and verdict.cluster == "single"


@pytest.mark.parametrize(
    "owner",
    [
        pytest.param(_owner(Presence.PRESENT), id="present"),
        pytest.param(_owner(Presence.TERMINATING), id="terminating"),
        pytest.param(_owner(Presence.UNKNOWN), id="namespace-gone-proves-no-owner"),
        pytest.param(_owner(Presence.GONE, available=False), id="cluster-failed-a-read"),
        pytest.param(None, id="not-looked-up"),
    ],
)
def test_an_upstream_httproute_not_proven_gone_leaves_the_gateway_rule(
    owner: OwnerRead | None,
) -> None:
    r = route()
    kept = decide(r, replace(ok({"gw"}), owner=owner))
    assert not kept.delete and kept.reason is Reason.GATEWAY_EXISTS
    gone = decide(r, replace(ok(set()), owner=owner))
    assert gone.delete and gone.reason is Reason.UPSTREAM_GATEWAYS_GONE


def test_an_upstream_httproute_gone_on_an_unavailable_or_suspect_cluster_proves_nothing() -> None:
    r = route()
    gone = _owner(Presence.GONE)
    unavailable = UpstreamView(ClusterStatus.UNAVAILABLE, "HTTP 403", owner=gone)
    assert decide(r, unavailable).reason is Reason.UPSTREAM_UNAVAILABLE
    suspect = UpstreamView(ClusterStatus.SUSPECT, "none found", frozenset(), owner=gone)
    verdict = decide(r, suspect)
    assert not verdict.delete and verdict.reason is Reason.UPSTREAM_SUSPECT


def test_a_young_protected_or_owned_route_whose_upstream_httproute_is_gone_is_held_back() -> None:
    view = replace(ok({"gw"}), owner=_owner(Presence.GONE))
    assert decide(route(created=YOUNG), view).reason is Reason.TOO_YOUNG
    assert decide(route(protected=True), view).reason is Reason.PROTECTED


@pytest.mark.parametrize(
    ("route_name", "namespace", "name", "reason"),
    [
        # A label 63 characters long may be cut short: it proves nothing, the name no more
        # than the namespace (before, only the Gateway rule judged such a route).
        ("w" * 63, "default", "w" * 63, Reason.LABEL_AT_LIMIT),
        ("w" * 70, "default", "w" * 63, Reason.LABEL_AT_LIMIT),
        ("web", "n" * 63, "web", Reason.LABEL_AT_LIMIT),
        ("web", "a" * 64, "web", Reason.LABEL_AT_LIMIT),
        # A name label that is not the route's own: no copy NSO writes (issue 30 item 1).
        ("web", "default", "Not_A_Name", Reason.NOT_A_COPY),
        ("web", "default", "web-v1", Reason.NOT_A_COPY),
        ("web", "default", "WEB", Reason.NOT_A_COPY),
    ],
)
def test_a_route_whose_labels_may_be_cut_short_or_are_not_its_own_is_kept_unjudged(
    route_name: str, namespace: str, name: str, reason: Reason
) -> None:
    """Kept for its shape, before any upstream read: neither the upstream HTTPRoute its label
    names is looked up nor the Gateway rule asked (replaces a test that looked such a route's
    Gateways up and left only its owner unread)."""
    r = route(route_name, labels=route_labels(namespace=namespace, name=name))
    target = route_target(r)
    assert isinstance(target, Verdict)
    assert (target.delete, target.reason) == (False, reason)


def test_the_trace_says_what_was_read_of_the_upstream_httproute() -> None:
    r = route()
    trace = Trace()
    route_verdict(
        r, target_of(r), replace(ok({"gw"}), owner=_owner(Presence.PRESENT)), NOW, MIN_AGE, trace
    )
    step = next(s for s in trace.steps if s.rule == "upstream-route")
    assert step.evidence.endswith("default/web on upstream cluster single: present")
