"""Reading the times objects, marks and flags carry."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 time with a zone, in UTC; None for anything else (absent, empty, malformed,
    without a zone, or outside the years 1-9999 once in UTC: `0001-01-01T00:00:00+01:00`).
    A datetime passes through: YAML loads unquoted timestamps itself. Lenient, for
    Kubernetes' own timestamps; a mark's time has its own strict reader (marks.parse_since)."""
    if isinstance(value, datetime):
        parsed = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        if parsed.tzinfo is None:
            return None
    else:
        return None
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # a zone that takes it past year 9999 or before year 1
        return None


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
# IMF-fixdate (RFC 9110 5.6.7), what every Go (and Kubernetes) server sends:
# `Sun, 06 Nov 1994 08:49:37 GMT`.
_HTTP_DATE = re.compile(
    rf"({'|'.join(_DAYS)}), ([0-9]{{2}}) ({'|'.join(_MONTHS)}) ([0-9]{{4}}) "
    r"([0-9]{2}):([0-9]{2}):([0-9]{2}) GMT"
)


def parse_http_date(value: object) -> datetime | None:
    """An HTTP `Date` header in IMF-fixdate form, in UTC; None for anything else (absent,
    obsolete forms, an impossible date, a weekday that does not match it)."""
    if not isinstance(value, str):
        return None
    found = _HTTP_DATE.fullmatch(value.strip())
    if found is None:
        return None
    weekday, day, month, year, hour, minute, second = found.groups()
    try:
        moment = datetime(
            int(year),
            _MONTHS.index(month) + 1,
            int(day),
            int(hour),
            int(minute),
            int(second),
            tzinfo=UTC,
        )
    except ValueError:
        return None
    return moment if _DAYS[moment.weekday()] == weekday else None


@dataclass(frozen=True, slots=True)
class RunClock:
    """The time a run decides at, and what is wrong with it (empty when nothing is)."""

    now: datetime
    problem: str = ""


def run_clock(
    override: datetime | None, hub_date: str | None, pod_now: datetime, *, live: bool
) -> RunClock:
    """A live run measures marks and ages with the hub's clock, from the `Date` of its
    answer, as the hub stamps creationTimestamps: a skewed pod clock must neither void nor
    shorten a grace period. `override` (--now: dry runs, explain) and snapshots (no server)
    use their own time. A live hub with no usable Date leaves the pod's clock, with the
    problem stated: the caller then deletes nothing on it and writes no mark."""
    if override is not None:
        return RunClock(override)
    if not live:
        return RunClock(pod_now)
    hub_now = parse_http_date(hub_date)
    if hub_now is None:
        shown = "none" if hub_date is None else repr(hub_date[:64])
        return RunClock(
            pod_now, f"the hub sent no usable Date header ({shown}): no clock to measure marks by"
        )
    return RunClock(hub_now)
