"""The blast-radius brake: a sweep that would delete too much deletes nothing."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BrakeLimits:
    max_deletions: int  # per run; a companion and its binding count as one
    max_percent: float  # per sweep, of the objects in that sweep's scope
    min_objects: int  # the percentage applies only to a sweep with at least this many


def brake_reason(
    candidates: int, in_scope: int, deleted_before: int, limits: BrakeLimits
) -> str | None:
    """Why this sweep's deletions must all be held back, or None."""
    if candidates == 0:
        return None
    if deleted_before + candidates > limits.max_deletions:
        return (
            f"{candidates} deletions (+{deleted_before} earlier this run) exceed "
            f"--max-deletions {limits.max_deletions}"
        )
    if in_scope >= limits.min_objects and in_scope > 0:
        percent = 100.0 * candidates / in_scope
        if percent > limits.max_percent:
            return (
                f"{candidates} of {in_scope} objects ({percent:.0f}%) exceed "
                f"--max-delete-percent {limits.max_percent:g}"
            )
    return None
