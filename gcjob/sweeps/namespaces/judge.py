"""Sweep 5, hub namespaces: is a hub namespace `ns-<uid>` the leftover of an upstream namespace
proven gone, and does it hold nothing but what Kubernetes puts in every namespace? Pure: no
I/O, no clock.

Each rule closes a way a live namespace could look left over (docs/rules.md, "Hub
namespaces"):
- a candidate is named `ns-` + a canonical lowercase UUID and carries both labels NSO stamps
  (the upstream cluster and namespace); nothing else, never a reserved namespace;
- the upstream namespace is proven gone by the proofs the copies sweep rests on (decide/
  owner_gone.py, its owner being the upstream Namespace): its project gone, a NotFound naming
  it, or re-created under another UID than the hub name's, created later than the hub
  namespace by more than the clock skew;
- what it holds is listed kind by kind: any object but `kube-root-ca.crt`, the `default`
  ServiceAccount and Events keeps it, and so does a kind that could not be listed.

The sweep is report-only: its verdict says `would-delete` at most, and nothing is written.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from gcjob.decide.common import check_owners, hold_back
from gcjob.decide.owner_gone import judge_owner
from gcjob.decide.trace import Trace, given
from gcjob.domain import (
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
    decode_cluster_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_reserved_namespace,
)
from gcjob.model import (
    Holdings,
    HubNamespace,
    OwnerFacts,
    Propagation,
    UpstreamOwner,
    Verdict,
)
from gcjob.reasons import Reason

HUB_NAME = re.compile(r"ns-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")

# Its projects judged with the trust rule but no projects brake (sweep.py and explain.py): the
# brake stops deletions on a Project API that suddenly finds many projects gone, and this sweep
# deletes nothing; its leftovers are deleted projects', thousands on a big hub.
NO_PROJECTS_BRAKE = sys.maxsize


class NamespaceWorld(Protocol):
    """What the judgement asks of the world, read before it (the sweep's batch reads, or
    explain's by-name reads)."""

    def facts(self, owner: UpstreamOwner) -> OwnerFacts: ...

    def holdings(self, namespace: HubNamespace) -> Holdings | None:
        """None: not inspected this run (past --namespaces-max-inspected)."""
        ...

    def propagation(self, namespace: HubNamespace) -> Propagation: ...


def upstream_of(namespace: HubNamespace, trace: Trace | None = None) -> UpstreamOwner | Verdict:
    """The upstream Namespace a hub namespace stands for (an owner of kind Namespace), or a
    Verdict keeping it: not named `ns-<uuid>`, reserved, or its labels missing or malformed."""
    trace = given(trace)
    ref = namespace.ref
    if is_reserved_namespace(ref.name) or ref.name == "default" or not HUB_NAME.fullmatch(ref.name):
        reason, detail = trace.hold(
            "candidate", Reason.OUT_OF_SCOPE, f"{ref.name} is not named ns-<canonical uuid>"
        )
        return Verdict(ref, False, reason, detail)
    labels = namespace.labels
    missing = [k for k in (UPSTREAM_CLUSTER_LABEL, UPSTREAM_NAMESPACE_LABEL) if k not in labels]
    if missing:
        reason, detail = trace.hold(
            "candidate", Reason.LABELS_MISSING, f"missing label {', '.join(missing)}"
        )
        return Verdict(ref, False, reason, detail)
    cluster = decode_cluster_label(labels[UPSTREAM_CLUSTER_LABEL])
    if cluster is None or not all(map(is_dns1123_subdomain, cluster.split("/"))):
        value = labels[UPSTREAM_CLUSTER_LABEL][:80]
        reason, detail = trace.hold(
            "candidate",
            Reason.CLUSTER_LABEL_MALFORMED,
            f"{UPSTREAM_CLUSTER_LABEL}={value!r} is not cluster-<name>",
        )
        return Verdict(ref, False, reason, detail)
    upstream = labels[UPSTREAM_NAMESPACE_LABEL]
    if not is_dns1123_label(upstream):
        reason, detail = trace.hold(
            "candidate",
            Reason.UPSTREAM_NAMESPACE_MALFORMED,
            f"{UPSTREAM_NAMESPACE_LABEL}={upstream[:80]!r} is not a namespace name",
        )
        return Verdict(ref, False, reason, detail, cluster=cluster)
    trace.passed("candidate", f"ns-<uuid>, upstream namespace {upstream} on {cluster}")
    return UpstreamOwner(cluster, "", "Namespace", "", upstream)


@dataclass(frozen=True, slots=True)
class Gone:
    """The upstream namespace proven gone: the reason and its detail."""

    reason: Reason
    detail: str


def upstream_gone(
    namespace: HubNamespace,
    owner: UpstreamOwner,
    facts: OwnerFacts,
    clock_skew: timedelta,
    trace: Trace | None = None,
) -> Gone | Verdict:
    """The copies sweep's proofs (decide/owner_gone.py) over the upstream Namespace: its
    project gone, a NotFound naming it; or, existing, re-created under another UID than the
    hub name's, created later than the hub namespace by more than `clock_skew`."""
    trace = given(trace)
    ref = namespace.ref
    call = judge_owner(owner, facts, trace)
    if call.proof is not None:
        reason = (
            Reason.PROJECT_GONE
            if call.reason is Reason.PROJECT_GONE
            else (Reason.UPSTREAM_NAMESPACE_GONE)
        )
        return Gone(reason, call.detail)
    if not call.exists:
        reason = call.reason
        if reason is Reason.OWNER_TERMINATING:
            reason = Reason.UPSTREAM_NAMESPACE_TERMINATING
        return Verdict(ref, False, reason, call.detail, cluster=owner.cluster)
    match = HUB_NAME.fullmatch(ref.name)
    assert match is not None  # upstream_of said so
    hub_uid = match.group(1)
    if call.current_uid == hub_uid:
        detail = f"{call.detail}: the UID its name carries"
        trace.held_at("recreated", detail)
        return Verdict(
            ref,
            False,
            Reason.UPSTREAM_NAMESPACE_EXISTS,
            detail,
            healthy=True,
            cluster=owner.cluster,
        )
    created = facts.read.owner_created
    if ref.created is None or created is None or created <= ref.created + clock_skew:
        detail = (
            f"{call.detail}, not {hub_uid}; created {_at(created)}, not later than the hub "
            f"namespace ({_at(ref.created)}) by more than --clock-skew "
            f"{int(clock_skew.total_seconds())}s: not proven re-created"
        )
        trace.held_at("recreated", detail)
        return Verdict(ref, False, Reason.UPSTREAM_NAMESPACE_EXISTS, detail, cluster=owner.cluster)
    detail = (
        f"{owner} re-created under uid {call.current_uid} at {_at(created)}, after the hub "
        f"namespace ({_at(ref.created)}) by more than --clock-skew: {hub_uid} is gone"
    )
    trace.passed("recreated", detail)
    return Gone(Reason.UPSTREAM_NAMESPACE_RECREATED, detail)


def propagation_said(propagation: Propagation) -> str:
    """Whether Karmada propagated the namespace, in the item's detail."""
    if propagation.unknown:
        return f"Karmada propagation not known: {propagation.unknown}"
    clusters = propagation.clusters
    if not clusters:
        return "not propagated by Karmada (no Work owned by it)"
    more = ", …" if len(clusters) > 5 else ""
    return f"propagated by Karmada to {len(clusters)} member cluster(s): " + (
        ", ".join(clusters[:5]) + more
    )


def _at(moment: datetime | None) -> str:
    return moment.isoformat() if moment is not None else "unknown"


def judge_holdings(
    namespace: HubNamespace,
    gone: Gone,
    holdings: Holdings | None,
    propagation: Propagation,
    cluster: str,
    trace: Trace | None = None,
) -> Verdict:
    """A leftover namespace: `would-delete` only when it holds nothing but what Kubernetes
    puts in every namespace; a kind not listed, or not inspected this run, keeps it."""
    trace = given(trace)
    ref = namespace.ref
    karmada = propagation_said(propagation)
    if holdings is None:
        detail = f"{gone.detail}; not inspected: past --namespaces-max-inspected this run"
        trace.held_at("holds-nothing", detail)
        return Verdict(ref, False, Reason.NAMESPACE_NOT_INSPECTED, detail, cluster=cluster)
    if holdings.not_listable:
        said = "; ".join(f"{kind}: {why}" for kind, why in sorted(holdings.not_listable.items()))
        detail = f"{gone.detail}; cannot list {said}; {karmada}"
        trace.held_at("holds-nothing", detail)
        return Verdict(ref, False, Reason.NAMESPACE_NOT_LISTABLE, detail, cluster=cluster)
    if holdings.counts:
        said = ", ".join(f"{kind} {n}" for kind, n in sorted(holdings.counts.items()))
        detail = f"{gone.detail}; holds {said}; {karmada}"
        trace.held_at("holds-nothing", detail)
        return Verdict(ref, False, Reason.NAMESPACE_HOLDS, detail, cluster=cluster)
    detail = (
        f"{gone.detail}; holds nothing but what Kubernetes puts in every namespace; {karmada}; "
        "report-only: never deleted"
    )
    trace.passed("holds-nothing", detail)
    return Verdict(ref, True, gone.reason, detail, cluster=cluster)


def judge_namespace(
    namespace: HubNamespace,
    world: NamespaceWorld,
    now: datetime,
    min_age: timedelta,
    clock_skew: timedelta,
    trace: Trace | None = None,
) -> Verdict:
    """One hub namespace: a candidate, old enough, not terminating or protected, its upstream
    namespace proven gone, and holding nothing: `would-delete` (report-only)."""
    trace = given(trace)
    owner = upstream_of(namespace, trace)
    if isinstance(owner, Verdict):
        return owner
    held = hold_back(namespace.ref, now, min_age, namespace.protect, trace)
    if held is None:  # an ownerReference manages it (the driver's rule, said here too)
        held = check_owners(namespace.owners, trace)
    if held is not None:
        return Verdict(namespace.ref, False, *held, cluster=owner.cluster)
    gone = upstream_gone(namespace, owner, world.facts(owner), clock_skew, trace)
    if isinstance(gone, Verdict):
        return gone
    holdings = world.holdings(namespace)
    return judge_holdings(
        namespace, gone, holdings, world.propagation(namespace), owner.cluster, trace
    )
