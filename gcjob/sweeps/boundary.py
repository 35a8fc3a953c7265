"""The per-object boundary: nothing in one object's content can end a run.

Each sweep drives two kinds of loop over objects: a scan that decides each object as its
list page streams in (`ObjectScan`), and loops over what was decided: sorting by the grace
rule, marking, deleting, reporting (`each`). An unexpected error (any Exception, a bug or an
input nobody foresaw) in one object's turn keeps that object: it is reported `skipped`,
reason `internal-error`, with the error in one redacted line; the loop goes on with the next
object and the run with the next sweep, and the run exits 3 (incomplete). A run stop
(`Stopped`) is no object's fault: it goes on up as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, Protocol, TypeVar

from gcjob.kube.errors import Stopped
from gcjob.logs import log
from gcjob.model import ObjectRef, Outcome, Sweep
from gcjob.redact import error_line
from gcjob.run import Run
from gcjob.shard import WHOLE, Shard

T = TypeVar("T")


class HasRef(Protocol):
    @property
    def ref(self) -> ObjectRef: ...


R = TypeVar("R", bound=HasRef)


class ObjectScan(Generic[R]):
    """A list sink that decides each object as it arrives (`take`); an object whose `take`
    raised is kept in `failed`, for the sweep to report, and the list goes on. `shard`: the
    part of the hub this run judges (--shard); what keeps objects alive is read from every
    object, whichever shard judges it."""

    def __init__(self, shard: Shard = WHOLE) -> None:
        self.scanned = 0  # every object listed, decided or not
        self.failed: list[tuple[ObjectRef, str]] = []
        self.shard = shard
        self.elsewhere = 0  # objects of the sweep that another shard judges: only counted

    def add(self, record: R) -> None:
        self.scanned += 1
        try:
            self.take(record)
        except Stopped:
            raise
        except Exception as exc:
            if self._elsewhere_on_error(record):
                return  # another shard's: it reports it
            self.failed.append((record.ref, error_line(exc)))

    def shard_key(self, record: R) -> str:
        """What decides which shard judges `record` (gcjob/shard.py): its hub namespace; the
        sweeps keyed by project say theirs."""
        return record.ref.namespace

    def judged_elsewhere(self, record: R) -> bool:
        """Whether another shard judges `record`: then it is counted, and the scan goes no
        further with it."""
        if self.shard.judges(self.shard_key(record)):
            return False
        self.elsewhere += 1
        return True

    def _elsewhere_on_error(self, record: R) -> bool:
        """An object whose turn raised is reported by the one shard that judges it (by every
        shard when even its key cannot be told: kept, never lost)."""
        if self.shard.whole:
            return False
        try:
            return self.judged_elsewhere(record)
        except Exception:
            return False

    def take(self, record: R) -> None:
        raise NotImplementedError


def report_failed(run: Run, sweep: Sweep, scans: Iterable[ObjectScan[R]]) -> None:
    """The objects the scans could not decide, in report order."""
    failed = sorted((ref for scan in scans for ref in scan.failed), key=lambda f: f[0].order)
    for ref, error in failed:
        keep_on_error(run, sweep, ref, error)


def keep_on_error(run: Run, sweep: Sweep, ref: ObjectRef, error: str) -> None:
    log.error(
        "%s sweep: %s %s/%s kept: internal error: %s",
        sweep.value,
        ref.kind,
        ref.namespace,
        ref.name,
        error,
    )
    run.record(Outcome.internal_error(sweep, ref, error))


def each(
    run: Run,
    sweep: Sweep,
    items: Iterable[T],
    ref_of: Callable[[T], ObjectRef],
    body: Callable[[T], object],
) -> None:
    """`body` on every item; an item whose turn raised is kept (`internal-error`)."""
    for item in items:
        try:
            body(item)
        except Stopped:
            raise
        except Exception as exc:
            keep_on_error(run, sweep, ref_of(item), error_line(exc))
