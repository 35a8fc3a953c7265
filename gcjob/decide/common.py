"""Rules every sweep shares: age gate, terminating objects, opt-out."""

from __future__ import annotations

from datetime import datetime, timedelta

from gcjob.decide.trace import Trace
from gcjob.domain import PROTECT_ANNOTATION
from gcjob.model import Binding, BoundResource, ObjectRef


def age_seconds(ref: ObjectRef, now: datetime) -> float | None:
    if ref.created is None:
        return None
    return (now - ref.created).total_seconds()


def hold_back(
    ref: ObjectRef,
    now: datetime,
    min_age: timedelta,
    protected: bool,
    trace: Trace | None = None,
) -> tuple[str, str] | None:
    """The checks between "looks orphaned" and "delete": (reason, detail) to keep it, or None.

    Shared by every sweep so that terminating, young and protected objects are held back
    the same way and with the same reasons.
    """
    trace = trace if trace is not None else Trace()
    if ref.terminating:
        return trace.hold(
            "not-terminating", "terminating", "already being deleted; not deleted again"
        )
    trace.passed("not-terminating", "no deletionTimestamp")
    if not ref.uid or not ref.resource_version:
        return trace.hold("pinnable", "unpinnable", "no uid or resourceVersion to pin a delete to")
    trace.passed("pinnable", f"uid {ref.uid}, resourceVersion {ref.resource_version}")
    age = age_seconds(ref, now)
    if age is None:
        return trace.hold(
            "old-enough", "age-unknown", "no creationTimestamp: its age cannot be proven"
        )
    minimum = int(min_age.total_seconds())
    # With no minimum, a server clock slightly ahead of ours (a negative age) holds nothing.
    if min_age.total_seconds() > 0 and age < min_age.total_seconds():
        return trace.hold(
            "old-enough", "too-young", f"age {int(age)}s is below the minimum age {minimum}s"
        )
    assert ref.created is not None  # else its age is unknown
    trace.passed(
        "old-enough",
        f"creationTimestamp {ref.created.isoformat()}: age {int(age)}s, minimum age {minimum}s",
    )
    if protected:
        return trace.hold("not-protected", "protected", f"annotated {PROTECT_ANNOTATION}=true")
    trace.passed("not-protected", f"not annotated {PROTECT_ANNOTATION}=true")
    return None


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
    reason: str,
    trace: Trace | None = None,
) -> tuple[str, str] | None:
    """The step that checks a binding's spec.resource names this very object: None when it
    does, else (reason, detail) to keep the binding. Both sweeps that delete a binding run it."""
    trace = trace if trace is not None else Trace()
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
