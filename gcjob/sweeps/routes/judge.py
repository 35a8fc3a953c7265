"""Sweep 3: a downstream HTTPRoute whose upstream Gateways are all proven gone. Pure: the
upstream clusters are asked through a world (UpstreamWorld)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Protocol

from gcjob.decide.common import Claims, anchored_claims, check_owners, hold_back, is_anchor
from gcjob.decide.grace import GraceCall, Graced, grace_call, left_scope
from gcjob.decide.trace import Trace, given
from gcjob.decide.upstream_labels import NotCopied, copy_of
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
    is_dns1123_subdomain,
)
from gcjob.marks import Evidence, Rule, route_evidence
from gcjob.model import (
    ClusterStatus,
    ObjectRef,
    OwnerRead,
    ParentRef,
    Presence,
    ProjectState,
    Route,
    RouteTarget,
    UpstreamOwner,
    UpstreamView,
    Verdict,
)
from gcjob.reasons import Reason

# Why a route's mark goes when it is no longer in_scope (decide/grace.py left_scope).
LEFT_ROUTE = "no longer labelled as a route NSO copied: out of the sweep, its mark with it"


def in_scope(route: Route, trace: Trace | None = None) -> bool:
    """Routes NSO copied from an upstream HTTPRoute; any other value means another owner."""
    group = route.labels.get(UPSTREAM_GROUP_LABEL)
    kind = route.labels.get(UPSTREAM_KIND_LABEL)
    ours = group == GATEWAY_GROUP and kind == HTTPROUTE_KIND
    if trace is not None:
        evidence = f"{UPSTREAM_GROUP_LABEL}={group!r}, {UPSTREAM_KIND_LABEL}={kind!r}"
        if ours:
            trace.passed("in-scope", evidence)
        else:
            trace.hold("in-scope", Reason.OUT_OF_SCOPE, f"{evidence}: another owner's route")
    return ours


def is_gateway(parent: ParentRef) -> bool:
    # Defaults apply only to absent keys: group "" is the core group (a Service parent).
    group = GATEWAY_GROUP if parent.group is None else parent.group
    kind = GATEWAY_KIND if parent.kind is None else parent.kind
    return group == GATEWAY_GROUP and kind == GATEWAY_KIND


def route_target(route: Route, trace: Trace | None = None) -> RouteTarget | Verdict:
    """The upstream Gateways of a route, or a Verdict keeping it for a reason of shape."""
    trace = given(trace)
    ref = route.ref
    labels = route.labels
    required = (UPSTREAM_CLUSTER_LABEL, UPSTREAM_NAMESPACE_LABEL, UPSTREAM_NAME_LABEL)
    missing = [key for key in required if not labels.get(key)]
    if missing:
        detail = f"missing label {', '.join(missing)}"
        return trace.held(
            "labels-present", detail, Verdict(ref, False, Reason.LABELS_MISSING, detail)
        )
    trace.passed("labels-present", lambda: ", ".join(f"{k}={labels[k]}" for k in required))
    solver = labels.get(HTTP01_SOLVER_LABEL)
    if solver is not None and solver != "false":
        # Fails closed, as protect does: only the absent label or exactly "false" is no solver.
        detail = "certificate challenge route: no upstream"
        if solver != "true":
            detail = f"{HTTP01_SOLVER_LABEL}={solver[:80]!r} not understood: kept as a {detail}"
        return trace.held(
            "not-http01-solver",
            f"{HTTP01_SOLVER_LABEL}={solver[:80]!r}: {detail}",
            Verdict(ref, False, Reason.HTTP01_SOLVER, detail),
        )
    trace.passed("not-http01-solver", f"not labelled {HTTP01_SOLVER_LABEL}")
    # NSO's copy of an upstream HTTPRoute, by the rule every sweep applies to these labels:
    # its own name, never looked up (nor judged by its Gateways) under another.
    found = copy_of(ref.name, api_group(ref.api_version), ref.kind, labels, (), trace)
    if isinstance(found, NotCopied):
        return Verdict(ref, False, found.reason, found.detail, cluster=found.cluster)
    owner = found.owner
    cluster, upstream_namespace = owner.cluster, owner.namespace
    if not route.parent_refs:
        detail = "no spec.parentRefs"
        return trace.held(
            "has-parents",
            detail,
            Verdict(ref, False, Reason.NO_PARENT_REFS, detail, cluster=cluster),
        )
    trace.passed("has-parents", f"{len(route.parent_refs)} spec.parentRefs")
    others = [p for p in route.parent_refs if not is_gateway(p)]
    if others:
        other = others[0]
        detail = f"parent {other.group!r}/{other.kind} {other.name} is not a Gateway"
        return trace.held(
            "gateway-parents",
            detail,
            Verdict(ref, False, Reason.NON_GATEWAY_PARENT, detail, cluster=cluster),
        )
    trace.passed("gateway-parents", "every parentRef is a gateway.networking.k8s.io Gateway")
    unnamed = [p for p in route.parent_refs if not is_dns1123_subdomain(p.name)]
    if unnamed:
        detail = f"parent name {unnamed[0].name[:80]!r} is not a valid object name"
        return trace.held(
            "parent-names-valid",
            detail,
            Verdict(ref, False, Reason.MALFORMED_PARENT_REF, detail, cluster=cluster),
        )
    trace.passed("parent-names-valid", "every parent name is a valid object name")
    foreign = [
        p for p in route.parent_refs if p.namespace is not None and p.namespace != ref.namespace
    ]
    if foreign:
        detail = f"parent Gateway {foreign[0].namespace}/{foreign[0].name} is in another namespace"
        return trace.held(
            "same-namespace-parents",
            detail,
            Verdict(ref, False, Reason.CROSS_NAMESPACE_PARENT, detail, cluster=cluster),
        )
    trace.passed("same-namespace-parents", f"every parent is in the route's own {ref.namespace}")
    gateways = _shared_gateways(tuple(sorted({p.name for p in route.parent_refs})))
    return RouteTarget(cluster, upstream_namespace, gateways, ref.namespace, owner)


@lru_cache(maxsize=256)
def _shared_gateways(gateways: tuple[str, ...]) -> tuple[str, ...]:
    """One tuple for every route that names the same Gateways (most name one, of a few names):
    a target of each route is held from the hub's read through the Gateways' reads (a tuple
    each was 48 bytes a route). Bounded: a hub of many names only evicts."""
    return gateways


def api_group(api_version: str) -> str:
    """The group of an apiVersion: `gateway.networking.k8s.io/v1` -> its group, `v1` -> ""."""
    return api_version.rpartition("/")[0]


def owner_gone(owner: OwnerRead | None) -> bool:
    """Proven gone: a cluster that answered every read, and a NotFound naming the owner in a
    namespace that exists. Anything else proves nothing."""
    return owner is not None and owner.cluster_available and owner.owner is Presence.GONE


def describe_owner(owner: UpstreamOwner | None, read: OwnerRead | None) -> str:
    if owner is None:
        return "upstream HTTPRoute not looked up"
    if read is None:
        return f"{owner}: not looked up this run"
    if not read.cluster_available:
        return f"{owner}: not known ({read.cluster_detail or read.detail})"
    if read.owner is Presence.GONE:
        return f"{owner}: not found"
    return f"{owner}: {read.owner.value}"


def route_verdict(
    route: Route,
    target: RouteTarget,
    view: UpstreamView,
    now: datetime,
    min_age: timedelta,
    trace: Trace | None = None,
) -> Verdict:
    trace = given(trace)
    ref = route.ref
    names = target.qualified()

    def keep(rule: str, reason: Reason, detail: str, healthy: bool = False) -> Verdict:
        trace.hold(rule, reason, detail)
        return Verdict(
            ref, False, reason, detail, healthy=healthy, cluster=target.cluster, gateways=names
        )

    def unknown(rule: str, reason: Reason, detail: str) -> Verdict:
        verdict = Verdict(ref, False, reason, detail, cluster=target.cluster, gateways=names)
        return trace.unknown(rule, detail, verdict)

    where = f"on upstream cluster {target.cluster}"
    project = view.project
    if project is not None and project.state is ProjectState.GONE:
        # Proven by the Project API: its control plane is gone with it, Gateways and all.
        trace.passed("project-live", project.detail)
        held = check_owners(
            route.owners, trace, ours=is_anchor, controllers_only=True
        ) or hold_back(ref, now, min_age, route.protect, trace)
        if held is not None:
            return Verdict(ref, False, *held, cluster=target.cluster, gateways=names)
        return Verdict(
            ref, True, Reason.PROJECT_GONE, project.detail, cluster=target.cluster, gateways=names
        )
    if project is not None and project.state is ProjectState.TERMINATING:
        return keep("project-live", Reason.PROJECT_TERMINATING, project.detail)
    if project is not None and project.state is ProjectState.PRESENT:
        trace.passed("project-live", project.detail)
    if view.cluster_status is ClusterStatus.UNKNOWN:
        return keep(
            "cluster-known",
            Reason.UPSTREAM_CLUSTER_UNKNOWN,
            f"no endpoint for cluster {target.cluster}: {view.cluster_detail}",
        )
    trace.passed("cluster-known", f"upstream cluster {target.cluster} has an endpoint")
    if view.cluster_status is ClusterStatus.UNAVAILABLE:
        return unknown(
            "cluster-available",
            Reason.UPSTREAM_UNAVAILABLE,
            f"cluster {target.cluster} unavailable: {view.cluster_detail}",
        )
    trace.passed(
        "cluster-available", f"cluster {target.cluster} serves {GATEWAY_GROUP}/v1 gateways"
    )
    if view.gateways is None:
        return unknown(
            "gateways-gone",
            Reason.UPSTREAM_UNAVAILABLE,
            f"Gateway lookup {where} failed: {view.lookup_error}",
        )
    present = [g for g in target.gateways if g in view.gateways]
    evidence = "; ".join(
        f"upstream {target.cluster}: Gateway {target.namespace}/{g} "
        + ("exists" if g in present else "not found")
        for g in target.gateways
    )
    if present and view.cluster_status is ClusterStatus.OK and owner_gone(view.owner):
        # NSO ties a route to its upstream HTTPRoute, not to the Gateway: gone, whatever the
        # Gateways. (Looked up only for a route whose Gateway exists: without one, the
        # Gateway rule decides, as it always has.)
        upstream = describe_owner(target.owner, view.owner)
        trace.passed("upstream-route", f"{upstream}, though {evidence}")
        held = check_owners(
            route.owners, trace, ours=is_anchor, controllers_only=True
        ) or hold_back(ref, now, min_age, route.protect, trace)
        if held is not None:
            return Verdict(ref, False, *held, cluster=target.cluster, gateways=names)
        return Verdict(
            ref, True, Reason.OWNER_GONE, upstream, cluster=target.cluster, gateways=names
        )
    if present:
        trace.passed("upstream-route", describe_owner(target.owner, view.owner))
        healthy = Verdict(
            ref,
            False,
            Reason.GATEWAY_EXISTS,
            f"Gateway {target.namespace}/{present[0]} exists {where}",
            healthy=True,
            cluster=target.cluster,
            gateways=names,
        )
        return trace.held("gateways-gone", evidence, healthy)
    trace.passed("gateways-gone", evidence)
    if view.cluster_status is ClusterStatus.SUSPECT:
        return keep(
            "cluster-trusted",
            Reason.UPSTREAM_SUSPECT,
            f"no Gateway at all found {where}: {view.cluster_detail}",
        )
    trace.passed("cluster-trusted", f"cluster {target.cluster} is not suspect")
    held = check_owners(route.owners, trace, ours=is_anchor, controllers_only=True) or hold_back(
        ref, now, min_age, route.protect, trace
    )
    if held is not None:
        return Verdict(ref, False, *held, cluster=target.cluster, gateways=names)
    orphan = Verdict(
        ref,
        True,
        Reason.UPSTREAM_GATEWAYS_GONE,
        f"no Gateway {', '.join(names)} {where}",
        cluster=target.cluster,
        gateways=names,
    )
    return namespace_gone(orphan, target) if view.namespace_exists is False else orphan


def not_looked_up(route: Route, target: RouteTarget) -> Verdict:
    """A route whose Gateways this run did not ask about: it appeared or changed between the
    sweep's two reads of the hub's routes. Nothing is known of it yet; the next run decides."""
    names = target.qualified()
    return Verdict(
        route.ref,
        False,
        Reason.UPSTREAM_NOT_READ,
        f"Gateway {', '.join(names)} on upstream cluster {target.cluster} not looked up this "
        "run: the route appeared or changed while the run read",
        cluster=target.cluster,
        gateways=names,
    )


def namespace_gone(orphan: Verdict, target: RouteTarget) -> Verdict:
    """The same orphan, for the stronger reason that its whole upstream namespace is gone."""
    return replace(
        orphan,
        reason=Reason.UPSTREAM_NAMESPACE_GONE,
        detail=f"namespace {target.namespace} no longer exists on upstream cluster "
        f"{target.cluster}",
    )


# -- the judgement: one route against the upstream clusters ---------------------------------


class UpstreamWorld(Protocol):
    """What judging a route asks of its upstream cluster. The batch sweep answers from the
    upstream index it loaded for every route at once (gcjob/enumerate/upstream.py); explain
    loads it for this one route, as the sweep would have."""

    def view(self, target: RouteTarget) -> UpstreamView | None:
        """What the run learnt of the route's cluster and Gateways; None when this run did
        not ask about them (the route appeared or changed while the run read)."""
        ...


@dataclass(frozen=True, slots=True)
class RouteJudgement:
    """A route judged: its verdict, the upstream Gateways it hangs on (None: kept for its
    shape before any upstream answer), what an orphan's verdict rests on, and the grace
    rule's call (None: nothing to do but report it)."""

    verdict: Verdict
    target: RouteTarget | None
    evidence: Evidence | None
    call: GraceCall | None
    claims: Claims | None = None  # an orphan's: what the driver holds it to (driver.py)


def judge_route(
    route: Route,
    world: UpstreamWorld,
    now: datetime,
    min_age: timedelta,
    grace: timedelta,
    trace: Trace | None = None,
) -> RouteJudgement:
    """The routes sweep's judgement of one route it copied (in_scope), traced."""
    trace = given(trace)
    target = route_target(route, trace)
    if isinstance(target, Verdict):
        return RouteJudgement(
            target, None, None, grace_call(Rule.ROUTE, target, None, now, grace, trace)
        )
    view = world.view(target)
    if view is None:
        verdict = not_looked_up(route, target)
    else:
        verdict = route_verdict(route, target, view, now, min_age, trace)
    evidence = None
    if verdict.delete:
        t = target
        evidence = route_evidence(t.cluster, t.namespace, t.gateways, route.parent_refs)
    call = grace_call(Rule.ROUTE, verdict, evidence, now, grace, trace)
    claims = anchored_claims(route.owners, route.protect) if verdict.delete else None
    return RouteJudgement(verdict, target, evidence, call, claims)


def before_delete(
    orphan: Verdict, target: RouteTarget, namespace_exists: bool | None, trace: Trace | None = None
) -> Verdict:
    """Right before a route goes: whether its whole upstream namespace is gone (read only
    then, one read per namespace) gives it that stronger reason of its own."""
    trace = given(trace)
    where = f"namespace {target.namespace} on upstream cluster {target.cluster}"
    if namespace_exists is False:
        trace.passed("upstream-namespace", f"{where}: not found")
        return namespace_gone(orphan, target)
    trace.passed(
        "upstream-namespace", f"{where}: " + ("exists" if namespace_exists else "not known")
    )
    return orphan


def route_left_scope(ref: ObjectRef) -> Graced[None] | None:
    """A route with this sweep's mark that is no route NSO copied (any more): its mark goes."""
    return left_scope(ref, Rule.ROUTE, LEFT_ROUTE)
