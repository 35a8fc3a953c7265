"""Report records as plain dicts: one per object acted on or held back, one summary last."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from gcjob.decide.common import age_seconds
from gcjob.model import Action, Outcome, Sweep


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def item_record(outcome: Outcome, run_id: str, now: datetime, dry_run: bool) -> dict[str, Any]:
    ref = outcome.ref
    age = age_seconds(ref, now)
    record: dict[str, Any] = {
        "record": "item",
        "run_id": run_id,
        "sweep": outcome.sweep.value,
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "namespace": ref.namespace,
        "name": ref.name,
        "uid": ref.uid,
        "age_seconds": None if age is None else int(age),
        "action": outcome.action.value,
        "reason": outcome.reason,
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


class Tally:
    """Counts by sweep, action and reason: every outcome, reported or not."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, dict[str, int]]] = defaultdict(
            lambda: defaultdict(lambda: defaultdict(int))
        )

    def add(self, outcome: Outcome) -> None:
        self.add_count(outcome.sweep, outcome.action, outcome.reason)

    def add_count(self, sweep: Sweep, action: Action, reason: str, count: int = 1) -> None:
        self.counts[sweep.value][action.value][reason] += count

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
