"""What the upstream clusters and Milo's Project API say of the owners of downstream copies:
one layer, used by every sweep that rests on an upstream owner or its project.

Per run and cluster (clusters read at once, each one's reads in order): the cluster is
probed once; each owner group it is asked about is resolved through discovery, once; each
(resource, upstream namespace) costs one metadata-only list, which keeps only the names asked
for. A list may nominate an owner as absent; only a GET answering a NotFound that names it
proves it gone, and only when its namespace exists (a GET of the namespace: a NotFound
naming it proves the whole namespace gone). A cluster where a read fails is unavailable for
every owner not yet proven: none of its owners is judged on a part of its answers.

The Project API is read once per run, every round of --drain included (`ProjectReads`,
shared by the sweeps): one metadata-only list of projects, then a GET for each project asked
about and not listed (a NotFound naming `projects/<name>` in Milo's group is the only "not
found"); right before a delete, one GET of that project. Judging the answers is
decide/projects.py's.
"""

from __future__ import annotations

import sys
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any, Protocol, runtime_checkable

from gcjob.domain import ByName, sorted_names
from gcjob.enumerate.parallel import SERIAL, Reads
from gcjob.enumerate.shared import Found, Seen, seen
from gcjob.enumerate.upstream import UpstreamSource
from gcjob.kube.discovery import resolve
from gcjob.kube.errors import KubeError, Stopped, UnknownCluster
from gcjob.kube.oneofeach import OneOfEach
from gcjob.kube.reader import Reader
from gcjob.kube.resources import NAMESPACES, PROJECTS, Resource
from gcjob.model import (
    Looked,
    OwnerRead,
    Presence,
    ProjectAnswer,
    SecondLook,
    UpstreamOwner,
)
from gcjob.redact import redact


@runtime_checkable
class DiscoveringReader(Reader, Protocol):
    def kinds(self, group: str) -> Mapping[str, tuple[Resource, ...]] | None: ...


# Customers' Secrets upstream: their owners' identity is read only when the operator opts in.
SECRET_OWNER = ("", "Secret")


Kinds = Mapping[str, tuple[Resource, ...]]


@dataclass(slots=True)  # one per upstream cluster, while it is read
class _Cluster:
    available: bool
    detail: str = ""
    reader: DiscoveringReader | None = None
    kinds: dict[str, Kinds | None] = field(default_factory=dict)
    namespaces: dict[str, Presence] = field(default_factory=dict)
    owners: dict[UpstreamOwner, OwnerRead] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)  # one per upstream cluster, for the run
class _Answered:
    """What is kept of a cluster once read: whether it answered, and the kinds its groups
    resolved to (what a live re-read of its owners needs, with a reader made then). Its
    owners' reads are kept in one map for every cluster (a map each was 224 bytes a
    cluster), its namespaces' not at all (a re-read reads them again)."""

    available: bool
    detail: str = ""
    kinds: Mapping[str, Kinds | None] = field(default_factory=dict)


# One _Answered for every cluster that answered with the same (interned) kinds: most clusters
# serve the same documents (one each was about 300 bytes a cluster for the run).
SHARED_ANSWERS: OneOfEach[tuple[tuple[str, int], ...], _Answered] = OneOfEach()


def answered(available: bool, detail: str, kinds: Mapping[str, Kinds | None]) -> _Answered:
    """What is kept of a cluster: one object for every cluster that answered every read with
    the very same kinds (each group's answer the same object), never merely equal ones."""
    if not available:
        return _Answered(False, detail)  # never read again: its kinds are not kept
    if detail:
        return _Answered(True, detail, kinds)
    key = tuple(sorted((group, id(found)) for group, found in kinds.items()))
    return SHARED_ANSWERS.kept(key, _Answered(True, "", kinds))


# Reads kept without the owner's identity, one object for every equal one: they differ only
# in what was found, and in the resource (one string each).
SHARED_READS: OneOfEach[OwnerRead, OwnerRead] = OneOfEach()


def _anonymous(read: OwnerRead) -> OwnerRead:
    if read.owner_uid or read.owner_created is not None:
        read = replace(read, owner_uid="", owner_created=None)
    return SHARED_READS.kept(read, read)


# A read kept with its owner's identity: the shared read without it, the uid and creation
# (an OwnerRead each was about 110 bytes an owner for the run; this is 64).
_Identified = tuple[OwnerRead, str, datetime | None]


def _kept(read: OwnerRead, identity: bool) -> OwnerRead | _Identified:
    if not identity or not (read.owner_uid or read.owner_created is not None):
        return _anonymous(read)
    # Interned only here, where it is kept: the same string as the uid its anchors' names
    # carry (anchor_uid_of). A uid interned and then dropped (a route's HTTPRoute: its lookups
    # keep no identity) still took a slot in the interpreter's table of interned strings,
    # which never shrinks: 5,400 of them at 10,000 projects doubled it (0.9 MiB more).
    return (_anonymous(read), sys.intern(read.owner_uid), read.owner_created)


def _restored(kept: OwnerRead | _Identified) -> OwnerRead:
    if isinstance(kept, OwnerRead):
        return kept
    read, uid, created = kept
    return replace(read, owner_uid=uid, owner_created=created)


def _cluster_of(owner: UpstreamOwner) -> str:
    return owner.cluster


class OwnerLookups:
    """Reads what every owner asked about is, cluster by cluster at once; `read(owner)` then
    answers from what was read, and `recheck(owner)` reads it again, live."""

    def __init__(
        self,
        source: UpstreamSource,
        reads: Reads = SERIAL,
        read_secrets: bool = False,
        found: Found | None = None,
        identity: bool = True,
    ) -> None:
        """`found`: what another sweep's reads found this round (enumerate/shared.py): a
        (resource, namespace) whose every owner asked about it holds is not listed again.
        `identity`: whether an owner's uid and creation are kept for the run (the copies
        sweep's re-created owners rest on them; the routes sweep's rule does not): without
        them, equal reads are one object."""
        self.source = source
        self.reads = reads
        self.read_secrets = read_secrets
        self.found = found
        self.identity = identity
        self._clusters: dict[str, _Answered] = {}
        self._reads: dict[UpstreamOwner, OwnerRead | _Identified] = {}
        self._lock = threading.Lock()  # the reader threads add to the two maps above

    def load(self, owners: Iterable[UpstreamOwner]) -> None:
        # The owners in one list in cluster order, each cluster's a slice of it while they
        # wait: a map of a list a cluster was about 150 bytes a cluster, all of it held from
        # the start of the reads (at 10,000 projects, 3 MiB at the run's peak).
        ordered = sorted(owners, key=_cluster_of)
        clusters: list[str] = []
        starts: list[int] = []
        for at, owner in enumerate(ordered):
            if not clusters or owner.cluster != clusters[-1]:
                clusters.append(owner.cluster)
                starts.append(at)
        starts.append(len(ordered))

        def read(i: int) -> Stopped | None:
            return self._read_cluster(clusters[i], set(ordered[starts[i] : starts[i + 1]]))

        stops = self.reads.map(read, range(len(clusters)))
        stopped = next((stop for stop in stops if stop is not None), None)
        if stopped is not None:
            raise stopped  # the first in cluster order, whichever stopped first

    def answered(self) -> list[str]:
        """The clusters that answered every read this run."""
        return sorted(name for name, state in self._clusters.items() if state.available)

    def read(self, owner: UpstreamOwner) -> OwnerRead:
        state = self._clusters.get(owner.cluster)
        if state is None:
            return OwnerRead(False, f"cluster {owner.cluster} was not read this run")
        if not state.available:
            return OwnerRead(False, state.detail)
        kept = self._reads.get(owner)
        if kept is None:
            return OwnerRead(True, detail=f"{owner} was not looked up this run")
        return _restored(kept)

    def recheck(self, owner: UpstreamOwner) -> OwnerRead:
        """The owner read again, with GETs only, right before its group is deleted."""
        state = self._clusters.get(owner.cluster)
        if state is None or not state.available:
            return OwnerRead(False, state.detail if state else "not read this run")
        try:
            reader = self.source.reader_for(owner.cluster)
            if not isinstance(reader, DiscoveringReader):
                return OwnerRead(False, "this source answers no discovery (a snapshot)")
            fresh = _Cluster(True, reader=reader, kinds=dict(state.kinds))
            return self._look_up(fresh, owner, listed=None)
        except Stopped:
            raise
        except KubeError as exc:
            return OwnerRead(False, redact(str(exc)))

    def second_look(self, owner: UpstreamOwner, proves: Callable[[OwnerRead], bool]) -> SecondLook:
        """The owner read again (`recheck`), and whether what was read still `proves` the
        orphan's reason. A read that failed is FAILED: it shows nothing, so it never says the
        owner appeared."""
        try:
            read = self.recheck(owner)
        except Stopped as exc:
            return SecondLook(Looked.STOPPED, str(exc))
        if not read.cluster_available:
            return SecondLook(Looked.FAILED, f"{owner}: {read.cluster_detail or read.detail}")
        found = f"{owner} is {read.owner.value}"
        if owner.namespace:
            found += f", its namespace {read.namespace.value}"
        if proves(read):
            return SecondLook(Looked.PROVEN, f"{found} on a second look")
        return SecondLook(Looked.NO_LONGER, f"on a second look {found}")

    # -- one cluster, in a reader thread ----------------------------------------------

    def _read_cluster(self, cluster: str, owners: set[UpstreamOwner]) -> Stopped | None:
        """One cluster read, in a reader thread, and what is kept of it (`_Answered`, its
        owners' reads) kept at once: what only its reads needed is dropped here, not held
        until every cluster is read. Returns the stop it ended with."""
        state, stop = self._read_one(cluster, owners)
        kept = answered(state.available, state.detail, state.kinds)
        reads = {owner: _kept(read, self.identity) for owner, read in state.owners.items()}
        with self._lock:
            self._clusters[cluster] = kept
            self._reads.update(reads)
        return stop

    def _read_one(
        self, cluster: str, owners: set[UpstreamOwner]
    ) -> tuple[_Cluster, Stopped | None]:
        try:
            found = self.source.reader_for(cluster)
        except UnknownCluster as exc:
            return _Cluster(False, redact(str(exc))), None
        except Stopped as exc:
            return _Cluster(False, "stopped before it was read"), exc
        except KubeError as exc:
            return _Cluster(False, redact(str(exc))), None
        if not isinstance(found, DiscoveringReader):
            return _Cluster(False, "this source answers no discovery (a snapshot)"), None
        reader = found
        state = _Cluster(True, reader=reader)
        try:
            lists = self._lists(state, owners)
            # A control plane that answers: a deleted project's answers 404 for every path,
            # which would read as "nothing served" and count as an answer (check_project_api).
            # A group of an owner served is such an answer; else the core API must be.
            served = any(kinds is not None for kinds in state.kinds.values())
            if not served and reader.kinds("") is None:
                return _Cluster(False, "does not serve the core API (/api/v1)", reader), None
            for resource, namespace in sorted(lists, key=lambda k: (k[0].path(), k[1])):
                asked = lists[(resource, namespace)]
                listed = (
                    self.found.take(cluster, resource, namespace, asked) if self.found else None
                )
                if listed is None:
                    listed = self._list(reader, resource, namespace, asked)
                for owner in sorted(asked[name] for name in asked):
                    state.owners[owner] = self._look_up(state, owner, listed)
            for owner in owners - state.owners.keys():  # those whose kind did not resolve
                state.owners[owner] = self._look_up(state, owner, listed=None)
        except Stopped as exc:
            return _Cluster(False, "stopped while it was read"), exc
        except KubeError as exc:
            # A cluster that answers part of what it is asked is not trusted with the rest.
            return _Cluster(False, f"owner lookup failed: {redact(str(exc))}", reader), None
        finally:
            reader.close_idle()
        return state, None

    def _lists(
        self, state: _Cluster, owners: set[UpstreamOwner]
    ) -> dict[tuple[Resource, str], dict[str, UpstreamOwner]]:
        """The one list each (resource, namespace) of resolved owners costs."""
        lists: dict[tuple[Resource, str], dict[str, UpstreamOwner]] = defaultdict(dict)
        for owner in owners:
            if (owner.group, owner.kind) == SECRET_OWNER and not self.read_secrets:
                continue
            resource = self._resource(state, owner)
            if isinstance(resource, Resource):
                lists[(resource, owner.namespace)][owner.name] = owner
        return lists

    def _resource(self, state: _Cluster, owner: UpstreamOwner) -> Resource | str:
        assert state.reader is not None
        if owner.group not in state.kinds:
            state.kinds[owner.group] = state.reader.kinds(owner.group)
        return resolve(state.kinds[owner.group], owner.group, owner.kind, bool(owner.namespace))

    @staticmethod
    def _list(
        reader: Reader, resource: Resource, namespace: str, asked: Mapping[str, object]
    ) -> dict[str, Seen]:
        def keep_asked(obj: dict[str, Any]) -> tuple[str, Seen] | None:
            found = seen(obj)
            return found if found is not None and found[0] in asked else None

        listed = reader.list(resource, keep_asked, namespace=namespace or None)
        return dict(listed)

    def _look_up(
        self, state: _Cluster, owner: UpstreamOwner, listed: Mapping[str, Seen] | None
    ) -> OwnerRead:
        """One owner: its resource, its namespace where it is not listed, and a GET to prove
        it absent. `listed`: its (resource, namespace) list, or None to read it by GET."""
        assert state.reader is not None
        reader = state.reader
        resource = self._resource(state, owner)
        if not isinstance(resource, Resource):
            return OwnerRead(True, resolved=False, resolve_detail=resource)
        if (owner.group, owner.kind) == SECRET_OWNER and not self.read_secrets:
            # Its project or namespace can still prove it gone; the Secret itself is not read.
            namespace = self._namespace(state, owner.namespace) if owner.namespace else None
            return OwnerRead(
                True,
                resolved=True,
                resolve_detail="upstream Secrets are not read (--read-upstream-secrets)",
                namespace=namespace or Presence.PRESENT,
                owner=Presence.NOT_ASKED,
            )
        # One string for every owner of a resource, not one each (25,000 at 100k routes).
        resolved = sys.intern(f"{resource.plural}.{resource.group or 'core'}/{resource.version}")
        known: Callable[..., OwnerRead] = partial(
            OwnerRead, True, resolved=True, resolve_detail=resolved
        )
        found = listed.get(owner.name) if listed is not None else None
        if found is None:
            got = reader.get(resource, owner.namespace or None, owner.name, seen)
            found = got[1] if got is not None else None
        namespace = Presence.PRESENT
        if owner.namespace:
            namespace = self._namespace(state, owner.namespace) if found is None else namespace
        if found is None:
            owner_presence = Presence.GONE if namespace is Presence.PRESENT else Presence.UNKNOWN
            return known(namespace=namespace, owner=owner_presence)
        presence = Presence.TERMINATING if found.terminating else Presence.PRESENT
        return known(
            namespace=namespace, owner=presence, owner_uid=found.uid, owner_created=found.created
        )

    @staticmethod
    def _namespace(state: _Cluster, namespace: str) -> Presence:
        if namespace not in state.namespaces:
            assert state.reader is not None
            got = state.reader.get(NAMESPACES, None, namespace, seen)
            if got is None:
                state.namespaces[namespace] = Presence.GONE
            else:
                terminating = got[1].terminating
                state.namespaces[namespace] = (
                    Presence.TERMINATING if terminating else Presence.PRESENT
                )
        return state.namespaces[namespace]


class ProjectReads:
    """Milo's Project API for one run (every round of --drain: the lifecycle hands the one it
    listed at start to each), shared by every sweep that rests on a project: one
    metadata-only list of projects; a GET for each project asked about and not listed (a
    NotFound naming `projects/<name>` in Milo's group is the only "not found"), once each;
    and, right before a delete, one live GET of that one project (`still_gone`). Every answer
    is kept for the run, the first the API gave: one answer a project (issue 46 item 3);
    nothing read is UNREAD, never NOT_FOUND. Used from the sweeps' own thread."""

    def __init__(self, api: Reader | None, is_project: Callable[[str], bool]) -> None:
        self.api = api
        self.is_project = is_project
        # Each project listed, and whether it is being deleted: all its answer rests on (a
        # project's uid and creation were kept too: about 200 bytes a project for the run).
        self._listed: dict[str, bool] | None = None
        self._answers: dict[str, ProjectAnswer] = {}  # of the projects not listed, read by GET
        self._failed: dict[str, str] = {}  # project -> why it could not be read ("": the list)
        self._list_error: KubeError | None = None

    def answers(self, clusters: Iterable[str]) -> Mapping[str, ProjectAnswer]:
        """What the Project API says of every project among `clusters` (UNREAD without an
        API, or when its read failed). Raises Stopped."""
        names = sorted_names(c for c in clusters if self.is_project(c))
        if self.api is None or not names:
            return dict.fromkeys(names, ProjectAnswer.UNREAD)
        listed = self._list(self.api)
        if listed is None:
            return dict.fromkeys(names, ProjectAnswer.UNREAD)
        for name in names:
            if name not in listed and name not in self._answers:
                self._answers[name] = self._answer(self.api, name, listed)
        return ProjectAnswers(names, listed, self._answers)

    def list_at_start(self) -> KubeError | None:
        """The run's one list of projects, read before any sweep asks: the error it failed
        with (then every project it is asked about is not-answered), None when it answered
        or there is no Project API. Raises Stopped."""
        if self.api is None:
            return None
        self._list(self.api)
        return self._list_error

    def failed(self, clusters: Iterable[str]) -> str:
        """Why the Project API could not answer for some project among `clusters`: its list's
        error, else the first failed GET's; "" when every read it needed answered."""
        names = sorted_names(c for c in clusters if self.is_project(c))
        if names and "" in self._failed:
            return self._failed[""]
        return next((self._failed[c] for c in names if c in self._failed), "")

    def still_gone(self, cluster: str) -> SecondLook:
        """`cluster`'s project looked at again, live, right before a delete that rests on it
        being gone: one GET of that project, never a list."""
        if self.api is None or not self.is_project(cluster):
            return SecondLook(Looked.FAILED, f"no Project API to look at project {cluster} again")
        try:
            got = self.api.get(PROJECTS, None, cluster, seen)
        except Stopped as exc:
            return SecondLook(Looked.STOPPED, str(exc))
        except KubeError as exc:
            return SecondLook(Looked.FAILED, f"project {cluster}: {redact(str(exc))}")
        if got is None:
            return SecondLook(Looked.PROVEN, f"project {cluster} not found on a second look")
        state = "being deleted" if got[1].terminating else "found"
        return SecondLook(Looked.NO_LONGER, f"project {cluster} is {state} on a second look")

    def _list(self, api: Reader) -> dict[str, bool] | None:
        """The one list of the run; None when it failed (it is not tried again)."""
        if self._listed is None and "" not in self._failed:
            try:
                # Each name interned: a project with copies or routes on the hub is a cluster
                # whose name the hub's labels give again (domain.decode_cluster_label), one
                # string for both (a second was 59 bytes a project for the run).
                listed = api.list(PROJECTS, _terminating)
                self._listed = {sys.intern(name): gone for name, gone in listed}
            except Stopped:
                raise
            except KubeError as exc:
                self._list_error = exc
                self._failed[""] = f"listing projects: {redact(str(exc))}"
        return self._listed

    def _answer(self, api: Reader, name: str, listed: Mapping[str, bool] | None) -> ProjectAnswer:
        if listed is None:
            return ProjectAnswer.UNREAD
        terminating = listed.get(name)
        if terminating is None:
            try:
                got = api.get(PROJECTS, None, name, _terminating)
            except Stopped:
                raise
            except KubeError as exc:
                self._failed[name] = f"project {name}: {redact(str(exc))}"
                return ProjectAnswer.UNREAD
            if got is None:
                return ProjectAnswer.NOT_FOUND
            terminating = got[1]
        return ProjectAnswer.TERMINATING if terminating else ProjectAnswer.FOUND


class ProjectAnswers(ByName[ProjectAnswer]):
    """What the Project API says of `names` (sorted, each once), read from the round's list and
    GETs each time it is asked, not copied: a map of them was about 30 bytes a project, one
    for each sweep, held while it judges."""

    def __init__(
        self,
        names: tuple[str, ...],
        listed: Mapping[str, bool],
        read: Mapping[str, ProjectAnswer],
    ) -> None:
        super().__init__(names)
        self._listed = listed
        self._read = read

    def __getitem__(self, name: str) -> ProjectAnswer:
        if name not in self:
            raise KeyError(name)
        terminating = self._listed.get(name)
        if terminating is None:
            return self._read[name]
        return ProjectAnswer.TERMINATING if terminating else ProjectAnswer.FOUND


def _terminating(obj: dict[str, Any]) -> tuple[str, bool] | None:
    """A project's name and whether it is being deleted."""
    found = seen(obj)
    return None if found is None else (found[0], found[1].terminating)
