"""The deletion record (`--record-deletions DIR`): what a delete took, written before it is sent.

Write-ahead: before each delete, the object is read live in full (a Secret: its metadata
only, never its data) and must still be the very one the delete is pinned to (uid and
resourceVersion), then its entry is written to this run's file and flushed to the disk
(fsync). Only then may the delete go out; its outcome is written after its answer. A record
that cannot be written stops every further delete of the run (reason `record-failed`): no
object is deleted unrecorded. One `delete` entry per version of an object (uid and
resourceVersion) a run: a delete tried again on the version already recorded writes only its
outcome again (the last one says what became of it); one tried again on a newer version (a
binding's pinned delete met a 409 and was read again, a --drain round judged the object
anew) records that version, the one the delete is pinned to, so restore (which takes the
last entry of a uid) puts back what was deleted, never an older version. The entries'
format: gcjob/undo.py, docs/undo.md.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gcjob import undo
from gcjob.kube import reduce
from gcjob.kube.access import KubeAccess
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.resources import NAMESPACES, Resource
from gcjob.logs import log
from gcjob.model import Action, Outcome, Sweep, Verdict
from gcjob.reasons import Reason

PROBE = ".gcjob-record-probe"


def check_record_dir(path: str) -> None:
    """A directory gcjob can create files in, found out before anything is touched: raises
    OSError (with why) otherwise."""
    directory = Path(path)
    if not directory.is_dir():
        raise NotADirectoryError(f"{path}: not a directory")
    # A fresh name, created exclusively and not through a symlink (mkstemp): a file or a link
    # someone left in the directory is never opened, let alone truncated.
    fd, probe = tempfile.mkstemp(prefix=PROBE, dir=directory)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
        os.unlink(probe)


def record_file_name(run_id: str, started: datetime) -> str:
    """One file per run, sorted by when it started: `deletions-<UTC time>-<run id>.jsonl`."""
    return f"deletions-{started.astimezone(UTC).strftime('%Y%m%dT%H%M%SZ')}-{run_id}.jsonl"


class DeletionRecord:
    def __init__(
        self,
        directory: str,
        run_id: str,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.path = Path(directory) / record_file_name(run_id, clock())
        self.run_id = run_id
        self.clock = clock
        self.broken: str | None = None  # why nothing more can be recorded this run
        self._fd: int | None = None
        self._hub: str | None = None  # the hub's identity, read at the first delete
        # The versions (uid, resourceVersion) with a `delete` entry in this run's file.
        self._recorded: set[tuple[str, str]] = set()

    def _write(self, entry: dict[str, Any]) -> None:
        """One entry, on the disk when this returns. Raises OSError."""
        if self._fd is None:  # created at the first delete: a run that deletes nothing leaves none
            # This run's own new file: one already there (a file, a symlink planted under the
            # run's name) is not written through; the record is broken, nothing is deleted.
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW
            self._fd = os.open(self.path, flags, 0o600)
            log.info("recording deletions in %s", self.path)
        data = undo.line(entry).encode("ascii")
        written = 0
        while written < len(data):
            written += os.write(self._fd, data[written:])
        os.fsync(self._fd)

    def _written(self, entry: dict[str, Any]) -> bool:
        """`_write`, and False once it failed: the record is broken for the rest of the run."""
        try:
            self._write(entry)
        except OSError as exc:
            self.broken = (
                f"--record-deletions: cannot write {self.path}: {exc.strerror or exc}; "
                "nothing more is deleted this run"
            )
            log.error("%s", self.broken)
            return False
        return True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _refused(self, sweep: Sweep, verdict: Verdict, why: str) -> Outcome:
        return Outcome.of(sweep, verdict, Action.SKIPPED, Reason.RECORD_FAILED, why)

    def before(
        self, access: KubeAccess, sweep: Sweep, verdict: Verdict, resource: Resource
    ) -> Outcome | None:
        """Read the object and record it: None when the delete may go out, else the Outcome
        that keeps it (the record broken, the object changed or gone, the read failed)."""
        if self.broken is not None:
            return self._refused(sweep, verdict, self.broken)
        ref = verdict.ref
        if ref.uid and (ref.uid, ref.resource_version) in self._recorded:
            # Tried again this run on the version recorded before its first try: the delete
            # stays pinned to that very uid and resourceVersion.
            return None
        try:
            if self._hub is None:  # once a run: restore checks each entry is put back here
                self._hub = access.get(NAMESPACES, None, undo.HUB_IDENTITY, reduce.uid_of) or ""
            # A Secret is read as metadata only (its data never leaves the server).
            found = access.get(
                resource,
                ref.namespace,
                ref.name,
                lambda obj: obj,
                metadata_only=resource.sensitive,
            )
        except Stopped as exc:
            return Outcome.of(sweep, verdict, Action.SKIPPED, Reason.STOPPED, f"left undone: {exc}")
        except KubeError as exc:
            return Outcome.of(
                sweep, verdict, Action.SKIPPED, Reason.LOOKUP_FAILED, f"reading it to record: {exc}"
            )
        if found is None:
            return Outcome.already_gone(sweep, verdict)
        meta = found.get("metadata") or {}
        if (meta.get("uid"), meta.get("resourceVersion")) != (ref.uid, ref.resource_version):
            return Outcome.changed_since_observed(
                sweep, verdict, "read to be recorded: uid or resourceVersion changed since observed"
            )
        where = undo.Where(
            resource.group, resource.version, resource.plural, resource.kind, resource.namespaced
        )
        entry = undo.delete_entry(
            self.run_id,
            sweep.value,
            where,
            found,
            self.clock(),
            sensitive=resource.sensitive,
            hub=self._hub,
        )
        if not self._written(entry):
            return self._refused(sweep, verdict, str(self.broken))
        self._recorded.add((ref.uid, ref.resource_version))
        return None

    def after(self, outcome: Outcome) -> None:
        """What became of a recorded delete. Failing to write it leaves the object's entry
        (it can still be restored) but stops further deletes."""
        if self.broken is not None:
            return
        # A delete a finalizer holds went out: the object goes once it lets go (restorable).
        gone = outcome.action in (Action.DELETED, Action.DELETE_HELD)
        done = "deleted" if gone else f"{outcome.action}:{outcome.reason}"
        entry = undo.outcome_entry(self.run_id, outcome.ref.uid, done, outcome.detail, self.clock())
        self._written(entry)
