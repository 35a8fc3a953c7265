"""Reads of the hub, reduced to records and limited to the run's scope: what every sweep's
scan (gcjob/sweeps/<sweep>/scan.py) reads through."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

from gcjob.enumerate.parallel import SERIAL, Reads
from gcjob.enumerate.scope import Scope
from gcjob.kube.access import Collected, Reduce, Sink
from gcjob.kube.reader import Reader
from gcjob.kube.resources import Resource
from gcjob.model import ObjectRef


class HasRef(Protocol):
    @property
    def ref(self) -> ObjectRef: ...


R = TypeVar("R", bound=HasRef)
S = TypeVar("S", bound=Sink)


def _in_scope(reduce_item: Reduce[R], scope: Scope) -> Reduce[R]:
    """Drop out-of-scope objects as they arrive, before anything keeps them."""

    def reduce_in_scope(obj: dict[str, Any]) -> R | None:
        record = reduce_item(obj)
        return record if record is not None and scope.allows(record.ref.namespace) else None

    return reduce_in_scope


def folds_in_scope(
    reader: Reader,
    resource: Resource,
    reduce_item: Reduce[R],
    scope: Scope,
    start: Callable[[], S],
    *,
    label_selector: str | None = None,
    metadata_only: bool = True,
) -> list[Callable[[], S]]:
    """One fold per listed namespace (or one for the whole cluster), not yet started."""
    return [
        partial(
            reader.fold,
            resource,
            _in_scope(reduce_item, scope),
            start,
            namespace=namespace,
            label_selector=label_selector,
            metadata_only=metadata_only,
        )
        for namespace in scope.list_targets()
    ]


def scan_in_scope(
    reader: Reader,
    resource: Resource,
    reduce_item: Reduce[R],
    scope: Scope,
    start: Callable[[], S],
    *,
    label_selector: str | None = None,
    metadata_only: bool = True,
    reads: Reads = SERIAL,
) -> list[S]:
    """One sink per listed namespace (or one for the whole cluster), read at once."""
    return reads.all(
        folds_in_scope(
            reader,
            resource,
            reduce_item,
            scope,
            start,
            label_selector=label_selector,
            metadata_only=metadata_only,
        )
    )


def listed_in_scope(
    reader: Reader,
    resource: Resource,
    reduce_item: Reduce[R],
    scope: Scope,
    *,
    label_selector: str | None = None,
    metadata_only: bool = True,
    reads: Reads = SERIAL,
) -> list[R]:
    sinks: list[Collected[R]] = scan_in_scope(
        reader,
        resource,
        reduce_item,
        scope,
        Collected,
        label_selector=label_selector,
        metadata_only=metadata_only,
        reads=reads,
    )
    # In key order within each listed namespace, whatever order the server listed them in.
    return [record for sink in sinks for record in sorted(sink.records, key=lambda r: r.ref.order)]


@dataclass(frozen=True, slots=True)
class Seen:
    ref: ObjectRef
