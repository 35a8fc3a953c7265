"""Operational logs on stderr (stdout carries the report).

JSON lines carry an RFC 3339 UTC `time` and the run's `run_id`, the same id as every report
record, so a log pipeline can join the two.
"""

from __future__ import annotations

import logging
import sys
import threading
from datetime import UTC, datetime

from pythonjsonlogger.json import JsonFormatter

from gcjob.redact import scrub
from gcjob.visible import VisibleMessages

log = logging.getLogger("gcjob")

_said: set[str] = set()  # what warn_once() said in this run
_said_lock = threading.Lock()


def rfc3339(created: float) -> str:
    """A log record's time: UTC, milliseconds, `Z` (e.g. 2026-11-23T00:56:05.550Z)."""
    moment = datetime.fromtimestamp(created, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _JsonLines(JsonFormatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return rfc3339(record.created)


class _Scrubbed(logging.Filter):
    """Every log message without the run's credentials (redact.scrub), in either format: a
    warning can quote what a server said, and a server can echo a bare token."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = scrub(record.getMessage())
        record.args = None
        return True


def setup(log_format: str, run_id: str | None = None) -> None:
    """`run_id`: the sweep's, carried by every JSON line (explain has none)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_Scrubbed())
    if log_format == "json":
        handler.setFormatter(
            _JsonLines(
                fmt=["asctime", "levelname", "name", "message"],
                rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
                static_fields={"run_id": run_id} if run_id else {},
                json_ensure_ascii=False,
            )
        )
    else:
        handler.setFormatter(logging.Formatter("gcjob: %(levelname)s: %(message)s"))
        handler.addFilter(VisibleMessages())  # names and server messages come from clusters
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False
    with _said_lock:
        _said.clear()


def warn_once(key: str, message: str) -> None:
    """Log a warning the first time `key` comes up in a run; later calls say nothing."""
    with _said_lock:
        if key in _said:
            return
        _said.add(key)
    log.warning(message)
