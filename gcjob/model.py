"""Plain records that flow from enumerate to decide to act to report.

Every record holds only what a decision or the report needs: raw API objects are reduced
to these as each page arrives, so memory stays flat as the hub grows and nothing of a
Secret's payload survives the read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum, StrEnum
from typing import ClassVar

from gcjob.reasons import Reason


class Action(StrEnum):
    DELETED = "deleted"
    # Its delete went out and was accepted; a finalizer other than the garbage collector's
    # `orphan` still holds the object (read again a moment later: docs/rules.md "Deletion
    # states"). Counted apart from `deleted`; as a deletion against the drain cap.
    DELETE_HELD = "delete-held"
    WOULD_DELETE = "would-delete"
    ALREADY_GONE = "already-gone"
    SKIPPED = "skipped"
    FAILED = "failed"
    MARKED = "marked"  # found orphaned: marked, deleted after the grace period
    WOULD_MARK = "would-mark"
    UNMARKED = "unmarked"  # no longer an orphan: its mark removed
    WOULD_UNMARK = "would-unmark"


class _Names(type):
    """Iterating `Sweep` gives the shipped sweeps' names, in run order."""

    def __iter__(cls) -> Iterator[Sweep]:
        return iter(SHIPPED)


class Sweep(str, metaclass=_Names):
    """A sweep's name, as its folder declares it (its REGISTERED, gcjob/sweeps/registry.py):
    open, so that a sweep is added by its folder and its registry line and a test may declare
    a sweep of its own; one object a name, so `is` compares them as it compared an enum's
    members. Iterating the class gives the shipped sweeps (`SHIPPED`: the names a flag, a
    setting and the report schema take), held to the registry by
    tests/sweeps/test_registry.py."""

    __slots__ = ()
    _named: ClassVar[dict[str, Sweep]] = {}
    # The shipped sweeps by name, for the tests: gcjob's code outside a sweep's folder names
    # none of them (tests/sweeps/test_registry.py), it asks the registry.
    COMPANIONS: ClassVar[Sweep]
    BINDINGS: ClassVar[Sweep]
    ROUTES: ClassVar[Sweep]
    COPIES: ClassVar[Sweep]
    NAMESPACES: ClassVar[Sweep]

    def __new__(cls, name: str) -> Sweep:
        known = cls._named.get(name)
        if known is None:
            known = cls._named[name] = super().__new__(cls, name)
        return known

    @property
    def value(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"Sweep({self.value!r})"


# The shipped sweeps, in run order (gcjob/sweeps/__init__.py REGISTRY, held to it by a test).
SHIPPED: tuple[Sweep, ...] = tuple(
    map(Sweep, ("companions", "bindings", "routes", "copies", "namespaces"))
)
Sweep.COMPANIONS, Sweep.BINDINGS, Sweep.ROUTES, Sweep.COPIES, Sweep.NAMESPACES = SHIPPED


@dataclass(frozen=True, slots=True)
class Mark:
    """gcjob's pending-deletion mark as read from an object: each part verbatim, None when
    absent (gcjob/marks.py says what it means)."""

    label: str | None = None
    since: str | None = None
    reason: str | None = None
    evidence: str | None = None


# gcjob's protect key as found on one object: (where, value) for each place it is set, e.g.
# ("annotation gcjob.datumapis.com/protect", "true"); empty where it is set nowhere. Values are
# verbatim (decide/common.py judges them, failing closed).
Protect = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class OwnerRef:
    """One of an object's metadata.ownerReferences, as far as a decision needs it."""

    api_version: str
    kind: str
    name: str
    controller: bool  # True also where `controller` is not a boolean: fail closed
    uid: str = ""  # read where a rule compares it (a binding's: decide/common.py), else ""


# An ownerReference that could not be read: decisions treat it as a foreign controller.
UNREADABLE_OWNER = OwnerRef("", "<unreadable ownerReference>", "", controller=True)


@dataclass(frozen=True, slots=True)
class Deletion:
    """An object being deleted, as read: since when (its deletionTimestamp; None when that is
    no readable time) and what holds it (its finalizers, verbatim)."""

    since: datetime | None
    finalizers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """What was observed of one object: enough to report it and to pin a delete or a patch
    to it."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    resource_version: str
    created: datetime | None
    terminating: bool = False
    # A JSON Patch adds a key to a map only if the map exists: whether each one was there.
    has_labels: bool = False
    has_annotations: bool = False
    mark: Mark | None = None
    deletion: Deletion | None = None  # a terminating object's: when, and what holds it

    @property
    def order(self) -> tuple[str, str, str]:
        """Its place in a report: by namespace and name, as etcd lists objects (a watch cache
        lists them in no particular order, and concurrent reads finish in any order)."""
        return (self.namespace, self.name, self.kind)


@dataclass(frozen=True, slots=True)
class Companion:
    ref: ObjectRef
    referrers_raw: str | None  # the referenced-by annotation, verbatim; None when absent
    protect: Protect = ()
    owners: tuple[OwnerRef, ...] = ()
    # For a Secret: the metadata marks of a type gcjob never deletes (a service account's
    # token, a Helm release), e.g. "annotation kubernetes.io/service-account.name"
    secret_marks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class BoundResource:
    """A ResourceBinding's spec.resource: what it says it binds."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class Binding:
    ref: ObjectRef
    policy_annotation: str | None
    policy_label: str | None
    cluster_policy: bool  # bound by a ClusterPropagationPolicy: never ours to touch
    resource: BoundResource | None = None
    protect: Protect = ()
    owners: tuple[OwnerRef, ...] = ()  # every ownerReference, controller or not, with its uid


@dataclass(frozen=True, slots=True)
class ParentRef:
    name: str
    group: str | None  # None: key absent (defaults to the Gateway API group)
    kind: str | None  # None: key absent (defaults to Gateway)
    namespace: str | None


@dataclass(frozen=True, slots=True)
class Route:
    ref: ObjectRef
    labels: dict[str, str]  # only the meta.datumapis.com/* labels gcjob reads
    parent_refs: tuple[ParentRef, ...]
    protect: Protect = ()
    owners: tuple[OwnerRef, ...] = ()  # only its controller ownerReferences


@dataclass(frozen=True, slots=True)
class Verdict:
    """A decision about one object. `delete` is the only thing that can lead to a deletion."""

    ref: ObjectRef
    delete: bool
    reason: Reason
    detail: str
    healthy: bool = False  # kept because it is in use: reported as a count only
    referrers: tuple[str, ...] = ()
    cluster: str | None = None
    gateways: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one object in this run: one report record."""

    sweep: Sweep
    ref: ObjectRef
    action: Action
    reason: Reason
    detail: str
    healthy: bool = False
    referrers: tuple[str, ...] = ()
    cluster: str | None = None
    gateways: tuple[str, ...] = ()
    extra: dict[str, str] = field(default_factory=dict)
    orphaned_since: datetime | None = None  # once marked: since when it has been an orphan
    # An orphan left in place this run: when it goes if it stays orphaned (decide/grace.py
    # deletes_at), in a dry run as in a --delete run.
    would_delete_at: datetime | None = None
    # The sweep is not enforced (report-only, --enforce): `would_delete_at` is when it would
    # go if it were, never a pending deletion.
    if_enforced: bool = False

    @classmethod
    def of(
        cls,
        sweep: Sweep,
        verdict: Verdict,
        action: Action,
        reason: Reason | None = None,
        detail: str | None = None,
        orphaned_since: datetime | None = None,
    ) -> Outcome:
        return cls(
            sweep=sweep,
            ref=verdict.ref,
            action=action,
            reason=reason or verdict.reason,
            detail=detail if detail is not None else verdict.detail,
            healthy=verdict.healthy,
            referrers=verdict.referrers,
            cluster=verdict.cluster,
            gateways=verdict.gateways,
            orphaned_since=orphaned_since,
        )

    @classmethod
    def already_gone(cls, sweep: Sweep, verdict: Verdict) -> Outcome:
        """A delete or a mark found the object deleted (404) since it was observed."""
        return cls.of(
            sweep,
            verdict,
            Action.ALREADY_GONE,
            Reason.ALREADY_GONE,
            "deleted by someone else first",
        )

    @classmethod
    def internal_error(cls, sweep: Sweep, ref: ObjectRef, error: str) -> Outcome:
        """An unexpected error in this object's turn (gcjob/sweeps/boundary.py): kept."""
        verdict = Verdict(
            ref, False, Reason.INTERNAL_ERROR, f"kept: an internal error on this object: {error}"
        )
        return cls.of(sweep, verdict, Action.SKIPPED)

    @classmethod
    def changed_since_observed(cls, sweep: Sweep, verdict: Verdict, detail: str) -> Outcome:
        """A write's precondition failed: decided again on the next run, never forced."""
        reason, detail = Reason.CHANGED_SINCE_OBSERVED, f"{detail}; decided again next run"
        return cls.of(sweep, verdict, Action.SKIPPED, reason, detail)


# What the upstream clusters said, shared by the layers of the routes sweep:
# enumerate/upstream.py fills it, sweeps/routes/judge.py judges on it, act and publish report it.
class ClusterStatus(Enum):
    OK = "ok"
    UNKNOWN = "unknown"  # no endpoint configured for that cluster name
    UNAVAILABLE = "unavailable"  # does not resolve, authenticate or serve Gateways
    SUSPECT = "suspect"  # many routes, not one Gateway found: distrust, delete nothing


@dataclass(frozen=True, slots=True)
class RouteTarget:
    """The upstream Gateways one route hangs on. `route_namespace`: the hub namespace the
    route lives in; the suspect rule lets only a route's own hub namespace vouch for it."""

    cluster: str
    namespace: str
    gateways: tuple[str, ...]
    route_namespace: str = ""
    # The upstream HTTPRoute the route copies; None when it is not to be looked up (a label
    # that may have been cut short names no object to prove gone).
    owner: UpstreamOwner | None = None

    def qualified(self) -> tuple[str, ...]:
        """The Gateways as namespace/name, as verdicts report them."""
        return tuple(f"{self.namespace}/{g}" for g in self.gateways)


@dataclass(frozen=True, slots=True)
class UpstreamView:
    """What this run learnt of one (cluster, namespace) upstream."""

    cluster_status: ClusterStatus
    cluster_detail: str = ""
    gateways: frozenset[str] | None = None  # None: the lookup failed
    lookup_error: str = ""
    namespace_exists: bool | None = None  # None: not known
    project: ProjectCall | None = None  # the project's state, where the cluster is one
    owner: OwnerRead | None = None  # the upstream HTTPRoute, where it was looked up


@dataclass(frozen=True, slots=True)
class Replica:
    """A hub object of a kind NSO copies (or an anchor), as read: metadata only."""

    ref: ObjectRef
    group: str  # its own API group, "" for the core group
    labels: Mapping[str, str]  # the five upstream labels and gateway-sync, only
    owners: tuple[OwnerRef, ...] = ()  # every ownerReference, controller or not
    protect: Protect = ()


# What the upstream clusters and Milo's Project API say of the owners of downstream copies,
# shared by the routes and downstream-copies sweeps: enumerate/owners.py reads it,
# decide/projects.py and the sweeps' judgements judge on it.
@dataclass(frozen=True, slots=True, order=True)
class UpstreamOwner:
    """The upstream object a downstream copy copies: what its five labels name."""

    cluster: str
    group: str  # "" for the core group
    kind: str
    namespace: str  # "" for a cluster-scoped owner
    name: str

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{kind} {where} on upstream cluster {self.cluster}"


class Presence(Enum):
    PRESENT = "present"
    TERMINATING = "being deleted"
    GONE = "proven gone"  # a NotFound naming it
    UNKNOWN = "not known"  # not read, or the read failed: never proof
    NOT_ASKED = "not asked"  # not read by choice (customers' Secrets): never proof, no error


@dataclass(frozen=True, slots=True)
class OwnerRead:
    """What one upstream cluster said of one owner this run."""

    cluster_available: bool
    cluster_detail: str = ""
    resolved: bool = False  # its group and kind map to exactly one upstream resource
    resolve_detail: str = ""
    namespace: Presence = Presence.UNKNOWN
    owner: Presence = Presence.UNKNOWN
    owner_uid: str = ""  # when present
    owner_created: datetime | None = None
    detail: str = ""  # why a read failed


class ProjectAnswer(Enum):
    """What the Project API said of one project, as read."""

    FOUND = "found"
    TERMINATING = "being deleted"  # found, with a deletionTimestamp: Milo purges it
    NOT_FOUND = "not found"  # a NotFound Status naming projects/<name> in Milo's group
    UNREAD = "not read"  # anything else: an error, a 404 naming something else, not asked


class ProjectState(Enum):
    """The judgement on one project (decide/projects.py), for the sweeps resting on it."""

    NOT_A_PROJECT = "not a project"  # a kubeconfig context, `single`: never a project
    PRESENT = "present"
    TERMINATING = "being deleted"
    GONE = "gone"
    UNKNOWN = "not known"


@dataclass(frozen=True, slots=True)
class ProjectCall:
    state: ProjectState
    detail: str


# How a run counts Milo projects (the summary's `projects`, the gcjob_run_projects gauge), the
# most cautious first: a project two sweeps judged differently counts as the more cautious.
# `brake-held`: found gone, but more projects were than --max-projects-gone allows;
# `not-answered`: neither found nor proven gone (an error, an untrusted Project API).
PROJECT_BRAKE_HELD = "brake-held"
PROJECT_COUNTED_AS = {
    ProjectState.UNKNOWN: "not-answered",
    ProjectState.TERMINATING: "terminating",
    ProjectState.PRESENT: "present",
    ProjectState.GONE: "gone",
}
PROJECT_COUNT_STATES = (PROJECT_BRAKE_HELD, *PROJECT_COUNTED_AS.values())


@dataclass(frozen=True, slots=True)
class OwnerFacts:
    """Everything known of one owner: its project's state and its cluster's answers."""

    project: ProjectCall
    read: OwnerRead


class Looked(Enum):
    """What a live second look right before a delete found of what the orphan's reason rests
    on (its upstream owner, namespace or project)."""

    PROVEN = "still proven"  # the read answered, and still proves the reason
    NO_LONGER = "no longer proven"  # the read answered, and proves it no more: a fact
    FAILED = "not read"  # the read failed, was refused or ran out of its budget: no fact
    STOPPED = "run stopped"  # the run stopped before it could be read


@dataclass(frozen=True, slots=True)
class SecondLook:
    """A second look and what it found (`detail`: what was read, or why it was not)."""

    found: Looked
    detail: str = ""

    @property
    def proven(self) -> bool:
        return self.found is Looked.PROVEN


# -- the namespaces sweep (gcjob/sweeps/namespaces) ----------------------------------------


@dataclass(frozen=True, slots=True)
class HubNamespace:
    """A hub namespace as the namespaces sweep reads it: metadata only."""

    ref: ObjectRef
    labels: Mapping[str, str]
    owners: tuple[OwnerRef, ...]
    protect: Protect


@dataclass(frozen=True, slots=True)
class Holdings:
    """What one hub namespace holds, listed kind by kind: counts of what is not in every
    namespace by `Kind.group`, and the kinds that could not be listed (with why)."""

    counts: Mapping[str, int]
    not_listable: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Propagation:
    """Whether Karmada propagated a hub namespace: the member clusters its Works name, or why
    that is not known (`unknown`: Works not served or not readable)."""

    clusters: tuple[str, ...] = ()
    unknown: str = ""
