"""gcjob/act/deleter.py and gcjob/kube/access.py (issue 47): what a delete's answer says of
the object it leaves, read again a moment later (`delete-held`, `deleted`), and a delete the
hub's admission refuses (`admission-refused`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from gcjob.act.deleter import SETTLE_AFTER, SETTLE_AT_MOST, Deleter
from gcjob.budget import RunBudget
from gcjob.kube.access import (
    DeleteResult,
    HeldBy,
    Lingering,
    _held_by,
    finalizers_of,
    holding,
    lingering,
)
from gcjob.kube.errors import ApiError, Unavailable
from gcjob.kube.resources import CONFIGMAPS, SECRETS
from gcjob.kube.transport import Response
from gcjob.model import Action, Sweep, Verdict
from gcjob.reasons import Reason
from testbed.model import ref
from tests.act.test_deleter import Clock

VERDICT = Verdict(ref(name="app", uid="uid-app", resource_version="7"), True, "orphaned", "gone")
KARMADA = "karmada.io/binding-controller"
SINCE = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


TERMINATING = {"deletionTimestamp": "2026-11-20T12:00:00Z"}


def _answer(finalizers: Any, **meta: Any) -> Response:
    obj = {"metadata": {"name": "app", "uid": "uid-app", "finalizers": finalizers, **meta}}
    return Response(200, {}, json.dumps(obj).encode())


def _body(obj: Any) -> Response:
    return Response(200, {}, json.dumps(obj).encode())


@pytest.mark.parametrize(
    "finalizers,result",
    [
        (["orphan"], DeleteResult.DELETED),  # the garbage collector lets it go
        ([], DeleteResult.DELETED),
        (None, DeleteResult.DELETED),
        ([KARMADA, "orphan"], HeldBy((KARMADA,))),
        (["example.com/tenant"], HeldBy(("example.com/tenant",))),
        ("not-a-list", HeldBy(("<unreadable>",))),
        ([7, "orphan"], HeldBy(("<unreadable>",))),
    ],
)
def test_a_deletes_answer_is_deleted_only_when_nothing_but_orphan_holds_it(
    finalizers: Any, result: Any
) -> None:
    assert _held_by(_answer(finalizers, **TERMINATING), CONFIGMAPS, "uid-app") == result


def test_an_answer_that_is_no_object_is_read_again_never_taken_as_deleted() -> None:
    assert _held_by(Response(200, {}, b"<html>"), CONFIGMAPS, "uid-app") == HeldBy(())
    assert _held_by(Response(200, {}, b"[]"), CONFIGMAPS, "uid-app") == HeldBy(())


@pytest.mark.parametrize(
    "body",
    [
        {},  # no object at all
        {"metadata": {"name": "app", "finalizers": ["orphan"], **TERMINATING}},  # no uid
        {"metadata": {"name": "app", "uid": "uid-other", **TERMINATING}},  # another object
        {"metadata": {"name": "app", "uid": "uid-app"}},  # the object, not Terminating
        {"metadata": {"name": "app", "uid": "uid-app", "finalizers": ["orphan"]}},
        {"kind": "Status", "status": "Failure"},
        {"kind": "Status"},
    ],
)
def test_an_answer_that_does_not_show_our_object_terminating_is_read_again(body: Any) -> None:
    """Only the pinned uid with a deletionTimestamp (or a Status of success) says deleted."""
    assert _held_by(_body(body), CONFIGMAPS, "uid-app") == HeldBy(())
    assert _held_by(_body(body), SECRETS, "uid-app") == HeldBy(())


def test_a_status_of_success_is_an_object_deleted_at_once() -> None:
    """What the API server answers for an object deleted at once (no finalizer to add)."""
    status = {"kind": "Status", "apiVersion": "v1", "status": "Success"}
    assert _held_by(_body(status), CONFIGMAPS, "uid-app") is DeleteResult.DELETED


def test_a_secrets_finalizers_survive_its_reduction() -> None:
    assert _held_by(_answer([KARMADA], **TERMINATING), SECRETS, "uid-app") == HeldBy((KARMADA,))
    assert _held_by(_answer(["orphan"], **TERMINATING), SECRETS, "uid-app") is (
        DeleteResult.DELETED
    )
    assert holding(finalizers_of({"metadata": {"finalizers": ["orphan", KARMADA]}})) == (KARMADA,)


class Hub:
    """A delete answered HeldBy, then reads again answering each of `reads` in turn."""

    def __init__(self, held: HeldBy, reads: list[Lingering | Exception | None]) -> None:
        self.held = held
        self.reads = reads
        self.gets = 0

    def delete(self, *args: Any) -> Any:
        return self.held

    def get(self, *args: Any, **kwargs: Any) -> Any:
        self.gets += 1
        read = self.reads.pop(0)
        if isinstance(read, Exception):
            raise read
        return read


def _held_then(read: Lingering | Exception | None) -> tuple[Any, Any, Hub, Clock]:
    clock = Clock()
    hub = Hub(HeldBy((KARMADA,)), [read])
    deleter = Deleter(
        hub,  # type: ignore[arg-type]
        dry_run=False,
        budget=RunBudget(None, clock=clock),
        clock=clock,
        sleep=clock.sleep,
    )
    first = deleter.delete(Sweep.BINDINGS, VERDICT, CONFIGMAPS)
    return first, deleter.settle([first]), hub, clock


def test_a_held_delete_names_its_finalizers_until_it_is_read_again() -> None:
    first, _, _, _ = _held_then(None)
    assert (first.action, first.reason) == (Action.DELETE_HELD, "orphaned")
    assert f"[{KARMADA}]" in first.detail


@pytest.mark.parametrize(
    "read",
    [
        None,  # gone
        Lingering("uid-app", True, SINCE, ("orphan",)),  # only the collector's, which goes
        Lingering("uid-new", False, None, ()),  # another object under its name: it went
    ],
)
def test_a_held_delete_read_again_gone_or_held_only_by_orphan_is_deleted(
    read: Lingering | None,
) -> None:
    _, settled, hub, clock = _held_then(read)
    assert [(o.action, o.reason) for o in settled] == [(Action.DELETED, "orphaned")]
    assert hub.gets == 1
    assert clock.slept == SETTLE_AFTER  # one wait, a moment after the delete went out


def test_a_held_delete_still_held_says_so_naming_the_finalizers() -> None:
    _, settled, _, _ = _held_then(Lingering("uid-app", True, SINCE, (KARMADA, "orphan")))
    (outcome,) = settled
    assert (outcome.action, outcome.reason) == (Action.DELETE_HELD, "orphaned")
    assert f"still held by finalizers [{KARMADA}]" in outcome.detail
    assert "orphan]" not in outcome.detail


@pytest.mark.parametrize(
    "read", [Lingering("uid-app", False, None, ()), Lingering("uid-app", False, None, (KARMADA,))]
)
def test_a_held_delete_read_again_not_terminating_did_not_take(read: Lingering) -> None:
    """Its own uid, no deletionTimestamp: the object is there as before, never `deleted`."""
    _, settled, _, _ = _held_then(read)
    (outcome,) = settled
    assert (outcome.action, outcome.reason) == (Action.FAILED, Reason.DELETE_UNCERTAIN)
    assert "did not take" in outcome.detail


@pytest.mark.parametrize(
    "obj", [{"metadata": {"name": "app"}}, {"metadata": {"name": "app", "uid": ""}}, {}]
)
def test_a_held_delete_read_again_without_a_uid_proves_nothing(obj: dict[str, Any]) -> None:
    """An answer naming no uid is not "another object under that name": its state is unknown."""
    _, settled, _, _ = _held_then(lingering(obj))
    (outcome,) = settled
    assert (outcome.action, outcome.reason) == (Action.DELETE_HELD, Reason.LOOKUP_FAILED)
    assert "no uid" in outcome.detail


def _held_many(reads: list[Any], clock: Clock, budget: RunBudget) -> tuple[list[Any], Any, Hub]:
    hub = Hub(HeldBy((KARMADA,)), reads)
    deleter = Deleter(
        hub,  # type: ignore[arg-type]
        dry_run=False,
        budget=budget,
        clock=clock,
        sleep=clock.sleep,
    )
    held = []
    for index in range(len(reads)):
        verdict = Verdict(
            ref(name=f"a{index}", uid=f"u{index}", resource_version="1"), True, "orphaned", "gone"
        )
        held.append(deleter.delete(Sweep.BINDINGS, verdict, CONFIGMAPS))
    return held, deleter, hub


def test_held_deletes_are_not_read_again_after_the_run_stopped() -> None:
    clock = Clock()
    budget = RunBudget(None, clock=clock)
    held, deleter, hub = _held_many([None, None], clock, budget)
    budget.request_stop("SIGTERM")
    settled = deleter.settle(held)
    assert hub.gets == 0 and clock.slept == 0
    assert [o.action for o in settled] == [Action.DELETE_HELD] * 2
    for outcome in settled:
        assert f"[{KARMADA}]; not read again: run stopped (SIGTERM)" in outcome.detail


def test_held_deletes_are_not_read_again_past_the_run_deadline() -> None:
    clock = Clock()
    budget = RunBudget(0.5, clock=clock)
    held, deleter, hub = _held_many([None], clock, budget)
    (outcome,) = deleter.settle(held)
    assert hub.gets == 0
    assert outcome.action is Action.DELETE_HELD
    assert "not read again: run stopped (deadline)" in outcome.detail


class SlowRead:
    """A read that takes `seconds` of the clock, then finds the object gone."""

    def __init__(self, clock: Clock, seconds: float) -> None:
        self.clock = clock
        self.seconds = seconds

    def __call__(self) -> None:
        self.clock.now += self.seconds


def test_the_settle_phase_is_bounded_as_a_whole() -> None:
    clock = Clock()
    budget = RunBudget(None, clock=clock)
    held, deleter, hub = _held_many([None] * 4, clock, budget)
    slow = SlowRead(clock, 4.0)
    reads = hub.get

    def get(*args: Any, **kwargs: Any) -> Any:
        slow()
        return reads(*args, **kwargs)

    hub.get = get  # type: ignore[method-assign]
    settled = deleter.settle(held)
    assert SETTLE_AFTER + 3 * 4.0 > SETTLE_AT_MOST  # the fourth read would pass the bound
    assert hub.gets == 3
    assert [o.action for o in settled] == [Action.DELETED] * 3 + [Action.DELETE_HELD]
    assert "not read again: settling ran out of its time" in settled[3].detail
    assert f"[{KARMADA}]" in settled[3].detail


def test_one_held_reads_unexpected_failure_drops_none_of_the_others() -> None:
    clock = Clock()
    budget = RunBudget(None, clock=clock)
    held, deleter, _ = _held_many([RuntimeError("boom"), None], clock, budget)
    first, second = deleter.settle(held)
    assert (first.action, first.reason) == (Action.DELETE_HELD, Reason.LOOKUP_FAILED)
    assert "RuntimeError: boom" in first.detail and "state is unknown" in first.detail
    assert second.action is Action.DELETED


def test_a_held_delete_that_cannot_be_read_again_is_never_counted_deleted() -> None:
    _, settled, _, _ = _held_then(Unavailable("connection refused"))
    (outcome,) = settled
    assert (outcome.action, outcome.reason) == (Action.DELETE_HELD, Reason.LOOKUP_FAILED)
    assert "state is unknown" in outcome.detail and "connection refused" in outcome.detail


def test_one_wait_settles_many_held_deletes() -> None:
    clock = Clock()
    hub = Hub(HeldBy((KARMADA,)), [None, None, None])
    deleter = Deleter(
        hub,  # type: ignore[arg-type]
        dry_run=False,
        budget=RunBudget(None, clock=clock),
        clock=clock,
        sleep=clock.sleep,
    )
    held = []
    for index in range(3):
        verdict = Verdict(
            ref(name=f"a{index}", uid=f"u{index}", resource_version="1"), True, "orphaned", "gone"
        )
        held.append(deleter.delete(Sweep.BINDINGS, verdict, CONFIGMAPS))
        clock.now += 0.4  # the deletes are paced
    settled = deleter.settle(held)
    assert [o.action for o in settled] == [Action.DELETED] * 3
    assert clock.slept == pytest.approx(SETTLE_AFTER - 0.4)  # after the last, once


class Refuses:
    def __init__(self, error: ApiError) -> None:
        self.error = error

    def delete(self, *args: Any) -> Any:
        raise self.error


def test_a_delete_admission_refuses_keeps_the_object_with_the_servers_words() -> None:
    said = 'admission webhook "keep.example.com" denied the request: kept Bearer abc.def'
    error = ApiError(403, "Forbidden", said, "/api/v1/x", admission=True)
    deleter = Deleter(Refuses(error), dry_run=False, budget=RunBudget(None))  # type: ignore[arg-type]
    outcome = deleter.delete(Sweep.COMPANIONS, VERDICT, CONFIGMAPS)
    assert (outcome.action, outcome.reason) == (Action.SKIPPED, Reason.ADMISSION_REFUSED)
    assert 'admission webhook "keep.example.com" denied the request' in outcome.detail
    assert "abc.def" not in outcome.detail  # redacted as every message is
    assert len(outcome.detail) < 400


def test_a_secrets_admission_refusal_names_only_who_refused() -> None:
    """A policy engine may quote the object: for a Secret, none of its message is kept."""
    payload = "aHVudGVyMiBpcyBteSBwYXNzd29yZA=="
    said = (
        f'secrets "db" is forbidden: admission webhook "validate.kyverno.svc" denied the '
        f'request: resource Secret/ns/db was blocked: data: {{"password": "{payload}"}}'
    )
    error = ApiError(400, "BadRequest", said, "/api/v1/x", admission=True)
    deleter = Deleter(Refuses(error), dry_run=False, budget=RunBudget(None))  # type: ignore[arg-type]
    outcome = deleter.delete(Sweep.COMPANIONS, VERDICT, SECRETS)
    assert (outcome.action, outcome.reason) == (Action.SKIPPED, Reason.ADMISSION_REFUSED)
    assert outcome.detail.endswith('(HTTP 400): admission webhook "validate.kyverno.svc"')
    assert payload not in repr(outcome) and "password" not in repr(outcome)
    assert "aHVudGVy" not in repr(outcome)


def test_a_delete_rbac_refuses_stays_a_failure() -> None:
    said = 'configmaps "app" is forbidden: User "gcjob" cannot delete resource "configmaps"'
    error = ApiError(403, "Forbidden", said, "/api/v1/x")
    deleter = Deleter(Refuses(error), dry_run=False, budget=RunBudget(None))  # type: ignore[arg-type]
    outcome = deleter.delete(Sweep.COMPANIONS, VERDICT, CONFIGMAPS)
    assert (outcome.action, outcome.reason) == (Action.FAILED, Reason.DELETE_FAILED)
