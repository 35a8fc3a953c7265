"""Writes the report: JSON lines on stdout (python-json-logger), or text for a person.

Operational logs go to stderr (see gcjob/logs.py); stdout carries the report only, so a
log pipeline can ingest it as is.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from datetime import datetime
from typing import IO, Any

from pythonjsonlogger.json import JsonFormatter

from gcjob.model import Action, Outcome, Sweep
from gcjob.report.records import Tally, item_record


def _json_logger(stream: IO[str]) -> logging.Logger:
    logger = logging.getLogger("gcjob.report")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter(fmt=[], json_ensure_ascii=False))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger


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
    ) -> None:
        self.run_id = run_id
        self.dry_run = dry_run
        self.log_format = log_format
        self.report_healthy = report_healthy
        self.report_file = report_file
        self.stream = stream or sys.stdout
        self.progress_stream = progress
        self.tally = Tally()
        self.observer = observer  # sees every item record reported (the webhook's first few)
        self._items: list[dict[str, Any]] = []
        self._logger = _json_logger(self.stream) if log_format == "json" else None

    def outcome(self, outcome: Outcome, now: datetime) -> None:
        self.tally.add(outcome)
        if outcome.healthy and not self.report_healthy:
            return  # healthy objects are counts only: a big hub must not flood the pipeline
        record = item_record(outcome, self.run_id, now, self.dry_run)
        if self.observer is not None:
            self.observer(record)
        if self.report_file:
            self._items.append(record)
        if self._logger is not None:
            self._logger.info(record)
        else:
            self.stream.write(_text_line(record) + "\n")
            self.stream.flush()

    def count_healthy(self, sweep: Sweep, reason: str, count: int) -> None:
        """Healthy objects decided without keeping an Outcome for each: counts only."""
        self.tally.add_count(sweep, Action.SKIPPED, reason, count)

    def progress(self, message: str) -> None:
        if self.progress_stream is not None:
            self.progress_stream.write(f"\r\x1b[K{message}")
            self.progress_stream.flush()

    def finish(self, summary: dict[str, Any]) -> None:
        """The report file first: if it cannot be written (OSError), nothing is printed yet,
        so the caller can print a summary that says so."""
        self.save(summary)
        self.print_summary(summary)

    def save(self, summary: dict[str, Any]) -> None:
        if self.report_file:
            with open(self.report_file, "w", encoding="utf-8") as out:
                json.dump({"items": self._items, "summary": summary}, out, indent=2)
                out.write("\n")

    def print_summary(self, summary: dict[str, Any]) -> None:
        if self.progress_stream is not None:
            self.progress_stream.write("\r\x1b[K")
        if self._logger is not None:
            self._logger.info(summary)
        else:
            self.stream.write(_text_summary(summary))
            self.stream.flush()


def _text_line(record: dict[str, Any]) -> str:
    where = f"{record['namespace']}/{record['name']}" if record["namespace"] else record["name"]
    return (
        f"{record['action']:<13} {record['sweep']:<10} {record['kind']:<16} {where}  "
        f"[{record['reason']}] {record['detail']}"
    )


def _text_summary(summary: dict[str, Any]) -> str:
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
    for cluster, info in summary.get("upstream_clusters", {}).items():
        lines.append(
            f"upstream {cluster}: {info['status']} ({info['routes']} routes) {info['detail']}"
        )
    lines.append(
        f"API requests: {summary['api_requests']['total']}; "
        f"exit {summary['exit_code']}: {summary['exit_reason']}"
    )
    return "\n".join(lines) + "\n"
