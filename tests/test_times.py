"""gcjob.times: RFC 3339 times with a zone, or None."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from gcjob.times import parse_time


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-12T09:14:27Z", datetime(2026, 11, 12, 9, 14, 27, tzinfo=UTC)),
        ("2026-11-12T09:14:27.5Z", datetime(2026, 11, 12, 9, 14, 27, 500000, tzinfo=UTC)),
        (
            "2026-11-12T11:14:27+02:00",
            datetime(2026, 11, 12, 11, 14, 27, tzinfo=timezone(timedelta(hours=2))),
        ),
        # what PyYAML makes of an unquoted timestamp with a zone
        (
            datetime(2026, 11, 12, 9, 14, 27, tzinfo=UTC),
            datetime(2026, 11, 12, 9, 14, 27, tzinfo=UTC),
        ),
    ],
)
def test_parse_time(value: Any, expected: datetime) -> None:
    parsed = parse_time(value)
    assert parsed == expected
    assert parsed is not None and parsed.tzinfo is not None


@pytest.mark.parametrize(
    "value",
    ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-23:59", "9999-12-31T23:59:59.999999-00:01"],
)
def test_a_time_outside_the_representable_years_once_in_utc_is_none(value: str) -> None:
    assert parse_time(value) is None


def test_a_time_is_returned_in_utc() -> None:
    parsed = parse_time("2026-11-12T11:14:27+02:00")
    assert parsed is not None and parsed.utcoffset() == timedelta(0)
