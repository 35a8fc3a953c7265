"""gcjob.times: RFC 3339 times with a zone, or None."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.times import RunClock, parse_http_date, parse_time, run_clock


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


# -- the run's clock: the hub's Date -----------------------------------------------------------

POD_SKEWED = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)  # an hour behind the hub


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("Mon, 23 Nov 2026 10:00:00 GMT", datetime(2026, 11, 23, 10, 0, tzinfo=UTC)),
        ("Sat, 01 Jan 0001 00:00:00 GMT", None),  # the weekday does not match
        ("Mon, 01 Jan 0001 00:00:00 GMT", datetime(1, 1, 1, tzinfo=UTC)),
        ("Fri, 31 Dec 9999 23:59:59 GMT", datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
        ("Sunday, 06-Nov-94 08:49:37 GMT", None),  # RFC 850: obsolete
        ("Sun Nov  6 08:49:37 1994", None),  # asctime: obsolete
        ("Mon, 23 Nov 2026 10:00:00 +0000", None),
        ("Mon, 31 Feb 2026 10:00:00 GMT", None),
        ("Mon, 23 Nov 2026 25:00:00 GMT", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_http_date(header: str | None, expected: datetime | None) -> None:
    assert parse_http_date(header) == expected


def test_a_live_run_decides_by_the_hubs_clock_whatever_the_pods() -> None:
    for pod in (POD_SKEWED, POD_SKEWED + timedelta(days=400)):
        clock = run_clock(None, "Mon, 23 Nov 2026 10:00:00 GMT", pod, live=True)
        assert clock == RunClock(datetime(2026, 11, 23, 10, 0, tzinfo=UTC))


@pytest.mark.parametrize("header", [None, "", "yesterday", "Mon, 23 Nov 2026 10:00:00 +0000"])
def test_a_live_hub_without_a_usable_date_leaves_the_pods_clock_with_the_problem_stated(
    header: str | None,
) -> None:
    clock = run_clock(None, header, POD_SKEWED, live=True)
    assert clock.now == POD_SKEWED
    assert "no usable Date header" in clock.problem


def test_now_and_snapshots_decide_by_their_own_time() -> None:
    moment = datetime(2030, 1, 1, tzinfo=UTC)
    assert run_clock(moment, None, POD_SKEWED, live=True) == RunClock(moment)
    assert run_clock(None, None, POD_SKEWED, live=False) == RunClock(POD_SKEWED)


@given(st.text(max_size=80) | st.none())
def test_any_date_header_is_a_time_or_a_stated_problem(header: str | None) -> None:
    clock = run_clock(None, header, POD_SKEWED, live=True)
    assert (clock.now == POD_SKEWED and clock.problem) or clock.now.tzinfo is UTC
    assert "\n" not in clock.problem or (header is not None and "\n" in header[:64])
