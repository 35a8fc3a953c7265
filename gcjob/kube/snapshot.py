"""Sweep offline from `kubectl get -o json|yaml` dumps: the demo, and post-mortems.

Layout of a snapshot directory:
    snapshot.yaml            optional: {capturedAt: RFC 3339, server: a label for the report}
    hub/**.{json,yaml,yml}   the hub's objects: Lists, single objects, multi-document YAML
    upstream/<cluster>/**    one directory per upstream cluster (its Gateways and Namespaces;
                             the owners the copies name, and its discovery)
    projects/**              optional: Milo's Project API's Projects (snapshot.yaml's
                             `projectClusters` names the clusters that are projects)

Discovery is dumped as `kubectl get --raw` answers it (docs/operating.md "Sweeping a
snapshot"): an APIResourceList per group version, an APIGroupList for `/apis`. A group is
unserved only where a dumped APIGroupList leaves it out; any other group not dumped is unknown.

A kind with no dump is unknown, never empty: a read of it fails (the sweep that needs it is
incomplete, an upstream without Gateways unavailable). A kind is given by any object of it, by a
typed List (`kind: WorkloadDeploymentList`), or by a file with no items named after its plural
(`workloaddeployments.yaml`, or `workloaddeployments.compute.datumapis.com.yaml`): an explicitly
empty dump, which `kubectl get -o yaml` writes as `kind: List` with `items: []`.

"now" is the capture time, so a demo never goes stale; without `capturedAt` it is the newest
timestamp found in the dumps, or the pod's clock if that is earlier. A Secret is kept as a live
read keeps it (gcjob/domain.py secret_as_kept: no data, no value of a label or annotation no
rule reads) as each file is loaded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import jsonpatch
import jsonpointer
import yaml

from gcjob.domain import secret_as_kept
from gcjob.kube import discovery
from gcjob.kube.access import ListsByFolding, Patched, PatchResult, Reduce, Sink
from gcjob.kube.errors import ConfigError, KubeError, UnknownCluster
from gcjob.kube.resources import Resource
from gcjob.times import parse_time

T = TypeVar("T")
S = TypeVar("S", bound=Sink)
Key = tuple[str, str]  # (group, kind)
_SUFFIXES = (".json", ".yaml", ".yml")


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def _documents(path: Path) -> Iterator[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        yield json.loads(text)
    else:
        yield from yaml.safe_load_all(text)


class NotInSnapshot(KubeError):
    """The snapshot holds no dump of a kind gcjob needs: unknown, not empty."""


def _typed_list(document: Any) -> Key | None:
    """(group, kind) of a typed List document (`kind: ConfigMapList`), else None."""
    if not isinstance(document, dict):
        return None
    kind = str(document.get("kind", ""))
    if kind == "List" or not kind.endswith("List"):
        return None
    return _group(str(document.get("apiVersion", ""))), kind.removesuffix("List")


def _objects(document: Any) -> Iterator[dict[str, Any]]:
    """The objects of one document: a List's items, or the object itself. Anything else is
    not a dump of Kubernetes objects, and is refused rather than silently skipped."""
    if document is None:
        return  # an empty YAML document
    if not isinstance(document, dict) or "kind" not in document or "apiVersion" not in document:
        raise ValueError("not a Kubernetes object or List")
    if str(document["kind"]).endswith("List") and "items" in document:
        items = document["items"]
        if not isinstance(items, list):
            raise ValueError(f"{document['kind']} items is not a list")
        for item in items:
            yield from _objects(item)
    else:
        yield document


def _matches(labels: dict[str, Any], selector: str | None) -> bool:
    """The forms gcjob sends, comma-separated: `k=v`, `k!=v` (also when k is absent), `k`
    (present)."""
    if not selector:
        return True
    for term in selector.split(","):
        if "!=" in term:
            key, _, value = term.partition("!=")
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, _, value = term.partition("=")
            if labels.get(key.strip()) != value.strip():
                return False
        elif term.strip() not in labels:
            return False
    return True


def _fields_match(obj: dict[str, Any], selector: str | None) -> bool:
    """The field selectors gcjob sends (`metadata.name=x,type!=y`), as a server reads them."""
    if not selector:
        return True
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    fields = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "type": obj.get("type"),
    }
    for term in selector.split(","):
        negated = "!=" in term
        key, _, value = term.partition("!=" if negated else "=")
        if (str(fields.get(key.strip()) or "") == value.strip()) is negated:
            return False
    return True


class SnapshotStore(ListsByFolding):
    """Objects of one plane (the hub, or one upstream cluster), read-only."""

    def __init__(
        self, label: str, files: list[Path], *, upstream: bool = False, every_kind: bool = False
    ) -> None:
        """`upstream`: a cluster's dumps, where a missing Gateways dump makes the cluster
        unavailable (`served` cannot tell); a hub's served() is its dumps' (a hub's) word.
        `every_kind`: a store built in memory (tests), where a kind with no object is empty."""
        self.label = label
        self.upstream = upstream
        self.every_kind = every_kind
        self._objects: dict[Key, dict[Key, dict[str, Any]]] = {}
        self._given: set[Key] = set()  # kinds dumped, even with no objects
        self._empty_dumps: set[str] = set()  # names of files that held no object
        self.newest: datetime | None = None
        # Discovery, as `kubectl get --raw` dumps it: each group's kinds (APIResourceLists,
        # merged over versions in file order) and, with an APIGroupList, the groups served.
        self._discovered: dict[str, list[Mapping[str, tuple[Resource, ...]]]] = {}
        self._groups: set[str] | None = None
        for path in files:
            try:
                found = typed_any = False
                for document in _documents(path):
                    if self._discovery(document):
                        found = True
                        continue
                    typed = _typed_list(document)
                    if typed is not None:
                        self._given.add(typed)
                        typed_any = True
                    for obj in _objects(document):
                        self.add(obj)
                        found = True
                # The file's name says what an untyped empty List is of; a typed one says it
                # itself (an empty `ConfigMapList` in workloaddeployments.yaml is no WDs).
                if not found and not typed_any:
                    self._empty_dumps.add(path.stem.lower())
            # RecursionError: a document nested deeper than the parsers follow.
            except (OSError, ValueError, RecursionError, yaml.YAMLError) as exc:
                raise ConfigError(f"snapshot file {path}: {_unreadable(exc)}") from None

    def _discovery(self, document: Any) -> bool:
        """Keep a discovery document (`/apis`'s APIGroupList, a group version's
        APIResourceList); False for anything else."""
        if not isinstance(document, dict):
            return False
        kind = document.get("kind")
        if kind == "APIGroupList":
            groups = document.get("groups")
            if not isinstance(groups, list):
                raise ValueError("APIGroupList groups is not a list")
            named = {g.get("name") for g in groups if isinstance(g, dict)}
            self._groups = (self._groups or set()) | {n for n in named if isinstance(n, str)}
            return True
        if kind != "APIResourceList":
            return False
        group_version = document.get("groupVersion")
        if not isinstance(group_version, str) or not group_version:
            raise ValueError("APIResourceList without a groupVersion")
        group, _, version = group_version.rpartition("/")
        self._discovered.setdefault(group, []).append(
            discovery.resources_by_kind(group, version, document)
        )
        return True

    @property
    def discovers(self) -> bool:
        """Does this dump carry discovery (any APIResourceList or APIGroupList)?"""
        return bool(self._discovered) or self._groups is not None

    def kinds(self, group: str) -> Mapping[str, tuple[Resource, ...]] | None:
        """What discovery said of `group` when dumped: its kinds, or None (not served) when a
        dumped APIGroupList leaves it out. A group with neither is unknown: raises
        NotInSnapshot (the core group, `/api/v1`, is only ever known by its APIResourceList)."""
        if group in self._discovered:
            return discovery.merge_versions(self._discovered[group])
        if group and self._groups is not None and group not in self._groups:
            return None
        raise NotInSnapshot(
            f"no discovery of group {group or 'core'} in {self.label}: unknown, not unserved "
            f"(dump `kubectl get --raw /apis/<group>/<version>` or `/api/v1`)"
        )

    @property
    def count(self) -> int:
        return sum(len(objects) for objects in self._objects.values())

    def add(self, obj: dict[str, Any]) -> None:
        if obj.get("kind") == "Secret":  # of any apiVersion: a dump's word is not checked
            obj = secret_as_kept(obj)
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        assert isinstance(meta, dict)
        key = (_group(str(obj.get("apiVersion", ""))), str(obj.get("kind", "")))
        self._given.add(key)
        name = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        self._objects.setdefault(key, {})[name] = obj
        for field in ("creationTimestamp", "deletionTimestamp"):
            seen = parse_time(meta.get(field))
            if seen is not None and (self.newest is None or seen > self.newest):
                self.newest = seen

    @property
    def server(self) -> str:
        return self.label

    def given(self, resource: Resource) -> bool:
        """Was this kind dumped at all (objects of it, a typed List, an empty file of it)?"""
        return (
            self.every_kind
            or (resource.group, resource.kind) in self._given
            or bool({resource.plural, f"{resource.plural}.{resource.group}"} & self._empty_dumps)
        )

    def _require(self, resource: Resource) -> None:
        if not self.given(resource):
            raise NotInSnapshot(
                f"no {resource.plural} dump in {self.label}: unknown, not empty (an empty "
                f"dump is a List with no items in a file named {resource.plural}.yaml)"
            )

    def served(self, resource: Resource) -> bool:
        if self.upstream:
            self._require(resource)  # no Gateways dump: the cluster cannot be judged
        return True  # a dump of a hub or upstream: whatever it holds was served

    def close_idle(self) -> None:
        pass  # no connections

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
        self._require(resource)
        sink = start()
        objects = self._objects.get((resource.group, resource.kind), {})
        for (ns, _), obj in sorted(objects.items()):
            if namespace is not None and ns != namespace:
                continue
            meta = obj.get("metadata")
            labels = meta.get("labels") if isinstance(meta, dict) else None
            if _matches(
                labels if isinstance(labels, dict) else {}, label_selector
            ) and _fields_match(obj, field_selector):
                record = reduce(obj)
                if record is not None:
                    sink.add(record)
        return sink

    def get(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        reduce: Reduce[T],
        *,
        metadata_only: bool = True,
    ) -> T | None:
        self._require(resource)
        obj = self._objects.get((resource.group, resource.kind), {}).get((namespace or "", name))
        return None if obj is None else reduce(obj)

    def patch(
        self, resource: Resource, namespace: str | None, name: str, ops: list[dict[str, Any]]
    ) -> PatchResult:
        """The very JSON Patch a live run would send, applied to the loaded object in memory
        (nothing on disk changes): its `test` ops fail here as they would on the server, and
        later reads in this run see what it wrote."""
        objects = self._objects.get((resource.group, resource.kind), {})
        key = (namespace or "", name)
        obj = objects.get(key)
        if obj is None:
            return PatchResult(Patched.GONE)
        try:
            patched = jsonpatch.apply_patch(obj, ops)
        except jsonpatch.JsonPatchTestFailed:
            return PatchResult(Patched.CONFLICT, f"test failed: {_failed_test(obj, ops)}")
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException):
            return PatchResult(Patched.CONFLICT, "the patch does not apply to the object")
        meta = patched.get("metadata")
        if isinstance(meta, dict):  # as a server would: a write is a new resourceVersion
            meta["resourceVersion"] = _next_version(meta.get("resourceVersion"))
        objects[key] = patched
        return PatchResult(Patched.APPLIED)

    def delete(self, *args: object, **kwargs: object) -> None:
        raise KubeError("a snapshot is read-only")


def _failed_test(obj: dict[str, Any], ops: list[dict[str, Any]]) -> str:
    """The path of the first failing test, never the values (jsonpatch's message quotes them)."""
    missing = object()
    for op in ops:
        if op.get("op") != "test":
            continue
        path = str(op.get("path"))
        if jsonpointer.resolve_pointer(obj, path, missing) != op.get("value"):
            return path
    return "a test op"


def _next_version(version: object) -> str:
    text = str(version or "")
    return str(int(text) + 1) if text.isdigit() else f"{text}+1"


def _unreadable(exc: BaseException) -> str:
    """Where a file is broken, never what it holds: PyYAML's message quotes the offending
    line, and a dump can hold a Secret's data."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"not valid YAML at line {mark.line + 1}, column {mark.column + 1}"
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON at line {exc.lineno}, column {exc.colno}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 at byte {exc.start}"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    if isinstance(exc, RecursionError):
        return "nested deeper than the parser follows (recursion limit)"
    if type(exc) is ValueError and exc.args and str(exc.args[0]).startswith("not a Kubernetes"):
        return str(exc.args[0])  # gcjob's own words (_objects), not the file's
    return f"cannot be read ({type(exc).__name__})"


def _files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.suffix in _SUFFIXES and p.is_file())


class Snapshot:
    def __init__(self, directory: str) -> None:
        root = Path(directory)
        if not root.is_dir():
            raise ConfigError(f"--snapshot {directory}: not a directory")
        meta: dict[str, Any] = {}
        meta_file = root / "snapshot.yaml"
        if meta_file.exists():
            try:
                loaded = yaml.safe_load(meta_file.read_text(encoding="utf-8"))
            except (OSError, ValueError, yaml.YAMLError) as exc:
                raise ConfigError(f"{meta_file}: {_unreadable(exc)}") from None
            meta = loaded if isinstance(loaded, dict) else {}
        hub_dir = root / "hub"
        hub_files = (
            _files(hub_dir)
            if hub_dir.is_dir()
            else [
                p
                for p in _files(root)
                if p.name != "snapshot.yaml" and not {"upstream", "projects"} & set(p.parts)
            ]
        )
        self.hub = SnapshotStore(str(meta.get("server") or f"snapshot:{root}"), hub_files)
        self.upstreams: dict[str, SnapshotStore] = {}
        upstream_dir = root / "upstream"
        if upstream_dir.is_dir():
            for cluster_dir in sorted(p for p in upstream_dir.iterdir() if p.is_dir()):
                self.upstreams[cluster_dir.name] = SnapshotStore(
                    f"snapshot:{cluster_dir}", _files(cluster_dir), upstream=True
                )
        # Milo's Project API, as it answered: its Projects dumped in DIR/projects/, and the
        # clusters that are projects (as --upstream-server-template reaches them) named in
        # snapshot.yaml. Without either, no cluster is a project (never_a_project).
        projects_dir = root / "projects"
        self.projects: SnapshotStore | None = None
        if projects_dir.is_dir():
            self.projects = SnapshotStore(f"snapshot:{projects_dir}", _files(projects_dir))
        named = meta.get("projectClusters") or []
        if not isinstance(named, list) or not all(isinstance(n, str) for n in named):
            raise ConfigError(f"{meta_file}: projectClusters is not a list of cluster names")
        self.project_clusters: frozenset[str] = frozenset(named)
        captured = meta.get("capturedAt")
        self.captured_at: datetime | None = parse_time(captured)
        if captured is not None and self.captured_at is None:
            raise ConfigError(f"{meta_file}: capturedAt {captured!r} is not an RFC 3339 time")
        if not self.hub.count:
            # An empty or junk-only directory would "sweep" nothing and exit 0: say so instead.
            raise ConfigError(
                f"--snapshot {directory}: no hub objects found (kubectl get -o json|yaml dumps "
                "in DIR/hub/ or DIR/)"
            )
        if self.captured_at is None:
            # The newest time in the dumps, but never past the pod's clock: one object's
            # timestamp in 2099 must not age every other object by decades.
            stores = [self.hub, *self.upstreams.values()]
            times = [s.newest for s in stores if s.newest is not None]
            self.captured_at = min(max(times), datetime.now(UTC)) if times else None


class SnapshotUpstreams:
    """The upstream clusters captured in a snapshot: one directory each."""

    def __init__(self, stores: dict[str, SnapshotStore]) -> None:
        self.stores = stores

    def reader_for(self, cluster: str) -> SnapshotStore:
        if cluster not in self.stores:
            raise UnknownCluster(f"no upstream/{cluster} directory in the snapshot")
        return self.stores[cluster]
