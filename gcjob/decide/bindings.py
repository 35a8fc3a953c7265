"""Sweep 2: a city-* ResourceBinding of a ConfigMap/Secret that no longer exists."""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import Enum

from gcjob.decide.common import hold_back, resource_mismatch
from gcjob.domain import CITY_POLICY_PREFIX
from gcjob.model import Binding, Verdict

_SUFFIX_KINDS = (("-configmap", "ConfigMap"), ("-secret", "Secret"))


class Presence(Enum):
    EXISTS = "exists"
    ABSENT = "absent"  # proven: a NotFound for that very name
    UNKNOWN = "unknown"  # the read failed: never a reason to delete


def policy_name(binding: Binding) -> str | None:
    """The annotation since Karmada v1.11; the label before it."""
    return binding.policy_annotation or binding.policy_label  # "" names no policy


def bound_target(binding: Binding) -> tuple[str, str] | None:
    """(kind, name) of the ConfigMap/Secret this binding is for, when it is in scope at all.

    Out of scope, never touched: other kinds (-workloaddeployment, -httproute, ...), policies
    other than city-*, and ClusterPropagationPolicy bindings.
    """
    if binding.cluster_policy:
        return None
    policy = policy_name(binding)
    if policy is None or not policy.startswith(CITY_POLICY_PREFIX):
        return None
    name = binding.ref.name
    for suffix, kind in _SUFFIX_KINDS:
        if name.endswith(suffix) and len(name) > len(suffix):
            return kind, name[: -len(suffix)]
    return None


def decide_binding(
    binding: Binding,
    presence: Presence,
    now: datetime,
    min_age: timedelta,
    lookup_error: str = "",
) -> Verdict:
    """Decide an in-scope binding from whether its object exists (by name, labelled or not)."""
    ref = binding.ref
    target = bound_target(binding)
    if target is None:
        return Verdict(
            ref, False, "out-of-scope", "not a city-* ConfigMap/Secret binding", healthy=True
        )
    kind, name = target
    if presence is Presence.EXISTS:
        return Verdict(ref, False, "object-exists", f"{kind} {name} exists", healthy=True)
    if presence is Presence.UNKNOWN:
        return Verdict(ref, False, "lookup-failed", f"could not read {kind} {name}: {lookup_error}")
    # The name alone is never enough: spec.resource must name that very object. (Lists of
    # bindings are metadata only: the sweep reads an absent object's binding in full first.)
    mismatch = resource_mismatch(binding.resource, kind, ref.namespace, name)
    if mismatch is not None:
        return Verdict(ref, False, "resource-mismatch", mismatch)
    held = hold_back(ref, now, min_age, binding.protected)
    if held is not None:
        return Verdict(ref, False, *held)
    return Verdict(ref, True, "orphaned", f"no {kind} named {name} in {ref.namespace}")
