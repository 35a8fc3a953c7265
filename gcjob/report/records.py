"""Report records as plain dicts: one per object acted on or held back, one per upstream
cluster, one summary last. Each carries `record`, `run_id`, `time` and `version`, so a log
pipeline can route, order and join them without context."""

from __future__ import annotations

from collections import defaultdict
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
