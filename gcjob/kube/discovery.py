"""Which resources an API serves for a group and kind: discovery, read and understood.

A kind is matched by its group and kind, whatever version the server prefers; subresources
(`connectors/status`) are never a kind's resource. An answer that cannot be read raises: a
group whose discovery failed is unknown, never "not served".

Two ways to the same answer: the aggregated documents (`/api` and `/apis`, every group in
one answer each, apidiscovery.k8s.io/v2, GA in 1.30), or a group's own documents (`/apis/<g>`
and one per version) where a server does not serve those, or cannot vouch for a group in them.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from gcjob.kube.resources import Resource


def versions(group_body: Any) -> list[str]:
    """The versions an APIGroup answer names, the preferred first; [] when it names none."""
    if not isinstance(group_body, dict):
        return []
    named: list[str] = []
    preferred = group_body.get("preferredVersion")
    if isinstance(preferred, dict) and isinstance(preferred.get("version"), str):
        named.append(preferred["version"])
    listed = group_body.get("versions")
    for item in listed if isinstance(listed, list) else ():
        version = item.get("version") if isinstance(item, dict) else None
        if isinstance(version, str) and version not in named:
            named.append(version)
    return [v for v in named if v]


def merge_versions(
    per_version: list[Mapping[str, tuple[Resource, ...]]],
) -> Mapping[str, tuple[Resource, ...]]:
    """Kind -> resources over every version, the first version (preferred) winning for a
    resource served in several; two resources (plurals) for one kind stay ambiguous."""
    merged: dict[str, dict[str, Resource]] = {}
    for served in per_version:
        for kind, resources in served.items():
            for resource in resources:
                merged.setdefault(kind, {}).setdefault(resource.plural, resource)
    return {kind: tuple(by_plural.values()) for kind, by_plural in merged.items()}


def resources_by_kind(group: str, version: str, body: Any) -> Mapping[str, tuple[Resource, ...]]:
    """An APIResourceList answer: kind -> the resources serving it (more than one is
    ambiguous, and resolves to nothing)."""
    found: dict[str, list[Resource]] = {}
    items = body.get("resources") if isinstance(body, dict) else None
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        name, kind, namespaced = item.get("name"), item.get("kind"), item.get("namespaced")
        if not isinstance(name, str) or not name or "/" in name:
            continue  # a subresource, or unreadable
        if not isinstance(kind, str) or not kind or not isinstance(namespaced, bool):
            continue
        found.setdefault(kind, []).append(Resource(group, version, name, kind, namespaced))
    return {kind: tuple(resources) for kind, resources in found.items()}


def resolve(
    served: Mapping[str, tuple[Resource, ...]] | None, group: str, kind: str, namespaced: bool
) -> Resource | str:
    """The one resource serving this kind, in the scope the object's labels imply; else why
    not, in one line."""
    what = f"{kind}.{group}" if group else kind
    if served is None:
        return f"group {group or 'core'} is not served"
    candidates = served.get(kind, ())
    if not candidates:
        return f"{what} is not served"
    if len(candidates) > 1:
        plurals = ", ".join(sorted(r.plural for r in candidates))
        return f"{what} is served by more than one resource ({plurals})"
    (resource,) = candidates
    if resource.namespaced != namespaced:
        scope = "namespaced" if resource.namespaced else "cluster-scoped"
        return f"{what} is {scope}, which its labels do not say"
    return resource


# A group's versions, the preferred first, each with the kinds it serves.
Versions = tuple[tuple[str, Mapping[str, tuple[Resource, ...]]], ...]

AGGREGATED_LIST = "APIGroupDiscoveryList"
AGGREGATED_API_VERSION = "apidiscovery.k8s.io/v2"


@dataclass(frozen=True, slots=True)
class Aggregated:
    """One aggregated discovery document (`/api` or `/apis`), read: each group it names with
    its versions; `unsure`: groups it cannot answer for (a version not `Current`, a group
    named twice), which are read from their own documents instead."""

    groups: Mapping[str, Versions]
    unsure: frozenset[str] = frozenset()

    def versions(self, group: str) -> Versions | None:
        """The group's versions; None when the document says it is not served. Call only for
        a group not `unsure`."""
        return self.groups.get(group)


def aggregated(body: Any, core: bool, only: Collection[str] | None = None) -> Aggregated | None:
    """An APIGroupDiscoveryList answer, read; None when `body` is none (the server answered the
    legacy document: it does not serve aggregated discovery). What cannot be read of an item
    is skipped, as resources_by_kind skips it: a kind it does not name is not served, which
    decides nothing. `core`: the answer of `/api`, whose one group has no name. `only`: the
    groups read (the rest of the document is skipped unread: at 10,000 upstream clusters,
    reading every group of each document was CPU the proxy and the servers needed); None:
    every group."""
    if not isinstance(body, dict):
        return None
    if body.get("kind") != AGGREGATED_LIST or body.get("apiVersion") != AGGREGATED_API_VERSION:
        return None
    items = body.get("items")
    if not isinstance(items, list):
        raise ValueError("aggregated discovery without a list of items")
    groups: dict[str, Versions] = {}
    unsure: set[str] = set()
    for item in items:
        if not isinstance(item, dict):
            continue
        meta = item.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if core:
            name = name or ""
            if name:
                continue  # /api serves the core group only
        elif not isinstance(name, str) or not name:
            continue
        if only is not None and name not in only:
            continue
        if name in groups or name in unsure:
            unsure.add(name)  # named twice: its own document says which
            groups.pop(name, None)
            continue
        versions, current = _versions(name, item.get("versions"))
        if current:
            groups[name] = versions
        else:
            unsure.add(name)
    return Aggregated(groups, frozenset(unsure))


# The documents read last, by their exact bytes: a fleet of control planes serving the same
# groups answers the same document, and decoding it (tens of KB of JSON, a millisecond or
# more) was most of an upstream cluster's CPU. Each cluster still asks its own and is judged
# on its own answer: only reading equal bytes is done once. A few, so hostile documents
# (each its own) cost what they did, and memory stays a few documents.
_READ: OrderedDict[tuple[bytes, bool, frozenset[str]], Aggregated | None] = OrderedDict()
READ_KEPT = 4
_READ_LOCK = threading.Lock()


def read_aggregated(
    body: bytes, core: bool, only: frozenset[str], decode: Callable[[], Any]
) -> Aggregated | None:
    """`aggregated(decode(), core, only)`, shared by equal answers (the same bytes): `body` is
    the answer as received, `decode` decodes it (raising what the caller raises for JSON it
    cannot read). Raises ValueError as `aggregated` does."""
    key = (body, core, only)
    with _READ_LOCK:
        if key in _READ:
            _READ.move_to_end(key)
            return _READ[key]
    read = aggregated(decode(), core, only)
    with _READ_LOCK:
        _READ[key] = read
        while len(_READ) > READ_KEPT:
            _READ.popitem(last=False)
    return read


def _versions(group: str, listed: Any) -> tuple[Versions, bool]:
    """A group's versions (in the order served: the preferred first), and whether each of them
    is `Current` (a stale one may name resources no longer served, or miss new ones)."""
    found: list[tuple[str, Mapping[str, tuple[Resource, ...]]]] = []
    for entry in listed if isinstance(listed, list) else ():
        if not isinstance(entry, dict):
            continue
        version = entry.get("version")
        if not isinstance(version, str) or not version:
            continue
        if entry.get("freshness", "Current") != "Current":
            return (), False
        found.append((version, _resources(group, version, entry.get("resources"))))
    return tuple(found), True


def _resources(group: str, version: str, listed: Any) -> Mapping[str, tuple[Resource, ...]]:
    """One version's resources as APIResourceList's would read (resources_by_kind)."""
    found: dict[str, list[Resource]] = {}
    for item in listed if isinstance(listed, list) else ():
        if not isinstance(item, dict):
            continue
        name, scope = item.get("resource"), item.get("scope")
        response = item.get("responseKind")
        kind = response.get("kind") if isinstance(response, dict) else None
        if not isinstance(name, str) or not name or "/" in name:
            continue
        if not isinstance(kind, str) or not kind or scope not in ("Namespaced", "Cluster"):
            continue
        found.setdefault(kind, []).append(
            Resource(group, version, name, kind, scope == "Namespaced")
        )
    return {kind: tuple(resources) for kind, resources in found.items()}


def serves(versions: Versions | None, resource: Resource) -> bool:
    """Whether these versions serve `resource` at its own version."""
    for version, kinds in versions or ():
        if version == resource.version:
            return any(r.plural == resource.plural for rs in kinds.values() for r in rs)
    return False


# Answers shared by every reader that was given the same (a fleet of control planes serving
# the same groups holds one copy of each); bounded, so a fleet of hostile answers cannot grow
# it without end: past it, each answer is kept as read.
_INTERNED: dict[object, Versions] = {}
MAX_INTERNED = 4096
_INTERNED_LOCK = threading.Lock()


def interned(versions: Versions | None) -> Versions | None:
    """`versions`, or an equal answer kept before: one object for every equal answer."""
    if versions is None:
        return None
    with _INTERNED_LOCK:
        if id(versions) in _MERGED:  # the kept answer itself (a document read once, shared)
            return versions
    key = tuple((v, tuple(sorted(kinds.items()))) for v, kinds in versions)
    with _INTERNED_LOCK:
        found = _INTERNED.get(key)
        if found is not None:
            return found
        if len(_INTERNED) < MAX_INTERNED:
            _INTERNED[key] = versions
            # Kept as long as `versions` (for the process): no other object takes its id.
            _MERGED[id(versions)] = merge_versions([kinds for _, kinds in versions])
    return versions


# The kinds of each interned answer, merged once (kinds_of): a reader asked for a group's
# kinds gets the one mapping, not a copy each (a copy of a group's kinds was kept by every
# upstream cluster's owner lookups for the run).
_MERGED: dict[int, Mapping[str, tuple[Resource, ...]]] = {}


def kinds_of(versions: Versions) -> Mapping[str, tuple[Resource, ...]]:
    """merge_versions over the group's versions: shared when `versions` was interned."""
    with _INTERNED_LOCK:
        found = _MERGED.get(id(versions))
    if found is not None:
        return found
    return merge_versions([kinds for _, kinds in versions])


# What the namespace controller deletes in a namespace: each namespaced resource that can be
# listed and deleted (its `verbs`), at its group's preferred version.
NAMESPACE_DELETES = frozenset({"list", "delete"})


def preferred_groups(groups_body: Any) -> list[tuple[str, str]]:
    """An APIGroupList answer (`/apis`): each group and its preferred version."""
    found: list[tuple[str, str]] = []
    listed = groups_body.get("groups") if isinstance(groups_body, dict) else None
    for item in listed if isinstance(listed, list) else ():
        name = item.get("name") if isinstance(item, dict) else None
        named = versions(item)
        if isinstance(name, str) and name and named:
            found.append((name, named[0]))
    return found


def listed_and_deleted(group: str, version: str, body: Any) -> tuple[list[Resource], int]:
    """An APIResourceList answer's namespaced resources (no subresource) whose verbs hold both
    `list` and `delete`: what the namespace controller would delete there; and how many of
    its entries could not be read (what they are is unknown: the caller says so)."""
    found: list[Resource] = []
    unreadable = 0
    items = body.get("resources") if isinstance(body, dict) else None
    if not isinstance(items, list):
        return [], 1
    for item in items:
        if not isinstance(item, dict):
            unreadable += 1
            continue
        if item.get("namespaced") is not True:
            continue
        name, kind, verbs = item.get("name"), item.get("kind"), item.get("verbs")
        if isinstance(name, str) and "/" in name:
            continue  # a subresource
        if (
            not isinstance(name, str)
            or not name
            or not isinstance(kind, str)
            or not isinstance(verbs, list)
            or not all(isinstance(v, str) for v in verbs)
        ):
            unreadable += 1
            continue
        if set(verbs) >= NAMESPACE_DELETES:
            found.append(Resource(group, version, name, kind, True))
    return found, unreadable


# How kube-apiserver's aggregated discovery answers carry their ETag (k8s.io/apiserver
# pkg/endpoints/discovery/aggregated etag.go, the same in 1.31 and 1.36, checked on both): the
# uppercase hex SHA-512 of the document as Go's json.Marshal writes it without its type, in
# quotes. The body sent is that JSON with `kind` and `apiVersion` written first and a newline
# after it. So the bytes hashed are the body with this prefix made `{` and its newline cut:
# one body for one hashed text, and back.
_TYPED_PREFIX = b'{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2",'
_ETAG_CHARS = 2 + 2 * hashlib.sha512().digest_size  # the quotes and 128 hex digits


def verified_etag(etag: str | None, body: bytes) -> str | None:
    """`etag` when it is a strong ETag that is the SHA-512 of exactly this aggregated discovery
    body, as kube-apiserver makes it; else None (weak, missing, another form, another body).
    Only a verified ETag names a document shared with other clusters: whoever sent it, the
    ETag then says which bytes they were."""
    # ASCII only: a header decodes as latin-1, and compare_digest refuses other text (a
    # hostile upstream's ETag must never end the run).
    if etag is None or len(etag) != _ETAG_CHARS or not etag.isascii():
        return None
    if etag[0] != '"' or etag[-1] != '"':
        return None
    if not body.startswith(_TYPED_PREFIX) or not body.endswith(b"\n"):
        return None
    hashed = b"{" + body[len(_TYPED_PREFIX) : -1]
    digest = hashlib.sha512(hashed).hexdigest().upper()
    return etag if hmac.compare_digest(etag[1:-1], digest) else None


# A request's key among the documents shared: its path and Accept (the server's answer varies
# with both: `Vary: Accept`).
DocumentKey = tuple[str, str]


class _Kept:
    __slots__ = ("body", "clusters", "first")

    def __init__(self, body: bytes, cluster: str) -> None:
        self.body = body
        self.first = cluster  # the first cluster that sent it
        self.clusters = 1  # distinct clusters that sent it or answered 304 to it (at least)


class SharedDocuments:
    """The aggregated discovery documents of one run's upstream clusters, each kept once under
    its verified ETag (verified_etag), so that the next cluster asks with `If-None-Match` and a
    `304 Not Modified` (no body) says it serves that very document. Made for one run (never
    kept across runs: the CronJob is stateless) and shared by every upstream reader of it.

    What a cluster is judged on is always what its own server answered: its own body, or the
    document it said by 304 was its own. A hostile cluster can make nothing else shared: a
    body is kept only under the ETag that is its own hash, and a 304 is taken only in answer to
    the ETag it was asked with (docs/threat-model.md).

    An ETag is offered to a cluster only once two clusters have sent it (a surface served by
    one cluster alone is never named to another), the one most clusters sent. Until one is
    offered, at most `FIRST_IN_FLIGHT` clusters ask for a whole document at once; the others
    wait for them at most `FIRST_WAIT` seconds (a slow or silent first server delays each of
    them no longer than that). At most `MAX_KEPT` documents a request: past it, a new document
    takes the place of one sent by a single cluster, or is not kept."""

    FIRST_IN_FLIGHT = 2
    FIRST_WAIT = 2.0
    MAX_KEPT = 8
    OFFERED_AFTER = 2  # clusters that sent an ETag before it is offered to others

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._changed = threading.Condition()
        self._kept: dict[DocumentKey, dict[str, _Kept]] = {}
        self._asking: Counter[DocumentKey] = Counter()  # whole documents asked, none offered

    def offer(self, key: DocumentKey) -> str | None:
        """The ETag to ask `key` with, or None: ask for the whole document (then call `asked`
        once answered or failed)."""
        deadline = self._clock() + self.FIRST_WAIT
        with self._changed:
            while True:
                offered = self._offered(key)
                if offered is not None:
                    return offered
                left = deadline - self._clock()
                if self._asking[key] < self.FIRST_IN_FLIGHT or left <= 0:
                    self._asking[key] += 1
                    return None
                self._changed.wait(left)

    def asked(self, key: DocumentKey) -> None:
        """A whole document asked for (offer gave None) was answered, or its request failed."""
        with self._changed:
            self._asking[key] -= 1
            self._changed.notify_all()

    def _offered(self, key: DocumentKey) -> str | None:
        kept = self._kept.get(key)
        if not kept:
            return None
        etag, best = max(kept.items(), key=lambda item: item[1].clusters)
        return etag if best.clusters >= self.OFFERED_AFTER else None

    def keep(self, key: DocumentKey, etag: str | None, body: bytes, cluster: str) -> None:
        """`cluster` answered `key` with `body` and this ETag header (None: it sent none)."""
        verified = verified_etag(etag, body)
        if verified is None:
            return  # its document is its own alone
        with self._changed:
            kept = self._kept.setdefault(key, {})
            found = kept.get(verified)
            if found is not None:
                if found.first != cluster:
                    found.clusters += 1
            elif len(kept) < self.MAX_KEPT:
                kept[verified] = _Kept(body, cluster)
            else:
                single = next((e for e, k in kept.items() if k.clusters == 1), None)
                if single is None:
                    return
                del kept[single]
                kept[verified] = _Kept(body, cluster)
            self._changed.notify_all()

    def not_modified(self, key: DocumentKey, offered: str | None, etag: str | None) -> bytes | None:
        """The document a `304 Not Modified` stands for: the one kept under the ETag `key` was
        asked with, when the 304 names that same ETag; else None (a 304 asked for nothing, or
        one naming another ETag, says nothing)."""
        if offered is None or etag is None or not (etag.isascii() and offered.isascii()):
            return None  # what we offered is ASCII (verified); anything else is not it
        if not hmac.compare_digest(etag, offered):
            return None
        with self._changed:
            found = self._kept.get(key, {}).get(offered)
            if found is None:
                return None
            found.clusters += 1
            return found.body
