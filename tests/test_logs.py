from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest

from gcjob import logs
from gcjob.logs import log


def test_rfc3339_is_utc_with_milliseconds_and_z() -> None:
    assert logs.rfc3339(0.0) == "1970-01-01T00:00:00.000Z"
    assert logs.rfc3339(1795395365.55) == "2026-11-23T00:56:05.550Z"


def test_a_json_log_line_carries_time_level_logger_message_and_run_id(
    capsys: pytest.CaptureFixture[str],
) -> None:
    logs.setup("json", "run-1234")
    before = time.time()
    log.warning("could not release lease: %s", "gone")
    line = json.loads(capsys.readouterr().err)
    assert line == {
        "time": line["time"],
        "level": "WARNING",
        "logger": "gcjob",
        "message": "could not release lease: gone",
        "run_id": "run-1234",
    }
    logged = datetime.strptime(line["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert abs(logged.timestamp() - before) < 5


def test_a_text_log_line_stays_one_line_for_a_person(capsys: pytest.CaptureFixture[str]) -> None:
    logs.setup("text", "run-1234")
    log.warning("GCJOB_DELETE is ignored")
    assert capsys.readouterr().err == "gcjob: WARNING: GCJOB_DELETE is ignored\n"


def test_warn_once_says_a_thing_once_per_run(capsys: pytest.CaptureFixture[str]) -> None:
    logs.setup("text", "run-1")
    for _ in range(3):
        logs.warn_once("insecure:hub", "TLS verification is off")
    logs.warn_once("insecure:upstream", "TLS verification is off upstream")
    assert capsys.readouterr().err.splitlines() == [
        "gcjob: WARNING: TLS verification is off",
        "gcjob: WARNING: TLS verification is off upstream",
    ]
    logs.setup("text", "run-2")  # a new run says it again
    logs.warn_once("insecure:hub", "TLS verification is off")
    assert capsys.readouterr().err == "gcjob: WARNING: TLS verification is off\n"


def test_without_a_run_there_is_no_run_id(capsys: pytest.CaptureFixture[str]) -> None:
    logs.setup("json")  # gcjob explain: not a sweep
    log.warning("x")
    assert "run_id" not in json.loads(capsys.readouterr().err)
