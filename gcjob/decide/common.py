"""Rules every sweep shares: age gate, terminating objects, opt-out."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from gcjob.decide.trace import Trace, given
from gcjob.domain import (
    ANCHOR_PREFIX,
    DELETION_PROTECTED_VALUE,
    KARMADA_PROTECTED,
    PROTECT_ANNOTATION,
)
from gcjob.marks import MarkState, read_mark
from gcjob.model import Binding, BoundResource, ObjectRef, OwnerRef, Protect
from gcjob.reasons import Reason


def age_seconds(ref: ObjectRef, now: datetime) -> float | None:
    if ref.created is None:
        return None
    return (now - ref.created).total_seconds()


def protection(protect: Protect) -> tuple[Reason, str] | None:
    """(reason, detail) when the protect key keeps the object, else None. Fail closed: set as
    an annotation or a label, any value but exactly "false" protects; "true" is `protected`,
    anything else (`True`, `yes`, `" true"`, unreadable) is kept as not understood. Karmada's
    deletion protection (its label `Always`, the one value its webhook refuses a delete on)
    keeps it too, `deletion-protected`: no delete is sent that Karmada would refuse. Any
    other value of that label (`always`, `" Always"`, `true`, empty) is one gcjob does not
    recognise: kept as well, `deletion-protected-not-understood` (fail closed)."""
    for where, value in protect:
        if where == KARMADA_PROTECTED and value == DELETION_PROTECTED_VALUE:
            return (
                Reason.DELETION_PROTECTED,
                f"{where}={value}: Karmada refuses to delete it; kept",
            )
        if where == KARMADA_PROTECTED:
            return (
                Reason.DELETION_PROTECTED_NOT_UNDERSTOOD,
                f"{where}={_shown(value)} is not a value gcjob recognises (Karmada refuses a "
                f"delete only on exactly {DELETION_PROTECTED_VALUE}): kept as protected",
            )
    holding = [(where, value) for where, value in protect if value != "false"]
    if not holding:
        return None
    for where, value in holding:
        if value == "true":
            return Reason.PROTECTED, f"{where}=true"
    where, value = holding[0]
    return (
        Reason.PROTECT_NOT_UNDERSTOOD,
        f"{where}={_shown(value)} is neither true nor false: kept as protected",
    )


def _shown(value: str) -> str:
    """A label's or annotation's value as a detail quotes it: quoted, cut at 60 characters."""
    return repr(value[:60] + ("..." if len(value) > 60 else ""))


def deletion_stalled(ref: ObjectRef, now: datetime, after: timedelta) -> str | None:
    """Why an object gcjob deleted is stalled, or None: it carries gcjob's mark, bound to
    this very object (what proves gcjob judged it an orphan, and a run deleted it once due:
    marks.read_mark), and has been Terminating for longer than `after` (from its
    deletionTimestamp to `now`, the hub's clock). Pure."""
    deletion = ref.deletion
    if deletion is None or deletion.since is None or not ref.terminating:
        return None
    if read_mark(ref.mark, ref.uid, ref.created, now).state is not MarkState.BOUND:
        return None
    waited = now - deletion.since
    if waited <= after:
        return None
    held = ", ".join(deletion.finalizers) or "none"
    return (
        # The mark proves gcjob judged it an orphan; who sent the delete it does not say (gcjob
        # deletes only once its mark is due; a tenant may delete it first).
        f"marked by gcjob as an orphan (its mark) and Terminating for "
        f"{int(waited.total_seconds())}s since "
        f"{deletion.since.isoformat().replace('+00:00', 'Z')}, more than "
        f"--deletion-stalled-after {int(after.total_seconds())}s: held by finalizers [{held}] "
        "(is the hub's garbage collector, or Karmada's controllers, running?)"
    )


def check_protection(
    protect: Protect, trace: Trace, rule: str = "not-protected"
) -> tuple[Reason, str] | None:
    """The protect step of a decision, traced: (reason, detail) to keep the object, or None."""
    held = protection(protect)
    if held is not None:
        return trace.hold(rule, *held)
    where = ", ".join(f"{w}=false" for w, _ in protect)
    trace.passed(rule, where or f"no {PROTECT_ANNOTATION} annotation or label")
    return None


def hold_back(
    ref: ObjectRef,
    now: datetime,
    min_age: timedelta,
    protect: Protect,
    trace: Trace | None = None,
) -> tuple[Reason, str] | None:
    """The checks between "looks orphaned" and "delete": (reason, detail) to keep it, or None.

    Shared by every sweep so that terminating, young and protected objects are held back
    the same way and with the same reasons.
    """
    trace = given(trace)
    if ref.terminating:
        return trace.hold(
            "not-terminating", Reason.TERMINATING, "already being deleted; not deleted again"
        )
    trace.passed("not-terminating", "no deletionTimestamp")
    if not ref.uid or not ref.resource_version:
        return trace.hold(
            "pinnable", Reason.UNPINNABLE, "no uid or resourceVersion to pin a delete to"
        )
    trace.passed("pinnable", f"uid {ref.uid}, resourceVersion {ref.resource_version}")
    age = age_seconds(ref, now)
    if age is None:
        return trace.hold(
            "old-enough", Reason.AGE_UNKNOWN, "no creationTimestamp: its age cannot be proven"
        )
    minimum = int(min_age.total_seconds())
    # With no minimum, a server clock slightly ahead of ours (a negative age) holds nothing.
    if min_age.total_seconds() > 0 and age < min_age.total_seconds():
        return trace.hold(
            "old-enough", Reason.TOO_YOUNG, f"age {int(age)}s is below the minimum age {minimum}s"
        )
    assert ref.created is not None  # else its age is unknown
    trace.passed(
        "old-enough",
        f"creationTimestamp {ref.created.isoformat()}: age {int(age)}s, minimum age {minimum}s",
    )
    return check_protection(protect, trace)


CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def is_anchor(owner: OwnerRef) -> bool:
    """An ownerReference to an anchor ConfigMap `anchor-<canonical uuid>` (docs/rules.md
    "Anchors"): NSO's own bookkeeping, not another owner."""
    uid = owner.name.removeprefix(ANCHOR_PREFIX)
    return (
        owner.api_version == "v1"
        and owner.kind == "ConfigMap"
        and owner.name.startswith(ANCHOR_PREFIX)
        and CANONICAL_UUID.fullmatch(uid) is not None
    )


ANCHOR_SAID = "an anchor (NSO's bookkeeping)"
TEMPLATE_SAID = "its resource template, as Karmada writes it"


def check_owners(
    owners: tuple[OwnerRef, ...],
    trace: Trace,
    *,
    ours: Callable[[OwnerRef], bool] = lambda owner: False,
    controllers_only: bool = False,
    rule: str = "not-owned",
    ours_said: str = ANCHOR_SAID,
) -> tuple[Reason, str] | None:
    """The ownership step: (reason, detail) to keep an object that has an owner the sweep does
    not recognise as `ours` (`ours_said`: what such a reference is), else None.
    `controllers_only`: only a controller reference is an owner that manages it (the routes
    and copies sweeps); `owners` are every reference the sweep read (for routes, only their
    controllers), and the evidence says what is there."""
    foreign = owned_by_another(owners, ours, controllers_only)
    if foreign is not None:
        what = "controller ownerReference" if foreign.controller else "ownerReference"
        named = f"{foreign.kind} {foreign.name[:80]}".strip()
        return trace.hold(rule, Reason.OWNED, f"{what} to {named}: its owner manages it")
    trace.passed(rule, _owners_said(owners, ours, controllers_only, ours_said))
    return None


def owned_by_another(
    owners: tuple[OwnerRef, ...],
    ours: Callable[[OwnerRef], bool] = lambda owner: False,
    controllers_only: bool = False,
) -> OwnerRef | None:
    """The first of `owners` that manages the object and is not `ours`, else None: the
    ownership rule (docs/rules.md, `owned`)."""
    for owner in owners:
        if (owner.controller or not controllers_only) and not ours(owner):
            return owner
    return None


def is_resource_template(resource: BoundResource | None, owner: OwnerRef) -> bool:
    """A binding's ownerReference to its own resource template, as Karmada writes it: a
    controller reference whose apiVersion, kind, name and uid are its spec.resource's. Any
    other ownerReference of a binding, controller or not, is another owner's (`owned`)."""
    return (
        resource is not None
        and owner.controller
        and bool(resource.uid)
        and owner.uid == resource.uid
        and owner.kind == resource.kind
        and owner.name == resource.name
        and owner.api_version == resource.api_version
    )


def check_binding_owners(
    binding: Binding, trace: Trace | None = None, rule: str = "not-owned"
) -> tuple[Reason, str] | None:
    """The ownership step for a binding, in both sweeps that delete one: kept (`owned`) when
    any ownerReference names another than its resource template (`is_resource_template`),
    with no read needed."""
    ours = partial(is_resource_template, binding.resource)
    return check_owners(binding.owners, given(trace), ours=ours, rule=rule, ours_said=TEMPLATE_SAID)


def _owners_said(
    owners: tuple[OwnerRef, ...],
    ours: Callable[[OwnerRef], bool],
    controllers_only: bool,
    ours_said: str,
) -> str:
    """What the ownership step found, when nothing manages the object: each reference there
    is (at most three named), and why it is no owner that manages it."""
    if not owners:
        return "no controller ownerReference" if controllers_only else "no ownerReferences"
    said = []
    for owner in owners[:3]:
        what = "controller ownerReference" if owner.controller else "ownerReference"
        why = ours_said if ours(owner) else "not a controller"
        said.append(f"{what} to {owner.kind} {owner.name[:80]}: {why}".strip())
    more = f"; and {len(owners) - 3} more" if len(owners) > 3 else ""
    return "; ".join(said) + more + ": no other owner manages it"


@dataclass(frozen=True, slots=True)
class Claims:
    """What the rules every sweep obeys read of one object, as plain data its sweep declares
    with each plan (gcjob/sweeps/driver.py `Planned`): the ownerReferences it read (a route's:
    only its controllers), those that are its own bookkeeping and no owner (`own`: NSO's
    anchors, a binding's resource template), whether only a controller reference manages it,
    and its protect key. The driver holds every orphan to `claimed` before any write."""

    owners: tuple[OwnerRef, ...] = ()
    protect: Protect = ()
    own: tuple[OwnerRef, ...] = ()
    controllers_only: bool = False


def claimed(claims: Claims) -> tuple[Reason, str] | None:
    """(reason, detail) when someone other than its sweep claims the object: an owner the
    sweep does not recognise (`owned`) or the protect key (`protected`,
    `protect-not-understood`); else None. The same rules each judgement traces."""
    return check_owners(
        claims.owners,
        given(None),
        ours=claims.own.__contains__,
        controllers_only=claims.controllers_only,
    ) or protection(claims.protect)


def anchored_claims(owners: tuple[OwnerRef, ...], protect: Protect) -> Claims:
    """A route's or a copy's claims: only a controller reference manages it, and one to an
    anchor is NSO's bookkeeping."""
    own = tuple(o for o in owners if is_anchor(o))
    return Claims(owners, protect, own, controllers_only=True)


def binding_claims(binding: Binding) -> Claims:
    """A binding's claims: any ownerReference manages it but its resource template's."""
    own = tuple(o for o in binding.owners if is_resource_template(binding.resource, o))
    return Claims(binding.owners, binding.protect, own)


def resource_mismatch(
    resource: BoundResource | None,
    api_version: str,
    kind: str,
    namespace: str,
    name: str,
    uid: str = "",
) -> str | None:
    """None when a binding's spec.resource names this very object (apiVersion, kind and name;
    namespace and uid where set); else why not. The binding's name alone never says what it
    binds: Karmada names it after the kind without its group, so a custom resource of kind
    `Secret` has the binding a core Secret of that name would have."""
    if resource is None:
        return "binding has no spec.resource"
    if resource.kind != kind or resource.name != name:
        return f"binding binds {resource.kind} {resource.name}"
    if resource.api_version != api_version:
        return f"binding binds a {resource.kind} of apiVersion {resource.api_version!r}"
    if resource.namespace and resource.namespace != namespace:
        return f"binding binds an object in namespace {resource.namespace}"
    if uid and resource.uid and resource.uid != uid:
        return f"binding binds uid {resource.uid}, not {uid}"
    return None


def spec_resource_names(
    binding: Binding,
    api_version: str,
    kind: str,
    namespace: str,
    name: str,
    uid: str = "",
    *,
    rule: str,
    reason: Reason,
    trace: Trace | None = None,
) -> tuple[Reason, str] | None:
    """The step that checks a binding's spec.resource names this very object: None when it
    does, else (reason, detail) to keep the binding. Both sweeps that delete a binding run it."""
    trace = given(trace)
    mismatch = resource_mismatch(binding.resource, api_version, kind, namespace, name, uid)
    if mismatch is not None:
        return trace.hold(rule, reason, mismatch)
    bound = binding.resource
    assert bound is not None  # a binding without spec.resource is a mismatch
    trace.passed(
        rule,
        f"binding {binding.ref.name} spec.resource -> {bound.kind} {bound.name}"
        + (f" in {bound.namespace}" if bound.namespace else "")
        + (f" uid {bound.uid}" if bound.uid else ""),
    )
    return None
