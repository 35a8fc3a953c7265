"""gcjob/act/mark_writer.py: marks written (or, in a dry run, not), conflicts, stops and unmarks.

The patch target here is a SnapshotStore: gcjob's own in-memory objects, which apply a JSON
Patch with jsonpatch exactly as a --snapshot run does. Patches against a real API server are
in tests/kube/test_access_patch.py and tests/e2e/test_grace_e2e.py.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from gcjob import marks
from gcjob.act.mark_writer import Marker
from gcjob.budget import RunBudget
from gcjob.domain import ORPHANED_LABEL, REFERRERS_ANNOTATION
from gcjob.kube import reduce
from gcjob.kube.access import PatchResult
from gcjob.kube.resources import CONFIGMAPS, Resource
from gcjob.kube.snapshot import SnapshotStore
from gcjob.model import Action, Sweep, Verdict

NOW = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
RAW = '["default/web"]'
EVIDENCE = marks.companion_evidence(RAW)
SWEEP = Sweep.COMPANIONS


def configmap(**labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "app-config",
            "namespace": "ns-1",
            "uid": "uid-1",
            "resourceVersion": "7",
            "creationTimestamp": "2026-11-01T00:00:00Z",
            "labels": dict(labels),
            "annotations": {REFERRERS_ANNOTATION: RAW},
        },
    }


def store_with(obj: dict[str, Any]) -> SnapshotStore:
    store = SnapshotStore("hub", [], every_kind=True)
    store.add(copy.deepcopy(obj))
    return store


def verdict_of(obj: dict[str, Any], delete: bool = True) -> Verdict:
    ref = reduce.object_ref(obj, CONFIGMAPS)
    return Verdict(ref, delete, "orphaned" if delete else "referrer-live", "the detail")


def stored(store: SnapshotStore) -> dict[str, Any]:
    obj = store.get(CONFIGMAPS, "ns-1", "app-config", lambda o: o)
    assert obj is not None
    return obj


def test_a_live_dry_run_writes_nothing_and_says_would_mark() -> None:
    outcome = Marker(None, dry_run=True, budget=RunBudget(None)).mark(
        SWEEP, verdict_of(configmap()), CONFIGMAPS, EVIDENCE, NOW, "found orphaned"
    )
    assert (outcome.action, outcome.reason) == (Action.WOULD_MARK, "orphaned")
    assert outcome.orphaned_since == NOW
    assert outcome.detail == "found orphaned: the detail"


@pytest.mark.parametrize("snapshot", [False, True])
def test_a_dry_runs_unmark_says_the_mark_would_be_removed(snapshot: bool) -> None:
    """Issue 23 item 2: nothing in a dry run says it wrote; the action and detail agree."""
    marked = configmap(**{ORPHANED_LABEL: "true"})
    verdict = Verdict(verdict_of(marked, False).ref, False, "referrer-live", "WD web", True)
    target = store_with(marked) if snapshot else None

    outcome = Marker(target, dry_run=True, budget=RunBudget(None)).unmark(
        SWEEP, verdict, CONFIGMAPS
    )

    assert (outcome.action, outcome.detail) == (
        Action.WOULD_UNMARK,
        "mark would be removed: WD web",
    )


def test_a_snapshot_dry_run_applies_the_very_patch_to_the_loaded_object() -> None:
    store = store_with(configmap())
    outcome = Marker(store, dry_run=True, budget=RunBudget(None)).mark(
        SWEEP, verdict_of(configmap()), CONFIGMAPS, EVIDENCE, NOW
    )
    assert outcome.action is Action.WOULD_MARK
    mark = reduce.object_ref(stored(store), CONFIGMAPS).mark
    assert mark == marks.new_mark(EVIDENCE, "orphaned", NOW)


def test_a_live_mark_is_marked_and_a_changed_object_is_a_safe_skip() -> None:
    store = store_with(configmap())
    marker = Marker(store, dry_run=False, budget=RunBudget(None))
    stale = verdict_of(configmap())
    assert marker.mark(SWEEP, stale, CONFIGMAPS, EVIDENCE, NOW).action is Action.MARKED

    again = marker.mark(SWEEP, stale, CONFIGMAPS, EVIDENCE, NOW)  # resourceVersion moved on

    assert (again.action, again.reason) == (Action.SKIPPED, "changed-since-observed")
    assert "/metadata/resourceVersion" in again.detail


def test_a_mark_on_an_object_gone_is_already_gone() -> None:
    marker = Marker(
        SnapshotStore("hub", [], every_kind=True), dry_run=False, budget=RunBudget(None)
    )
    outcome = marker.mark(SWEEP, verdict_of(configmap()), CONFIGMAPS, EVIDENCE, NOW)
    assert (outcome.action, outcome.reason) == (Action.ALREADY_GONE, "already-gone")


def test_a_stopped_run_writes_nothing() -> None:
    budget = RunBudget(None)
    budget.request_stop("SIGTERM")
    store = store_with(configmap())
    outcome = Marker(store, dry_run=False, budget=budget).mark(
        SWEEP, verdict_of(configmap()), CONFIGMAPS, EVIDENCE, NOW
    )
    assert (outcome.action, outcome.reason) == (Action.SKIPPED, "stopped")
    assert reduce.object_ref(stored(store), CONFIGMAPS).mark is None


def test_unmark_is_reported_item_by_item_even_for_an_object_in_use() -> None:
    marked = configmap(**{ORPHANED_LABEL: "true"})
    store = store_with(marked)
    verdict = Verdict(verdict_of(marked, False).ref, False, "referrer-live", "WD web", True)

    outcome = Marker(store, dry_run=False, budget=RunBudget(None)).unmark(
        SWEEP, verdict, CONFIGMAPS
    )

    assert (outcome.action, outcome.reason, outcome.healthy) == (
        Action.UNMARKED,
        "referrer-live",
        False,
    )
    assert outcome.detail == "mark removed: WD web"
    assert ORPHANED_LABEL not in stored(store)["metadata"]["labels"]


def test_unmark_reads_again_and_retries_when_the_object_changed() -> None:
    marked = configmap(**{ORPHANED_LABEL: "true"})
    store = store_with(marked)
    verdict = verdict_of(marked, False)
    store.patch(CONFIGMAPS, "ns-1", "app-config", [])  # someone wrote it: a new version

    outcome = Marker(store, dry_run=False, budget=RunBudget(None)).unmark(
        SWEEP, verdict, CONFIGMAPS
    )

    assert outcome.action is Action.UNMARKED
    assert reduce.object_ref(stored(store), CONFIGMAPS).mark is None


class AlwaysChanged:
    """A target whose object changes under every attempt."""

    def __init__(self, store: SnapshotStore) -> None:
        self.store = store

    def patch(
        self, resource: Resource, namespace: str | None, name: str, ops: list[dict[str, Any]]
    ) -> PatchResult:
        self.store.patch(resource, namespace, name, [])  # a concurrent write first
        return self.store.patch(resource, namespace, name, ops)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.get(*args, **kwargs)


def test_an_unmark_that_never_applies_fails_the_item() -> None:
    marked = configmap(**{ORPHANED_LABEL: "true"})
    target = AlwaysChanged(store_with(marked))

    outcome = Marker(target, dry_run=False, budget=RunBudget(None)).unmark(
        SWEEP, verdict_of(marked, False), CONFIGMAPS
    )

    assert (outcome.action, outcome.reason) == (Action.FAILED, "unmark-failed")
    assert "3 attempts" in outcome.detail


def test_a_new_mark_that_cannot_replace_the_old_one_removes_it() -> None:
    """Otherwise evidence that changes and changes back would find the old mark again."""
    old = marks.companion_evidence('["default/api"]')
    marked = configmap(**{ORPHANED_LABEL: "true"})
    marked["metadata"]["annotations"].update(
        {
            "gcjob.datumapis.com/orphaned-since": "2026-11-23T09:00:00Z",
            "gcjob.datumapis.com/orphaned-evidence": old.digest,
        }
    )
    store = store_with(marked)
    verdict = verdict_of(marked)
    store.patch(CONFIGMAPS, "ns-1", "app-config", [])  # written since it was read

    outcome = Marker(store, dry_run=False, budget=RunBudget(None)).mark(
        SWEEP, verdict, CONFIGMAPS, EVIDENCE, NOW
    )

    assert (outcome.action, outcome.reason) == (Action.SKIPPED, "changed-since-observed")
    assert outcome.detail.endswith("the old mark was removed")
    assert reduce.object_ref(stored(store), CONFIGMAPS).mark is None
