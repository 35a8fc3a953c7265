"""The deletion record's directory and file (gcjob/act/record.py); its write-ahead order on the
real server: tests/e2e/test_undo_e2e.py."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gcjob.act.record import PROBE, DeletionRecord, check_record_dir, record_file_name
from gcjob.model import Action, Outcome, Sweep, Verdict
from testbed.model import ref

STARTED = datetime(2026, 11, 24, 3, 15, 9, tzinfo=UTC)


def test_a_usable_directory_is_left_as_it_was(tmp_path: Path) -> None:
    check_record_dir(str(tmp_path))
    assert not (tmp_path / PROBE).exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("what", ["missing", "a-file"])
def test_a_directory_that_is_not_one_is_refused(tmp_path: Path, what: str) -> None:
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(OSError):
        check_record_dir(str(tmp_path / what))


def test_one_file_per_run_sorted_by_its_start_in_utc() -> None:
    started = datetime(2026, 11, 24, 3, 15, 9, tzinfo=UTC)
    assert record_file_name("run-1", started) == "deletions-20261124T031509Z-run-1.jsonl"
    assert record_file_name("a", started) < record_file_name("a", started.replace(hour=4))


def test_a_probe_name_left_in_the_directory_is_never_opened(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.write_text("kept")
    (tmp_path / PROBE).symlink_to(precious)  # the old fixed probe name, planted as a link
    check_record_dir(str(tmp_path))
    assert precious.read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == [PROBE, "precious"]


@pytest.mark.parametrize("planted", ["a-file", "a-symlink"])
def test_a_file_already_under_the_runs_name_is_not_written_and_stops_the_deletes(
    tmp_path: Path, planted: str
) -> None:
    precious = tmp_path / "precious"
    precious.write_text("kept")
    path = tmp_path / record_file_name("run-1", STARTED)
    if planted == "a-file":
        path.write_text("kept")
    else:
        path.symlink_to(precious)
    record = DeletionRecord(str(tmp_path), "run-1", clock=lambda: STARTED)
    verdict = Verdict(ref(), True, "orphaned", "gone")

    record.after(Outcome.of(Sweep.COMPANIONS, verdict, Action.DELETED))

    assert record.broken is not None and "cannot write" in record.broken
    assert path.read_text() == "kept" and precious.read_text() == "kept"
