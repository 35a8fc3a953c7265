"""Running gcjob and reading what it printed: the CLI in-process or in a subprocess, each stdout
line checked against the report schema (testbed/schemas.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from gcjob.cli import cli
from gcjob.report.records import rfc3339
from gcjob.times import parse_time
from testbed import schemas

# `gcjob explain` names its target kind/namespace/name with these short kinds
SHORT_KINDS = {
    "ConfigMap": "cm",
    "Secret": "secret",
    "ResourceBinding": "rb",
    "HTTPRoute": "httproute",
}


@dataclass
class Result:
    exit_code: int
    records: list[dict[str, Any]]
    stdout: str
    stderr: str

    @property
    def items(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["record"] == "item"]

    @property
    def summary(self) -> dict[str, Any]:
        return _summary(self.records, self.stdout)

    def item(self, kind: str, name: str) -> dict[str, Any] | None:
        found = [r for r in self.items if r["kind"] == kind and r["name"] == name]
        assert len(found) <= 1, f"{kind} {name} reported {len(found)} times"
        return found[0] if found else None

    def outcome(self, kind: str, name: str) -> tuple[str, str] | None:
        found = self.item(kind, name)
        return None if found is None else (found["action"], found["reason"])

    def judged_during(self, value: object) -> bool:
        """Whether a time this run reported or wrote (an item's orphaned_since, a mark's
        time) is the hub's time while it judged: no earlier than its decided_at (the hub's
        time when it began deciding), no later than that plus the run's length (and two
        seconds: the report's times are whole seconds). Issue 46: each judgement takes the
        hub's time once the reads it rests on came back, not the run's start."""
        moment, start = parse_time(value), parse_time(self.summary["decided_at"])
        began, ended = parse_time(self.summary["started"]), parse_time(self.summary["finished"])
        assert moment is not None and start is not None, (value, self.summary["decided_at"])
        assert began is not None and ended is not None
        return start <= moment <= start + (ended - began) + timedelta(seconds=2)


def to_the_second(value: object) -> str:
    """A mark's time as a report writes it (RFC 3339, whole seconds): a mark keeps its
    fraction of a second."""
    moment = parse_time(value)
    assert moment is not None, value
    return rfc3339(moment)


def records_of(stdout: str) -> list[dict[str, Any]]:
    """The report's records; every stdout line must be a schema-valid JSON record."""
    records = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    for record in records:
        schemas.REPORT.validate(record)
    return records


def summary_of(stdout: str) -> dict[str, Any]:
    """The summary of a report printed on `stdout` (of a run in a subprocess)."""
    return _summary(records_of(stdout), stdout)


def _summary(records: list[dict[str, Any]], stdout: str) -> dict[str, Any]:
    """The one summary record, which comes last."""
    summaries = [r for r in records if r["record"] == "summary"]
    assert len(summaries) == 1, stdout
    assert records[-1] is summaries[0], "the summary comes last"
    return summaries[0]


def run_gcjob(*args: str, env: dict[str, str] | None = None) -> Result:
    """`gcjob sweep ARGS`, the real CLI, in-process."""
    result = CliRunner().invoke(cli, ["sweep", *args], env=env, standalone_mode=False)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Result(int(result.return_value), records_of(result.stdout), result.stdout, result.stderr)


@dataclass
class SnapshotRun:
    exit_code: int
    report: dict[str, Any]  # the document --report-file wrote
    output: str  # what it printed


def sweep_snapshot(snapshot: str | Path, report_file: Path, *args: str) -> SnapshotRun:
    """`gcjob sweep --snapshot SNAPSHOT --report-file REPORT_FILE ARGS`, in-process, an error
    raised as it is."""
    argv = ["sweep", "--snapshot", str(snapshot), "--report-file", str(report_file), *args]
    result = CliRunner().invoke(cli, argv, standalone_mode=False, catch_exceptions=False)
    report = json.loads(report_file.read_text(encoding="utf-8"))
    return SnapshotRun(int(result.return_value), report, result.output)


@dataclass(frozen=True)
class HubSweep:
    """`gcjob sweep` against the test hub kept to one namespace, `sweep(ns, "--delete")`: the
    e2e tests' run (the `sweep` fixture: no lock, no minimum age, no grace)."""

    hub_args: tuple[str, ...]

    def __call__(self, namespace: str, *args: str) -> Result:
        return run_gcjob(*self.hub_args, "--namespace", namespace, *args)


def start_gcjob(*args: str) -> subprocess.Popen[str]:
    """`gcjob sweep ARGS` in a process of its own (to be signalled, or to run beside another),
    its output unbuffered, piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "gcjob", "sweep", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def upstreams(result: Result) -> dict[str, dict[str, Any]]:
    """The run's upstream records by cluster; each cluster is reported once."""
    records = [r for r in result.records if r["record"] == "upstream"]
    by_cluster = {r["cluster"]: r for r in records}
    assert len(by_cluster) == len(records), "a cluster reported twice"
    return by_cluster


@dataclass
class Explained:
    exit_code: int
    doc: dict[str, Any]

    @property
    def verdict(self) -> tuple[str, str]:
        return self.doc["verdict"]["action"], self.doc["verdict"]["reason"]

    @property
    def binding(self) -> tuple[str, str] | None:
        found = self.doc["binding"]
        return None if found is None else (found["action"], found["reason"])


def explain(kind: str, ns: str, name: str, *args: str) -> Explained:
    """`gcjob explain KIND/NS/NAME --output json ARGS` in-process, against a server: the
    document is schema-valid, and every step names the evidence it read, the object itself
    read first."""
    target = f"{SHORT_KINDS[kind]}/{ns}/{name}"
    result = CliRunner().invoke(
        cli, ["explain", target, "--output", "json", *args], standalone_mode=False
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    doc = json.loads(result.stdout)
    schemas.EXPLAIN.validate(doc)
    assert doc["steps"][0]["rule"] == "karmada-hub", doc
    assert all(step["evidence"] for step in doc["steps"]), doc
    assert any(read.startswith("GET ") for step in doc["steps"] for read in step["reads"]), doc
    return Explained(int(result.return_value), doc)
