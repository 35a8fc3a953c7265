"""Sweep 1: a companion ConfigMap/Secret is an orphan when every referrer is gone; its binding
goes with it. Pure: the hub is asked through a world (CompanionWorld), the binding's rule is
applied to what act.py (or explain) read."""

from __future__ import annotations

import json
from collections.abc import Container
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

from gcjob.decide.common import (
    Claims,
    check_binding_owners,
    check_owners,
    check_protection,
    hold_back,
    resource_mismatch,
    spec_resource_names,
)
from gcjob.decide.grace import GraceCall, Graced, Next, due_by, grace_call, left_scope
from gcjob.decide.plan import Plan, plan
from gcjob.decide.trace import Trace, given
from gcjob.domain import (
    COMPANION_LABEL,
    NEVER_DELETED_SECRET_TYPES,
    REFERRERS_ANNOTATION,
    binding_name,
    is_dns1123_label,
    is_dns1123_subdomain,
)
from gcjob.marks import (
    Evidence,
    Rule,
    companion_binding_evidence,
    companion_evidence,
    describe_mark,
    new_mark,
    rule_of,
)
from gcjob.model import Binding, BoundResource, Companion, ObjectRef, Verdict
from gcjob.reasons import Reason

COMPANION_KINDS = ("ConfigMap", "Secret")
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


def companion_verdict(
    companion: Companion,
    live_workloads: Container[str],
    now: datetime,
    min_age: timedelta,
    trace: Trace | None = None,
) -> Verdict:
    """live_workloads: names of the WorkloadDeployments in the companion's own namespace (a
    set; explain passes one that GETs each name it is asked about, in the rule's order)."""
    trace = given(trace)
    ref = companion.ref
    try:
        keys = parse_referrers(companion.referrers_raw)
    except ReferrersUnreadable as unreadable:
        return trace.held(
            "referrers-readable",
            unreadable.detail,
            Verdict(ref, False, unreadable.reason, unreadable.detail),
        )
    trace.passed("referrers-readable", lambda: f"{REFERRERS_ANNOTATION}: {json.dumps(list(keys))}")
    live = [k for k in keys if referrer_name(k) in live_workloads]

    def evidence() -> str:
        return "; ".join(
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
    trace = given(trace)
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
    held = check_binding_owners(binding, trace, "binding-not-owned") or check_protection(
        binding.protect, trace, "binding-not-protected"
    )
    if held is not None:
        return Verdict(ref, False, *held)
    return Verdict(
        ref,
        True,
        Reason.COMPANION_DELETED,
        f"binds {companion.kind} {companion.name}, deleted with it",
    )


# -- the judgement: one companion against the world -----------------------------------------

# A Secret of any type but those gcjob never deletes: the server filters on `type`, which is
# not in a Secret's metadata (and is immutable, so the proof holds for this uid).
DELETABLE_SECRET_TYPES = ",".join(f"type!={t}" for t in NEVER_DELETED_SECRET_TYPES)


class CompanionWorld(Protocol):
    """What judging a companion asks of the hub. The batch sweep answers from its index of
    WorkloadDeployments; explain reads each name it is asked about."""

    def workloads_in(self, namespace: str) -> Container[str]:
        """The names of that namespace's WorkloadDeployments, asked `name in`, in the rule's
        order."""
        ...

    @property
    def proves_secret_type(self) -> bool:
        """Whether an orphaned Secret's type is proven as part of its judgement (explain);
        the batch sweep proves it in act.py, right before each mark and delete."""
        ...

    def secret_type_unproven(self, orphan: Verdict) -> tuple[Reason, str] | None:
        """None when the Secret is proven of a type gcjob may delete; else why it is kept."""
        ...


@dataclass(frozen=True, slots=True)
class CompanionJudgement:
    """A companion judged: its verdict, what an orphan's verdict rests on (the evidence its
    mark names), and the grace rule's call (None: nothing to do but report it)."""

    verdict: Verdict
    evidence: Evidence | None
    call: GraceCall | None
    claims: Claims | None = None  # an orphan's: what the driver holds it to (driver.py)


def judge_companion(
    companion: Companion,
    world: CompanionWorld,
    now: datetime,
    min_age: timedelta,
    grace: timedelta,
    trace: Trace | None = None,
) -> CompanionJudgement:
    """The companions sweep's judgement of one labelled companion, traced."""
    trace = given(trace)
    ref = companion.ref
    verdict = companion_verdict(companion, world.workloads_in(ref.namespace), now, min_age, trace)
    if verdict.delete and ref.kind == "Secret" and world.proves_secret_type:
        unproven = world.secret_type_unproven(verdict)
        if unproven is None:
            trace.passed("secret-type-proven", f"listed with {DELETABLE_SECRET_TYPES}")
        else:
            trace.hold("secret-type-proven", *unproven)
            verdict = Verdict(ref, False, *unproven, referrers=verdict.referrers)
    raw = companion.referrers_raw
    evidence = companion_evidence(raw) if verdict.delete and raw is not None else None
    call = grace_call(Rule.COMPANION, verdict, evidence, now, grace, trace)
    # Any ownerReference is another owner's: companions carry none.
    claims = Claims(companion.owners, companion.protect) if verdict.delete else None
    return CompanionJudgement(verdict, evidence, call, claims)


def companion_left_scope(companion: Companion) -> Graced[None] | None:
    """A ConfigMap or Secret with the companions' mark, no longer labelled a companion: its
    mark goes, with its binding's (act.py unmark_companion)."""
    detail = f"no longer labelled {COMPANION_LABEL}=true: out of the sweep, its mark with it"
    return left_scope(companion.ref, Rule.COMPANION, detail)


# -- the linked object: a companion's binding, once read -------------------------------------

WAITS_WITH_ITS_COMPANION = "deleted with its companion"


@dataclass(frozen=True, slots=True)
class BindingCall:
    """What the companions sweep does to a companion's binding, as the grace rule names it:
    DELETE, MARK (with `evidence`), WAIT, UNMARK, or NOTHING (kept: `verdict` says why)."""

    next: Next
    verdict: Verdict
    evidence: Evidence | None = None


def companion_binding(
    binding: Binding,
    companion: ObjectRef,
    judged: Verdict,
    call: GraceCall,
    trace: Trace | None = None,
) -> BindingCall | None:
    """The rule for the binding of a companion the sweep acts on (`judged`, `call`): act.py
    applies it to the binding it read right after writing the companion, explain to the one
    it read by name. None: the companions sweep leaves it (to the bindings sweep)."""
    trace = given(trace)
    mark = binding.ref.mark
    if call.next is Next.UNMARK:
        # Only the mark this sweep wrote: a mark of the bindings sweep is that sweep's.
        if mark is None or rule_of(mark) != Rule.COMPANION_BINDING:
            return None
        detail = f"{companion.kind} {companion.name} is no orphan: {judged.detail}"
        trace.held_at("grace", f"{describe_mark(mark)}: {detail}")
        return BindingCall(Next.UNMARK, Verdict(binding.ref, False, judged.reason, detail))
    if call.next not in (Next.DELETE, Next.MARK, Next.WAIT):
        return None
    followed = follow_binding(binding, companion, trace)
    if not followed.delete:
        return BindingCall(Next.NOTHING, followed)  # it would not go with it either
    if call.next is Next.DELETE:
        return BindingCall(Next.DELETE, followed)
    assert call.since is not None and call.due is not None  # a mark's time, or its wait's
    marked = replace(
        followed,
        reason=Reason.COMPANION_ORPHANED,
        detail=f"binds {companion.kind} {companion.name}, orphaned with it; {due_by(call.due)}",
    )
    evidence = companion_binding_evidence(companion).on(binding.ref.uid)
    if mark == new_mark(evidence, Reason.COMPANION_ORPHANED, call.since):
        trace.hold(
            "grace",
            Reason.GRACE_PERIOD,
            f"{describe_mark(mark)}: {WAITS_WITH_ITS_COMPANION}",
        )
        return BindingCall(Next.WAIT, marked)
    trace.hold("grace", Reason.COMPANION_ORPHANED, f"{describe_mark(mark)}: {marked.detail}")
    return BindingCall(Next.MARK, marked, evidence)


def binding_plan(follows: BindingCall) -> Plan:
    """What is done with a companion's binding, and reported (act.py writes it, explain says
    it): a wait says it goes with its companion."""
    why = WAITS_WITH_ITS_COMPANION if follows.next is Next.WAIT else ""
    return plan(follows.verdict, follows.next, why)


def companion_bound_by(binding: str) -> tuple[str, str] | None:
    """(kind, name) of the companion whose binding, by this sweep's naming, this is."""
    for kind in COMPANION_KINDS:
        suffix = binding_name("", kind)
        name = binding.removesuffix(suffix)
        if name != binding and name and binding_name(name, kind) == binding:
            return kind, name
    return None
