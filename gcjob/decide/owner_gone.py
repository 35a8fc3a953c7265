"""Whether an upstream owner is proven gone, from what the world says of it (model.OwnerFacts:
its project's call, its cluster's answers): the proofs the downstream-copies sweep rests on,
and the namespaces sweep rests on for an upstream namespace (an owner of kind Namespace). One
rule for both, so neither proves "gone" its own way. Pure: no I/O, no clock."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from gcjob.decide.trace import Trace, given
from gcjob.model import ObjectRef, OwnerFacts, Presence, ProjectState, UpstreamOwner, Verdict
from gcjob.reasons import Reason

# -- what the world says of one owner ---------------------------------------------------


class Proof(Enum):
    """Why an owner is gone, strongest first; the reason its group's members are marked with."""

    PROJECT_GONE = Reason.PROJECT_GONE
    NAMESPACE_GONE = Reason.UPSTREAM_NAMESPACE_GONE
    OWNER_GONE = Reason.OWNER_GONE


@dataclass(frozen=True, slots=True)
class GroupCall:
    """The owner-level judgement: proven gone (and how), or why not."""

    proof: Proof | None
    reason: Reason
    detail: str
    unknown: bool = False  # a read it needed failed: the run says so (exit 1/3)
    exists: bool = False  # the owner exists: only what a previous owner left can go
    current_uid: str = ""  # the existing owner's UID


def judge_owner(owner: UpstreamOwner, facts: OwnerFacts, trace: Trace | None = None) -> GroupCall:
    """Is this owner proven gone? The project first (a gone project's control plane is
    unreachable), then the cluster, the owner's resource, its namespace, the owner itself."""
    trace = given(trace)
    project = facts.project
    if project.state is ProjectState.GONE:
        trace.passed("owner-lookup", project.detail)
        return GroupCall(Proof.PROJECT_GONE, Reason.PROJECT_GONE, project.detail)
    if project.state is ProjectState.TERMINATING:
        trace.hold("project-live", Reason.PROJECT_TERMINATING, project.detail)
        return GroupCall(None, Reason.PROJECT_TERMINATING, project.detail)
    trace.passed("project-live", project.detail)
    if not facts.read.cluster_available:
        detail = f"cluster {owner.cluster} unavailable: {facts.read.cluster_detail}"
        trace.unknown("cluster-available", detail, _no_verdict())
        return GroupCall(None, Reason.UPSTREAM_UNAVAILABLE, detail, unknown=True)
    trace.passed("cluster-available", f"cluster {owner.cluster} answered")
    if not facts.read.resolved:
        what = f"{owner.kind}.{owner.group or 'core'}"
        detail = f"{what} not resolved upstream: {facts.read.resolve_detail}"
        trace.hold("owner-resolved", Reason.OWNER_UNRESOLVED, detail)
        return GroupCall(None, Reason.OWNER_UNRESOLVED, detail)
    trace.passed("owner-resolved", facts.read.resolve_detail)
    if owner.namespace:
        if facts.read.namespace is Presence.GONE:
            detail = f"namespace {owner.namespace} is gone from upstream cluster {owner.cluster}"
            trace.passed("owner-lookup", detail)
            return GroupCall(Proof.NAMESPACE_GONE, Reason.UPSTREAM_NAMESPACE_GONE, detail)
        if facts.read.namespace is Presence.TERMINATING:
            detail = f"namespace {owner.namespace} is being deleted upstream"
            trace.hold("namespace-live", Reason.UPSTREAM_NAMESPACE_TERMINATING, detail)
            return GroupCall(None, Reason.UPSTREAM_NAMESPACE_TERMINATING, detail)
        if facts.read.namespace is Presence.UNKNOWN:
            detail = f"namespace {owner.namespace} not read: {facts.read.detail}"
            trace.unknown("namespace-live", detail, _no_verdict())
            return GroupCall(None, Reason.LOOKUP_FAILED, detail, unknown=True)
        trace.passed("namespace-live", f"namespace {owner.namespace} exists upstream")
    if facts.read.owner is Presence.GONE:
        detail = f"{owner} not found"
        trace.passed("owner-lookup", detail)
        return GroupCall(Proof.OWNER_GONE, Reason.OWNER_GONE, detail)
    if facts.read.owner is Presence.NOT_ASKED:
        detail = f"{owner} is not read: {facts.read.resolve_detail}"
        trace.hold("owner-lookup", Reason.OWNER_NOT_READ, detail)
        return GroupCall(None, Reason.OWNER_NOT_READ, detail)
    if facts.read.owner is Presence.UNKNOWN:
        detail = f"{owner} not read: {facts.read.detail}"
        trace.unknown("owner-lookup", detail, _no_verdict())
        return GroupCall(None, Reason.LOOKUP_FAILED, detail, unknown=True)
    if facts.read.owner is Presence.TERMINATING:
        detail = f"{owner} is being deleted upstream: NSO finalizes it"
        trace.hold("owner-lookup", Reason.OWNER_TERMINATING, detail)
        return GroupCall(None, Reason.OWNER_TERMINATING, detail)
    detail = f"{owner} exists, uid {facts.read.owner_uid or 'unknown'}"
    trace.held_at("owner-lookup", detail)
    return GroupCall(
        None, Reason.OWNER_EXISTS, detail, exists=True, current_uid=facts.read.owner_uid
    )


def _no_verdict() -> Verdict:
    # Trace.unknown wants a verdict to hand back; the group's members get their own.
    return Verdict(ObjectRef("", "", "", "", "", "", None), False, Reason.LOOKUP_FAILED, "")
