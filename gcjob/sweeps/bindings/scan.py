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
from gcjob.kube.resources import RESOURCEBINDINGS

S = TypeVar("S", bound=Sink)


def scan_bindings(
    reader: Reader, scope: Scope, start: Callable[[], S], reads: Reads = SERIAL
) -> list[S]:
    # Metadata only: spec.resource is read live for the bindings deleted with a companion.
    return scan_in_scope(reader, RESOURCEBINDINGS, reduce.binding, scope, start, reads=reads)
