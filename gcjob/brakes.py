"""Every brake of a run, in one place: its limit, its counter, when it holds and what it says.

- the drain cap: at most --max-deletions a run, the oldest marks first, the rest a backlog for
  the next run (`drain_cut`); a group that goes whole or not at all and is larger than the
  whole cap is held by the deletion brake (`group_brake`);
- the deletion brake (the percent breaker): a sweep whose orphans, every one it would delete
  now or later (`Pending`: due now, past the drain cap, waiting out their grace period, newly
  marked), are too large a share of its collection deletes none of them (`percent_brake`);
- the drain's pace: in a --drain run (the rollout Job), at most --drain-pace % of a sweep's
  collection a round (`drain_pace`); a pace, never a brake;
- the marks brake: at most --max-marks new marks a run; a sweep whose new orphans alone would
  pass it (every mark each writes counted: a companion and its binding, two) marks none of
  them (`MarksBrake`);
- the write brake: at most --max-writes writes a run (`WriteBrake`);
- the projects brake: more Milo projects found gone in one run than --max-projects-gone, and
  none not yet taken as gone is (`projects_brake`), each counted once a run, those taken
  earlier in the run staying gone (`ProjectsBrake`);
- the suspect rule: an upstream cluster where many routes hang on Gateways and none is found
  is distrusted (`is_suspect`, `suspect_groups`, `suspect_detail`).

Each message names its brake first and says how an operator gets past it (docs/operating.md,
"Getting past a brake"). Pure: the counters are plain numbers the writers keep here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeVar

from gcjob.exitcodes import FOR_ONE_RUN
from gcjob.shard import Shard

T = TypeVar("T")
G = TypeVar("G", bound=Hashable)

# How an operator gets past each: said in the brake's own message (docs/operating.md,
# "Getting past a brake").
PAST_PERCENT = (
    "if these orphans are right (a dry run or `gcjob explain` shows why), raise "
    f"--max-delete-percent {FOR_ONE_RUN}, or clear them with the rollout Job (`--drain`, "
    "docs/operating.md#draining-a-backlog-the-rollout-job); a smaller --max-deletions does "
    "not help: every orphan pending is weighed, not one run's share"
)
PAST_GROUP = (
    f"check that its owner is gone (`gcjob explain`), then raise --max-deletions {FOR_ONE_RUN}"
)


def limit_said(flag: str, limit: int, shard: Shard) -> str:
    """How a brake's message names its limit: the flag and its value, and with --shard the
    share this shard holds of it (gcjob/shard.py: the shares add up to the limit)."""
    if shard.whole:
        return f"{flag} {limit}"
    return f"{flag} {limit} (shard {shard}'s share: {shard.share(limit)})"


# -- the drain cap and the deletion brake --------------------------------------------------


@dataclass(frozen=True)
class BrakeLimits:
    max_deletions: int  # the drain cap, per run; a companion and its binding count as one
    max_percent: float  # per sweep, of the objects in that sweep's scope
    min_objects: int  # the percentage applies only to a sweep with at least this many
    pace_percent: float = 50.0  # --drain-pace: a drain round's most, of a sweep's collection


@dataclass(frozen=True)
class Pending:
    """Every orphan of one sweep that it would delete, now or later, as the breaker weighs
    them: `due` now (within the drain cap, past it as the backlog, or in a group too large for
    it), `waiting` marked and waiting out their grace period, `new` to be marked this run. A
    companion with its binding is one, as the sweep's collection counts it."""

    due: int = 0
    waiting: int = 0
    new: int = 0

    @property
    def total(self) -> int:
        return self.due + self.waiting + self.new

    def said(self) -> str:
        return f"{self.due} due, {self.waiting} in their grace period, {self.new} new"


def percent_brake(
    orphans: Pending, in_scope: int, limits: BrakeLimits, whole: int | None = None
) -> str | None:
    """Why this sweep's deletions must all be held back, or None: its orphans, every one it
    would delete now or later, are too large a share of its collection. Not one run's share
    (the drain cap's): a mass orphaning would pass that run after run, 50 at a time. `whole`:
    with --shard, the sweep's collection in the whole hub, which --brake-min-objects is held
    to (every shard then holds its orphans to the percentage of its own part, so their sum is
    held to it of the whole); by default `in_scope`."""
    size = in_scope if whole is None else whole
    count = orphans.total
    if count == 0 or size < limits.min_objects or in_scope <= 0:
        return None
    percent = 100.0 * count / in_scope
    if percent <= limits.max_percent:
        return None
    return (
        f"{count} of {in_scope} objects ({percent:.0f}%) exceed "
        f"--max-delete-percent {limits.max_percent:g}, every orphan it would delete now or "
        f"later weighed ({orphans.said()}): {PAST_PERCENT}"
    )


def drain_pace(collection: int, limits: BrakeLimits) -> int | None:
    """A --drain round's most deletions of one sweep: --drain-pace % of its collection as the
    drain first found it (None: no pace, below --brake-min-objects as the breaker). A pace,
    never a brake: the orphans past it are the round's backlog. The breaker stands as in any
    run, over every orphan pending: the rollout Job clears a backlog larger than
    --max-delete-percent only because its arguments say so (cronjobs/rollout/job.yaml)."""
    if collection < limits.min_objects or collection <= 0:
        return None
    return math.floor(limits.pace_percent * collection / 100.0)


def deletion_brake(reason: str) -> str:
    """The deletion brake's message for the percent breaker's `reason`."""
    return f"deletion brake: {reason}"


def group_brake(size: int, max_deletions: int, said: str = "") -> str:
    """The deletion brake's message for a group larger than the whole drain cap (`said`: how
    the cap is named, `limit_said`)."""
    return deletion_brake(
        f"a group of {size} that goes whole or not at all exceeds "
        f"{said or f'--max-deletions {max_deletions}'}: {PAST_GROUP}"
    )


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


# -- the marks brake and the write brake ---------------------------------------------------


@dataclass
class MarksBrake:
    """The marks brake: a mass of new orphans is the early warning to send, so no run writes
    more than `max_marks` new marks (every mark counted, a companion's binding too), and a
    sweep whose new orphans alone would pass it marks none of them."""

    max_marks: int
    written: int = 0  # new marks written this run (a dry run: that it would write)
    said: str = ""  # how the limit is named (`limit_said`); by default --max-marks N

    def holds(self, new: int = 1, orphans: int = 0) -> str | None:
        """Why `new` more marks may not be written this run, or None. `orphans`: the new
        orphans that would write them (a companion writes its binding's too), when not one
        mark each."""
        if not new or self.written + new <= self.max_marks:
            return None
        marks, exceed = ("mark", "exceeds") if new == 1 else ("marks", "exceed")
        of = f" of {orphans} new orphans" if orphans and orphans != new else ""
        return (
            f"marks brake: {new} new {marks}{of} (+{self.written} earlier this run) {exceed} "
            f"{self.said or f'--max-marks {self.max_marks}'}: if these new orphans are right "
            f"(a dry run lists them), raise --max-marks {FOR_ONE_RUN}"
        )

    def count(self) -> None:
        self.written += 1


@dataclass
class WriteBrake:
    """The write brake: every write (a mark, an unmark, a deletion) counted, and none past
    `max_writes` this run."""

    max_writes: int
    counted: int = 0  # writes sent (a dry run: that it would send) this run
    said: str = ""  # how the limit is named (`limit_said`); by default --max-writes N

    def holds(self) -> str | None:
        """Why no further write may go out this run, or None."""
        if self.counted >= self.max_writes:
            return (
                f"write brake: {self.said or f'--max-writes {self.max_writes}'} reached this run "
                f"(the next run goes on; to do more at once, raise --max-writes {FOR_ONE_RUN})"
            )
        return None

    def count(self) -> None:
        self.counted += 1


# -- the projects brake --------------------------------------------------------------------


def projects_brake(gone: int, max_gone: int, taken: int = 0) -> str | None:
    """Why none of the `gone` projects found gone this run, but the `taken` already taken as
    gone earlier in it, is taken as gone, or None."""
    if gone <= max_gone:
        return None
    none = (
        f"none more is taken as gone this run (the {taken} taken earlier stay gone)"
        if taken
        else "none is taken as gone this run"
    )
    return (
        f"projects brake: {gone} projects found gone in one run exceed "
        f"--max-projects-gone {max_gone}; {none} (check Milo's "
        f"Project API for them, then raise --max-projects-gone {FOR_ONE_RUN})"
    )


@dataclass
class ProjectsBrake:
    """The projects brake for one run: each project found gone counted once, however many
    sweeps, rounds of --drain (or, with --shard, shards) find it. Those it took as gone
    (`taken`, at most `max_gone`) stay taken for the rest of the run: their objects may have
    been acted on, and a project has one verdict a run. Once the projects found gone pass
    `max_gone` (those taken counted in), none not yet taken is taken as gone, for the rest of
    the run (a brake that held stays held); within one count, all of them or none."""

    max_gone: int
    taken: frozenset[str] = frozenset()  # taken as gone this run (at most max_gone)
    reason: str = ""  # why it holds, once it does

    def count(self, gone: Iterable[str]) -> str:
        """Projects found gone (any already counted, any number of times): the brake's
        reason, "" while it holds nothing. Those among them not yet taken are taken as gone
        together if the run's count stays within `max_gone`, else none of them is."""
        if not self.reason:
            new = frozenset(gone).difference(self.taken)
            found = len(self.taken) + len(new)
            if found > self.max_gone:
                self.reason = projects_brake(found, self.max_gone, len(self.taken)) or ""
            else:
                self.taken = self.taken.union(new)
        return self.reason


# -- the suspect rule ----------------------------------------------------------------------


def is_suspect(routes_checked: int, gateways_found: int, min_routes: int) -> bool:
    """An upstream where many routes hang on Gateways and not one is found is distrusted:
    a wrong endpoint or an emptied cluster looks exactly like that."""
    return min_routes > 0 and routes_checked >= min_routes and gateways_found == 0


def suspect_groups(groups: Mapping[G, tuple[int, int]], min_routes: int) -> frozenset[G]:
    """The groups of one cluster's routes (by hub namespace: a tenant's) that are distrusted.
    `groups`: group -> (routes, Gateways those routes asked for that were found).

    A Gateway found vouches only for the group that asked for it: one tenant's route naming
    another tenant's cluster, with parents that exist there, must not make that cluster look
    healthy for the other tenant's routes. So the routes of every group that found nothing
    are counted together; when they reach `min_routes`, each of those groups is suspect, as
    a whole cluster that found nothing was before."""
    unvouched = frozenset(group for group, (_, found) in groups.items() if found == 0)
    routes = sum(groups[group][0] for group in unvouched)
    return unvouched if is_suspect(routes, 0, min_routes) else frozenset()


def suspect_detail(routes: int, namespaces: int) -> str:
    """What a suspect cluster's state says: `routes` in `namespaces` hub namespaces held."""
    return (
        f"{routes} routes in {namespaces} hub namespaces hang on Gateways here and "
        f"none of theirs was found; suspected wrong endpoint or emptied cluster "
        f"(--suspect-min-routes): check its endpoint and credentials"
    )
