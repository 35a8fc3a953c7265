"""Report records as plain dicts: one per object acted on or held back, one per upstream
cluster, one summary last. Each carries `record`, `run_id`, `time` and `version`, so a log
pipeline can route, order and join them without context."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from gcjob import __version__
from gcjob.decide.common import age_seconds
from gcjob.model import Action, Outcome, Sweep
from gcjob.reasons import Reason


def rfc3339(moment: datetime, timespec: str = "seconds") -> str:
    return moment.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def envelope(kind: str, run_id: str, emitted: datetime) -> dict[str, Any]:
    """What every record starts with. `time`: when it was written, to the millisecond."""
    return {
        "record": kind,
        "run_id": run_id,
        "time": rfc3339(emitted, "milliseconds"),
        "version": __version__,
    }


def item_record(
    outcome: Outcome, run_id: str, now: datetime, dry_run: bool, emitted: datetime
) -> dict[str, Any]:
    """`now`: the run's decision time (ages are measured from it); `emitted`: the record's."""
    ref = outcome.ref
    age = age_seconds(ref, now)
    record: dict[str, Any] = {
        **envelope("item", run_id, emitted),
        "sweep": outcome.sweep.value,
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "namespace": ref.namespace,
        "name": ref.name,
        "uid": ref.uid,
        "age_seconds": None if age is None else int(age),
        "action": outcome.action.value,
        "reason": str(outcome.reason),  # plain data: the code, not the enum member
        "detail": outcome.detail,
        "dry_run": dry_run,
    }
    # Only the referrer keys decided on: never other annotation values.
    if outcome.referrers:
        record["referrers"] = list(outcome.referrers)
    if outcome.cluster is not None:
        record["cluster"] = outcome.cluster
    if outcome.gateways:
        record["gateways"] = list(outcome.gateways)
    if outcome.orphaned_since is not None:
        record["orphaned_since"] = rfc3339(outcome.orphaned_since)
    if outcome.would_delete_at is not None:
        key = "would_delete_if_enforced_at" if outcome.if_enforced else "would_delete_at"
        record[key] = rfc3339(outcome.would_delete_at)
    return record


def upstream_record(
    cluster: str, state: dict[str, Any], requests: int, run_id: str, emitted: datetime
) -> dict[str, Any]:
    """One upstream cluster: how it answered, and how many routes and requests it had."""
    return {
        **envelope("upstream", run_id, emitted),
        "cluster": cluster,
        "status": state["status"],
        "detail": state["detail"],
        "server": state["server"],
        "routes": state["routes"],
        "gateways_found": state["gateways_found"],
        "api_requests": requests,
    }


# What a run did to the hub: a --drain run's rounds add these up. Every other count (kept,
# waiting, past the cap, held back, would-delete) says what a round found, so only the last
# round's is true of the hub the run left.
ACTIONS_ADDED_UP = frozenset(
    {
        Action.DELETED,
        Action.DELETE_HELD,
        Action.ALREADY_GONE,
        Action.FAILED,
        Action.MARKED,
        Action.UNMARKED,
    }
)


class Tally:
    """Counts by sweep, action and reason: every outcome, reported or not."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, dict[str, int]]] = defaultdict(
            lambda: defaultdict(lambda: defaultdict(int))
        )

    def add(self, outcome: Outcome) -> None:
        self.add_count(outcome.sweep, outcome.action, outcome.reason)

    def add_count(self, sweep: Sweep, action: Action, reason: Reason, count: int = 1) -> None:
        self.counts[sweep.value][action.value][str(reason)] += count

    def next_round(self) -> None:
        """A --drain run's next round: what the earlier rounds did to the hub stays counted,
        what they found is found again."""
        for actions in self.counts.values():
            for action in [a for a in actions if Action(a) not in ACTIONS_ADDED_UP]:
                del actions[action]

    def total(self, action: Action) -> int:
        return sum(
            sum(reasons.values())
            for actions in self.counts.values()
            for name, reasons in actions.items()
            if name == action.value
        )

    def as_dict(self) -> dict[str, dict[str, dict[str, int]]]:
        return {
            sweep: {action: dict(sorted(reasons.items())) for action, reasons in actions.items()}
            for sweep, actions in self.counts.items()
        }

    def totals(self) -> dict[str, int]:
        return {action.value: self.total(action) for action in Action}


class DueTally:
    """The orphans a run left in place on their way out, per sweep, by when each goes if it
    stays orphaned (`would_delete_at`): due this run (a dry run's or a sweep not enforced's
    would-delete), or later (marked, or waiting out its grace period), the earliest and the
    latest of those. What enforcing would do, in a dry run; what is coming, in a --delete run.
    A sweep that is not enforced (report-only) deletes nothing: what it would delete were it
    enforced is counted apart (`if_enforced`), never as pending."""

    def __init__(self) -> None:
        self.this_run: dict[str, int] = defaultdict(int)
        self.later: dict[str, list[datetime]] = defaultdict(list)
        self.if_enforced: DueTally | None = None

    def add(self, outcome: Outcome, now: datetime) -> None:
        at = outcome.would_delete_at
        if at is None:
            return
        if outcome.if_enforced:
            if self.if_enforced is None:
                self.if_enforced = DueTally()
            self.if_enforced.add(replace(outcome, if_enforced=False), now)
        elif at <= now:
            self.this_run[outcome.sweep.value] += 1
        else:
            self.later[outcome.sweep.value].append(at)

    def of(self, sweep: str) -> dict[str, Any]:
        later = self.later.get(sweep, [])
        return {
            "this_run": self.this_run.get(sweep, 0),
            "later": len(later),
            "earliest": rfc3339(min(later)) if later else None,
            "latest": rfc3339(max(later)) if later else None,
        }

    def as_dict(self, sweeps: list[str]) -> dict[str, dict[str, Any]]:
        """Every sweep that ran, zeros included: a dry run that finds nothing says so."""
        return {sweep: self.of(sweep) for sweep in sweeps}
