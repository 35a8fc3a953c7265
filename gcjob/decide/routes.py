"""Sweep 3: a downstream HTTPRoute whose upstream Gateways are all proven gone."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import Enum

from gcjob.decide.common import hold_back
from gcjob.domain import (
    GATEWAY_GROUP,
    GATEWAY_KIND,
    HTTP01_SOLVER_LABEL,
    HTTPROUTE_KIND,
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_NAME_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
    decode_cluster_label,
    is_dns1123_subdomain,
)
from gcjob.model import ParentRef, Route, Verdict


class ClusterStatus(Enum):
    OK = "ok"
    UNKNOWN = "unknown"  # no endpoint configured for that cluster name
    UNAVAILABLE = "unavailable"  # does not resolve, authenticate or serve Gateways
    SUSPECT = "suspect"  # many routes, not one Gateway found: distrust, delete nothing


@dataclass(frozen=True, slots=True)
class RouteTarget:
    """The upstream Gateways one route hangs on."""

    cluster: str
    namespace: str
    gateways: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class UpstreamView:
    """What this run learnt of one (cluster, namespace) upstream."""

    cluster_status: ClusterStatus
    cluster_detail: str = ""
    gateways: frozenset[str] | None = None  # None: the lookup failed
    lookup_error: str = ""
    namespace_exists: bool | None = None  # None: not known


def in_scope(route: Route) -> bool:
    """Routes NSO copied from an upstream HTTPRoute; any other value means another owner."""
    return (
        route.labels.get(UPSTREAM_GROUP_LABEL) == GATEWAY_GROUP
        and route.labels.get(UPSTREAM_KIND_LABEL) == HTTPROUTE_KIND
    )


def is_gateway(parent: ParentRef) -> bool:
    # Defaults apply only to absent keys: group "" is the core group (a Service parent).
    group = GATEWAY_GROUP if parent.group is None else parent.group
    kind = GATEWAY_KIND if parent.kind is None else parent.kind
    return group == GATEWAY_GROUP and kind == GATEWAY_KIND


def route_target(route: Route) -> RouteTarget | Verdict:
    """The upstream Gateways of a route, or a Verdict keeping it for a reason of shape."""
    ref = route.ref
    labels = route.labels
    missing = [
        key
        for key in (UPSTREAM_CLUSTER_LABEL, UPSTREAM_NAMESPACE_LABEL, UPSTREAM_NAME_LABEL)
        if not labels.get(key)
    ]
    if missing:
        return Verdict(ref, False, "labels-missing", f"missing label {', '.join(missing)}")
    if labels.get(HTTP01_SOLVER_LABEL) == "true":
        return Verdict(ref, False, "http01-solver", "certificate challenge route: no upstream")
    cluster = decode_cluster_label(labels[UPSTREAM_CLUSTER_LABEL])
    if cluster is None:
        return Verdict(
            ref,
            False,
            "cluster-label-malformed",
            f"{UPSTREAM_CLUSTER_LABEL}={labels[UPSTREAM_CLUSTER_LABEL]!r} is not cluster-<name>",
        )
    if not route.parent_refs:
        return Verdict(ref, False, "no-parent-refs", "no spec.parentRefs", cluster=cluster)
    others = [p for p in route.parent_refs if not is_gateway(p)]
    if others:
        other = others[0]
        return Verdict(
            ref,
            False,
            "non-gateway-parent",
            f"parent {other.group!r}/{other.kind} {other.name} is not a Gateway",
            cluster=cluster,
        )
    unnamed = [p for p in route.parent_refs if not is_dns1123_subdomain(p.name)]
    if unnamed:
        return Verdict(
            ref,
            False,
            "malformed-parent-ref",
            f"parent name {unnamed[0].name[:80]!r} is not a valid object name",
            cluster=cluster,
        )
    foreign = [
        p for p in route.parent_refs if p.namespace is not None and p.namespace != ref.namespace
    ]
    if foreign:
        return Verdict(
            ref,
            False,
            "cross-namespace-parent",
            f"parent Gateway {foreign[0].namespace}/{foreign[0].name} is in another namespace",
            cluster=cluster,
        )
    gateways = tuple(sorted({p.name for p in route.parent_refs}))
    return RouteTarget(cluster, labels[UPSTREAM_NAMESPACE_LABEL], gateways)


def is_suspect(routes_checked: int, gateways_found: int, min_routes: int) -> bool:
    """An upstream where many routes hang on Gateways and not one is found is distrusted:
    a wrong endpoint or an emptied cluster looks exactly like that."""
    return min_routes > 0 and routes_checked >= min_routes and gateways_found == 0


def decide_route(
    route: Route, target: RouteTarget, view: UpstreamView, now: datetime, min_age: timedelta
) -> Verdict:
    ref = route.ref
    names = tuple(f"{target.namespace}/{g}" for g in target.gateways)

    def keep(reason: str, detail: str, healthy: bool = False) -> Verdict:
        return Verdict(
            ref, False, reason, detail, healthy=healthy, cluster=target.cluster, gateways=names
        )

    where = f"on upstream cluster {target.cluster}"
    if view.cluster_status is ClusterStatus.UNKNOWN:
        return keep(
            "upstream-cluster-unknown",
            f"no endpoint for cluster {target.cluster}: {view.cluster_detail}",
        )
    if view.cluster_status is ClusterStatus.UNAVAILABLE:
        return keep(
            "upstream-unavailable", f"cluster {target.cluster} unavailable: {view.cluster_detail}"
        )
    if view.gateways is None:
        return keep("upstream-unavailable", f"Gateway lookup {where} failed: {view.lookup_error}")
    present = [g for g in target.gateways if g in view.gateways]
    if present:
        return keep(
            "gateway-exists", f"Gateway {target.namespace}/{present[0]} exists {where}", True
        )
    if view.cluster_status is ClusterStatus.SUSPECT:
        return keep("upstream-suspect", f"no Gateway at all found {where}: {view.cluster_detail}")
    held = hold_back(ref, now, min_age, route.protected)
    if held is not None:
        return keep(*held)
    orphan = Verdict(
        ref,
        True,
        "upstream-gateways-gone",
        f"no Gateway {', '.join(names)} {where}",
        cluster=target.cluster,
        gateways=names,
    )
    return namespace_gone(orphan, target) if view.namespace_exists is False else orphan


def namespace_gone(orphan: Verdict, target: RouteTarget) -> Verdict:
    """The same orphan, for the stronger reason that its whole upstream namespace is gone."""
    return replace(
        orphan,
        reason="upstream-namespace-gone",
        detail=f"namespace {target.namespace} no longer exists on upstream cluster "
        f"{target.cluster}",
    )
