"""Mark first, delete later: the grace period, kept on the objects themselves.

The first run that finds an orphan marks it (label `orphaned=true`, annotations
`orphaned-since`, `orphaned-reason`, `orphaned-evidence`); a later run deletes it only when it
is still an orphan by the same rules, on the same evidence, and the mark is older than the
grace period. gcjob stays stateless: the only state is what the objects carry.

Everything here is pure: marks are read from plain records, `now` is passed in, and a mark is
written as a conditional JSON Patch (RFC 6902) built here as data and sent by gcjob/kube.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import jsonpatch
from jsonpointer import JsonPointer

from gcjob.domain import (
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
    REFERRERS_ANNOTATION,
)
from gcjob.model import Mark, ObjectRef, ParentRef
from gcjob.times import parse_time

Op = dict[str, Any]

MARKED = "true"
DIGEST_HEX = 16  # 64 bits of SHA-256: tells evidence apart, short enough to read


def pointer(*parts: str) -> str:
    """A JSON Pointer (RFC 6901) to a key, escaped: `~1` for `/` in label keys."""
    return str(JsonPointer.from_parts(list(parts)).path)


def since_value(moment: datetime) -> str:
    """An `orphaned-since` value: RFC 3339, UTC; fractional seconds only when there are any,
    so the grace period is measured from the very moment the orphan was seen."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if utc.microsecond else "%Y-%m-%dT%H:%M:%SZ")


# -- evidence ----------------------------------------------------------------------------


class Rule(StrEnum):
    """Which rule found the orphan, written in front of the evidence digest: a binding can be
    marked by the companions sweep (to go with its companion) or by the bindings sweep (its
    object is gone), and each sweep leaves the other's mark alone."""

    COMPANION = "companion"
    COMPANION_BINDING = "companion-binding"
    BINDING = "binding"
    ROUTE = "route"


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a decision to delete rested on. `facts` are digested into the mark; `guards` are
    (JSON Pointer, observed value) pairs the patch tests, so a patch to an object whose
    evidence changed since it was read is refused by the server."""

    rule: Rule
    facts: tuple[tuple[str, str], ...]
    guards: tuple[tuple[str, str], ...] = ()

    @property
    def digest(self) -> str:
        canonical = json.dumps(self.facts, separators=(",", ":"), ensure_ascii=True)
        return f"{self.rule}:{hashlib.sha256(canonical.encode()).hexdigest()[:DIGEST_HEX]}"


def companion_evidence(referrers_raw: str) -> Evidence:
    """A companion rests on its referrers annotation, verbatim."""
    return Evidence(
        Rule.COMPANION,
        (("referrers", referrers_raw),),
        ((pointer("metadata", "annotations", REFERRERS_ANNOTATION), referrers_raw),),
    )


def _bound(rule: Rule, kind: str, name: str) -> Evidence:
    return Evidence(
        rule,
        (("kind", kind), ("name", name)),
        ((pointer("spec", "resource", "kind"), kind), (pointer("spec", "resource", "name"), name)),
    )


def binding_evidence(kind: str, name: str) -> Evidence:
    """A binding whose object is gone rests on the kind and name of the object it binds."""
    return _bound(Rule.BINDING, kind, name)


def companion_binding_evidence(companion: ObjectRef) -> Evidence:
    """The binding of an orphaned companion rests on binding that very companion."""
    return _bound(Rule.COMPANION_BINDING, companion.kind, companion.name)


def route_evidence(
    cluster: str, namespace: str, gateways: Sequence[str], parents: Sequence[ParentRef]
) -> Evidence:
    """A route rests on its parent Gateways: the upstream cluster, namespace and names."""
    return Evidence(
        Rule.ROUTE,
        (("cluster", cluster), ("namespace", namespace), ("gateways", ",".join(sorted(gateways)))),
        tuple(
            (pointer("spec", "parentRefs", str(i), "name"), parent.name)
            for i, parent in enumerate(parents)
        ),
    )


# -- reading a mark --------------------------------------------------------------------------


def rule_of(mark: Mark) -> str | None:
    """The rule a mark's evidence names, or None when it names none gcjob knows."""
    rule, sep, _ = (mark.evidence or "").partition(":")
    return rule if sep and rule in {r.value for r in Rule} else None


def mark_since(mark: Mark | None) -> datetime | None:
    """When a complete mark says the object became an orphan; None for no or a broken mark."""
    if mark is None or mark.label != MARKED or not mark.evidence:
        return None
    return parse_time(mark.since)


# -- writing a mark: conditional JSON Patches ---------------------------------------------


def _projection(ref: ObjectRef, mark: Mark | None) -> dict[str, Any]:
    """The part of an object a mark touches, as observed: the maps only where they exist."""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    if mark is not None:
        if mark.label is not None:
            labels[ORPHANED_LABEL] = mark.label
        for key, value in (
            (ORPHANED_SINCE_ANNOTATION, mark.since),
            (ORPHANED_REASON_ANNOTATION, mark.reason),
            (ORPHANED_EVIDENCE_ANNOTATION, mark.evidence),
        ):
            if value is not None:
                annotations[key] = value
    meta: dict[str, Any] = {}
    if ref.has_labels or labels:
        meta["labels"] = labels
    if ref.has_annotations or annotations:
        meta["annotations"] = annotations
    return {"metadata": meta}


def _guarded(
    ref: ObjectRef, guards: Sequence[tuple[str, str]], before: Any, after: Any
) -> list[Op]:
    """`test` ops on what was observed, then the change: the server applies all or nothing."""
    tests: list[Op] = [
        {"op": "test", "path": "/metadata/uid", "value": ref.uid},
        {"op": "test", "path": "/metadata/resourceVersion", "value": ref.resource_version},
    ]
    tests.extend({"op": "test", "path": path, "value": value} for path, value in guards)
    change: list[Op] = jsonpatch.make_patch(before, after).patch
    return [*tests, *change]


def new_mark(evidence: Evidence, reason: str, now: datetime) -> Mark:
    return Mark(label=MARKED, since=since_value(now), reason=reason, evidence=evidence.digest)


def mark_patch(ref: ObjectRef, mark: Mark, evidence: Evidence) -> list[Op]:
    """Write `mark` over whatever mark the object had (absent maps are created)."""
    if not ref.uid or not ref.resource_version:
        raise ValueError(f"{ref.kind} {ref.name}: no uid/resourceVersion to pin a patch to")
    return _guarded(ref, evidence.guards, _projection(ref, ref.mark), _projection(ref, mark))


def unmark_patch(ref: ObjectRef) -> list[Op]:
    """Remove every part of gcjob's mark the object was seen to carry."""
    if not ref.uid or not ref.resource_version:
        raise ValueError(f"{ref.kind} {ref.name}: no uid/resourceVersion to pin a patch to")
    return _guarded(ref, (), _projection(ref, ref.mark), _projection(ref, None))
