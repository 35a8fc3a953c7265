"""gcjob.act.brake: a sweep that would delete too much deletes nothing."""

from __future__ import annotations

from gcjob.act.brake import BrakeLimits, brake_reason

LIMITS = BrakeLimits(max_deletions=50, max_percent=50.0, min_objects=50)


def test_nothing_to_delete_never_brakes() -> None:
    assert brake_reason(0, 0, 0, LIMITS) is None
    assert brake_reason(0, 1000, 500, LIMITS) is None


def test_small_share_passes() -> None:
    assert brake_reason(10, 1000, 0, LIMITS) is None


def test_at_max_deletions_passes() -> None:
    assert brake_reason(50, 1000, 0, LIMITS) is None


def test_over_max_deletions_brakes() -> None:
    reason = brake_reason(51, 1000, 0, LIMITS)
    assert reason is not None
    assert "--max-deletions 50" in reason


def test_max_deletions_counts_earlier_sweeps_of_the_run() -> None:
    assert brake_reason(30, 1000, 20, LIMITS) is None
    reason = brake_reason(30, 1000, 21, LIMITS)
    assert reason is not None
    assert "--max-deletions" in reason
    assert "+21" in reason


def test_zero_max_deletions_brakes_any_deletion() -> None:
    reason = brake_reason(1, 1000, 0, BrakeLimits(0, 50.0, 50))
    assert reason is not None
    assert "--max-deletions 0" in reason


def test_over_percent_brakes() -> None:
    reason = brake_reason(30, 50, 0, LIMITS)  # 60% of 50
    assert reason is not None
    assert "--max-delete-percent 50" in reason
    assert "60%" in reason


def test_at_percent_passes() -> None:
    assert brake_reason(25, 50, 0, LIMITS) is None  # exactly 50%


def test_percent_ignored_below_min_objects() -> None:
    assert brake_reason(30, 40, 0, LIMITS) is None  # 75%, but only 40 objects in scope


def test_percent_with_min_objects_zero() -> None:
    reason = brake_reason(3, 4, 0, BrakeLimits(50, 50.0, 0))
    assert reason is not None
    assert "--max-delete-percent" in reason


def test_all_of_scope_brakes() -> None:
    reason = brake_reason(45, 45, 0, BrakeLimits(100, 50.0, 10))
    assert reason is not None
    assert "100%" in reason
