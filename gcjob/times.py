"""Reading the times objects, marks and flags carry."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta


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
class HubClock:
    """The hub's time now: what its clock said once (`at`, the `Date` of an answer), carried
    on by the monotonic clock from the moment that answer was taken (`read_at`, a
    time.monotonic() reading): a pod's wall clock, stepped or skewed, plays no part. A
    judgement asks for `now()` once the reads it rests on came back, so a mark's time is
    never before its evidence was complete, however long the run read before it judged.
    `read_at` None: a fixed clock (--now, a snapshot), every `now()` the same. `problem`:
    why `at` is not the hub's (empty when it is): then nothing is deleted or marked on it."""

    at: datetime
    read_at: float | None = None
    problem: str = ""
    monotonic: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)

    def now(self) -> datetime:
        if self.read_at is None:
            return self.at
        # Never before `at`: a monotonic clock does not go back, a fake one might.
        return self.at + timedelta(seconds=max(self.monotonic() - self.read_at, 0.0))


def run_clock(
    override: datetime | None,
    hub_date: str | None,
    pod_now: datetime,
    read_at: float,
    *,
    live: bool,
    monotonic: Callable[[], float] = time.monotonic,
) -> HubClock:
    """A live run measures marks and ages with the hub's clock, from the `Date` of its
    answer, as the hub stamps creationTimestamps: a skewed pod clock must neither void nor
    shorten a grace period. `read_at`: the monotonic clock when that answer was taken (and
    `pod_now` read); from it the clock goes on. `override` (--now: dry runs, explain) and
    snapshots (no server) use their own time, fixed. A live hub with no usable Date leaves
    the pod's clock, with the problem stated: the caller then deletes nothing on it and writes
    no mark."""
    if override is not None:
        return HubClock(override)
    if not live:
        return HubClock(pod_now)
    hub_now = parse_http_date(hub_date)
    if hub_now is None:
        shown = "none" if hub_date is None else repr(hub_date[:64])
        return HubClock(
            pod_now,
            read_at,
            f"the hub sent no usable Date header ({shown}): no clock to measure marks by",
            monotonic,
        )
    return HubClock(hub_now, read_at, monotonic=monotonic)
