"""gcjob/act/events.py without a server: which outcomes become Events, what an Event carries
(never an outcome's detail, where label and annotation values can be quoted), the run's own
budget, and a refusal that stops the rest. On the real hub: tests/e2e/test_events_e2e.py."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gcjob.act.events import Events, event_of
from gcjob.kube.errors import ApiError
from gcjob.model import Action, Outcome, Sweep
from gcjob.reasons import Reason
from testbed.model import NOW, ref


class Posted:
    """Stands for the access layer's `create`, recording what it is asked to send."""

    def __init__(
        self, fail_with: Exception | None = None, fail_in: dict[str, Exception] | None = None
    ) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.fail_with = fail_with
        self.fail_in = fail_in or {}  # namespace -> what a create there raises
        self.tried: list[str | None] = []  # the namespace of every create asked for

    def create(self, resource: Any, namespace: str | None, body: dict[str, Any]) -> Any:
        self.tried.append(namespace)
        if self.fail_with is not None:
            raise self.fail_with
        if namespace in self.fail_in:
            raise self.fail_in[namespace]
        self.bodies.append(body)
        return body


def outcome(action: Action, detail: str = "no WorkloadDeployment named web", **kw: Any) -> Outcome:
    return Outcome(Sweep.COMPANIONS, ref(), action, Reason.ORPHANED, detail, **kw)


@given(value=st.text(max_size=200))
def test_an_event_never_carries_the_outcomes_detail(value: str) -> None:
    """A detail can quote a label or annotation value: none of it reaches an Event."""
    detail = f"quoted: LEAK{value}"
    for action in (Action.MARKED, Action.UNMARKED, Action.DELETED):
        body = event_of(outcome(action, detail), ("R", "A"), "run-1", "pod", NOW)
        assert "LEAK" not in str(body)
        assert body["regarding"] == {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "namespace": ref().namespace,
            "name": "app-config",
            "uid": "uid-1",
        }


def test_only_marks_unmarks_and_deletes_are_posted_within_the_runs_budget() -> None:
    access = Posted()
    events = Events(access, "run-1", max_events=2)  # type: ignore[arg-type]
    due = NOW + timedelta(minutes=10)
    for action in (Action.WOULD_MARK, Action.WOULD_DELETE, Action.SKIPPED, Action.FAILED):
        events.note(outcome(action), NOW)
    events.note(outcome(Action.MARKED, would_delete_at=due), NOW)
    events.note(outcome(Action.DELETED), NOW)
    events.note(outcome(Action.UNMARKED), NOW)  # over the budget of 2

    events.finish()

    assert [b["reason"] for b in access.bodies] == ["OrphanMarked", "OrphanDeleted"]
    assert (
        "deleted at 2026-" in access.bodies[0]["note"] and "run run-1" in access.bodies[0]["note"]
    )
    assert (events.tally.sent, events.tally.failed, events.tally.over_budget) == (2, 0, 1)


def test_a_refused_event_stops_the_rest_and_never_raises() -> None:
    refused = ApiError(403, "Forbidden", "events.events.k8s.io is forbidden", "/apis/events")
    events = Events(Posted(refused), "run-1")  # type: ignore[arg-type]
    for _ in range(3):
        events.note(outcome(Action.DELETED), NOW)

    events.finish()

    assert events.refused and events.tally.sent == 0 and events.tally.failed == 3
    events.note(outcome(Action.DELETED), NOW)
    assert not events.queued  # none more this run


def test_a_namespace_being_deleted_refuses_its_own_events_and_the_others_are_sent() -> None:
    """Issue 46 item 7: the first Event went to a namespace being deleted (403, the cause
    NamespaceTerminating) and every later one was dropped. Only a permission stops them all."""
    terminating = ApiError(
        403,
        "Forbidden",
        'events.events.k8s.io "a.1" is forbidden: unable to create new content in namespace '
        "leaving because it is being terminated",
        "/apis/events.k8s.io/v1/namespaces/leaving/events",
        namespace_terminating=True,
    )
    access = Posted(fail_in={"leaving": terminating})
    events = Events(access, "run-1")  # type: ignore[arg-type]
    for namespace in ("leaving", "shop", "leaving", "bar"):
        gone = Outcome(
            Sweep.COMPANIONS, ref(namespace=namespace), Action.DELETED, Reason.ORPHANED, ""
        )
        events.note(gone, NOW)

    events.finish()

    assert not events.refused
    assert [b["metadata"]["namespace"] for b in access.bodies] == ["shop", "bar"]
    assert access.tried == ["leaving", "shop", "bar"]  # none more tried where it was refused
    assert (events.tally.sent, events.tally.failed) == (2, 2)
