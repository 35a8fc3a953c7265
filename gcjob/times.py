"""Reading the times objects, marks and flags carry."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 time with a zone; None for anything else (absent, empty, malformed, or
    without a zone). A datetime passes through: YAML loads unquoted timestamps itself."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None
