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
