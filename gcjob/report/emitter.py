"""Writes the report: JSON lines on stdout, or text for a person.

Operational logs go to stderr (see gcjob/logs.py); stdout carries the report only, so a
log pipeline can ingest it as is. Each JSON line is one whole record of at most
MAX_RECORD_BYTES (gcjob/report/bounds.py); `--report-file` keeps every record whole.

A closed stdout (`gcjob sweep ... | head -1`) is not an error: nothing more is printed, the
run is told (`on_stdout_closed`: the CLI stops it as a signal would), and the report file is
still written.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import IO, Any

from gcjob.model import Action, Outcome, Sweep
from gcjob.reasons import Reason
from gcjob.redact import error_line, scrub
from gcjob.report.bounds import capped, json_line
from gcjob.report.records import DueTally, Tally, envelope, item_record
from gcjob.visible import visible

# Upstream clusters' lines written at once at the end of a run.
SUMMARY_BATCH = 500


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Reporter:
    def __init__(
        self,
        *,
        run_id: str,
        dry_run: bool,
        log_format: str,
        report_healthy: bool,
        report_file: str | None,
        stream: IO[str] | None = None,
        progress: IO[str] | None = None,
        observer: Callable[[dict[str, Any]], None] | None = None,
        on_stdout_closed: Callable[[], None] | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.run_id = run_id
        self.dry_run = dry_run
        self.log_format = log_format
        self.report_healthy = report_healthy
        self.report_file = report_file
        self.stream = stream or sys.stdout
        self.progress_stream = progress
        self.tally = Tally()
        self.due = DueTally()  # the orphans left in place, by when they go (would_delete_at)
        self.observer = observer  # sees every item record reported (the webhook's first few)
        self.clock = clock
        self.on_stdout_closed = on_stdout_closed
        self.stdout_closed = False
        self._items: list[dict[str, Any]] = []

    def outcome(self, outcome: Outcome, now: datetime) -> None:
        self.tally.add(outcome)
        self.due.add(outcome, now)
        if outcome.healthy and not self.report_healthy:
            return  # healthy objects are counts only: a big hub must not flood the pipeline
        try:
            record = item_record(outcome, self.run_id, now, self.dry_run, self.clock())
        except Exception as exc:  # one object's odd field must not end the run: say less
            record = plain_record(outcome, self.run_id, self.dry_run, self.clock(), exc)
        if self.observer is not None:
            self.observer(record)
        if self.report_file:
            self._items.append(record)
        if self.log_format == "json":
            self._write(json_line(record) + "\n")
        else:
            self._write(_text_line(capped(record)) + "\n")

    def next_round(self) -> None:
        """A --drain run's next round: the counts keep the earlier rounds' actions only, and
        what is left on its way out is the last round's (`Tally.next_round`)."""
        self.tally.next_round()
        self.due = DueTally()

    def count_healthy(self, sweep: Sweep, reason: Reason, count: int) -> None:
        """Healthy objects decided without keeping an Outcome for each: counts only."""
        self.tally.add_count(sweep, Action.SKIPPED, reason, count)

    def progress(self, message: str) -> None:
        if self.progress_stream is not None:
            self.progress_stream.write(f"\r\x1b[K{visible(message)}")
            self.progress_stream.flush()

    def finish(self, upstreams: Iterable[dict[str, Any]], summary: dict[str, Any]) -> None:
        """The report file first: if it cannot be written (OSError), nothing is printed yet,
        so the caller can print a summary that says so. `upstreams` is gone through once, one
        record at a time, unless the report file holds them all."""
        if self.report_file:
            upstreams = list(upstreams)
        self.save(upstreams, summary)
        self.print_summary(upstreams, summary)

    def save(self, upstreams: Iterable[dict[str, Any]], summary: dict[str, Any]) -> None:
        """The whole document: every item and cluster, nothing cut (no Secret data either:
        records never hold any)."""
        if self.report_file:
            with open(self.report_file, "w", encoding="utf-8") as out:
                document = {"items": self._items, "upstream": list(upstreams), "summary": summary}
                # Without the run's credentials, whatever a record quotes (redact.scrub):
                # json.dump writes each string whole, so each is scrubbed whole.
                json.dump(document, _Scrubbing(out), indent=2)
                out.write("\n")

    def print_summary(self, upstreams: Iterable[dict[str, Any]], summary: dict[str, Any]) -> None:
        """One line per upstream cluster, then the summary (last, as pipelines expect)."""
        if self.progress_stream is not None:
            self.progress_stream.write("\r\x1b[K")
        if self.log_format == "json":
            # Written a batch of lines at a time: one string of 10,000 clusters' lines was
            # the run's peak memory at the end.
            batch: list[str] = []
            for record in upstreams:
                batch.append(json_line(record) + "\n")
                if len(batch) >= SUMMARY_BATCH:
                    self._write("".join(batch))
                    batch.clear()
            self._write("".join([*batch, json_line(summary) + "\n"]))
        else:
            self._write(_text_summary([capped(u) for u in upstreams], capped(summary)))

    def _write(self, text: str) -> None:
        if self.stdout_closed:
            return
        try:
            self.stream.write(scrub(text))  # never the run's credentials (redact.scrub)
            self.stream.flush()
        except BrokenPipeError:
            self._closed()

    def _closed(self) -> None:
        self.stdout_closed = True
        silence(self.stream)
        if self.on_stdout_closed is not None:
            self.on_stdout_closed()


class _Scrubbing:
    """A file that writes what it is given without the run's credentials (redact.scrub)."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def write(self, text: str) -> int:
        return self.out.write(scrub(text))


def plain_record(
    outcome: Outcome, run_id: str, dry_run: bool, emitted: datetime, error: Exception
) -> dict[str, Any]:
    """An item record of plain strings only, for an outcome whose full record could not be
    formatted: what happened to the object is still said, and why the rest is missing."""
    ref = outcome.ref
    return {
        **envelope("item", run_id, emitted),
        "sweep": outcome.sweep.value,
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "namespace": ref.namespace,
        "name": ref.name,
        "uid": ref.uid,
        "age_seconds": None,
        "action": outcome.action.value,
        "reason": outcome.reason,
        "detail": f"{outcome.detail} (report: not every field could be written: "
        f"{error_line(error)})",
        "dry_run": dry_run,
    }


def silence(stream: IO[str]) -> None:
    """After a BrokenPipeError: what is still buffered would fail again at exit ("Exception
    ignored ... BrokenPipe"), so point the descriptor at /dev/null, as the Python docs advise
    for SIGPIPE."""
    try:
        descriptor: int | None = stream.fileno()
    except (AttributeError, OSError, ValueError):
        descriptor = None  # not a file (a test's StringIO)
    if descriptor is not None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, descriptor)
        os.close(devnull)


def _text_line(record: dict[str, Any]) -> str:
    where = f"{record['namespace']}/{record['name']}" if record["namespace"] else record["name"]
    return visible(
        f"{record['action']:<13} {record['sweep']:<10} {record['kind']:<16} {where}  "
        f"[{record['reason']}] {record['detail']}{_cut(record)}"
    )


def _would_delete(summary: dict[str, Any]) -> str:
    """All sweeps' `would_delete` together, at the head of the last line: what a dry run
    would delete this run, and what it would delete later, from when to when; then, apart,
    what the sweeps that are not enforced would delete if they were."""
    enforced = summary.get("would_delete", {})
    if_enforced = summary.get("would_delete_if_enforced", {})
    said = _pending("would delete", list(enforced.values())) if enforced else ""
    if if_enforced:
        names = ", ".join(if_enforced)
        said += _pending(f"would delete if enforced ({names})", list(if_enforced.values()))
    return said


def _pending(what: str, sweeps: list[dict[str, Any]]) -> str:
    this_run = sum(s["this_run"] for s in sweeps)
    later = sum(s["later"] for s in sweeps)
    # RFC 3339 times, all UTC and written alike: they sort as text.
    earliest = min((s["earliest"] for s in sweeps if s["earliest"]), default=None)
    latest = max((s["latest"] for s in sweeps if s["latest"]), default=None)
    when = f" ({earliest} to {latest})" if earliest and latest else ""
    return f"{what}: {this_run} this run, {later} later{when}; "


def _cut(record: dict[str, Any]) -> str:
    truncated = record.get("truncated")
    return f" (truncated: {', '.join(sorted(truncated))})" if truncated else ""


def _text_summary(upstreams: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    lines = [
        "",
        f"gcjob {summary['version']} run {summary['run_id']} on {summary['hub']}"
        f" ({'dry run' if summary['dry_run'] else 'delete'})",
        f"{'sweep':<12}{'status':<16}{'action':<14}{'reason':<28}{'count':>7}",
    ]
    for sweep, info in summary["sweeps"].items():
        actions = summary["counts"].get(sweep, {})
        rows = [
            (a, r, n) for a, reasons in sorted(actions.items()) for r, n in sorted(reasons.items())
        ]
        status = info["status"]
        if not rows:
            lines.append(f"{sweep:<12}{status:<16}{'-':<14}{'-':<28}{0:>7}")
        for index, (action, reason, count) in enumerate(rows):
            label = (sweep, status) if index == 0 else ("", "")
            lines.append(f"{label[0]:<12}{label[1]:<16}{action:<14}{reason:<28}{count:>7}")
        if info.get("detail"):
            lines.append(f"{'':<12}{info['detail']}")
    for info in upstreams:
        lines.append(
            f"upstream {info['cluster']}: {info['status']} ({info['routes']} routes) "
            f"{info['detail']}{_cut(info)}"
        )
    lines.append(
        f"{_would_delete(summary)}API requests: {summary['api_requests']['total']}; "
        f"exit {summary['exit_code']}: {summary['exit_reason']}{_cut(summary)}"
    )
    # Names, details and server messages come from clusters: nothing raw reaches a terminal.
    return "".join(visible(line) + "\n" for line in lines)
