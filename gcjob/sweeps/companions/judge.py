"""Sweep 1: a companion ConfigMap/Secret is an orphan when every referrer is gone."""

from __future__ import annotations

import json
from collections.abc import Container
from datetime import datetime, timedelta

from gcjob.decide.common import (
    check_owners,
    check_protection,
    hold_back,
    resource_mismatch,
    spec_resource_names,
)
from gcjob.decide.trace import Trace
from gcjob.domain import (
    REFERRERS_ANNOTATION,
    is_dns1123_label,
    is_dns1123_subdomain,
)
from gcjob.model import Binding, BoundResource, Companion, ObjectRef, Verdict
from gcjob.reasons import Reason

# More distinct referrer keys than this and the companion is preserved (`referrers-too-many`):
# each distinct WorkloadDeployment name costs one live GET before a delete, so one annotation
# must not be able to spend the run. Real companions have one or a few referrers.
MAX_REFERRER_KEYS = 100
# How many referrer names a detail message spells out before "and N more".
NAMES_IN_DETAIL = 5


class ReferrersUnreadable(ValueError):
    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def parse_referrers(raw: str | None) -> tuple[str, ...]:
    """The referrer keys of the referenced-by annotation, strictly; raises ReferrersUnreadable.

    Anything but a non-empty JSON array of `<namespace>/<name>` strings is unreadable, so the
    companion is preserved: an empty or odd annotation proves nothing about its referrers.
    Duplicate keys count once (first occurrence kept); more than MAX_REFERRER_KEYS distinct
    keys is `referrers-too-many`.
    """
    if raw is None:
        raise ReferrersUnreadable(Reason.REFERRERS_MISSING, f"no {REFERRERS_ANNOTATION} annotation")
    if not raw.strip():
        raise ReferrersUnreadable(Reason.REFERRERS_EMPTY, f"{REFERRERS_ANNOTATION} is empty")
    try:
        keys = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: absurdly nested JSON
        raise ReferrersUnreadable(
            Reason.REFERRERS_UNPARSEABLE, f"{REFERRERS_ANNOTATION} is not JSON"
        ) from None
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise ReferrersUnreadable(
            Reason.REFERRERS_NOT_STRING_ARRAY,
            f"{REFERRERS_ANNOTATION} is not a JSON array of strings",
        )
    if not keys:
        raise ReferrersUnreadable(Reason.REFERRERS_EMPTY, f"{REFERRERS_ANNOTATION} is []")
    distinct = tuple(dict.fromkeys(keys))
    if len(distinct) > MAX_REFERRER_KEYS:
        raise ReferrersUnreadable(
            Reason.REFERRERS_TOO_MANY,
            f"{REFERRERS_ANNOTATION} lists {len(distinct)} distinct referrers, "
            f"more than {MAX_REFERRER_KEYS}",
        )
    for key in distinct:
        if not is_referrer_key(key):
            raise ReferrersUnreadable(
                Reason.REFERRER_KEY_MALFORMED, f"referrer {key[:80]!r} is not <namespace>/<name>"
            )
    return distinct


def is_referrer_key(key: str) -> bool:
    namespace, sep, name = key.partition("/")
    return sep == "/" and is_dns1123_label(namespace) and is_dns1123_subdomain(name)


def referrer_name(key: str) -> str:
    """The WorkloadDeployment name of a key: its namespace part is the project's, not the hub's."""
    return key.partition("/")[2]


def referrer_names(keys: tuple[str, ...]) -> tuple[str, ...]:
    """The distinct WorkloadDeployment names of the keys, in order: one lookup each."""
    return tuple(dict.fromkeys(map(referrer_name, keys)))


def _names_in_detail(names: tuple[str, ...]) -> str:
    shown = ", ".join(names[:NAMES_IN_DETAIL])
    more = len(names) - NAMES_IN_DETAIL
    return f"{shown} and {more} more" if more > 0 else shown


def decide_companion(
    companion: Companion,
    live_workloads: Container[str],
    now: datetime,
    min_age: timedelta,
    trace: Trace | None = None,
) -> Verdict:
    """live_workloads: names of the WorkloadDeployments in the companion's own namespace (a
    set; explain passes one that GETs each name it is asked about, in the rule's order)."""
    trace = trace if trace is not None else Trace()
    ref = companion.ref
    try:
        keys = parse_referrers(companion.referrers_raw)
    except ReferrersUnreadable as unreadable:
        return trace.held(
            "referrers-readable",
            unreadable.detail,
            Verdict(ref, False, unreadable.reason, unreadable.detail),
        )
    trace.passed("referrers-readable", f"{REFERRERS_ANNOTATION}: {json.dumps(list(keys))}")
    live = [k for k in keys if referrer_name(k) in live_workloads]
    evidence = "; ".join(
        f"referrer {k}: WorkloadDeployment {referrer_name(k)} in {ref.namespace} "
        + ("exists" if k in live else "not found")
        for k in keys
    )
    if live:
        return trace.held(
            "referrers-gone",
            evidence,
            Verdict(
                ref,
                False,
                Reason.REFERRER_LIVE,
                f"WorkloadDeployment {referrer_name(live[0])} exists",
                healthy=True,
                referrers=keys,
            ),
        )
    trace.passed("referrers-gone", evidence)
    held = check_owners(companion.owners, trace) or _owned_secret(companion, trace)
    if held is None:
        held = hold_back(ref, now, min_age, companion.protect, trace)
    if held is not None:
        return Verdict(ref, False, *held, referrers=keys)
    return Verdict(
        ref,
        True,
        Reason.ORPHANED,
        f"no WorkloadDeployment named {_names_in_detail(referrer_names(keys))} in {ref.namespace}",
        referrers=keys,
    )


def _owned_secret(companion: Companion, trace: Trace) -> tuple[Reason, str] | None:
    if companion.ref.kind != "Secret":
        return None
    if companion.secret_marks:
        detail = f"{companion.secret_marks[0]}: a Secret its owner manages, never deleted"
        return trace.hold("secret-type-deletable", Reason.OWNED_SECRET_TYPE, detail)
    trace.passed(
        "secret-type-deletable",
        "no mark of a service account token or Helm release (its type is proven before delete)",
    )
    return None


def binding_names_companion(resource: BoundResource | None, companion: ObjectRef) -> str | None:
    """None when the binding's spec.resource names this very companion; else why not.

    Deleting the binding of another object would remove that object's cell copies.
    """
    c = companion
    return resource_mismatch(resource, c.api_version, c.kind, c.namespace, c.name, c.uid)


def follow_binding(binding: Binding, companion: ObjectRef, trace: Trace | None = None) -> Verdict:
    """Whether the binding named after a deleted companion goes with it."""
    trace = trace if trace is not None else Trace()
    ref = binding.ref
    c = companion
    mismatch = spec_resource_names(
        binding,
        c.api_version,
        c.kind,
        c.namespace,
        c.name,
        c.uid,
        rule="binding-names-companion",
        reason=Reason.BINDING_MISMATCH,
        trace=trace,
    )
    if mismatch is not None:
        return Verdict(ref, False, *mismatch)
    if ref.terminating:
        detail = "already being deleted; not deleted again"
        return trace.held(
            "binding-not-terminating", detail, Verdict(ref, False, Reason.TERMINATING, detail)
        )
    trace.passed("binding-not-terminating", "no deletionTimestamp")
    held = check_protection(binding.protect, trace, "binding-not-protected")
    if held is not None:
        return Verdict(ref, False, *held)
    return Verdict(
        ref,
        True,
        Reason.COMPANION_DELETED,
        f"binds {companion.kind} {companion.name}, deleted with it",
    )
