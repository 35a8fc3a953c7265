"""The one door to a Kubernetes API: discovery, paginated lists, proven NotFound, pinned deletes.

Every list answer is decoded item by item as its bytes arrive (ListStream), and each item is
reduced to a compact record at once (`reduce`), so no raw object, no managedFields and no Secret
payload outlives the moment it was decoded, however large the answer. A Secret is asked for as
metadata only, and what gcjob keeps of it (gcjob/domain.py secret_as_kept: no value of a label
or annotation its rules do not read) is all that any `reduce`, list or get ever sees.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar

import jsonpointer

from gcjob.domain import secret_as_kept
from gcjob.kube import discovery, requests
from gcjob.kube.errors import (
    AnswerTooLarge,
    ApiError,
    DeleteUncertain,
    KubeError,
    Stopped,
    Unavailable,
)
from gcjob.kube.liststream import MAX_VALUE_CHARS, ListStream
from gcjob.kube.oneofeach import OneOfEach
from gcjob.kube.reduce import finalizers_of
from gcjob.kube.requests import Request
from gcjob.kube.resources import Resource
from gcjob.kube.transport import (
    BodyConsumer,
    NestedTooDeeply,
    Response,
    StreamBroken,
    Transport,
    decode_json,
)
from gcjob.redact import redact
from gcjob.times import parse_http_date, parse_time

T = TypeVar("T")
Reduce = Callable[[dict[str, Any]], T | None]


class Sink(Protocol):
    """Takes the records of one list as they arrive, so a caller keeps only what it needs."""

    def add(self, record: Any) -> None: ...


S = TypeVar("S", bound=Sink)


class Collected(Generic[T]):
    """A sink that keeps every record: a plain list."""

    def __init__(self) -> None:
        self.records: list[T] = []

    def add(self, record: T) -> None:
        self.records.append(record)


class ListsByFolding:
    """`list` for any reader that can `fold`: one way to list, live or from a snapshot."""

    __slots__ = ()

    def fold(
        self,
        resource: Resource,
        reduce: Reduce[Any],
        start: Callable[[], S],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        metadata_only: bool = True,
        field_selector: str | None = None,
    ) -> S:
        raise NotImplementedError

    def list(
        self,
        resource: Resource,
        reduce: Reduce[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        metadata_only: bool = True,
        field_selector: str | None = None,
    ) -> list[T]:
        collected: Collected[T] = self.fold(
            resource,
            reduce,
            Collected,
            namespace=namespace,
            label_selector=label_selector,
            metadata_only=metadata_only,
            field_selector=field_selector,
        )
        return collected.records


MAX_LIST_RESTARTS = 3
# What a page asked ahead holds before it waits to be taken on (_PageAhead): more than a page
# of 500 objects' metadata, a bound whatever --page-size says.
AHEAD_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """What one upstream cluster may cost a run (docs/operating.md "Upstream clusters"). A real
    cluster answers a namespace's Gateway list in one page of a few KB; these are hundreds of
    times that. Past any of them the cluster is unavailable, and only its own routes wait."""

    pages: int = 20  # list pages asked for with a `continue` token, over all its lists
    items: int = 50_000  # list items decoded, over all its lists
    bytes: int = 64 * 1024 * 1024  # answer bytes, over every request
    # Time spent waiting on its answers (not the run's wall time: a deletion's live read
    # comes much later). A peer dripping pages each just inside --read-timeout ends here.
    seconds: float = 60.0
    # The largest answer read whole and the largest list item decoded (a metadata-only
    # Gateway is a few KB; its annotations are at most 256 KiB). Not a flag: a real server
    # never comes near it, and it is what bounds memory per cluster.
    value: int = 1024 * 1024


class BudgetExhausted(Unavailable):
    """A cluster's read budget ran out: nothing more is read from it this run."""


# The budgets' locks, each shared by every budget given it in turn, not one a budget (72 bytes
# an upstream cluster for the run): a budget's lock is held for a few additions, never while
# anything is read.
_BUDGET_LOCKS = itertools.cycle([threading.Lock() for _ in range(64)])


class ReadBudget:
    """Counts what one cluster's answers cost, against its ReadLimits. Shared by the reads of
    that cluster (its reader thread; a deletion's live read later), hence the lock."""

    __slots__ = ("_lock", "bytes", "clock", "cluster", "items", "limits", "pages", "seconds")

    def __init__(
        self, limits: ReadLimits, cluster: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """`cluster`: its name, as the reads were asked for it (kept, not a string made of it
        for each cluster: `target` makes one when a message needs it)."""
        self.limits = limits
        self.cluster = cluster
        self.clock = clock
        self.pages = 0
        self.items = 0
        self.bytes = 0
        self.seconds = 0.0  # spent waiting on answers, requests done
        self._lock = next(_BUDGET_LOCKS)

    def take(
        self, *, pages: int = 0, items: int = 0, size: int = 0, in_flight: float = 0.0
    ) -> None:
        """Raises BudgetExhausted once any count is over its limit (and on every call after).
        `in_flight`: how long the request in progress has taken so far."""
        with self._lock:
            self.pages += pages
            self.items += items
            self.bytes += size
            over = [
                f"more than {limit} {what} ({flag})"
                for count, limit, what, flag in (
                    (self.pages, self.limits.pages, "continued list pages", "--upstream-max-pages"),
                    (self.items, self.limits.items, "list items", "--upstream-max-items"),
                    (self.bytes, self.limits.bytes, "bytes of answers", "--upstream-max-mib"),
                    (
                        self.seconds + in_flight,
                        self.limits.seconds,
                        "seconds waiting on answers",
                        "--upstream-max-time",
                    ),
                )
                if count > limit
            ]
        if over:
            raise BudgetExhausted(f"{self.target}: read budget ran out: {over[0]}")

    @property
    def target(self) -> str:
        return f"upstream/{self.cluster}"

    def renewed(self) -> ReadBudget:
        """The same budget again, unspent."""
        return ReadBudget(self.limits, self.cluster, self.clock)

    def spend(self, seconds: float) -> None:
        """A request's time, once it is over (answered or not): checked by the next take."""
        with self._lock:
            self.seconds += seconds


class _Metered:
    """A list answer's consumer whose bytes (and the time so far) are taken from the budget
    before they are fed."""

    def __init__(self, page: ListStream, budget: ReadBudget, started: float) -> None:
        self.page = page
        self.budget = budget
        self.started = started

    def feed(self, chunk: bytes) -> None:
        self.budget.take(size=len(chunk), in_flight=self.budget.clock() - self.started)
        self.page.feed(chunk)


def _continue_token(metadata: Any) -> str | None:
    token = metadata.get("continue") if isinstance(metadata, dict) else None
    return token if isinstance(token, str) and token else None


class _PageAhead:
    """The next page of a list, asked for in a thread of its own while the page before it is
    decoded. Its body is kept as it arrives, up to AHEAD_BYTES (a default page of metadata is
    well under it), then waits for `answer` to take it on; `abandon` ends it."""

    def __init__(self, transport: Transport, token: str, request: Request) -> None:
        self.token = token
        self._arrived = threading.Condition()
        self._chunks: deque[bytes] = deque()
        self._held = 0  # bytes in _chunks
        self._ended = False
        self._abandoned = False
        self._response: Response | None = None
        self._error: BaseException | None = None
        threading.Thread(
            target=self._ask, args=(transport, request), name="gcjob-page-ahead", daemon=True
        ).start()

    def _ask(self, transport: Transport, request: Request) -> None:
        try:
            self._response = transport.send(request, consume=self)
        except BaseException as exc:  # raised by `answer`, in the list's own thread
            self._error = exc
        finally:
            with self._arrived:
                self._ended = True
                self._arrived.notify_all()

    def feed(self, chunk: bytes) -> None:
        with self._arrived:
            while self._held >= AHEAD_BYTES and not self._abandoned:
                self._arrived.wait()
            if self._abandoned:
                raise _Abandoned("the page asked ahead is not wanted")  # ends the attempt
            self._chunks.append(chunk)
            self._held += len(chunk)
            self._arrived.notify_all()

    def answer(self, consumer: BodyConsumer) -> Response:
        """The response, as `Transport.send` would have returned it, its body (a 2xx one) fed
        to `consumer` as it arrives; raises what sending raised."""
        try:
            while True:
                with self._arrived:
                    while not self._chunks and not self._ended:
                        self._arrived.wait()
                    chunks, self._chunks, self._held = list(self._chunks), deque(), 0
                    ended = self._ended
                    self._arrived.notify_all()
                for chunk in chunks:
                    consumer.feed(chunk)
                if ended and not chunks:
                    break
        except BaseException:
            self.abandon()
            raise
        if self._error is not None:
            raise self._error
        assert self._response is not None
        return self._response

    def abandon(self) -> None:
        """Not wanted: what it holds goes, and so does the rest of its answer."""
        with self._arrived:
            self._abandoned = True
            self._chunks.clear()
            self._held = 0
            self._arrived.notify_all()


class _Abandoned(ValueError):
    """Raised into the transport by a page asked ahead that is no longer wanted."""


class DeleteResult(Enum):
    DELETED = "deleted"  # accepted now (or terminating, when finalizers hold it)
    GONE = "already-gone"  # 404: someone else deleted it first
    CONFLICT = "conflict"  # 409: it changed since it was observed


# The finalizer the API server adds to an object deleted orphaning its dependents (as every
# gcjob delete is: requests.py), and the hub's garbage collector removes once it has: an object
# held by it alone is on its way out (docs/rules.md "Deletion states").
ORPHAN_FINALIZER = "orphan"


@dataclass(frozen=True, slots=True)
class HeldBy:
    """A delete accepted, the object still there, held by `finalizers` (every one but
    `orphan`; empty when the answer named none readably: looked at again all the same)."""

    finalizers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Lingering:
    """An object whose delete went out, read again: still there with this uid, `terminating`
    (a deletionTimestamp) since `since` (None: not a readable time), held by `finalizers`."""

    uid: str
    terminating: bool
    since: datetime | None
    finalizers: tuple[str, ...]


def holding(finalizers: tuple[str, ...]) -> tuple[str, ...]:
    """The finalizers that hold a deletion: every one but the garbage collector's `orphan`."""
    return tuple(f for f in finalizers if f != ORPHAN_FINALIZER)


def lingering(obj: dict[str, Any]) -> Lingering:
    meta = obj.get("metadata") or {}
    return Lingering(
        str(meta.get("uid") or ""),
        bool(meta.get("deletionTimestamp")),
        parse_time(meta.get("deletionTimestamp")),
        finalizers_of(obj),
    )


class Patched(Enum):
    APPLIED = "applied"
    GONE = "already-gone"  # 404: deleted since it was observed
    CONFLICT = "conflict"  # 422/409: a `test` failed, it changed since it was observed


@dataclass(frozen=True, slots=True)
class PatchResult:
    outcome: Patched
    detail: str = ""  # the server's word on a conflict (which test failed)


class KeepsDiscovery:
    """What one server's discovery said of the groups asked about (and the readers'
    `discovery_groups`), kept for the run and shared by the readers of that server. The map is
    replaced whole, never changed, so a reader looks at it without a lock; equal maps are one
    object (most upstream clusters serve the same groups: a map each was 232 bytes a cluster).
    Two readers of one server asking at once may each read a document; the first answer kept
    for a group stays. Its `groups` slot is its subclasses' (an upstream cluster's is kept on
    the object that is its read budget: kube/upstreams.py)."""

    __slots__ = ()
    groups: Mapping[str, discovery.Versions | None]

    def add(
        self, found: Mapping[str, discovery.Versions | None]
    ) -> Mapping[str, discovery.Versions | None]:
        """Keeps `found` (each answer discovery.interned) beside what was kept; returns the map."""
        with _DISCOVERED_LOCK:
            groups = {**found, **self.groups}
            key = tuple(sorted((group, id(versions)) for group, versions in groups.items()))
            # The slot is each subclass's (mypy reads only this class's empty __slots__).
            self.groups = SHARED_GROUPS.kept(key, groups)  # type: ignore[misc]
            return self.groups


class Discovered(KeepsDiscovery):
    """A reader's own, or one server's: nothing known yet."""

    __slots__ = ("groups",)

    def __init__(self) -> None:
        self.groups = {}


_DISCOVERED_LOCK = threading.Lock()  # held to replace one map: never while anything is read
# The maps kept, one for every equal one (equal: each group's answer the very same object).
SHARED_GROUPS: OneOfEach[tuple[tuple[str, int], ...], Mapping[str, discovery.Versions | None]] = (
    OneOfEach()
)


class KubeAccess(ListsByFolding):
    # Made for each use of an upstream cluster, thousands in a run: slots, not a dict each.
    __slots__ = (
        "aggregated_discovery",
        "budget",
        "discovered",
        "discovery_groups",
        "documents",
        "list_from_cache",
        "max_value_chars",
        "page_size",
        "transport",
    )

    def __init__(
        self,
        transport: Transport,
        page_size: int = 500,
        *,
        list_from_cache: bool = False,
        budget: ReadBudget | None = None,
        max_value_chars: int = MAX_VALUE_CHARS,
        aggregated_discovery: bool = False,
        discovery_groups: frozenset[str] = frozenset(),
        discovered: KeepsDiscovery | None = None,
        documents: discovery.SharedDocuments | None = None,
    ) -> None:
        """`list_from_cache`: lists start at the watch cache (`resourceVersion=0`, the cache
        read of gcjob/kube/liststrategy.py; a run sets it once it has chosen), which can lag
        etcd by a moment; safe because no caller deletes on a list alone (docs/operating.md).
        `budget`: what this server's answers may cost in all (an upstream cluster's); None:
        no budget (the hub's lists are as large as the hub). `max_value_chars`: the largest
        single item of a list decoded. `aggregated_discovery`: discovery from the two
        aggregated documents (`/api`, `/apis`), each read once and kept with what it said in
        `discovered` (an upstream cluster's: for the run), a group's own documents only where
        they do not answer for it. `discovery_groups`: the groups whose answers are kept when
        a document is read, besides the one asked about (those its callers will ask about: a
        group not kept costs its document once more). `discovered`: where what discovery said
        is kept, shared with this server's other readers (an upstream cluster's, made for each
        use: kube/upstreams.py); None: this reader's own. `documents`: the aggregated
        documents the run's upstream clusters share by verified ETag (asked with
        `If-None-Match`, a 304 standing for the document kept); None: each read whole."""
        self.transport = transport
        self.page_size = page_size
        self.list_from_cache = list_from_cache
        self.budget = budget
        self.max_value_chars = max_value_chars
        self.aggregated_discovery = aggregated_discovery
        self.discovery_groups = discovery_groups
        self.discovered: KeepsDiscovery = discovered if discovered is not None else Discovered()
        self.documents = documents

    def renew_budget(self) -> None:
        """The same budget again, unspent: a round of --drain is a full sweep, and reads
        everything again (one Project API list a round): each round has the run's budget."""
        if self.budget is not None:
            self.budget = self.budget.renewed()

    def _send(self, request: Request, *, final: bool = False) -> Response:
        """A request answered whole, its bytes and time taken from the budget."""
        if self.budget is None:
            return self.transport.send(request, final=final)
        self.budget.take()  # nothing more is asked of a cluster whose budget ran out
        started = self.budget.clock()
        try:
            response = self.transport.send(request, final=final)
        finally:
            self.budget.spend(self.budget.clock() - started)
        self.budget.take(size=len(response.body))
        return response

    @property
    def server(self) -> str:
        return self.transport.server

    def close_idle(self) -> None:
        self.transport.close_idle()

    def kinds(self, group: str) -> Mapping[str, tuple[Resource, ...]] | None:
        """The kinds this API serves in a group, in every version it serves (the preferred
        first: a kind served in several versions is that version's); None when the group is
        not served (a 404 for it). Raises when it cannot tell."""
        versions = (
            self._discovered(group) if self.aggregated_discovery else self._group_versions(group)
        )
        if versions is None:
            return None
        return discovery.kinds_of(versions)

    def _discovered(self, group: str) -> discovery.Versions | None:
        """The group's versions from what this reader's discovery said, read on first need:
        the aggregated document that holds the group, else (a server that does not serve it,
        or a group it cannot vouch for) the group's own documents. Raises when it cannot
        tell; nothing that failed is kept."""
        known = self.discovered.groups
        if group in known:
            return known[group]
        core = not group
        found: dict[str, discovery.Versions | None] = {}
        document = self._aggregated(core, {group, *self.discovery_groups})
        if document is not None:
            for kept in {group, *self.discovery_groups} - document.unsure:
                if (not kept) == core:
                    found[kept] = discovery.interned(document.versions(kept))
        if group not in found:
            found[group] = discovery.interned(self._group_versions(group))
        return self.discovered.add(found)[group]

    def _aggregated(self, core: bool, groups: set[str]) -> discovery.Aggregated | None:
        """`/api`'s or `/apis`'s aggregated document, read for `groups` only; None when the
        server answered another (the legacy one) or one too large to read whole: each group is
        then read alone. A 404 is a document that serves nothing: a deleted project's control
        plane answers so for every path, and so does a wrong URL."""
        request = requests.aggregated_discovery(core)
        try:
            response = self._discovery_answer(request)
        except AnswerTooLarge:
            return None  # many groups: each one's own documents are small
        if response.status == 404:
            return discovery.Aggregated({})
        if not 200 <= response.status < 300:
            raise _api_error(response, request)
        try:
            return discovery.read_aggregated(
                response.body, core, frozenset(groups), lambda: _expect_ok(response, request)
            )
        except ValueError as exc:
            raise ApiError(response.status, "Malformed", str(exc), request.path) from None

    def _discovery_answer(self, request: Request) -> Response:
        """The server's answer to an aggregated document's request; where the run's clusters
        share documents (`documents`), asked with the ETag offered, a 304 standing for the
        document kept under it (answered as a 200 with that body)."""
        documents = self.documents
        if documents is None:
            return self._send(request)
        key = (request.path, request.accept)
        offered = documents.offer(key)
        try:
            if offered is not None:
                request = dataclasses.replace(request, if_none_match=offered)
            response = self._send(request)
            etag = _header(response, "etag")
            if response.status == 304:
                # Its own word that it serves the document of the ETag it was asked with;
                # any other 304 (unasked, another ETag) says nothing: it is not read.
                kept = documents.not_modified(key, offered, etag)
                if kept is None:
                    raise ApiError(304, "Malformed", "304 to no ETag asked with", request.path)
                return Response(200, response.headers, kept)
            if 200 <= response.status < 300:
                documents.keep(key, etag, response.body, self._cluster())
            return response
        finally:
            if offered is None:  # kept (or not) before the clusters waiting for it look
                documents.asked(key)

    def _cluster(self) -> str:
        """Who answered, as SharedDocuments counts clusters: its budget's name, or its URL."""
        return self.budget.cluster if self.budget is not None else self.server

    def _group_versions(self, group: str) -> discovery.Versions | None:
        """A group's versions from its own documents (`/apis/<group>`, then one per version)."""
        versions = ["v1"]
        if group:
            request = requests.group_discovery(group)
            response = self._send(request)
            if response.status == 404:
                return None
            versions = discovery.versions(_expect_ok(response, request))
            if not versions:
                raise ApiError(response.status, "Malformed", "no version named", request.path)
        found: list[tuple[str, Mapping[str, tuple[Resource, ...]]]] = []
        for version in versions:
            request = requests.version_discovery(group, version)
            response = self._send(request)
            if response.status == 404:
                continue  # listed, yet not served (yet): its kinds are not
            body = _expect_ok(response, request)
            found.append((version, discovery.resources_by_kind(group, version, body)))
        if not found and not group:
            return None
        return tuple(found)

    def namespaced_deletable(self) -> tuple[list[Resource], list[tuple[str, str]]]:
        """Every namespaced resource the hub lists and deletes (the namespace controller's
        view: each group at its preferred version, discovery's `verbs`), and the groups whose
        discovery failed, each with why (what they hold is unknown). Raises when the core
        group or the group list cannot be read."""
        core = requests.version_discovery("", "v1")
        found, unreadable = discovery.listed_and_deleted(
            "", "v1", _expect_ok(self._send(core), core)
        )
        listing = Request("GET", "/apis")
        failed: list[tuple[str, str]] = []
        if unreadable:
            failed.append(("v1", f"{unreadable} resources in its discovery not understood"))
        for group, version in discovery.preferred_groups(_expect_ok(self._send(listing), listing)):
            request = requests.version_discovery(group, version)
            try:
                body = _expect_ok(self._send(request), request)
            except Stopped:
                raise
            except KubeError as exc:
                failed.append((f"{group}/{version}", redact(str(exc))))
                continue
            listed, unreadable = discovery.listed_and_deleted(group, version, body)
            found += listed
            if unreadable:
                failed.append(
                    (
                        f"{group}/{version}",
                        f"{unreadable} resources in its discovery not understood",
                    )
                )
        return found, failed

    def server_version(self) -> Any:
        """The server's `/version` answer, decoded; None when it answered anything else than
        readable JSON (a 403, a proxy's page): the list strategy then reads the known way.
        Raises when it cannot be asked (unreachable, stopped)."""
        response = self._send(requests.version())
        if not 200 <= response.status < 300:
            return None
        try:
            return decode_json(response.body)
        except ValueError:
            return None

    def served(self, resource: Resource) -> bool:
        """Does the API serve this resource at this group/version? Raises when it cannot tell."""
        if self.aggregated_discovery:
            return discovery.serves(self._discovered(resource.group), resource)
        request = requests.discovery(resource)
        response = self._send(request)
        if response.status == 404:
            return False
        body = _expect_ok(response, request)
        names = {r.get("name") for r in body.get("resources", []) if isinstance(r, dict)}
        return resource.plural in names

    def fold(
        self,
        resource: Resource,
        reduce: Reduce[Any],
        start: Callable[[], S],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        metadata_only: bool = True,
        field_selector: str | None = None,
    ) -> S:
        """Every object, page by page, into a sink from `start()`, each item as soon as its
        bytes are in. A 410 on a continue token, or an answer that broke off after some of
        its items were taken, restarts the list from scratch into a fresh sink (what the old
        one took is discarded), a bounded number of times.

        Without a budget (the hub's reads), the next page is asked for as soon as this page's
        continue token is decoded, before its items are (_PageAhead): the server encodes
        it while this one is decoded. It is used only if the token this page ends with is the
        one it was asked with; anything it answers is handled as if it had been asked then."""
        path = resource.path(namespace)
        sensitive = resource.sensitive

        def page_request(token: str | None) -> Request:
            return requests.list_page(
                resource,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=self.page_size,
                continue_token=token,
                metadata_only=metadata_only or resource.sensitive,
                from_cache=self.list_from_cache,
            )

        for _ in range(MAX_LIST_RESTARTS + 1):
            sink = start()

            def take(item: Any, sink: S = sink) -> None:
                if self.budget is not None:
                    self.budget.take(items=1)
                if isinstance(item, dict):
                    record = reduce(secret_as_kept(item) if sensitive else item)
                    if record is not None:
                        sink.add(record)

            token: str | None = None
            ahead: _PageAhead | None = None

            def ask_ahead(key: str, value: Any) -> None:
                nonlocal ahead
                following = _continue_token(value) if key == "metadata" else None
                if following is not None and ahead is None:
                    ahead = _PageAhead(self.transport, following, page_request(following))

            try:
                while True:
                    asked, ahead = ahead, None
                    page = ListStream(
                        take,
                        max_value_chars=self.max_value_chars,
                        on_field=ask_ahead if self.budget is None else None,
                    )
                    consumer: BodyConsumer = page
                    started = 0.0
                    if self.budget is not None:
                        self.budget.take(pages=0 if token is None else 1)
                        started = self.budget.clock()
                        consumer = _Metered(page, self.budget, started)
                    try:
                        try:
                            if asked is not None:
                                response = asked.answer(consumer)
                            else:
                                response = self.transport.send(
                                    page_request(token), consume=consumer
                                )
                        finally:
                            if self.budget is not None:
                                self.budget.spend(self.budget.clock() - started)
                        if self.budget is not None:  # an answer read whole (not 2xx)
                            self.budget.take(size=len(response.body))
                        if response.status == 410 and token is not None:
                            break  # continue token expired mid-list: restart
                        if not 200 <= response.status < 300:
                            raise _api_error(response, page_request(token))
                        head = page.end()
                    except StreamBroken:
                        break  # some items were taken from an answer that broke off: restart
                    except ValueError as exc:
                        # Too deep to decode included: the list cannot be completed.
                        raise ApiError(200, "Malformed", str(exc), path) from None
                    metadata = head.get("metadata")
                    token = (
                        metadata.get("continue") if isinstance(metadata, dict) else None
                    ) or None
                    if not isinstance(token, str | None):
                        raise ApiError(
                            200, "Malformed", "list with a continue token not a string", path
                        )
                    if token is None:
                        return sink
                    if ahead is not None and ahead.token != token:
                        ahead.abandon()  # asked on a token the page did not end with
                        ahead = None
            finally:
                if ahead is not None:  # the list ended, broke off or failed before it was used
                    ahead.abandon()
        raise Unavailable(
            f"list {path}: restarted {MAX_LIST_RESTARTS + 1} times (continue token expired, "
            f"or the answer broke off)"
        )

    def get(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        reduce: Reduce[T],
        *,
        metadata_only: bool = True,
        final: bool = False,
        dated: list[datetime | None] | None = None,
    ) -> T | None:
        """The object, or None only when the server proved it absent: a NotFound for that very
        name. Any other answer (a 404 for the path, 403, 5xx, timeouts) raises. `final`: one
        attempt, even after a stop request (see Transport.send)."""
        request = requests.get(
            resource, namespace, name, metadata_only=metadata_only or resource.sensitive
        )
        response = self._send(request, final=final)
        if dated is not None:
            dated[0] = server_date(response)
        if response.status == 404 and is_not_found_for(response, resource, name):
            return None
        obj = _expect_ok(response, request)
        if resource.sensitive:
            obj = secret_as_kept(obj)
        # Only an answer naming that very object says it exists: a path normalised away
        # (a name like ".") can come back as a list, which would read as "absent".
        answered = (obj.get("metadata") or {}).get("name") if isinstance(obj, dict) else None
        if answered != name:
            raise ApiError(response.status, "Malformed", f"answer names {answered!r}", request.path)
        record = reduce(obj)
        if record is None:  # None means "proven absent" to every caller: never for an answer
            raise ApiError(response.status, "Malformed", "unreadable object", request.path)
        return record

    def delete(
        self, resource: Resource, namespace: str | None, name: str, uid: str, resource_version: str
    ) -> DeleteResult | HeldBy:
        """Raises DeleteUncertain when an attempt may have been applied and looking could not
        tell; any other KubeError means nothing was deleted. Accepted, the object still held
        by a finalizer other than `orphan` (Karmada's, a tenant's): HeldBy, naming them."""
        if not uid or not resource_version:
            raise KubeError(f"refusing to delete {name}: no uid/resourceVersion to pin it to")
        request = requests.delete(resource, namespace, name, uid, resource_version)
        try:
            response = self.transport.send(request)
        except KubeError as exc:
            if not exc.maybe_applied:
                raise
            # Retries ran out, or the run stopped, after an attempt that may have applied.
            settled = self._settle(resource, namespace, name, uid, exc)
            if settled is not DeleteResult.CONFLICT:
                return settled
            raise
        # The body is the object (metadata only; a Secret's as gcjob keeps one): its finalizers.
        if 200 <= response.status < 300:
            return _held_by(response, resource, uid)
        # Admission's word first: a webhook may answer any 4xx (a 409 is then no conflict).
        if 400 <= response.status < 500:
            refused = _api_error(response, request)
            if refused.admission:
                raise refused
        if response.status == 404 and is_not_found_for(response, resource, name):
            if response.resent_after_maybe_applied:
                return DeleteResult.DELETED  # gone after our own earlier attempt: counted once
            return DeleteResult.GONE
        if response.status == 409:
            if response.resent_after_maybe_applied:
                return self._settle(resource, namespace, name, uid, None)
            return DeleteResult.CONFLICT
        raise _api_error(response, request)

    def _settle(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        uid: str,
        failure: KubeError | None,
    ) -> DeleteResult | HeldBy:
        """Did an earlier attempt of our delete apply? Look (once, even after a stop request),
        do not guess: gone, or terminating with our uid, means it did."""
        try:
            seen = self.get(resource, namespace, name, lingering, final=True)
        except KubeError as exc:
            why = f"{failure}; " if failure else ""
            raise DeleteUncertain(
                f"{why}the delete may have been applied, and reading it back failed: {exc}"
            ) from exc
        if seen is None:
            return DeleteResult.DELETED
        if seen.uid == uid and seen.terminating:
            held = holding(seen.finalizers)
            return HeldBy(held) if held else DeleteResult.DELETED
        return DeleteResult.CONFLICT

    def patch(
        self, resource: Resource, namespace: str | None, name: str, ops: list[dict[str, Any]]
    ) -> PatchResult:
        """A conditional JSON Patch. A failed `test` (422) or a conflict (409) means "changed
        since it was observed": nothing was written, a safe skip. Raises KubeError otherwise
        (also when an attempt may have applied and reading it back could not tell)."""
        request = requests.patch(resource, namespace, name, ops)
        try:
            response = self.transport.send(request)
        except KubeError as exc:
            if not exc.maybe_applied:
                raise
            if self._patch_holds(resource, namespace, name, ops, exc):
                return PatchResult(Patched.APPLIED)
            raise
        # The body is the object's metadata; a Secret's payload is never sent back.
        if 200 <= response.status < 300:
            return PatchResult(Patched.APPLIED)
        if response.status == 404 and is_not_found_for(response, resource, name):
            return PatchResult(Patched.GONE)
        if response.status in (409, 422):
            # A retry after an attempt that may have applied fails its own resourceVersion
            # test: look whether what the patch writes is there.
            if response.resent_after_maybe_applied and self._patch_holds(
                resource, namespace, name, ops, None
            ):
                return PatchResult(Patched.APPLIED)
            return PatchResult(Patched.CONFLICT, _status_message(response))
        raise _api_error(response, request)

    def _patch_holds(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        ops: list[dict[str, Any]],
        failure: KubeError | None,
    ) -> bool:
        """Does the object (metadata, read once even after a stop request) hold what the
        patch writes? Raises KubeError when it cannot be read."""
        try:
            seen = self.get(resource, namespace, name, lambda obj: obj, final=True)
        except KubeError as exc:
            why = f"{failure}; " if failure else ""
            raise KubeError(
                f"{why}the patch may have been applied, and reading it back failed: {exc}"
            ) from exc
        return seen is not None and patch_holds(seen, ops)

    def create(self, resource: Resource, namespace: str | None, body: dict[str, Any]) -> Any:
        request = requests.create(resource, namespace, body)
        return _expect_ok(self.transport.send(request), request)

    def replace(
        self, resource: Resource, namespace: str | None, name: str, body: dict[str, Any]
    ) -> Any:
        request = requests.replace(resource, namespace, name, body)
        return _expect_ok(self.transport.send(request), request)

    def read_dated(
        self, resource: Resource, namespace: str | None, name: str
    ) -> tuple[dict[str, Any] | None, datetime | None]:
        """`read`, with the API server's clock at its answer (its Date header; None without
        one): a record's times are judged against the server's clock, not the pod's."""
        dated: list[datetime | None] = [None]

        def whole(obj: dict[str, Any]) -> dict[str, Any]:
            return obj

        if resource.sensitive:
            raise KubeError("full reads of Secrets are not allowed")
        found = self.get(resource, namespace, name, whole, metadata_only=False, dated=dated)
        return found, dated[0]

    def read(self, resource: Resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The full object (never used for Secrets), or None when proven absent."""
        if resource.sensitive:
            raise KubeError("full reads of Secrets are not allowed")
        return self.get(resource, namespace, name, lambda obj: obj, metadata_only=False)


def server_date(response: Response) -> datetime | None:
    """The API server's clock at its answer (its Date header, read as the run's clock is:
    gcjob/times.py), or None."""
    return parse_http_date(_header(response, "date"))


def _held_by(response: Response, resource: Resource, uid: str) -> DeleteResult | HeldBy:
    """A 2xx answer to a delete pinned to `uid`: the object as it was left. A Status of
    success (an object deleted at once), or that very object Terminating (a deletionTimestamp)
    held only by `orphan` (the garbage collector lets it go): DELETED. Held by others: HeldBy,
    naming them. Anything else (not a readable object, no uid or another's, no
    deletionTimestamp): HeldBy naming none, read again: never DELETED unseen."""
    try:
        obj = decode_json(response.body)
    except ValueError:
        return HeldBy(())
    if not isinstance(obj, dict):
        return HeldBy(())
    if obj.get("kind") == "Status":  # deleted at once, as a resource without GC answers
        return DeleteResult.DELETED if obj.get("status") == "Success" else HeldBy(())
    if resource.sensitive:
        obj = secret_as_kept(obj)
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not uid or meta.get("uid") != uid:
        return HeldBy(())
    held = holding(finalizers_of(obj))
    if held:
        return HeldBy(held)
    return DeleteResult.DELETED if meta.get("deletionTimestamp") else HeldBy(())


_ABSENT = object()


def patch_holds(obj: dict[str, Any], ops: list[dict[str, Any]]) -> bool:
    """Whether `obj` holds what the patch's add/replace/remove ops write: every added value
    (a map: every entry of it) in place and every removed path absent. Only ops under
    /metadata can be checked (a read back is metadata only); any other op is not proof."""
    for op in ops:
        kind, path = op.get("op"), str(op.get("path", ""))
        if kind == "test":
            continue
        if not path.startswith("/metadata/"):
            return False
        found = jsonpointer.resolve_pointer(obj, path, _ABSENT)
        if kind == "remove":
            if found is not _ABSENT:
                return False
        elif kind in ("add", "replace"):
            want = op.get("value")
            if isinstance(want, dict) and isinstance(found, dict):
                if any(found.get(k, _ABSENT) != v for k, v in want.items()):
                    return False
            elif found != want:
                return False
        else:
            return False
    return True


def _status_body(response: Response) -> dict[str, Any]:
    try:
        body = decode_json(response.body)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def is_not_found_for(response: Response, resource: Resource, name: str) -> bool:
    """A 404 proves absence only as a NotFound Status naming that object; a 404 for the
    path (resource not served, wrong server URL) proves nothing."""
    body = _status_body(response)
    details = body.get("details") or {}
    if body.get("kind") != "Status" or body.get("reason") != "NotFound":
        return False
    if not isinstance(details, dict) or details.get("name") != name:
        return False
    # The API server names the resource (`kind: gateways`) and, outside the core group, its
    # group: a NotFound for `gateways` of another group says nothing of this one.
    group = details.get("group") or ""
    return group == resource.group and details.get("kind") in (resource.plural, resource.kind)


def _status_message(response: Response) -> str:
    """HTTP 422 for a failed `test` op (the server's message names no op), 409 for a
    conflict; a 422 for an invalid result says why (details.causes)."""
    body = _status_body(response)
    message = str(body.get("message") or body.get("reason") or "") if body.get("kind") else ""
    return f"HTTP {response.status}: {redact(message)[:300] or 'no Status'}"


def _verb(request: Request) -> str:
    if request.method == "GET":
        return "list" if any(k == "limit" for k, _ in request.query) else "get"
    return {"DELETE": "delete", "POST": "create", "PUT": "update"}.get(request.method, "patch")


def _api_error(response: Response, request: Request) -> ApiError:
    body = _status_body(response)
    reason = str(body.get("reason") or "Unknown")
    # Only a Status's message is quoted: any other body (an HTML page, a proxy's error, an
    # object) may hold what must not be echoed, e.g. a Secret from a misrouted request.
    said = (
        str(body.get("message") or "").strip()
        if body.get("kind") == "Status"
        else f"not a Kubernetes Status ({len(response.body)} bytes)"
    )
    message, hint = said, ""
    terminating = response.status == 403 and NAMESPACE_TERMINATING in _causes(body)
    # A policy's refusal is a 403 when it says `reason: Forbidden`, a 422 by default; a
    # webhook's is the code it set, a 400 when it set none: any 4xx is admission's word then.
    admission = 400 <= response.status < 500 and not terminating and is_admission_denial(said)
    if terminating:
        # Not a permission: the namespace is being deleted (the API server's NamespaceLifecycle).
        message = f"forbidden: the namespace is being deleted: {said}"
    elif admission:
        # A ValidatingAdmissionPolicy or an admission webhook said no: no grant would change it.
        message = f"refused by an admission policy or webhook, not RBAC: {said}"
    elif response.status == 403:
        hint = f"grant '{_verb(request)}' on {request.path}"
        message = f"forbidden: {hint}: {said}"
    elif response.status == 401:
        message = f"unauthorized: the credentials were refused: {said}"
    return ApiError(
        response.status,
        reason,
        message,
        request.path,
        said=said,
        hint=hint,
        namespace_terminating=terminating,
        admission=admission,
    )


# The cause the API server names when it refuses to create in a namespace being deleted.
NAMESPACE_TERMINATING = "NamespaceTerminating"

# How the API server words a refusal by admission (k8s.io/apiserver's admission plugins):
# `<kind> "<name>" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied
# request: ...`, and `admission webhook "w" denied the request: ...`. RBAC's refusal says
# `User "u" cannot delete resource ...`, never admission's however its names read. Anchored:
# an optional `<resource> "<name>" is forbidden: ` and then the denial, nothing before it.
_ADMISSION_DENIAL = re.compile(
    r'(?:[^\s"]+ "[^"]*" is forbidden: )?'
    r"(?:ValidatingAdmissionPolicy '(?P<policy>[^']*)' with binding '[^']*' denied request|"
    r'admission webhook "(?P<webhook>[^"]*)" denied the request)'
)
RBAC_REFUSAL = "cannot delete resource"


def is_admission_denial(said: str) -> bool:
    """Whether a Status message is admission's refusal (a webhook's or a policy's), never RBAC's."""
    return RBAC_REFUSAL not in said and _ADMISSION_DENIAL.match(said) is not None


def admission_refuser(said: str) -> str:
    """Who refused, as admission's message names it (`admission webhook "w"`,
    `ValidatingAdmissionPolicy 'p'`), and nothing else of the message: "" if none."""
    found = _ADMISSION_DENIAL.match(said)
    if found is None:
        return ""
    if found.group("webhook") is not None:
        return f'admission webhook "{found.group("webhook")}"'
    return f"ValidatingAdmissionPolicy '{found.group('policy')}'"


def _causes(body: dict[str, Any]) -> set[str]:
    """The `reason` of each of a Status's `details.causes`."""
    details = body.get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    if not isinstance(causes, list):
        return set()
    return {str(c.get("reason")) for c in causes if isinstance(c, dict)}


def _header(response: Response, name: str) -> str | None:
    """A header's value, its name in any case."""
    return next((v for k, v in response.headers.items() if k.lower() == name), None)


def _expect_ok(response: Response, request: Request) -> Any:
    if not 200 <= response.status < 300:
        raise _api_error(response, request)
    try:
        return decode_json(response.body)
    except ValueError as exc:
        # Too deep to decode included: that object is unreadable, or its list incomplete.
        what = f"response {exc}" if isinstance(exc, NestedTooDeeply) else "response is not JSON"
        raise ApiError(response.status, "Malformed", what, request.path) from None
