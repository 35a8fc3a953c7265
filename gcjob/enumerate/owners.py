"""What the upstream clusters and Milo's Project API say of the owners of downstream copies:
one layer, used by every sweep that rests on an upstream owner or its project.

Per run and cluster (clusters read at once, each one's reads in order): the cluster is
probed once; each owner group it is asked about is resolved through discovery, once; each
(resource, upstream namespace) costs one metadata-only list, which keeps only the names asked
for. A list may nominate an owner as absent; only a GET answering a NotFound that names it
proves it gone, and only when its namespace exists (a GET of the namespace: a NotFound
naming it proves the whole namespace gone). A cluster where a read fails is unavailable for
every owner not yet proven: none of its owners is judged on a part of its answers.

The Project API is read once per run: one metadata-only list of projects, then a GET for
each project asked about and not listed (a NotFound naming `projects/<name>` in Milo's group
is the only "not found"). Judging the answers is decide/projects.py's.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, Protocol, runtime_checkable

from gcjob.enumerate.parallel import SERIAL, Reads
from gcjob.enumerate.upstream import UpstreamSource
from gcjob.kube import reduce
from gcjob.kube.discovery import resolve
from gcjob.kube.errors import KubeError, Stopped, UnknownCluster
from gcjob.kube.reader import Reader
from gcjob.kube.resources import NAMESPACES, PROJECTS, Resource
from gcjob.model import OwnerRead, Presence, ProjectAnswer, UpstreamOwner
from gcjob.redact import redact


@runtime_checkable
class DiscoveringReader(Reader, Protocol):
    def kinds(self, group: str) -> Mapping[str, tuple[Resource, ...]] | None: ...


# Customers' Secrets upstream: their owners' identity is read only when the operator opts in.
SECRET_OWNER = ("", "Secret")


@dataclass(frozen=True, slots=True)
class Seen:
    """An owner found by a read: its identity, for re-created owners."""

    uid: str
    created: datetime | None
    terminating: bool


def seen(obj: dict[str, Any]) -> tuple[str, Seen] | None:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        return None
    ref = reduce.object_ref(obj, NAMESPACES)  # the resource only names a ref's kind
    return meta["name"], Seen(ref.uid, ref.created, ref.terminating)


@dataclass
class _Cluster:
    available: bool
    detail: str = ""
    reader: DiscoveringReader | None = None
    kinds: dict[str, Mapping[str, tuple[Resource, ...]] | None] = field(default_factory=dict)
    namespaces: dict[str, Presence] = field(default_factory=dict)
    owners: dict[UpstreamOwner, OwnerRead] = field(default_factory=dict)


class OwnerLookups:
    """Reads what every owner asked about is, cluster by cluster at once; `read(owner)` then
    answers from what was read, and `recheck(owner)` reads it again, live."""

    def __init__(
        self, source: UpstreamSource, reads: Reads = SERIAL, read_secrets: bool = False
    ) -> None:
        self.source = source
        self.reads = reads
        self.read_secrets = read_secrets
        self._clusters: dict[str, _Cluster] = {}

    def load(self, owners: Iterable[UpstreamOwner]) -> None:
        by_cluster: dict[str, set[UpstreamOwner]] = defaultdict(set)
        for owner in owners:
            by_cluster[owner.cluster].add(owner)
        clusters = sorted(by_cluster)
        found = self.reads.all([partial(self._read_cluster, c, by_cluster[c]) for c in clusters])
        stopped: Stopped | None = None
        for cluster, (state, stop) in zip(clusters, found, strict=True):
            self._clusters[cluster] = state
            stopped = stopped or stop
        if stopped is not None:
            raise stopped

    def answered(self) -> list[str]:
        """The clusters that answered every read this run."""
        return sorted(name for name, state in self._clusters.items() if state.available)

    def read(self, owner: UpstreamOwner) -> OwnerRead:
        state = self._clusters.get(owner.cluster)
        if state is None:
            return OwnerRead(False, f"cluster {owner.cluster} was not read this run")
        if not state.available:
            return OwnerRead(False, state.detail)
        return state.owners.get(owner) or OwnerRead(
            True, detail=f"{owner} was not looked up this run"
        )

    def recheck(self, owner: UpstreamOwner) -> OwnerRead:
        """The owner read again, with GETs only, right before its group is deleted."""
        state = self._clusters.get(owner.cluster)
        if state is None or not state.available or state.reader is None:
            return OwnerRead(False, state.detail if state else "not read this run")
        fresh = _Cluster(True, reader=state.reader, kinds=state.kinds)
        try:
            return self._look_up(fresh, owner, listed=None)
        except Stopped:
            raise
        except KubeError as exc:
            return OwnerRead(False, redact(str(exc)))

    # -- one cluster, in a reader thread ----------------------------------------------

    def _read_cluster(
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
            # A control plane that answers: a deleted project's answers 404 for every path,
            # which would read as "nothing served" and count as an answer (check_project_api).
            if reader.kinds("") is None:
                return _Cluster(False, "does not serve the core API (/api/v1)", reader), None
            lists = self._lists(state, owners)
            for resource, namespace in sorted(lists, key=lambda k: (k[0].path(), k[1])):
                asked = lists[(resource, namespace)]
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


def read_projects(api: Reader, names: Iterable[str]) -> dict[str, ProjectAnswer]:
    """What the Project API says of each project asked about: one list of projects, then a
    GET for each one the list does not show. Nothing read is UNREAD, never NOT_FOUND."""
    wanted = sorted(set(names))
    answers = dict.fromkeys(wanted, ProjectAnswer.UNREAD)
    try:
        listed = dict(api.list(PROJECTS, seen))
    except Stopped:
        raise
    except KubeError:
        return answers
    for name in wanted:
        found = listed.get(name)
        try:
            if found is None:
                got = api.get(PROJECTS, None, name, seen)
                found = got[1] if got is not None else None
        except Stopped:
            raise
        except KubeError:
            continue
        if found is None:
            answers[name] = ProjectAnswer.NOT_FOUND
        elif found.terminating:
            answers[name] = ProjectAnswer.TERMINATING
        else:
            answers[name] = ProjectAnswer.FOUND
    return answers


def project_still_gone(
    projects: Reader | None, cluster: str, is_project: Callable[[str], bool]
) -> str | None:
    """The Project API asked again, right before a delete: None while it still answers a
    NotFound for `cluster`'s project, else why not (any other answer, or none)."""
    if projects is None:
        return "no Project API to look again"
    answer = read_project_answers(projects, [cluster], is_project).get(
        cluster, ProjectAnswer.UNREAD
    )
    if answer is ProjectAnswer.NOT_FOUND:
        return None
    return f"project {cluster} is {answer.value} on a second look"


def read_project_answers(
    projects: Reader | None, clusters: Iterable[str], is_project: Callable[[str], bool]
) -> dict[str, ProjectAnswer]:
    """What the Project API says of every project among `clusters` (UNREAD without an API)."""
    names = sorted({c for c in clusters if is_project(c)})
    if projects is None or not names:
        return dict.fromkeys(names, ProjectAnswer.UNREAD)
    return read_projects(projects, names)
