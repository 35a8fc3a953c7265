"""Reading the times objects, marks and flags carry."""

from __future__ import annotations

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
