"""Reads by name, recorded as evidence: `gcjob explain` reads what a sweep would read for
one object through these, and files each read, with its answer or its error, under the rule
it is evidence for."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gcjob.enumerate.upstream import UpstreamSource
from gcjob.kube.access import Reduce, Sink
from gcjob.kube.errors import KubeError
from gcjob.kube.reader import Reader
from gcjob.kube.resources import Resource

T = TypeVar("T")
S = TypeVar("S", bound=Sink)
R = TypeVar("R")


@dataclass
class ReadLog:
    """Every read explain makes, filed under the rule it is evidence for."""

    rule: str = "object"
    reads: dict[str, list[str]] = field(default_factory=dict)

    def add(self, line: str) -> None:
        self.reads.setdefault(self.rule, []).append(line)


class RecordingReader:
    """A Reader that files each read and its answer in a ReadLog."""

    def __init__(self, inner: Reader, log: ReadLog, prefix: str = "") -> None:
        self.inner = inner
        self.log = log
        self.prefix = prefix

    @property
    def server(self) -> str:
        return self.inner.server

    def _read(self, what: str, read: Callable[[], R], answer: Callable[[R], str]) -> R:
        """Make one read and file it with its answer (or its error)."""
        try:
            result = read()
        except KubeError as exc:
            self.log.add(f"{self.prefix}{what} -> {exc}")
            raise
        self.log.add(f"{self.prefix}{what} -> {answer(result)}")
        return result

    def close_idle(self) -> None:
        self.inner.close_idle()

    def namespaced_deletable(self) -> tuple[list[Resource], list[tuple[str, str]]]:
        """What the namespace controller would delete in a namespace, where the reader read
        answers discovery (a live API): the namespaces sweep's."""
        inner = getattr(self.inner, "namespaced_deletable", None)
        if inner is None:
            raise KubeError("this source answers no discovery (a snapshot)")
        answer: tuple[list[Resource], list[tuple[str, str]]] = self._read(
            "discovery of every namespaced kind",
            inner,
            lambda found: f"{len(found[0])} kinds, {len(found[1])} groups not read",
        )
        return answer

    def kinds(self, group: str) -> Mapping[str, tuple[Resource, ...]] | None:
        """Discovery of a group, where the reader read answers it (a live API)."""
        inner = getattr(self.inner, "kinds", None)
        if inner is None:
            raise KubeError("this source answers no discovery (a snapshot)")
        answer: Mapping[str, tuple[Resource, ...]] | None = self._read(
            f"discovery {group or 'core'}",
            lambda: inner(group),
            lambda found: "not served" if found is None else f"{len(found)} kinds",
        )
        return answer

    def served(self, resource: Resource) -> bool:
        return self._read(
            f"discovery {resource.api_version} {resource.plural}",
            lambda: self.inner.served(resource),
            lambda served: "served" if served else "not served",
        )

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
        return self._read(
            f"LIST {resource.plural} in {namespace or 'all namespaces'}"
            + (f" where {field_selector}" if field_selector else ""),
            lambda: self.inner.list(
                resource,
                reduce,
                namespace=namespace,
                label_selector=label_selector,
                metadata_only=metadata_only,
                field_selector=field_selector,
            ),
            lambda items: f"{len(items)} items",
        )

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
        return self._read(
            f"LIST {resource.plural} in {namespace or 'all namespaces'}"
            + (f" where {field_selector}" if field_selector else ""),
            lambda: self.inner.fold(
                resource,
                reduce,
                start,
                namespace=namespace,
                label_selector=label_selector,
                metadata_only=metadata_only,
                field_selector=field_selector,
            ),
            lambda _: "read",
        )

    def get(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        reduce: Reduce[T],
        *,
        metadata_only: bool = True,
    ) -> T | None:
        where = f" in {namespace}" if namespace else ""
        return self._read(
            f"GET {resource.plural}/{name}{where}",
            lambda: self.inner.get(resource, namespace, name, reduce, metadata_only=metadata_only),
            lambda found: "404 NotFound" if found is None else "found",
        )


class RecordingUpstreams:
    def __init__(self, inner: UpstreamSource, log: ReadLog) -> None:
        self.inner = inner
        self.log = log

    def reader_for(self, cluster: str) -> Reader:
        return RecordingReader(self.inner.reader_for(cluster), self.log, f"upstream {cluster}: ")
