"""What the bindings sweep reads of the hub: every ResourceBinding in scope, metadata only."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from gcjob.enumerate.hub import scan_in_scope
from gcjob.enumerate.parallel import SERIAL, Reads
from gcjob.enumerate.scope import Scope
from gcjob.kube import reduce
from gcjob.kube.access import Sink
from gcjob.kube.reader import Reader
from gcjob.kube.resources import COMPANION_RESOURCES, RESOURCEBINDINGS

S = TypeVar("S", bound=Sink)


def scan_bindings(
    reader: Reader, scope: Scope, start: Callable[[], S], reads: Reads = SERIAL
) -> list[S]:
    # Metadata only: spec.resource is read live for the bindings deleted with a companion.
    return scan_in_scope(reader, RESOURCEBINDINGS, reduce.binding, scope, start, reads=reads)


def bound_object_exists(reader: Reader, kind: str, namespace: str, name: str) -> bool:
    """Whether the ConfigMap or Secret a binding names exists, by name, labelled or not: a
    NotFound for that very name is the only proof it does not. Raises KubeError."""
    return reader.get(COMPANION_RESOURCES[kind], namespace, name, reduce.name_of) is not None
