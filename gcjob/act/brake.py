"""The deletion limits' arithmetic: the drain cap (at most N deletions a run, the oldest marks
first, the rest a backlog for the next run) and the percent breaker (a run that would delete
too large a share of a sweep's collection deletes nothing)."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeVar

from gcjob.exitcodes import FOR_ONE_RUN

T = TypeVar("T")

# How an operator gets past each: said in the brake's own message (docs/operating.md,
# "Getting past a brake").
PAST_PERCENT = (
    "if these orphans are right (a dry run or `gcjob explain` shows why), raise "
    f"--max-delete-percent {FOR_ONE_RUN}, or lower --max-deletions so that each run takes a "
    "smaller share"
)
PAST_GROUP = (
    f"check that its owner is gone (`gcjob explain`), then raise --max-deletions {FOR_ONE_RUN}"
)


@dataclass(frozen=True)
class BrakeLimits:
    max_deletions: int  # the drain cap, per run; a companion and its binding count as one
    max_percent: float  # per sweep, of the objects in that sweep's scope
    min_objects: int  # the percentage applies only to a sweep with at least this many


def percent_brake(candidates: int, in_scope: int, limits: BrakeLimits) -> str | None:
    """Why this sweep's deletions (those within the drain cap) must all be held back, or
    None: they would be too large a share of its collection."""
    if candidates == 0 or in_scope < limits.min_objects or in_scope <= 0:
        return None
    percent = 100.0 * candidates / in_scope
    if percent <= limits.max_percent:
        return None
    return (
        f"{candidates} of {in_scope} objects ({percent:.0f}%) exceed "
        f"--max-delete-percent {limits.max_percent:g}: {PAST_PERCENT}"
    )


def drain_pace(collection: int, limits: BrakeLimits) -> int | None:
    """A --drain round's most deletions of one sweep: --max-delete-percent of its collection
    as the drain first found it (None: no pace, below --brake-min-objects as the breaker).
    The rollout Job clears a known backlog on purpose, so the percentage paces its rounds
    instead of tripping; marks, the grace period and each object's live re-read stay its
    safety, and within the pace the percent breaker cannot trip."""
    if collection < limits.min_objects or collection <= 0:
        return None
    return math.floor(limits.max_percent * collection / 100.0)


@dataclass
class DrainCut(Generic[T]):
    """One sweep's due deletions, cut at the drain cap: `now` within it (whole groups, the
    oldest marks first, each group in the order it was given), `later` the backlog, and
    `oversized` the groups larger than the whole cap (no run could take them whole; with a
    cap of 0 nothing is taken and nothing is oversized: all of it is the backlog)."""

    now: list[T] = field(default_factory=list)
    later: list[T] = field(default_factory=list)
    oversized: list[list[T]] = field(default_factory=list)


def drain_cut(
    due: Sequence[T],
    room: int,
    cap: int,
    since: Callable[[T], datetime | None],
    group: Callable[[T], Hashable],
) -> DrainCut[T]:
    """`room`: the deletions this run may still make; `cap`: --max-deletions. Groups go by
    their oldest mark (`since`; None: first), ties in the order given; the first group that
    does not fit ends the cut, so a younger mark never passes an older one."""
    groups: dict[Hashable, list[T]] = {}
    for item in due:
        groups.setdefault(group(item), []).append(item)

    def oldest(entry: tuple[int, list[T]]) -> tuple[float, int]:
        times = [t.timestamp() for t in (since(m) for m in entry[1]) if t is not None]
        return (min(times) if len(times) == len(entry[1]) else float("-inf"), entry[0])

    cut: DrainCut[T] = DrainCut()
    full = False
    for _, members in sorted(enumerate(groups.values()), key=oldest):
        if 0 < cap < len(members):
            cut.oversized.append(members)
        elif not full and len(members) <= room:
            cut.now.extend(members)
            room -= len(members)
        else:
            full = True
            cut.later.extend(members)
    return cut
