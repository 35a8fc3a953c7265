"""The deletion record and its undo, as data (docs/undo.md).

A `--delete` run with `--record-deletions DIR` writes one JSON Lines file per run: before each
delete, a `delete` entry holding the object exactly as it is deleted (the live read the
delete is pinned to: same uid and resourceVersion), then an `outcome` entry saying what
became of it. A Secret's entry holds what gcjob keeps of its metadata (domain.secret_as_kept):
gcjob never reads a Secret's data, and of its labels and annotations keeps the values of only
those its rules read, the others by key alone.
`gcjob restore` re-creates an object from its `delete` entry: `restore_body` strips what the
server owns (uid, resourceVersion, times, managedFields, status), gcjob's mark, and points its
ownerReferences at the live owners (or drops them: an ownerReference to a uid that is gone
would have the garbage collector delete the restored object at once).

Everything here is pure: the entries are plain dicts, `at` is passed in.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gcjob.domain import (
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
    PROTECT_ANNOTATION,
    secret_as_kept,
)

FORMAT = "gcjob.datumapis.com/deletion-record/v1"
DELETE = "delete"  # an entry written (and flushed) before its delete is sent
OUTCOME = "outcome"  # what became of that delete, written after its answer
# Outcomes after which the object may be gone by gcjob's hand: restore considers them (and
# an entry with no outcome: the run ended between the delete and its outcome).
DELETED_OUTCOMES = frozenset({"deleted", "failed:delete-uncertain"})

MARK_LABELS = (ORPHANED_LABEL,)
MARK_ANNOTATIONS = (
    ORPHANED_SINCE_ANNOTATION,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_EVIDENCE_ANNOTATION,
)
# Set by the server on every object: a create carrying them is refused or they are ignored.
SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "selfLink",
)
# A hub's identity: the uid of its `kube-system` namespace, made once by the API server with
# its storage and the same under any address the hub is reached at (a kubeconfig's server is
# not: in-cluster and external URLs differ).
HUB_IDENTITY = "kube-system"
SECRET_NOTE = (
    "data not recorded: gcjob never reads a Secret's data; of its labels and annotations only "
    "the keys, and the values of those gcjob's rules read"
)
# The longest line gcjob writes: one object (the API server takes at most 3 MiB in a request),
# every character escaped (`\uXXXX`, six for one), and the entry around it. A longer line is
# not gcjob's, and is never read whole (`gcjob restore /dev/zero` must not fill the memory).
MAX_LINE = 24 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Where:
    """The API resource an entry's object is served at: enough to re-create it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool


def delete_entry(
    run_id: str,
    sweep: str,
    where: Where,
    obj: Mapping[str, Any],
    at: datetime,
    *,
    sensitive: bool,
    hub: str,
) -> dict[str, Any]:
    """The write-ahead entry for one delete. `obj`: the object as read live (for a Secret,
    its metadata as gcjob keeps it, domain.secret_as_kept, which this applies again: the
    entry says its data was not recorded). `hub`: the hub's identity (HUB_IDENTITY's uid),
    which restore checks it is putting the object back on."""
    kept = dict(obj)
    meta = dict(kept.get("metadata") or {})
    meta.pop("managedFields", None)  # the server's bookkeeping, often larger than the object
    if sensitive:
        meta = secret_as_kept(obj)["metadata"]
        kept = {}
    # A metadata-only answer is a PartialObjectMetadata: the object's own type is the resource's.
    kept["apiVersion"] = f"{where.group}/{where.version}" if where.group else where.version
    kept["kind"] = where.kind
    kept["metadata"] = meta
    entry: dict[str, Any] = {
        "format": FORMAT,
        "event": DELETE,
        "run_id": run_id,
        "at": at.isoformat(),
        "sweep": sweep,
        "hub": hub,
        "resource": {
            "group": where.group,
            "version": where.version,
            "plural": where.plural,
            "kind": where.kind,
            "namespaced": where.namespaced,
        },
        "object": kept,
        "data_recorded": not sensitive,
    }
    if sensitive:
        entry["note"] = SECRET_NOTE
    return entry


def outcome_entry(run_id: str, uid: str, outcome: str, detail: str, at: datetime) -> dict[str, Any]:
    """What became of a recorded delete: `deleted`, or `<action>:<reason>` otherwise."""
    return {
        "format": FORMAT,
        "event": OUTCOME,
        "run_id": run_id,
        "at": at.isoformat(),
        "uid": uid,
        "outcome": outcome,
        "detail": detail,
    }


def line(entry: Mapping[str, Any]) -> str:
    """One JSON Lines line: ASCII (any name or value escaped), no newline inside."""
    return json.dumps(entry, ensure_ascii=True, separators=(",", ":"), sort_keys=True) + "\n"


# -- reading a record ------------------------------------------------------------------------


class RecordError(ValueError):
    """A record file that is not gcjob's deletion record: one line saying where."""


@dataclass(frozen=True, slots=True)
class Recorded:
    """One recorded delete and what became of it (None: no outcome was written)."""

    entry: Mapping[str, Any]
    outcome: str | None

    @property
    def meta(self) -> Mapping[str, Any]:
        return self.entry["object"]["metadata"]  # type: ignore[no-any-return]

    @property
    def kind(self) -> str:
        return str(self.entry["resource"]["kind"])

    @property
    def namespace(self) -> str:
        return str(self.meta.get("namespace") or "")

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or "")

    @property
    def uid(self) -> str:
        return str(self.meta.get("uid") or "")

    @property
    def where(self) -> Where:
        r = self.entry["resource"]
        return Where(r["group"], r["version"], r["plural"], r["kind"], r["namespaced"])

    @property
    def hub(self) -> str | None:
        """The identity of the hub it was deleted from (None: the record does not say)."""
        hub = self.entry.get("hub")
        return hub if isinstance(hub, str) and hub else None

    @property
    def data_recorded(self) -> bool:
        return bool(self.entry.get("data_recorded"))

    @property
    def label(self) -> str:
        """`Kind/namespace/name`, as `gcjob restore` names a target."""
        return (
            f"{self.kind}/{self.namespace}/{self.name}"
            if self.namespace
            else (f"{self.kind}/{self.name}")
        )

    @property
    def deleted_by_gcjob(self) -> bool:
        """Gone by gcjob's hand, or maybe: the delete was answered `deleted`, its answer was
        lost, or no outcome was written."""
        return self.outcome is None or self.outcome in DELETED_OUTCOMES


def _string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def _metadata_problem(meta: Mapping[str, Any], namespaced: bool) -> str | None:
    """What in a delete entry's metadata restore could not use as Kubernetes metadata (a
    hand-edited record): None when every field restore reads has its Kubernetes type."""
    namespace = meta.get("namespace")
    if namespaced and (not isinstance(namespace, str) or not namespace):
        return "a namespaced object without its namespace"
    if namespace is not None and not isinstance(namespace, str):
        return "metadata.namespace is not a string"
    if meta.get("uid") is not None and not isinstance(meta.get("uid"), str):
        return "metadata.uid is not a string"
    for part in ("labels", "annotations"):
        if meta.get(part) is not None and not _string_map(meta.get(part)):
            return f"metadata.{part} is not a map of strings"
    owners = meta.get("ownerReferences")
    if owners is not None and (
        not isinstance(owners, list) or not all(isinstance(o, dict) for o in owners)
    ):
        return "metadata.ownerReferences is not a list of references"
    return None


def _checked(entry: Any, where: str) -> dict[str, Any]:
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        raise RecordError(f"{where}: not a gcjob deletion record entry ({FORMAT})")
    if entry.get("event") == DELETE:
        resource = entry.get("resource")
        obj = entry.get("object")
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if (
            not isinstance(resource, dict)
            or not all(isinstance(resource.get(k), str) for k in ("version", "plural", "kind"))
            or not isinstance(resource.get("group"), str)
            or not isinstance(resource.get("namespaced"), bool)
            or not isinstance(meta, dict)
            or not isinstance(meta.get("name"), str)
            or not meta.get("name")
        ):
            raise RecordError(f"{where}: a delete entry without its resource or object name")
        problem = _metadata_problem(meta, resource["namespaced"])
        if problem is not None:
            raise RecordError(f"{where}: {problem}")
    elif entry.get("event") == OUTCOME:
        if not isinstance(entry.get("uid"), str) or not isinstance(entry.get("outcome"), str):
            raise RecordError(f"{where}: an outcome entry without uid or outcome")
    else:
        raise RecordError(f"{where}: unknown event {entry.get('event')!r}")
    return entry


def read_record(lines: Iterable[str], source: str = "record") -> list[Recorded]:
    """Every recorded delete of a record file, in the order written, each with its outcome
    (the last one written for its uid). One object (uid) once: of several `delete` entries
    for one uid (a retried delete that an earlier gcjob recorded again) the last, the object
    as its last try found it. Raises RecordError on a line that is not
    gcjob's; a last line cut short (the run was killed while writing it) is left out."""
    entries: list[dict[str, Any]] = []
    outcomes: dict[str, str] = {}
    numbered = list(enumerate(lines, 1))
    for number, text in numbered:
        if not text.strip():
            continue
        try:
            raw = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than json reads
            if number == len(numbered) and not text.endswith("\n"):
                break  # a write cut short: its delete was never sent
            raise RecordError(f"{source}:{number}: not JSON") from None
        entry = _checked(raw, f"{source}:{number}")
        if entry["event"] == DELETE:
            entries.append(entry)
        else:
            outcomes[entry["uid"]] = entry["outcome"]
    last = {_uid_of(e): at for at, e in enumerate(entries)}
    return [
        Recorded(e, outcomes.get(_uid_of(e)))
        for at, e in enumerate(entries)
        if not _uid_of(e) or last[_uid_of(e)] == at
    ]


def _uid_of(entry: Mapping[str, Any]) -> str:
    """The uid of a delete entry's object ("" when it names none: a hand-written entry)."""
    return str(entry["object"]["metadata"].get("uid") or "")


# -- restoring -------------------------------------------------------------------------------

OwnerKey = tuple[str, str, str]  # (apiVersion's group, kind, name) of an owner


def owner_key(owner: Mapping[str, Any]) -> OwnerKey:
    group = str(owner.get("apiVersion") or "").rpartition("/")[0]
    return (group, str(owner.get("kind") or ""), str(owner.get("name") or ""))


def restore_body(
    obj: Mapping[str, Any], live_owners: Mapping[OwnerKey, str], *, protect: bool
) -> tuple[dict[str, Any], list[str]]:
    """The object to create from a recorded one, and a note per ownerReference: pointed at
    its live owner's uid when `live_owners` names one (the owner re-created since), dropped
    otherwise (an owner that is gone would have the garbage collector delete it again).
    Never carries the server's fields (uid, resourceVersion, ...), status, or gcjob's mark;
    `protect`: annotated so gcjob's next runs keep it (docs/operating.md)."""
    body = copy.deepcopy(dict(obj))
    body.pop("status", None)
    meta: dict[str, Any] = dict(body.get("metadata") or {})
    for server_field in SERVER_METADATA:
        meta.pop(server_field, None)
    # Every key of gcjob's mark, wherever it is: a restored object starts with no mark.
    mark = {*MARK_LABELS, *MARK_ANNOTATIONS}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in mark}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in mark}
    if protect:
        annotations[PROTECT_ANNOTATION] = "true"
    for part, value in (("labels", labels), ("annotations", annotations)):
        if value:
            meta[part] = value
        else:
            meta.pop(part, None)
    notes: list[str] = []
    owners: list[dict[str, Any]] = []
    for owner in meta.get("ownerReferences") or []:
        key = owner_key(owner)
        named = f"{key[1]} {key[2]}"
        live = live_owners.get(key)
        if live is None:
            notes.append(f"ownerReference to {named} dropped: no live owner found")
            continue
        if live != owner.get("uid"):
            notes.append(f"ownerReference to {named} re-pointed to its live uid {live}")
        owners.append({**owner, "uid": live})
    if owners:
        meta["ownerReferences"] = owners
    else:
        meta.pop("ownerReferences", None)
    body["metadata"] = meta
    return body, notes
