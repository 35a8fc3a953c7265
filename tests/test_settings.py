"""gcjob.settings.parse_duration: the --min-age and --timeout values."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gcjob.settings import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("5m", 300),
        ("1h", 3600),
        ("1h30m", 5400),
        ("1h30m15s", 5415),
        ("2m30s", 150),
        ("90", 90),
        ("0", 0),
        ("0s", 0),
        ("1.5", 1.5),
        (" 5m ", 300),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "5x",
        "-1",
        "-5m",
        "m",
        "h",
        "s",
        "5m1h",
        "1 h",
        "five",
        "nan",
        "1d",
        "inf",
        "1e20",
        "1_000",
        "1_0m",
    ],
)
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)
