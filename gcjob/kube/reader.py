"""What the sweeps need to read: served by a live API (KubeAccess) or a snapshot on disk."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from gcjob.kube.access import Reduce, Sink
from gcjob.kube.resources import Resource

T = TypeVar("T")
S = TypeVar("S", bound=Sink)


class Reader(Protocol):
    @property
    def server(self) -> str: ...

    def served(self, resource: Resource) -> bool: ...

    def close_idle(self) -> None:
        """Close the connections kept open for later reads; a later read opens a new one."""
        ...

    def list(
        self,
        resource: Resource,
        reduce: Reduce[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        metadata_only: bool = True,
        field_selector: str | None = None,
    ) -> list[T]: ...

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
    ) -> S: ...

    def get(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        reduce: Reduce[T],
        *,
        metadata_only: bool = True,
    ) -> T | None: ...
