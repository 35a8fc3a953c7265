"""The deletion record's directory and file (gcjob/act/record.py); its write-ahead order on the
real server: tests/e2e/test_undo_e2e.py."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gcjob.act.record import PROBE, check_record_dir, record_file_name


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
