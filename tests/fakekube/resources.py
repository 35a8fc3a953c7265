"""The resource registry of the fake API server: built-in kinds plus CustomResourceDefinitions.

A resource is stored once (keyed by group + plural) and served in every served version of it;
responses only differ by their ``apiVersion``.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]

try:  # the HTTPRoute CRD is 430 KB: the C loader parses it an order of magnitude faster
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader


def crds_dir() -> Path:
    """Folder holding the CRD yamls the tests load (``$GCJOB_CRDS_DIR`` overrides)."""
    env = os.environ.get("GCJOB_CRDS_DIR")
    if env:
        return Path(env)
    # tests/fakekube/resources.py -> parents[3] is the folder that holds main/ and shared/
    return Path(__file__).resolve().parents[3] / "shared" / "crds"


def crd_paths(directory: Path | None = None) -> list[Path]:
    """Every ``*.yaml`` in :func:`crds_dir` (or ``directory``), sorted."""
    return sorted((directory or crds_dir()).glob("*.yaml"))


@dataclass(frozen=True)
class Resource:
    """One API resource (``group`` is "" for the core group)."""

    group: str
    plural: str
    singular: str
    kind: str
    list_kind: str
    namespaced: bool
    versions: tuple[str, ...]  # served versions, in the order they were declared
    storage_version: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    builtin: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def qualified(self) -> str:
        """``plural.group`` as used in error messages (``plural`` alone for core)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def api_version(self, version: str | None = None) -> str:
        v = version or self.storage_version
        return f"{self.group}/{v}" if self.group else v

    @property
    def is_namespace(self) -> bool:
        return self.group == "" and self.plural == "namespaces"


def _builtin(
    group: str, version: str, plural: str, kind: str, namespaced: bool, short: tuple[str, ...] = ()
) -> Resource:
    return Resource(
        group=group,
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        list_kind=f"{kind}List",
        namespaced=namespaced,
        versions=(version,),
        storage_version=version,
        short_names=short,
        builtin=True,
    )


BUILTINS: tuple[Resource, ...] = (
    _builtin("", "v1", "namespaces", "Namespace", False, ("ns",)),
    _builtin("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    _builtin("", "v1", "secrets", "Secret", True),
    _builtin("coordination.k8s.io", "v1", "leases", "Lease", True),
)


def resource_from_crd(crd: dict[str, Any]) -> Resource:
    """Read what the server needs from an apiextensions.k8s.io CustomResourceDefinition."""
    if crd.get("kind") != "CustomResourceDefinition":
        raise ValueError(f"not a CustomResourceDefinition: kind={crd.get('kind')!r}")
    spec = crd["spec"]
    names = spec["names"]
    versions: list[tuple[str, bool, bool]] = []
    if spec.get("versions"):
        for v in spec["versions"]:
            versions.append((str(v["name"]), bool(v.get("served")), bool(v.get("storage"))))
    elif spec.get("version"):  # apiextensions.k8s.io/v1beta1 single-version form
        versions.append((str(spec["version"]), True, True))
    served = tuple(name for name, is_served, _ in versions if is_served)
    storage = next((name for name, _, is_storage in versions if is_storage), None)
    if storage is None:
        storage = versions[0][0] if versions else "v1"
    kind = str(names["kind"])
    return Resource(
        group=str(spec["group"]),
        plural=str(names["plural"]),
        singular=str(names.get("singular") or kind.lower()),
        kind=kind,
        list_kind=str(names.get("listKind") or f"{kind}List"),
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        versions=served,
        storage_version=storage,
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
    )


_CRD_CACHE: dict[str, tuple[Resource, ...]] = {}
_CRD_CACHE_LOCK = threading.Lock()


def load_crd_file(path: str | os.PathLike[str]) -> tuple[Resource, ...]:
    """Resources defined by a CRD yaml (may hold several documents); cached per path."""
    key = str(Path(path).resolve())
    with _CRD_CACHE_LOCK:
        cached = _CRD_CACHE.get(key)
    if cached is not None:
        return cached
    with open(key, encoding="utf-8") as fh:
        docs = [d for d in yaml.load_all(fh, Loader=_Loader) if isinstance(d, dict)]
    resources = tuple(
        resource_from_crd(d) for d in docs if d.get("kind") == "CustomResourceDefinition"
    )
    if not resources:
        raise ValueError(f"{path}: no CustomResourceDefinition found")
    with _CRD_CACHE_LOCK:
        _CRD_CACHE[key] = resources
    return resources


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key giving Kubernetes' version order: GA > beta > alpha, higher numbers first."""
    m = _VERSION_RE.match(version)
    if not m:
        return (3, 0, 0, version)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, version)


@dataclass
class Registry:
    """Every resource the server knows, with what is currently served."""

    resources: dict[tuple[str, str], Resource] = field(default_factory=dict)
    _unserved: set[tuple[str, str]] = field(default_factory=set)
    _by_kind: dict[tuple[str, str], Resource] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def build(
        cls,
        crd_paths: Iterable[str | os.PathLike[str]] = (),
        crds: Iterable[dict[str, Any]] = (),
    ) -> Registry:
        reg = cls()
        for res in BUILTINS:
            reg.add(res)
        for path in crd_paths:
            for res in load_crd_file(path):
                reg.add(res)
        for crd in crds:
            reg.add(resource_from_crd(crd))
        return reg

    def add(self, res: Resource) -> None:
        with self._lock:
            self.resources[res.key] = res
            self._by_kind[(res.group, res.kind)] = res

    def add_crd(self, crd: dict[str, Any]) -> Resource:
        res = resource_from_crd(crd)
        self.add(res)
        return res

    def unserve(self, group: str, version: str) -> None:
        with self._lock:
            self._unserved.add((group, version))

    def serve(self, group: str, version: str) -> None:
        with self._lock:
            self._unserved.discard((group, version))

    def served_versions(self, res: Resource) -> list[str]:
        return [v for v in res.versions if (res.group, v) not in self._unserved]

    def is_served(self, group: str, version: str) -> bool:
        return any(
            r.group == group and version in self.served_versions(r)
            for r in list(self.resources.values())
        )

    def lookup(self, group: str, version: str, plural: str) -> Resource | None:
        """The resource ``plural`` if it is served in ``group/version``."""
        res = self.resources.get((group, plural))
        if res is None or version not in self.served_versions(res):
            return None
        return res

    def resources_in(self, group: str, version: str) -> list[Resource]:
        return sorted(
            (
                r
                for r in list(self.resources.values())
                if r.group == group and version in self.served_versions(r)
            ),
            key=lambda r: r.plural,
        )

    def by_kind(self, api_version: str, kind: str) -> Resource:
        """The resource of ``apiVersion`` + ``kind`` (any declared version; served or not)."""
        group = api_version.rpartition("/")[0]
        res = self._by_kind.get((group, kind))
        if res is None:
            raise KeyError(f"unknown kind {kind!r} in {api_version!r}")
        return res

    def groups(self) -> dict[str, list[str]]:
        """Served non-core groups -> served versions, preferred version first."""
        out: dict[str, list[str]] = {}
        storage: dict[str, str] = {}
        for res in list(self.resources.values()):
            if not res.group:
                continue
            served = self.served_versions(res)
            if not served:
                continue
            versions = out.setdefault(res.group, [])
            for v in served:
                if v not in versions:
                    versions.append(v)
            if res.storage_version in served:
                storage.setdefault(res.group, res.storage_version)
        for group, versions in out.items():
            versions.sort(key=version_priority)
            preferred = storage.get(group, versions[0])
            versions.remove(preferred)
            versions.insert(0, preferred)
        return dict(sorted(out.items()))
