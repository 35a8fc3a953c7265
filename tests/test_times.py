"""gcjob.times: RFC 3339 times with a zone, or None."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.times import HubClock, parse_http_date, parse_time, run_clock


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
        clock = run_clock(None, "Mon, 23 Nov 2026 10:00:00 GMT", pod, 5.0, live=True)
        assert clock == HubClock(datetime(2026, 11, 23, 10, 0, tzinfo=UTC), 5.0)


@pytest.mark.parametrize("header", [None, "", "yesterday", "Mon, 23 Nov 2026 10:00:00 +0000"])
def test_a_live_hub_without_a_usable_date_leaves_the_pods_clock_with_the_problem_stated(
    header: str | None,
) -> None:
    clock = run_clock(None, header, POD_SKEWED, 5.0, live=True)
    assert clock.at == POD_SKEWED
    assert "no usable Date header" in clock.problem


def test_now_and_snapshots_decide_by_their_own_time() -> None:
    moment = datetime(2030, 1, 1, tzinfo=UTC)
    assert run_clock(moment, None, POD_SKEWED, 5.0, live=True) == HubClock(moment)
    assert run_clock(None, None, POD_SKEWED, 5.0, live=False) == HubClock(POD_SKEWED)


@given(st.text(max_size=80) | st.none())
def test_any_date_header_is_a_time_or_a_stated_problem(header: str | None) -> None:
    clock = run_clock(None, header, POD_SKEWED, 5.0, live=True)
    assert (clock.at == POD_SKEWED and clock.problem) or clock.at.tzinfo is UTC
    assert "\n" not in clock.problem or (header is not None and "\n" in header[:64])


class FakeMonotonic:
    def __init__(self) -> None:
        self.value = 1000.0

    def __call__(self) -> float:
        return self.value


def test_the_hubs_time_goes_on_from_its_date_by_the_monotonic_clock() -> None:
    """Issue 46: read once at the start, every mark carried the run's start time, minutes
    before its evidence was complete. The hub's time now is its Date plus the monotonic time
    since that answer was taken; the pod's wall clock (skewed) plays no part."""
    tick = FakeMonotonic()
    clock = run_clock(
        None, "Mon, 23 Nov 2026 10:00:00 GMT", POD_SKEWED, tick(), live=True, monotonic=tick
    )
    start = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
    assert clock.now() == start
    tick.value += 13.25  # the last referrer goes 13 s into the run; its read comes back after
    assert clock.now() == start + timedelta(seconds=13.25)
    tick.value += 600
    assert clock.now() == start + timedelta(seconds=613.25)
    tick.value -= 10_000  # a monotonic clock never goes back; were it to, not before `at`
    assert clock.now() == start


def test_a_fixed_clock_stays_put() -> None:
    """--now and snapshots decide at their own time, however long the run takes."""
    tick = FakeMonotonic()
    moment = datetime(2030, 1, 1, tzinfo=UTC)
    for clock in (
        run_clock(moment, "Mon, 23 Nov 2026 10:00:00 GMT", POD_SKEWED, 0.0, live=True),
        HubClock(moment, monotonic=tick),
    ):
        tick.value += 3600
        assert clock.now() == moment


def test_the_pods_clock_without_a_hub_date_goes_on_too_and_keeps_its_problem() -> None:
    tick = FakeMonotonic()
    clock = run_clock(None, None, POD_SKEWED, tick(), live=True, monotonic=tick)
    tick.value += 5
    assert clock.now() == POD_SKEWED + timedelta(seconds=5)
    assert clock.problem
