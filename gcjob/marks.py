"""Mark first, delete later: the grace period, kept on the objects themselves.

The first run that finds an orphan marks it (label `orphaned=true`, annotations
`orphaned-since`, `orphaned-reason`, `orphaned-evidence`); a later run deletes it only when it
is still an orphan by the same rules, on the same evidence, and the mark is older than the
grace period. gcjob stays stateless: the only state is what the objects carry.

A mark counts only when it is the one gcjob wrote on this very object: its evidence names the
object's uid, its time is written exactly as gcjob writes it, and lies between the object's
creation and now. Anything else is a void mark (`read_mark`): the object is marked afresh,
never deleted on it, so a mark copied with an object (an export, a backup, GitOps) starts
nothing. Marks written before the uid binding (`rule:digest`) are legacy: marked again.

Everything here is pure: marks are read from plain records, `now` is passed in, and a mark is
written as a conditional JSON Patch (RFC 6902) built here as data and sent by gcjob/kube.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
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
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_NAME_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
)
from gcjob.model import Mark, ObjectRef, ParentRef, UpstreamOwner

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
    # %Y is not zero-padded for years below 1000 on every platform: write the year ourselves.
    rest = utc.strftime("-%m-%dT%H:%M:%S.%fZ" if utc.microsecond else "-%m-%dT%H:%M:%SZ")
    return f"{utc.year:04d}{rest}"


# Exactly what since_value writes: ASCII digits, `T`, `Z`, no fraction or six digits.
_SINCE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{6}))?Z"
)


def parse_since(value: object) -> datetime | None:
    """An `orphaned-since` value exactly as since_value writes it, or None. Stricter than
    parse_time (Kubernetes' own timestamps): a time gcjob did not write is not its mark."""
    if not isinstance(value, str):
        return None
    found = _SINCE.fullmatch(value)
    if found is None:
        return None
    year, month, day, hour, minute, second, fraction = found.groups()
    try:
        moment = datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            int(second),
            int(fraction or 0),
            tzinfo=UTC,
        )
    except ValueError:  # month 13, February 30, year 0
        return None
    # `.000000Z` is a valid time gcjob never writes (it leaves out a zero fraction).
    return moment if since_value(moment) == value else None


# -- evidence ----------------------------------------------------------------------------


class Rule(StrEnum):
    """Which rule found the orphan, written in front of the evidence digest: a binding can be
    marked by the companions sweep (to go with its companion) or by the bindings sweep (its
    object is gone), and each sweep leaves the other's mark alone."""

    COMPANION = "companion"
    COMPANION_BINDING = "companion-binding"
    BINDING = "binding"
    ROUTE = "route"
    COPY = "copy"


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a decision to delete rested on. `facts` are digested into the mark; `guards` are
    (JSON Pointer, observed value) pairs the patch tests, so a patch to an object whose
    evidence changed since it was read is refused by the server."""

    rule: Rule
    facts: tuple[tuple[str, str], ...]
    guards: tuple[tuple[str, str], ...] = ()
    uid: str = ""  # the object the mark is written on (`on`)

    @property
    def facts_digest(self) -> str:
        """`rule:digest` of the facts alone: what marks held before they named their object."""
        canonical = json.dumps(self.facts, separators=(",", ":"), ensure_ascii=True)
        return f"{self.rule}:{hashlib.sha256(canonical.encode()).hexdigest()[:DIGEST_HEX]}"

    @property
    def digest(self) -> str:
        """What the `orphaned-evidence` annotation holds: `rule:digest:uid` once bound."""
        return f"{self.facts_digest}:{self.uid}" if self.uid else self.facts_digest

    def on(self, uid: str) -> Evidence:
        """This evidence, bound to the object with `uid`: the mark written from it counts on
        that object only."""
        return replace(self, uid=uid)


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


def copy_evidence(owner: UpstreamOwner, anchors: Sequence[str]) -> Evidence:
    """A downstream copy or anchor rests on its upstream owner's identity (the five labels)
    and the anchor UIDs it belongs to: why the owner is gone (its project, its namespace,
    itself) may change and the clock keeps; another owner or anchor restarts it."""
    # The cluster label is guarded by the digest alone: its older spelling (`cluster-_p`)
    # decodes to the same cluster.
    labels = (
        (UPSTREAM_GROUP_LABEL, owner.group),
        (UPSTREAM_KIND_LABEL, owner.kind),
        (UPSTREAM_NAMESPACE_LABEL, owner.namespace),
        (UPSTREAM_NAME_LABEL, owner.name),
    )
    return Evidence(
        Rule.COPY,
        (
            ("cluster", owner.cluster),
            ("group", owner.group),
            ("kind", owner.kind),
            ("namespace", owner.namespace),
            ("name", owner.name),
            ("anchors", ",".join(sorted(anchors))),
        ),
        tuple((pointer("metadata", "labels", key), value) for key, value in labels),
    )


# -- reading a mark --------------------------------------------------------------------------


def describe_mark(mark: Mark | None) -> str:
    """A mark as a trace shows it: each part verbatim."""
    if mark is None:
        return "no mark"
    return (
        f"{ORPHANED_LABEL}={mark.label}, orphaned-since {mark.since}, "
        f"orphaned-evidence {mark.evidence}"
    )


def rule_of(mark: Mark) -> str | None:
    """The rule a mark's evidence names, or None when it names none gcjob knows."""
    rule, sep, _ = (mark.evidence or "").partition(":")
    return rule if sep and rule in {r.value for r in Rule} else None


_EVIDENCE = re.compile(rf"([a-z-]+:[0-9a-f]{{{DIGEST_HEX}}})(?::(.+))?", re.DOTALL)


class MarkState(StrEnum):
    ABSENT = "absent"  # no part of a mark
    VOID = "void"  # not a mark gcjob wrote on this object: counts for nothing
    LEGACY = "legacy"  # a well-formed mark from before marks named their object
    BOUND = "bound"  # gcjob's mark on this very object


@dataclass(frozen=True, slots=True)
class MarkReading:
    """What a mark is worth on one object. `since` and `evidence` (`rule:digest`, without the
    uid) only for LEGACY and BOUND; `why` says why a VOID mark counts for nothing."""

    state: MarkState
    since: datetime | None = None
    evidence: str = ""
    why: str = ""


def _void(why: str) -> MarkReading:
    return MarkReading(MarkState.VOID, why=why)


def _shown(value: str, limit: int = 64) -> str:
    """A value read from an object, quoted and cut short, for a report's one-line detail."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= limit else text[: limit - 4] + '..."'


# The hub's clock is known to the second (its `Date`), carried on by the pod's monotonic clock
# (gcjob/times.py HubClock): a mark written late in one second can read as a fraction of a
# second after the next run's now. Within this it counts (its grace period has simply not
# begun); past it, a mark dated after now is void.
HUB_CLOCK_RESOLUTION = timedelta(seconds=1)


def counts_for_nothing(mark: Mark | None, uid: str, created: datetime | None) -> bool:
    """A void mark that no moment can make count (incomplete, unreadable, copied, before its
    object): nothing to remove, so no write is spent on it. A mark dated after now is not
    one of them: once now passes its time it would count, so it is removed like any other."""
    reading = read_mark(mark, uid, created, datetime.max.replace(tzinfo=UTC))
    return reading.state is MarkState.VOID


def read_mark(mark: Mark | None, uid: str, created: datetime | None, now: datetime) -> MarkReading:
    """Whether `mark` is the one gcjob wrote on the object with `uid`, created at `created`,
    as of `now` (the hub's clock). Pure and total: any text in any part is an answer."""
    if mark is None:
        return MarkReading(MarkState.ABSENT)
    if mark.label != MARKED or mark.since is None or not mark.evidence:
        return _void("void mark: incomplete (label, orphaned-since and orphaned-evidence needed)")
    since = parse_since(mark.since)
    if since is None:
        return _void(
            f"void mark: orphaned-since {_shown(mark.since)} is not a time gcjob writes "
            "(YYYY-MM-DDTHH:MM:SS[.ffffff]Z)"
        )
    found = _EVIDENCE.fullmatch(mark.evidence)
    if found is None:
        return _void(f"void mark: orphaned-evidence {_shown(mark.evidence)} is not gcjob's")
    evidence, bound_to = found.groups()
    if bound_to is not None and bound_to != uid:
        return _void(
            f"void mark: written on another object (uid {_shown(bound_to)}), copied with it"
        )
    if created is None:
        return _void("void mark: the object's creation time is unknown")
    if since < created:
        return _void(
            f"void mark: orphaned-since {mark.since} is before the object was created "
            f"({since_value(created)}): a copied mark"
        )
    if since > now and since - now > HUB_CLOCK_RESOLUTION:
        return _void(f"void mark: orphaned-since {mark.since} is after now ({since_value(now)})")
    state = MarkState.LEGACY if bound_to is None else MarkState.BOUND
    return MarkReading(state, since, evidence)


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
    """The mark to write: `evidence` bound to the object (Evidence.on) names its uid."""
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
