"""Sweep 2: a city-* ResourceBinding of a ConfigMap/Secret that no longer exists. Pure: the
hub is asked through a world (BoundObjects)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Protocol

from gcjob.decide.common import check_binding_owners, hold_back, spec_resource_names
from gcjob.decide.grace import Graced, left_scope
from gcjob.decide.trace import Trace, given
from gcjob.domain import CITY_POLICY_PREFIX, POLICY_KEY
from gcjob.marks import Evidence, Rule, binding_evidence
from gcjob.model import Binding, Verdict
from gcjob.reasons import Reason

_SUFFIX_KINDS = (("-configmap", "ConfigMap"), ("-secret", "Secret"))
CORE_API_VERSION = "v1"
LEFT_BINDING = "no longer a city-* ConfigMap/Secret binding: out of the sweep, its mark with it"


class Existence(Enum):
    EXISTS = "exists"
    ABSENT = "absent"  # proven: a NotFound for that very name
    UNKNOWN = "unknown"  # the read failed: never a reason to delete


def policy_name(binding: Binding) -> str | None:
    """The annotation since Karmada v1.11; the label before it."""
    return binding.policy_annotation or binding.policy_label  # "" names no policy


def bound_target(binding: Binding, trace: Trace | None = None) -> tuple[str, str] | None:
    """(kind, name) of the ConfigMap/Secret this binding is for, when it is in scope at all.

    Out of scope, never touched: other kinds (-workloaddeployment, -httproute, ...), policies
    other than city-*, and ClusterPropagationPolicy bindings.
    """
    trace = given(trace)
    if binding.cluster_policy:
        trace.hold("in-scope", Reason.OUT_OF_SCOPE, "bound by a ClusterPropagationPolicy")
        return None
    policy = policy_name(binding)
    if policy is None or not policy.startswith(CITY_POLICY_PREFIX):
        trace.hold("in-scope", Reason.OUT_OF_SCOPE, f"propagation policy {policy!r} is not city-*")
        return None
    name = binding.ref.name
    bound = None
    for suffix, kind in _SUFFIX_KINDS:
        if name.endswith(suffix) and len(name) > len(suffix):
            bound = (kind, name[: -len(suffix)])
            break
    if bound is not None:
        source = "annotation" if binding.policy_annotation else "label"
        trace.passed(
            "in-scope",
            lambda: f"policy {policy} ({source} {POLICY_KEY}); name {name} binds {' '.join(bound)}",
        )
        return bound
    trace.hold("in-scope", Reason.OUT_OF_SCOPE, f"name {name} ends neither -configmap nor -secret")
    return None


def binding_verdict(
    binding: Binding,
    presence: Existence,
    now: datetime,
    min_age: timedelta,
    lookup_error: str = "",
    trace: Trace | None = None,
) -> Verdict:
    """Decide an in-scope binding from whether its object exists (by name, labelled or not)."""
    trace = given(trace)
    ref = binding.ref
    target = bound_target(binding, trace)
    if target is None:
        return Verdict(
            ref, False, Reason.OUT_OF_SCOPE, "not a city-* ConfigMap/Secret binding", healthy=True
        )
    kind, name = target

    def where(found: str) -> str:
        return f"{kind} {name} in {ref.namespace} (by name, labelled or not): {found}"

    if presence is Existence.EXISTS:
        return trace.held(
            "object-absent",
            lambda: where("exists"),
            Verdict(ref, False, Reason.OBJECT_EXISTS, f"{kind} {name} exists", healthy=True),
        )
    if presence is Existence.UNKNOWN:
        detail = f"could not read {kind} {name}: {lookup_error}"
        return trace.unknown(
            "object-absent",
            where(lookup_error),
            Verdict(ref, False, Reason.LOOKUP_FAILED, detail),
        )
    trace.passed("object-absent", where("not found"))
    # The name alone is never enough: spec.resource must name that very object. (Lists of
    # bindings are metadata only: the sweep reads an absent object's binding in full first.)
    mismatch = spec_resource_names(
        binding,
        CORE_API_VERSION,  # the ConfigMaps and Secrets this sweep is about
        kind,
        ref.namespace,
        name,
        rule="resource-matches",
        reason=Reason.RESOURCE_MISMATCH,
        trace=trace,
    )
    if mismatch is not None:
        return Verdict(ref, False, *mismatch)
    # Karmada's binding is owned by its resource template: any other owner manages it.
    held = check_binding_owners(binding, trace) or hold_back(
        ref, now, min_age, binding.protect, trace
    )
    if held is not None:
        return Verdict(ref, False, *held)
    return Verdict(ref, True, Reason.ORPHANED, f"no {kind} named {name} in {ref.namespace}")


# -- the judgement: one binding against the world -------------------------------------------


class BoundObjects(Protocol):
    """What judging a binding asks of the hub: does the ConfigMap or Secret it binds exist,
    by name, labelled or not. The batch sweep answers from the labelled companions, then a
    read of each name they do not hold; explain reads the name."""

    def presence(self, kind: str, namespace: str, name: str) -> tuple[Existence, str]:
        """(presence, why a read failed) of that object."""
        ...


@dataclass(frozen=True, slots=True)
class Answered:
    """A world whose one answer was read already (BoundObjects)."""

    answer: Existence
    error: str = ""

    def presence(self, kind: str, namespace: str, name: str) -> tuple[Existence, str]:
        return self.answer, self.error


@dataclass(frozen=True, slots=True)
class BindingJudgement:
    """A binding judged: its verdict, the (kind, name) it binds (None: not the sweep's), what
    the world said of that object, and what an orphan's verdict rests on. The grace rule is
    asked once the companions sweep, which goes first, has left the binding to this one."""

    verdict: Verdict
    target: tuple[str, str] | None
    presence: Existence
    evidence: Evidence | None


def judge_binding(
    binding: Binding,
    world: BoundObjects,
    now: datetime,
    min_age: timedelta,
    trace: Trace | None = None,
) -> BindingJudgement:
    """The bindings sweep's judgement of one binding, traced."""
    target = bound_target(binding)
    presence, error = Existence.ABSENT, ""
    if target is not None:
        presence, error = world.presence(target[0], binding.ref.namespace, target[1])
    verdict = binding_verdict(binding, presence, now, min_age, error, trace)
    evidence = binding_evidence(*target) if verdict.delete and target is not None else None
    return BindingJudgement(verdict, target, presence, evidence)


def binding_left_scope(binding: Binding) -> Graced[None] | None:
    """A binding with this sweep's mark that is no city-* ConfigMap/Secret binding (any
    more): its mark goes, or it would count from its time if it came back."""
    if bound_target(binding) is not None:
        return None
    return left_scope(binding.ref, Rule.BINDING, LEFT_BINDING)
