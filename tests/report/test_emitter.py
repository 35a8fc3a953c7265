"""gcjob.report.emitter.Reporter: JSON lines or text, healthy objects as counts only."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from gcjob.model import PROJECT_COUNT_STATES, Action, Outcome, Sweep
from gcjob.report.bounds import MAX_RECORD_BYTES
from gcjob.report.emitter import SUMMARY_BATCH, Reporter
from gcjob.report.records import upstream_record
from testbed.model import HUB_NS, NOW, ref

RUN_ID = "0b6f3a52-1c1d-4d0a-9b7e-8f2e4c6a1d3b"


def orphan() -> Outcome:
    return Outcome(
        Sweep.COMPANIONS,
        ref("ConfigMap", "orphan-app-config"),
        Action.WOULD_DELETE,
        "orphaned",
        f"no WorkloadDeployment named web-dfw in {HUB_NS}",
        referrers=("shop/web-dfw",),
    )


def healthy() -> Outcome:
    return Outcome(
        Sweep.COMPANIONS,
        ref("ConfigMap", "web-config", uid="uid-2"),
        Action.SKIPPED,
        "referrer-live",
        "WorkloadDeployment web-dfw exists",
        healthy=True,
        referrers=("default/web-dfw",),
    )


def gone_route() -> Outcome:
    return Outcome(
        Sweep.ROUTES,
        ref("HTTPRoute", "orphan-route", uid="uid-3"),
        Action.WOULD_DELETE,
        "upstream-gateways-gone",
        "no Gateway default/deleted-gateway on upstream cluster single",
        cluster="single",
        gateways=("default/deleted-gateway",),
    )


def summary(reporter: Reporter, exit_code: int = 0) -> dict[str, Any]:
    """A minimal summary with every key the schema requires."""
    return {
        "record": "summary",
        "run_id": RUN_ID,
        "time": "2026-07-01T12:00:01.250Z",
        "version": "0.1.0",
        "hub": "test-hub",
        "dry_run": True,
        "started": "2026-07-01T12:00:00Z",
        "finished": "2026-07-01T12:00:01Z",
        "decided_at": "2026-07-01T12:00:00Z",
        "min_age_seconds": 300,
        "grace_seconds": 600,
        "marks": {},
        "would_delete": reporter.due.as_dict(["companions", "bindings", "routes"]),
        "would_delete_if_enforced": {},
        "writes": {"counted": 0, "max": 1000},
        "sweeps": {
            "companions": {"status": "completed", "detail": "", "scanned": 2, "in_scope": 2},
            "bindings": {"status": "completed", "detail": "", "scanned": 0, "in_scope": 0},
            "routes": {
                "status": "not-configured",
                "detail": "no upstream configured (--upstream-kubeconfig)",
                "scanned": 0,
                "in_scope": 0,
            },
        },
        "counts": reporter.tally.as_dict(),
        "totals": reporter.tally.totals(),
        "upstream_counts": {"ok": 1},
        "projects": dict.fromkeys(PROJECT_COUNT_STATES, 0),
        "api_requests": {"total": 7, "by_target": {"hub": 6, "upstream": 1}},
        "exit_code": exit_code,
        "exit_reason": "completed",
    }


def upstreams() -> list[dict[str, Any]]:
    return [
        upstream_record(
            "single",
            {
                "status": "ok",
                "detail": "",
                "server": "https://127.0.0.1:1",
                "routes": 1,
                "gateways_found": 0,
            },
            1,
            RUN_ID,
            NOW,
        )
    ]


def reporter(
    stream: io.StringIO,
    *,
    log_format: str = "json",
    report_healthy: bool = False,
    report_file: str | None = None,
    progress: io.StringIO | None = None,
) -> Reporter:
    return Reporter(
        run_id=RUN_ID,
        dry_run=True,
        log_format=log_format,
        report_healthy=report_healthy,
        report_file=report_file,
        stream=stream,
        progress=progress,
    )


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


# -- JSON lines -----------------------------------------------------------------------------


def test_json_lines(validator: Draft202012Validator) -> None:
    stream = io.StringIO()
    rep = reporter(stream)
    rep.outcome(orphan(), NOW)
    rep.outcome(gone_route(), NOW)
    rep.finish(upstreams(), summary(rep))
    lines = _lines(stream)
    assert [line["record"] for line in lines] == ["item", "item", "upstream", "summary"]
    for line in lines:
        validator.validate(line)
        assert line["run_id"] == RUN_ID
        assert line["version"]
        assert line["time"].endswith("Z")
    assert lines[2]["cluster"] == "single"
    assert lines[2]["api_requests"] == 1
    assert lines[0]["name"] == "orphan-app-config"
    assert lines[0]["referrers"] == ["shop/web-dfw"]
    assert lines[0]["age_seconds"] == 3600
    assert lines[0]["run_id"] == RUN_ID
    assert lines[0]["dry_run"] is True
    assert lines[1]["cluster"] == "single"
    assert lines[3]["totals"]["would-delete"] == 2


def test_every_line_is_one_json_object() -> None:
    stream = io.StringIO()
    rep = reporter(stream)
    detail_with_newline = Outcome(
        Sweep.BINDINGS,
        ref("ResourceBinding", "gone-config-configmap"),
        Action.FAILED,
        "delete-failed",
        "HTTP 500 InternalError\non a second line",
    )
    rep.outcome(detail_with_newline, NOW)
    rep.finish(upstreams(), summary(rep, exit_code=1))
    raw = stream.getvalue().splitlines()
    assert len(raw) == 3
    assert json.loads(raw[0])["detail"] == "HTTP 500 InternalError\non a second line"


def test_healthy_outcomes_are_counts_only() -> None:
    stream = io.StringIO()
    rep = reporter(stream)
    rep.outcome(healthy(), NOW)
    rep.outcome(orphan(), NOW)
    rep.finish(upstreams(), summary(rep))
    lines = _lines(stream)
    assert [line.get("name") for line in lines if line["record"] == "item"] == ["orphan-app-config"]
    assert lines[-1]["counts"]["companions"]["skipped"] == {"referrer-live": 1}
    assert rep.tally.total(Action.SKIPPED) == 1


def test_report_healthy_itemises_them(validator: Draft202012Validator) -> None:
    stream = io.StringIO()
    rep = reporter(stream, report_healthy=True)
    rep.outcome(healthy(), NOW)
    items = [line for line in _lines(stream) if line["record"] == "item"]
    assert [i["reason"] for i in items] == ["referrer-live"]
    validator.validate(items[0])


def test_report_file(tmp_path: Path, validator: Draft202012Validator) -> None:
    stream = io.StringIO()
    path = tmp_path / "report.json"
    rep = reporter(stream, report_file=str(path))
    rep.outcome(orphan(), NOW)
    rep.outcome(healthy(), NOW)
    rep.outcome(gone_route(), NOW)
    rep.finish(upstreams(), summary(rep))
    document = json.loads(path.read_text(encoding="utf-8"))
    assert set(document) == {"items", "upstream", "summary"}
    assert [u["cluster"] for u in document["upstream"]] == ["single"]
    assert [i["name"] for i in document["items"]] == ["orphan-app-config", "orphan-route"]
    for item in document["items"]:
        validator.validate(item)
    validator.validate(document["summary"])
    assert document["summary"]["counts"]["companions"]["skipped"] == {"referrer-live": 1}
    # the stream carries the same records
    assert _lines(stream)[:-2] == document["items"]


def test_report_file_with_report_healthy(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    rep = reporter(io.StringIO(), report_file=str(path), report_healthy=True)
    rep.outcome(healthy(), NOW)
    rep.finish(upstreams(), summary(rep))
    document = json.loads(path.read_text(encoding="utf-8"))
    assert [i["reason"] for i in document["items"]] == ["referrer-live"]


def test_report_file_in_text_format(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    rep = reporter(io.StringIO(), log_format="text", report_file=str(path))
    rep.outcome(orphan(), NOW)
    rep.finish(upstreams(), summary(rep))
    document = json.loads(path.read_text(encoding="utf-8"))
    assert [i["name"] for i in document["items"]] == ["orphan-app-config"]
    assert document["summary"]["record"] == "summary"


# -- text -----------------------------------------------------------------------------------


def test_text_format() -> None:
    stream = io.StringIO()
    rep = reporter(stream, log_format="text")
    rep.outcome(orphan(), NOW)
    rep.outcome(healthy(), NOW)
    rep.outcome(gone_route(), NOW)
    rep.finish(upstreams(), summary(rep))
    text = stream.getvalue()
    lines = text.splitlines()
    item_lines = [line for line in lines if line.startswith(("would-delete", "skipped"))]
    assert len(item_lines) == 2
    assert item_lines[0].split()[:3] == ["would-delete", "companions", "ConfigMap"]
    assert f"{HUB_NS}/orphan-app-config" in item_lines[0]
    assert "[orphaned]" in item_lines[0]
    assert "[upstream-gateways-gone]" in item_lines[1]
    assert "web-config" not in text  # healthy: counts only
    rows = [line.split() for line in lines]
    assert ["sweep", "status", "action", "reason", "count"] in rows
    assert ["companions", "completed", "skipped", "referrer-live", "1"] in rows
    assert ["would-delete", "orphaned", "1"] in rows
    assert ["routes", "not-configured", "would-delete", "upstream-gateways-gone", "1"] in rows
    assert ["bindings", "completed", "-", "-", "0"] in rows
    assert any(line.startswith("upstream single: ok") for line in lines)
    assert "exit 0: completed" in text
    assert "API requests: 7" in text
    assert "dry run" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(lines[0] or lines[1])


def test_text_cluster_wide_object_has_no_namespace_prefix() -> None:
    stream = io.StringIO()
    rep = reporter(stream, log_format="text")
    rep.outcome(
        Outcome(
            Sweep.BINDINGS,
            ref("ResourceBinding", "gone-config-configmap", namespace=""),
            Action.SKIPPED,
            "lookup-failed",
            "could not read ConfigMap gone-config",
        ),
        NOW,
    )
    (line,) = stream.getvalue().splitlines()
    assert " gone-config-configmap  [lookup-failed]" in line
    assert "/gone-config-configmap" not in line


# -- progress -------------------------------------------------------------------------------


def test_progress_goes_to_its_own_stream() -> None:
    stream, progress = io.StringIO(), io.StringIO()
    rep = reporter(stream, log_format="text", progress=progress)
    rep.progress("companions: sweeping")
    rep.finish(upstreams(), summary(rep))
    assert "companions: sweeping" in progress.getvalue()
    assert progress.getvalue().endswith("\r\x1b[K")  # cleared at the end
    assert "sweeping" not in stream.getvalue()


def test_no_progress_stream_means_no_progress() -> None:
    stream = io.StringIO()
    rep = reporter(stream)
    rep.progress("companions: sweeping")
    assert stream.getvalue() == ""


def test_json_report_does_not_leak_to_other_loggers(capsys: pytest.CaptureFixture[str]) -> None:
    stream = io.StringIO()
    rep = reporter(stream)
    rep.outcome(orphan(), NOW)
    rep.finish(upstreams(), summary(rep))
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ""
    assert len(stream.getvalue().splitlines()) == 3


def test_a_second_reporter_does_not_write_to_the_first_stream() -> None:
    first, second = io.StringIO(), io.StringIO()
    reporter(first)
    rep = reporter(second)
    rep.outcome(orphan(), NOW)
    assert first.getvalue() == ""
    assert len(second.getvalue().splitlines()) == 1


# -- bounded lines (issue 13) -----------------------------------------------------------------


def test_a_hostile_record_is_one_bounded_line_and_the_report_file_keeps_it_whole(
    tmp_path: Path, validator: Draft202012Validator
) -> None:
    keys = tuple(f"p/wd-{i:05d}" for i in range(10_000))
    hostile = Outcome(
        Sweep.COMPANIONS,
        ref("ConfigMap", "many-referrers"),
        Action.WOULD_DELETE,
        "orphaned",
        "no WorkloadDeployment named " + ", ".join(k.split("/")[1] for k in keys),
        referrers=keys,
    )
    stream = io.StringIO()
    path = tmp_path / "report.json"
    rep = reporter(stream, report_file=str(path))
    rep.outcome(hostile, NOW)
    rep.finish(upstreams(), summary(rep))
    raw = stream.getvalue().split("\n")
    assert raw[-1] == "" and len(raw) - 1 == 3  # three records, three lines, none split
    for line in raw[:-1]:
        assert len(line.encode("utf-8")) + 1 <= MAX_RECORD_BYTES
        validator.validate(json.loads(line))
    item = json.loads(raw[0])
    assert item["truncated"] == {"detail": len(hostile.detail), "referrers": 10_000}
    assert item["referrers"] == list(keys[:20])
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["items"][0]["referrers"] == list(keys)
    assert document["items"][0]["detail"] == hostile.detail
    assert "truncated" not in document["items"][0]


def test_text_output_names_what_was_cut() -> None:
    stream = io.StringIO()
    rep = reporter(stream, log_format="text")
    rep.outcome(
        Outcome(
            Sweep.BINDINGS,
            ref("ResourceBinding", "x-configmap"),
            Action.FAILED,
            "delete-failed",
            "HTTP 500: " + "m" * 50_000,
        ),
        NOW,
    )
    (line,) = stream.getvalue().splitlines()
    assert line.endswith("… (truncated: detail)")
    assert len(line) < 2000


# -- a closed stdout (issue 12 item 8) --------------------------------------------------------


class ClosedPipe(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    def write(self, text: str) -> int:
        self.attempts += 1
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_stdout_is_reported_once_and_never_written_again(tmp_path: Path) -> None:
    stream, path, calls = ClosedPipe(), tmp_path / "report.json", []
    rep = Reporter(
        run_id=RUN_ID,
        dry_run=True,
        log_format="json",
        report_healthy=False,
        report_file=str(path),
        stream=stream,
        on_stdout_closed=lambda: calls.append("closed"),
    )
    rep.outcome(orphan(), NOW)
    rep.outcome(gone_route(), NOW)
    rep.finish(upstreams(), summary(rep))
    assert calls == ["closed"]
    assert stream.attempts == 1
    document = json.loads(path.read_text(encoding="utf-8"))
    assert [i["name"] for i in document["items"]] == ["orphan-app-config", "orphan-route"]


def test_the_text_reports_last_line_says_what_would_go_this_run_and_later() -> None:
    """Issue 23 item 2: the last line counts the orphans left in place, by when they go."""
    stream = io.StringIO()
    rep = reporter(stream, log_format="text")
    due = replace(orphan(), would_delete_at=NOW)
    marked = replace(
        gone_route(), action=Action.WOULD_MARK, would_delete_at=NOW + timedelta(minutes=10)
    )
    waiting = replace(
        orphan(),
        ref=ref("ConfigMap", "waiting", uid="uid-9"),
        action=Action.SKIPPED,
        reason="grace-period",
        would_delete_at=NOW + timedelta(minutes=3),
    )
    for item in (due, marked, waiting, healthy()):
        rep.outcome(item, NOW)
    rep.finish(upstreams(), summary(rep))

    last = stream.getvalue().splitlines()[-1]
    assert last.startswith(
        "would delete: 1 this run, 2 later (2026-07-01T12:03:00Z to 2026-07-01T12:10:00Z); "
        "API requests: 7; exit 0"
    ), last
    items = [line for line in stream.getvalue().splitlines() if line.startswith("would-")]
    assert len(items) == 2


def test_a_run_with_no_orphans_says_none_would_go() -> None:
    stream = io.StringIO()
    rep = reporter(stream, log_format="text")
    rep.outcome(healthy(), NOW)
    rep.finish(upstreams(), summary(rep))
    assert stream.getvalue().splitlines()[-1].startswith("would delete: 0 this run, 0 later; ")


def test_the_text_line_says_what_a_sweep_not_enforced_would_delete_apart() -> None:
    """Issue 34 item 2: a report-only sweep's would-delete is never counted as pending."""
    stream = io.StringIO()
    rep = reporter(stream, log_format="text")
    rep.outcome(replace(orphan(), would_delete_at=NOW), NOW)
    copy = replace(orphan(), sweep=Sweep.COPIES, would_delete_at=NOW, if_enforced=True)
    rep.outcome(copy, NOW)
    assert rep.due.if_enforced is not None
    document = {**summary(rep), "would_delete_if_enforced": rep.due.if_enforced.as_dict(["copies"])}
    rep.finish(upstreams(), document)

    last = stream.getvalue().splitlines()[-1]
    assert last.startswith(
        "would delete: 1 this run, 0 later; would delete if enforced (copies): 1 this run, "
        "0 later; API requests: 7"
    ), last


def test_many_upstream_clusters_are_written_one_line_each_the_summary_last() -> None:
    """The clusters' records are made as they are written, a batch of lines at a time (all of
    them at once, with one string of their lines, were the run's peak at 10,000 clusters)."""
    stream = io.StringIO()
    rep = reporter(stream)
    (one,) = upstreams()
    made: list[int] = []

    def clusters() -> Iterator[dict[str, Any]]:
        for n in range(SUMMARY_BATCH * 2 + 1):
            made.append(n)
            yield {**one, "cluster": f"proj-{n:05d}"}

    rep.finish(clusters(), summary(rep))
    lines = _lines(stream)
    assert [line["cluster"] for line in lines[:-1]] == [f"proj-{n:05d}" for n in made]
    assert len(made) == SUMMARY_BATCH * 2 + 1
    assert lines[-1]["record"] == "summary"
    assert stream.getvalue().count("\n") == len(made) + 1
