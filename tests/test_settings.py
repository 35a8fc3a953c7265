"""gcjob.settings.parse_duration: the --min-age and --timeout values."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
        ("0.001", 0.001),
        ("1.5m", 90),
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
        "1e-300",
        "1e2",
        "+5",
        "0.0000001",
        ".5",
        "5.",
        "٣٠٠",
        "\uff11\uff10m",  # full-width digits
        "1.5e1s",
    ],
)
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@given(st.text(max_size=12))
def test_any_text_is_a_duration_of_ascii_digits_or_refused(text: str) -> None:
    """Generated: whatever an operator or a GCJOB_* variable holds, the answer is a duration
    in range written in ASCII digits and h/m/s, or a ValueError; a nonzero text is never 0."""
    try:
        duration = parse_duration(text)
    except ValueError:
        return
    assert text.strip().isascii()
    assert timedelta(0) <= duration <= timedelta(days=366)
    if any(c in "123456789" for c in text):
        assert duration > timedelta(0)
