"""gcjob.brakes: the drain cap takes whole groups, oldest marks first; the percent breaker
holds a sweep's deletions back when its orphans, every one pending, are too large a share of
its collection; the marks brake counts every mark a sweep's new orphans would write."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from gcjob.brakes import (
    PAST_GROUP,
    BrakeLimits,
    DrainCut,
    MarksBrake,
    Pending,
    WriteBrake,
    deletion_brake,
    drain_cut,
    drain_pace,
    group_brake,
    percent_brake,
    projects_brake,
)

LIMITS = BrakeLimits(max_deletions=50, max_percent=50.0, min_objects=50)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


# -- the percent breaker -----------------------------------------------------------------


def test_nothing_to_delete_never_brakes() -> None:
    assert percent_brake(Pending(0), 0, LIMITS) is None
    assert percent_brake(Pending(0), 1000, LIMITS) is None


def test_small_share_passes() -> None:
    assert percent_brake(Pending(10), 1000, LIMITS) is None


def test_over_percent_brakes_and_says_how_to_get_past() -> None:
    reason = percent_brake(Pending(30), 50, LIMITS)  # 60% of 50
    assert reason is not None
    assert "--max-delete-percent 50" in reason
    assert "60%" in reason
    assert "raise --max-delete-percent for one run" in reason
    assert "rollout Job" in reason  # a known backlog: its arguments say so
    assert "a smaller --max-deletions does not help" in reason


def test_the_breaker_weighs_every_orphan_pending_not_one_runs_share() -> None:
    """Issue 46 item 10: every WorkloadDeployment deleted at once, 300 companions orphaned
    and nothing live. The drain cap lets 50 a run through, 16.7% of the sweep: weighed by that
    batch, the breaker let the sweep drain away run after run. Weighed by every orphan it
    would delete, now or later, it holds."""
    assert percent_brake(Pending(due=50), 300, LIMITS) is None  # a batch of 50: passed
    reason = percent_brake(Pending(due=300), 300, LIMITS)
    assert reason is not None
    assert reason.startswith("300 of 300 objects (100%) exceed --max-delete-percent 50")
    assert "(300 due, 0 in their grace period, 0 new)" in reason
    # Orphans marked and waiting out their grace period, and new ones, weigh as much.
    assert percent_brake(Pending(due=10, waiting=100, new=100), 300, LIMITS) is not None
    assert percent_brake(Pending(waiting=151), 300, LIMITS) is not None
    assert percent_brake(Pending(new=151), 300, LIMITS) is not None
    assert percent_brake(Pending(due=50, waiting=50, new=50), 300, LIMITS) is None  # 50%


def test_the_marks_brake_counts_every_mark_its_new_orphans_write() -> None:
    """Issue 46 item 11: 300 new orphaned companions, each writing its binding's mark too:
    600 marks, over --max-marks 500. Counted as 300, they passed and the 251st stopped
    midway; counted as the marks they write, the sweep marks none."""
    brake = MarksBrake(500)
    said = brake.holds(600, 300)
    assert said is not None
    assert said.startswith("marks brake: 600 new marks of 300 new orphans (+0 earlier this run)")
    assert brake.holds(500, 250) is None


def test_at_percent_passes() -> None:
    assert percent_brake(Pending(25), 50, LIMITS) is None  # exactly 50%


def test_percent_ignored_below_min_objects() -> None:
    assert percent_brake(Pending(30), 40, LIMITS) is None  # 75%, but only 40 objects in scope


def test_percent_with_min_objects_zero() -> None:
    reason = percent_brake(Pending(3), 4, BrakeLimits(50, 50.0, 0))
    assert reason is not None
    assert "--max-delete-percent" in reason


def test_all_of_scope_brakes() -> None:
    reason = percent_brake(Pending(45), 45, BrakeLimits(100, 50.0, 10))
    assert reason is not None
    assert "100%" in reason


# -- the drain cap -----------------------------------------------------------------------


def cut(
    items: list[tuple[str, str, int]], room: int, cap: int | None = None
) -> DrainCut[tuple[str, str, int]]:
    """Items as (name, group, minutes since T0 they were marked)."""
    return drain_cut(
        items,
        room,
        room if cap is None else cap,
        lambda item: T0 + timedelta(minutes=item[2]),
        lambda item: item[1],
    )


def names(items: list[tuple[str, str, int]]) -> list[str]:
    return [item[0] for item in items]


def test_within_the_cap_everything_goes_in_the_order_given() -> None:
    result = cut([("a", "a", 2), ("b", "b", 1)], room=5)
    assert names(result.now) == ["b", "a"]  # oldest mark first
    assert result.later == []


def test_over_the_cap_the_oldest_marks_go_and_the_rest_is_the_backlog() -> None:
    items = [(f"o{i}", f"o{i}", 10 - i) for i in range(10)]
    result = cut(items, room=3)
    assert names(result.now) == ["o9", "o8", "o7"]
    assert sorted(names(result.later)) == sorted(f"o{i}" for i in range(7))


def test_a_group_goes_whole_or_waits_whole_and_keeps_its_order() -> None:
    items = [("copy-1", "g", 5), ("copy-2", "g", 5), ("anchor", "g", 5), ("solo", "s", 1)]
    result = cut(items, room=3)
    assert names(result.now) == ["solo"]  # the group of 3 no longer fits: it waits, whole
    assert names(result.later) == ["copy-1", "copy-2", "anchor"]
    result = cut(items, room=4)
    assert names(result.now) == ["solo", "copy-1", "copy-2", "anchor"]


def test_a_younger_mark_never_passes_an_older_one_that_waits() -> None:
    items = [("old-group-1", "g", 1), ("old-group-2", "g", 1), ("young", "y", 9)]
    result = cut(items, room=3, cap=10)
    assert names(result.now) == ["old-group-1", "old-group-2", "young"]
    result = cut(items, room=1, cap=10)
    assert result.now == []
    assert names(result.later) == ["old-group-1", "old-group-2", "young"]


def test_a_group_larger_than_the_whole_cap_is_set_apart() -> None:
    items = [("a", "big", 1), ("b", "big", 1), ("c", "big", 1), ("solo", "s", 2)]
    result = cut(items, room=2, cap=2)
    assert [names(group) for group in result.oversized] == [["a", "b", "c"]]
    assert names(result.now) == ["solo"]


def test_no_room_left_this_run_leaves_all_of_it_for_the_next() -> None:
    result = cut([("a", "a", 1)], room=0, cap=50)
    assert result.now == []
    assert names(result.later) == ["a"]


def test_an_unmarked_due_orphan_goes_first() -> None:
    # --grace 0: no mark, no time; it is not held behind marked ones
    items: list[tuple[str, str, int | None]] = [("marked", "m", 1), ("unmarked", "u", None)]
    result = drain_cut(
        items,
        1,
        1,
        lambda item: None if item[2] is None else T0 + timedelta(minutes=item[2]),
        lambda item: item[1],
    )
    assert [item[0] for item in result.now] == ["unmarked"]


def test_a_cap_of_zero_takes_nothing_and_leaves_it_all_to_the_backlog() -> None:
    result = cut([("a", "g", 1), ("b", "g", 1)], room=0, cap=0)
    assert result.now == [] and result.oversized == []
    assert names(result.later) == ["a", "b"]


# -- the marks brake, the write brake, the projects brake: one decision and one message each --


def test_the_marks_brake_says_one_message_for_a_sweep_and_for_one_mark() -> None:
    """A sweep's new orphans all at once, and one more mark (a companion's binding) past the
    limit, are held by the same rule, in the same words."""
    brake = MarksBrake(max_marks=6)
    assert brake.holds(6) is None
    sweep = brake.holds(7)
    assert sweep is not None
    assert sweep.startswith("marks brake: 7 new marks (+0 earlier this run) exceed --max-marks 6")
    for _ in range(6):
        assert brake.holds() is None
        brake.count()
    one = brake.holds()
    assert one is not None
    assert one.startswith("marks brake: 1 new mark (+6 earlier this run) exceeds --max-marks 6")
    assert sweep.partition(": if ")[2] == one.partition(": if ")[2]
    assert "raise --max-marks for one run" in one
    assert brake.holds(0) is None  # nothing new to mark: nothing held


def test_the_write_brake_counts_and_holds_at_its_limit() -> None:
    brake = WriteBrake(max_writes=2)
    for _ in range(2):
        assert brake.holds() is None
        brake.count()
    held = brake.holds()
    assert held is not None and held.startswith("write brake: --max-writes 2 reached this run")
    assert brake.counted == 2


def test_the_projects_brake_holds_only_past_its_limit() -> None:
    assert projects_brake(3, 3) is None
    held = projects_brake(4, 3)
    assert held is not None
    assert held.startswith("projects brake: 4 projects found gone in one run exceed")
    assert "raise --max-projects-gone for one run" in held


def test_a_group_larger_than_the_cap_is_the_deletion_brakes() -> None:
    said = group_brake(7, 5)
    assert said.startswith("deletion brake: a group of 7 that goes whole or not at all exceeds")
    assert said.endswith(PAST_GROUP)
    assert deletion_brake("x") == "deletion brake: x"


@given(
    collection=st.integers(0, 100_000),
    percent=st.floats(0, 100, allow_nan=False),
    pace_percent=st.floats(0, 100, allow_nan=False),
    min_objects=st.integers(0, 200),
)
def test_a_drain_round_is_paced_by_its_own_percentage_not_the_breakers(
    collection: int, percent: float, pace_percent: float, min_objects: int
) -> None:
    """--drain-pace names the pace (issue 46 item 10): the breaker, --max-delete-percent, is
    no pace and has no say in it."""
    limits = BrakeLimits(10_000, percent, min_objects, pace_percent)
    pace = drain_pace(collection, limits)
    if collection < min_objects or collection == 0:
        assert pace is None  # below the breaker's floor: no pace either
        return
    assert pace is not None and 0 <= pace <= collection
    assert pace <= pace_percent * collection / 100 < pace + 1
    other = BrakeLimits(10_000, 100 - percent, min_objects, pace_percent)
    assert drain_pace(collection, other) == pace


def test_the_issue_34_collection_is_paced_at_half_of_it() -> None:
    limits = BrakeLimits(200, 100.0, 50, pace_percent=50.0)
    assert drain_pace(360, limits) == 180  # 300 orphans among 60 live: 180, then 120
    assert drain_pace(49, limits) is None
