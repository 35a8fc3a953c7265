"""Rules every sweep shares: age gate, terminating objects, opt-out."""

from __future__ import annotations

from datetime import datetime, timedelta

from gcjob.domain import PROTECT_ANNOTATION
from gcjob.model import BoundResource, ObjectRef


def age_seconds(ref: ObjectRef, now: datetime) -> float | None:
    if ref.created is None:
        return None
    return (now - ref.created).total_seconds()


def hold_back(
    ref: ObjectRef, now: datetime, min_age: timedelta, protected: bool
) -> tuple[str, str] | None:
    """The checks between "looks orphaned" and "delete": (reason, detail) to keep it, or None.

    Shared by every sweep so that terminating, young and protected objects are held back
    the same way and with the same reasons.
    """
    if ref.terminating:
        return "terminating", "already being deleted; not deleted again"
    if not ref.uid or not ref.resource_version:
        return "unpinnable", "no uid or resourceVersion to pin a delete to"
    age = age_seconds(ref, now)
    if age is None:
        return "age-unknown", "no creationTimestamp: its age cannot be proven"
    # With no minimum, a server clock slightly ahead of ours (a negative age) holds nothing.
    if min_age.total_seconds() > 0 and age < min_age.total_seconds():
        return (
            "too-young",
            f"age {int(age)}s is below the minimum age {int(min_age.total_seconds())}s",
        )
    if protected:
        return "protected", f"annotated {PROTECT_ANNOTATION}=true"
    return None


def resource_mismatch(
    resource: BoundResource | None, kind: str, namespace: str, name: str, uid: str = ""
) -> str | None:
    """None when a binding's spec.resource names this very object (kind and name; namespace
    and uid where set); else why not. The binding's name alone never says what it binds."""
    if resource is None:
        return "binding has no spec.resource"
    if resource.kind != kind or resource.name != name:
        return f"binding binds {resource.kind} {resource.name}"
    if resource.namespace and resource.namespace != namespace:
        return f"binding binds an object in namespace {resource.namespace}"
    if uid and resource.uid and resource.uid != uid:
        return f"binding binds uid {resource.uid}, not {uid}"
    return None
