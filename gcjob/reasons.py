"""Every reason code gcjob reports: an item's `reason`, the summary's counts and marks, a mark's
`orphaned-reason` annotation, and `gcjob explain`'s conclusions.

The one list: the report schema's `reason` enum and docs/reasons.md are tested against it (the
page is written by `reasons_page`, `python -m gcjob.reasons > docs/reasons.md`). A new reason is
a new member here with its meaning and the sweeps it appears in.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

ALL: Final = "all"  # a reason any sweep can report
EXPLAIN: Final = "explain"  # a reason only `gcjob explain` reports, never the sweep's report
SCOPES: Final = (ALL, "companions", "bindings", "routes", "copies", "namespaces", EXPLAIN)


class Reason(StrEnum):
    """Stable, machine-readable, lowercase-hyphenated: dashboards and alerts match on them."""

    # Any sweep.
    TOO_YOUNG = "too-young"
    AGE_UNKNOWN = "age-unknown"
    TERMINATING = "terminating"
    DELETION_STALLED = "deletion-stalled"
    PROTECTED = "protected"
    PROTECT_NOT_UNDERSTOOD = "protect-not-understood"
    DELETION_PROTECTED = "deletion-protected"
    DELETION_PROTECTED_NOT_UNDERSTOOD = "deletion-protected-not-understood"
    UNPINNABLE = "unpinnable"
    OWNED = "owned"
    OUT_OF_SCOPE = "out-of-scope"
    LEFT_SCOPE = "left-scope"
    ORPHANED = "orphaned"
    GRACE_PERIOD = "grace-period"
    HUB_CLOCK_UNKNOWN = "hub-clock-unknown"
    CHANGED_SINCE_OBSERVED = "changed-since-observed"
    ALREADY_GONE = "already-gone"
    LOOKUP_FAILED = "lookup-failed"
    DELETE_FAILED = "delete-failed"
    DELETE_UNCERTAIN = "delete-uncertain"
    ADMISSION_REFUSED = "admission-refused"
    MARK_FAILED = "mark-failed"
    UNMARK_FAILED = "unmark-failed"
    BRAKE = "brake"
    RECORD_FAILED = "record-failed"
    BACKLOG = "backlog"
    STOPPED = "stopped"
    INTERNAL_ERROR = "internal-error"
    # Companions, and the binding of a companion.
    REFERRER_LIVE = "referrer-live"
    REFERRER_APPEARED = "referrer-appeared"
    REFERRERS_MISSING = "referrers-missing"
    REFERRERS_EMPTY = "referrers-empty"
    REFERRERS_UNPARSEABLE = "referrers-unparseable"
    REFERRERS_NOT_STRING_ARRAY = "referrers-not-string-array"
    REFERRER_KEY_MALFORMED = "referrer-key-malformed"
    REFERRERS_TOO_MANY = "referrers-too-many"
    OWNED_SECRET_TYPE = "owned-secret-type"
    COMPANION_DELETED = "companion-deleted"
    COMPANION_ORPHANED = "companion-orphaned"
    BINDING_MISMATCH = "binding-mismatch"
    # Bindings.
    OBJECT_EXISTS = "object-exists"
    OBJECT_APPEARED = "object-appeared"
    RESOURCE_MISMATCH = "resource-mismatch"
    # Routes.
    UPSTREAM_GATEWAYS_GONE = "upstream-gateways-gone"
    UPSTREAM_NAMESPACE_GONE = "upstream-namespace-gone"
    GATEWAY_EXISTS = "gateway-exists"
    GATEWAY_APPEARED = "gateway-appeared"
    UPSTREAM_NOT_READ = "upstream-not-read"
    LABELS_MISSING = "labels-missing"
    CLUSTER_LABEL_MALFORMED = "cluster-label-malformed"
    UPSTREAM_NAMESPACE_MALFORMED = "upstream-namespace-malformed"
    HTTP01_SOLVER = "http01-solver"
    NO_PARENT_REFS = "no-parent-refs"
    NON_GATEWAY_PARENT = "non-gateway-parent"
    MALFORMED_PARENT_REF = "malformed-parent-ref"
    CROSS_NAMESPACE_PARENT = "cross-namespace-parent"
    UPSTREAM_CLUSTER_UNKNOWN = "upstream-cluster-unknown"
    UPSTREAM_UNAVAILABLE = "upstream-unavailable"
    UPSTREAM_SUSPECT = "upstream-suspect"
    # Routes and downstream copies: the project and the owner.
    PROJECT_GONE = "project-gone"
    PROJECT_TERMINATING = "project-terminating"
    OWNER_GONE = "owner-gone"
    # Downstream copies.
    OWNER_EXISTS = "owner-exists"
    OWNER_RECREATED = "owner-recreated"
    OWNER_TERMINATING = "owner-terminating"
    OWNER_UNRESOLVED = "owner-unresolved"
    UPSTREAM_NAMESPACE_TERMINATING = "upstream-namespace-terminating"
    NOT_A_COPY = "not-a-copy"
    LABEL_AT_LIMIT = "label-at-limit"
    UPSTREAM_GROUP_NOT_UNDERSTOOD = "upstream-group-not-understood"
    ANCHOR_OWNS_KEPT_COPY = "anchor-owns-kept-copy"
    OWNER_APPEARED = "owner-appeared"
    OWNER_NOT_READ = "owner-not-read"
    # Hub namespaces (report-only).
    UPSTREAM_NAMESPACE_EXISTS = "upstream-namespace-exists"
    UPSTREAM_NAMESPACE_RECREATED = "upstream-namespace-recreated"
    NAMESPACE_HOLDS = "namespace-holds"
    NAMESPACE_NOT_LISTABLE = "namespace-not-listable"
    NAMESPACE_NOT_INSPECTED = "namespace-not-inspected"
    # `gcjob explain` only.
    NOT_FOUND = "not-found"

    @property
    def meaning(self) -> str:
        return MEANINGS[self]

    @property
    def sweeps(self) -> tuple[str, ...]:
        return _SWEEPS[self]


MEANINGS: Final[Mapping[Reason, str]] = {
    Reason.TOO_YOUNG: "younger than --min-age: kept",
    Reason.AGE_UNKNOWN: "no creationTimestamp, so its age cannot be proven: kept",
    Reason.TERMINATING: "already being deleted (a deletionTimestamp): not deleted again",
    Reason.DELETION_STALLED: (
        "marked by gcjob and being deleted for longer than --deletion-stalled-after, held by "
        "its finalizers (named): the hub's garbage collector or Karmada's controllers may not "
        "be running; kept, exit 0, a metric and an alert"
    ),
    Reason.PROTECTED: "the protect label or annotation is `true`: kept",
    Reason.PROTECT_NOT_UNDERSTOOD: "the protect key has a value other than `true`/`false`: kept",
    Reason.DELETION_PROTECTED: (
        "labelled `resourcetemplate.karmada.io/deletion-protected: Always`, which Karmada's "
        "webhook refuses to delete: kept, no delete sent"
    ),
    Reason.DELETION_PROTECTED_NOT_UNDERSTOOD: (
        "labelled `resourcetemplate.karmada.io/deletion-protected` with a value other than "
        "`Always` (`always`, `true`, empty...), which gcjob does not recognise (Karmada refuses a "
        "delete only on exactly `Always`): kept, no delete sent"
    ),
    Reason.UNPINNABLE: "no uid or resourceVersion to pin a delete to: kept",
    Reason.OWNED: (
        "an ownerReference (a route: a controller one to anything but an anchor ConfigMap "
        "`anchor-<uuid>`): left to its owner, as the garbage collector leaves it"
    ),
    Reason.OUT_OF_SCOPE: "not an object its sweep selects: kept (a binding: counted, not listed)",
    Reason.LEFT_SCOPE: (
        "no longer selected by its sweep (e.g. no longer labelled a companion): its mark removed"
    ),
    Reason.ORPHANED: "nothing refers to it any more: marked, deleted once the grace period passed",
    Reason.GRACE_PERIOD: "marked as an orphan on the same evidence, not yet due: kept for now",
    Reason.HUB_CLOCK_UNKNOWN: (
        "the hub sent no usable `Date`: nothing deleted or marked on a mark's time"
    ),
    Reason.CHANGED_SINCE_OBSERVED: (
        "changed since it was observed (409 on a preconditioned delete, "
        "422/409 on a conditional patch): decided again next run"
    ),
    Reason.ALREADY_GONE: "deleted by someone else first (404)",
    Reason.LOOKUP_FAILED: (
        "a read the decision needs, or the live second look before a delete, failed, was "
        "refused or ran out of its read budget (the detail says which): kept, the run exits 1; "
        "with `delete-held`: the delete went out, reading it again failed, its state unknown"
    ),
    Reason.DELETE_FAILED: "the delete was refused or failed",
    Reason.DELETE_UNCERTAIN: "the delete's answer was lost: it may or may not have happened",
    Reason.ADMISSION_REFUSED: (
        "the delete was refused by an admission webhook or a ValidatingAdmissionPolicy (a 4xx, "
        "not RBAC): kept, and what follows it in its group (a companion's binding, a copy's "
        "anchor) too, the server's message said (of a Secret, only who refused); exit 0"
    ),
    Reason.MARK_FAILED: "writing the orphan mark failed",
    Reason.UNMARK_FAILED: "removing gcjob's mark failed",
    Reason.RECORD_FAILED: (
        "the deletion record (--record-deletions) could not be written: not deleted, and "
        "nothing more this run; the run exits 1"
    ),
    Reason.BRAKE: "held back by a safety brake (deletions, marks or writes): nothing written",
    Reason.BACKLOG: (
        "due, but past this run's drain cap (--max-deletions): left for a later run, oldest "
        "marks first; no brake"
    ),
    Reason.STOPPED: "left undone: the run was stopped (a signal, its deadline, stdout closed)",
    Reason.INTERNAL_ERROR: (
        "an unexpected error while deciding, acting on or reporting this object: kept, the "
        "error in one redacted line; the run goes on and exits 3"
    ),
    Reason.REFERRER_LIVE: "a WorkloadDeployment it names exists (healthy)",
    Reason.REFERRER_APPEARED: "a WorkloadDeployment it names appeared right before a delete: kept",
    Reason.REFERRERS_MISSING: "no referrers annotation: kept",
    Reason.REFERRERS_EMPTY: "the referrers annotation is empty or `[]`: kept",
    Reason.REFERRERS_UNPARSEABLE: "the referrers annotation is not JSON: kept",
    Reason.REFERRERS_NOT_STRING_ARRAY: "the referrers annotation is no JSON array of strings: kept",
    Reason.REFERRER_KEY_MALFORMED: "a referrer is not `<namespace>/<name>`: kept",
    Reason.REFERRERS_TOO_MANY: (
        "more than 100 distinct referrer keys (each costs a live lookup before a delete): kept"
    ),
    Reason.OWNED_SECRET_TYPE: "a service account token or Helm release Secret: kept",
    Reason.COMPANION_DELETED: "its binding, deleted with its orphaned companion",
    Reason.COMPANION_ORPHANED: "its binding, orphaned with its companion: goes with it",
    Reason.BINDING_MISMATCH: "the binding does not name the companion it was found for: kept",
    Reason.OBJECT_EXISTS: "the ConfigMap/Secret it binds exists (healthy)",
    Reason.OBJECT_APPEARED: "the ConfigMap/Secret it binds appeared right before the delete: kept",
    Reason.RESOURCE_MISMATCH: (
        "its `spec.resource` names another object than its name says, or a kind of another API "
        "group: never deleted"
    ),
    Reason.UPSTREAM_GATEWAYS_GONE: "none of its parent Gateways exists upstream: an orphan",
    Reason.UPSTREAM_NAMESPACE_GONE: "its whole upstream namespace is gone: an orphan",
    Reason.GATEWAY_EXISTS: "a parent Gateway exists upstream (healthy)",
    Reason.GATEWAY_APPEARED: "a parent Gateway appeared upstream right before the delete: kept",
    Reason.UPSTREAM_NOT_READ: (
        "it appeared or changed while the run read: its Gateways not looked up this run"
    ),
    Reason.LABELS_MISSING: "a label naming its upstream cluster or namespace is missing: kept",
    Reason.CLUSTER_LABEL_MALFORMED: "part of its decoded upstream name is no object name: kept",
    Reason.UPSTREAM_NAMESPACE_MALFORMED: "its upstream namespace's name is no namespace name: kept",
    Reason.HTTP01_SOLVER: "labelled an HTTP-01 solver route (any value but `false`): kept",
    Reason.NO_PARENT_REFS: "no spec.parentRefs: kept",
    Reason.NON_GATEWAY_PARENT: "a parentRef is not a gateway.networking.k8s.io Gateway: kept",
    Reason.MALFORMED_PARENT_REF: "a parent name is not a valid object name: kept",
    Reason.CROSS_NAMESPACE_PARENT: "a parent in another namespace than the route's: kept",
    Reason.UPSTREAM_CLUSTER_UNKNOWN: "no endpoint configured for its upstream cluster: kept",
    Reason.UPSTREAM_UNAVAILABLE: "its upstream cluster could not be read: kept, the run exits 1",
    Reason.UPSTREAM_SUSPECT: "its upstream cluster looked emptied (--suspect-min-routes): kept",
    Reason.NOT_FOUND: "`gcjob explain`: the object named does not exist",
    Reason.PROJECT_GONE: (
        "its upstream project is proven gone by the Project API (a NotFound naming it, while the "
        "API found every project whose control plane answered): an orphan"
    ),
    Reason.PROJECT_TERMINATING: "its upstream project is being deleted (Milo finalizes it): kept",
    Reason.OWNER_GONE: "a NotFound names its upstream owner, in a namespace that exists: an orphan",
    Reason.OWNER_EXISTS: "its upstream owner exists, with the UID its anchor names (healthy)",
    Reason.OWNER_RECREATED: (
        "its upstream owner was deleted and re-created under the same name; this belonged to "
        "the old one, and NSO has caught up with the new one: an orphan"
    ),
    Reason.OWNER_TERMINATING: "its upstream owner is being deleted (NSO finalizes it): kept",
    Reason.OWNER_UNRESOLVED: (
        "its owner's group and kind map to no single resource upstream (or the wrong scope): kept"
    ),
    Reason.UPSTREAM_NAMESPACE_TERMINATING: "its upstream namespace is being deleted: kept",
    Reason.NOT_A_COPY: (
        "its labels do not describe a copy NSO writes (its own name, group and kind the "
        "labels'): kept, and nothing is looked up under the name they give"
    ),
    Reason.LABEL_AT_LIMIT: (
        "an upstream label is 63 characters long (the limit) and may be cut short: it proves "
        "nothing, kept"
    ),
    Reason.UPSTREAM_GROUP_NOT_UNDERSTOOD: (
        "its upstream-group label is not a group NSO writes (`core`, `v1`, malformed): kept"
    ),
    Reason.OWNER_NOT_READ: (
        "its upstream owner is a Secret, not read without --read-upstream-secrets: kept unless "
        "its project or upstream namespace is gone"
    ),
    Reason.OWNER_APPEARED: (
        "the live second look before deleting answered, and no longer proves its owner or "
        "project gone: kept (a second look that could not be read is `lookup-failed`)"
    ),
    Reason.ANCHOR_OWNS_KEPT_COPY: (
        "an orphaned anchor that owns a copy which is kept: an anchor goes only after every copy "
        "it owns"
    ),
    Reason.UPSTREAM_NAMESPACE_EXISTS: (
        "a hub namespace's upstream namespace exists (with the UID its name carries, healthy; "
        "under another, not created later than it by more than --clock-skew, kept)"
    ),
    Reason.UPSTREAM_NAMESPACE_RECREATED: (
        "a hub namespace's upstream namespace was re-created under another UID, created later "
        "than the hub namespace by more than --clock-skew: the old one's leftover, an orphan"
    ),
    Reason.NAMESPACE_HOLDS: (
        "a leftover hub namespace still holds objects besides what Kubernetes puts in every "
        "namespace (the kinds and counts named): kept"
    ),
    Reason.NAMESPACE_NOT_LISTABLE: (
        "a leftover hub namespace with a kind the run could not list (403, an error; named): "
        "what it holds is not known, kept"
    ),
    Reason.NAMESPACE_NOT_INSPECTED: (
        "a leftover hub namespace past --namespaces-max-inspected this run: not listed, kept "
        "(a later run inspects it)"
    ),
}

_COMPANIONS, _BINDINGS, _ROUTES, _COPIES = "companions", "bindings", "routes", "copies"
_BY_SCOPE: Final[Mapping[str, tuple[Reason, ...]]] = {
    ALL: (
        Reason.TOO_YOUNG,
        Reason.AGE_UNKNOWN,
        Reason.TERMINATING,
        Reason.DELETION_STALLED,
        Reason.PROTECTED,
        Reason.PROTECT_NOT_UNDERSTOOD,
        Reason.DELETION_PROTECTED,
        Reason.DELETION_PROTECTED_NOT_UNDERSTOOD,
        Reason.UNPINNABLE,
        Reason.LEFT_SCOPE,
        Reason.GRACE_PERIOD,
        Reason.HUB_CLOCK_UNKNOWN,
        Reason.CHANGED_SINCE_OBSERVED,
        Reason.ALREADY_GONE,
        Reason.LOOKUP_FAILED,
        Reason.DELETE_FAILED,
        Reason.DELETE_UNCERTAIN,
        Reason.ADMISSION_REFUSED,
        Reason.MARK_FAILED,
        Reason.UNMARK_FAILED,
        Reason.BRAKE,
        Reason.RECORD_FAILED,
        Reason.BACKLOG,
        Reason.STOPPED,
        Reason.INTERNAL_ERROR,
    ),
    _COMPANIONS: (
        Reason.ORPHANED,
        Reason.OWNED,
        Reason.REFERRER_LIVE,
        Reason.REFERRER_APPEARED,
        Reason.REFERRERS_MISSING,
        Reason.REFERRERS_EMPTY,
        Reason.REFERRERS_UNPARSEABLE,
        Reason.REFERRERS_NOT_STRING_ARRAY,
        Reason.REFERRER_KEY_MALFORMED,
        Reason.REFERRERS_TOO_MANY,
        Reason.OWNED_SECRET_TYPE,
        Reason.COMPANION_DELETED,
        Reason.COMPANION_ORPHANED,
        Reason.BINDING_MISMATCH,
    ),
    _BINDINGS: (
        Reason.ORPHANED,
        Reason.OUT_OF_SCOPE,
        Reason.OBJECT_EXISTS,
        Reason.OBJECT_APPEARED,
        Reason.RESOURCE_MISMATCH,
    ),
    _ROUTES: (
        Reason.OWNED,
        Reason.UPSTREAM_GATEWAYS_GONE,
        Reason.UPSTREAM_NAMESPACE_GONE,
        Reason.GATEWAY_EXISTS,
        Reason.GATEWAY_APPEARED,
        Reason.UPSTREAM_NOT_READ,
        Reason.LABELS_MISSING,
        Reason.CLUSTER_LABEL_MALFORMED,
        Reason.UPSTREAM_NAMESPACE_MALFORMED,
        Reason.HTTP01_SOLVER,
        Reason.NO_PARENT_REFS,
        Reason.NON_GATEWAY_PARENT,
        Reason.MALFORMED_PARENT_REF,
        Reason.CROSS_NAMESPACE_PARENT,
        Reason.UPSTREAM_CLUSTER_UNKNOWN,
        Reason.UPSTREAM_UNAVAILABLE,
        Reason.UPSTREAM_SUSPECT,
        Reason.PROJECT_GONE,
        Reason.PROJECT_TERMINATING,
        Reason.OWNER_GONE,
        Reason.OWNER_APPEARED,
        Reason.NOT_A_COPY,
        Reason.LABEL_AT_LIMIT,
    ),
    _COPIES: (
        Reason.OWNED,
        Reason.LABELS_MISSING,
        Reason.CLUSTER_LABEL_MALFORMED,
        Reason.UPSTREAM_NAMESPACE_MALFORMED,
        Reason.UPSTREAM_UNAVAILABLE,
        Reason.UPSTREAM_NAMESPACE_GONE,
        Reason.PROJECT_GONE,
        Reason.PROJECT_TERMINATING,
        Reason.OWNER_GONE,
        Reason.OWNER_EXISTS,
        Reason.OWNER_RECREATED,
        Reason.OWNER_TERMINATING,
        Reason.OWNER_UNRESOLVED,
        Reason.UPSTREAM_NAMESPACE_TERMINATING,
        Reason.NOT_A_COPY,
        Reason.LABEL_AT_LIMIT,
        Reason.UPSTREAM_GROUP_NOT_UNDERSTOOD,
        Reason.ANCHOR_OWNS_KEPT_COPY,
        Reason.OWNER_APPEARED,
        Reason.OWNER_NOT_READ,
        Reason.UPSTREAM_NOT_READ,
    ),
    "namespaces": (
        Reason.LABELS_MISSING,
        Reason.CLUSTER_LABEL_MALFORMED,
        Reason.UPSTREAM_NAMESPACE_MALFORMED,
        Reason.UPSTREAM_CLUSTER_UNKNOWN,
        Reason.UPSTREAM_UNAVAILABLE,
        Reason.UPSTREAM_NAMESPACE_GONE,
        Reason.UPSTREAM_NAMESPACE_TERMINATING,
        Reason.UPSTREAM_NAMESPACE_EXISTS,
        Reason.UPSTREAM_NAMESPACE_RECREATED,
        Reason.PROJECT_GONE,
        Reason.PROJECT_TERMINATING,
        Reason.OWNER_UNRESOLVED,
        Reason.NAMESPACE_HOLDS,
        Reason.NAMESPACE_NOT_LISTABLE,
        Reason.NAMESPACE_NOT_INSPECTED,
    ),
    EXPLAIN: (Reason.OUT_OF_SCOPE, Reason.NOT_FOUND),
}
_SWEEPS: Final[Mapping[Reason, tuple[str, ...]]] = {
    reason: tuple(scope for scope in SCOPES if reason in _BY_SCOPE[scope]) for reason in Reason
}


def reasons_of(sweep: str) -> tuple[Reason, ...]:
    """The codes a sweep's items carry besides those of every sweep (its REGISTERED `reasons`,
    gcjob/sweeps/registry.py): KeyError for a name this page does not know."""
    return _BY_SCOPE[sweep]


# A read failed: the run exits 1, and `explain` concludes "unknown".
ERROR_REASONS: Final = frozenset({Reason.LOOKUP_FAILED, Reason.UPSTREAM_UNAVAILABLE})
# Kept because something the run needs to judge the object is not configured or could not be
# read (no endpoint for its upstream cluster, a lookup that failed, an owner kind
# that maps to nothing upstream): never swept, run after run, until an operator fixes it. The
# metric gcjob_run_not_swept counts them, and an alert fires on it (GcjobObjectsNotSwept).
NOT_SWEPT_REASONS: Final = (
    Reason.UPSTREAM_CLUSTER_UNKNOWN,
    Reason.LOOKUP_FAILED,
    Reason.OWNER_UNRESOLVED,
    Reason.ADMISSION_REFUSED,  # the hub's admission refuses its delete, run after run
)  # upstream-unavailable has its own, by cluster: GcjobUpstreamUnavailable
# Held back by a brake: a webhook notifies, a metric counts.
BRAKE_REASONS: Final = (Reason.BRAKE, Reason.UPSTREAM_SUSPECT)
# Every reason the sweep's report can carry (the report schema's `reason` enum).
REPORT_REASONS: Final = tuple(reason for reason in Reason if reason.sweeps != (EXPLAIN,))


def reasons_page() -> str:
    """docs/reasons.md, as generated from this module."""
    lines = [
        "# Reason codes",
        "",
        "<!-- Generated by `python -m gcjob.reasons > docs/reasons.md` from gcjob/reasons.py;"
        " a test fails when it drifts. Do not edit by hand. -->",
        "",
        "Every `reason` gcjob reports: a report item's `reason`, the summary's `counts` and"
        " `marks`, a mark's `gcjob.datumapis.com/orphaned-reason` annotation and"
        " `gcjob explain`'s conclusion. Codes are stable and machine-readable. The sweeps"
        " column: where the code appears (`all`: any sweep; `explain`: `gcjob explain`, which"
        " also concludes with the codes of the sweeps).",
        "",
        "| code | sweeps | meaning |",
        "| --- | --- | --- |",
    ]
    for reason in Reason:
        sweeps = ", ".join(reason.sweeps)
        meaning = reason.meaning.replace("|", "\\|")  # a table cell
        lines.append(f"| `{reason.value}` | {sweeps} | {meaning} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(reasons_page(), end="")
