"""gcjob.report.records: item records (checked against the shipped JSON Schema) and Tally."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from gcjob import __version__
from gcjob.model import Action, Outcome, Sweep
from gcjob.report.records import DueTally, Tally, item_record, rfc3339
from testbed.model import HUB_NS, NOW, OLD, ref

RUN_ID = "5f0c6c1e-6a1b-4f1e-9d7e-3c2b1a0f9e8d"
EMITTED = NOW + timedelta(seconds=2, microseconds=345678)  # when the record was written


def outcome(
    sweep: Sweep = Sweep.COMPANIONS,
    action: Action = Action.WOULD_DELETE,
    reason: str = "orphaned",
    kind: str = "ConfigMap",
    **kwargs: Any,
) -> Outcome:
    ref_kwargs = {k: kwargs.pop(k) for k in ("created", "uid", "name") if k in kwargs}
    return Outcome(
        sweep=sweep,
        ref=ref(kind, **ref_kwargs),
        action=action,
        reason=reason,
        detail=kwargs.pop("detail", f"no WorkloadDeployment named web-dfw in {HUB_NS}"),
        **kwargs,
    )


def test_companion_record(validator: Draft202012Validator) -> None:
    record = item_record(outcome(referrers=("default/web-dfw",)), RUN_ID, NOW, True, EMITTED)
    validator.validate(record)
    assert record == {
        "record": "item",
        "run_id": RUN_ID,
        "time": rfc3339(EMITTED, "milliseconds"),
        "version": __version__,
        "sweep": "companions",
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "namespace": HUB_NS,
        "name": "app-config",
        "uid": "uid-1",
        "age_seconds": 3600,
        "action": "would-delete",
        "reason": "orphaned",
        "detail": f"no WorkloadDeployment named web-dfw in {HUB_NS}",
        "dry_run": True,
        "referrers": ["default/web-dfw"],
    }


def test_route_record_carries_cluster_and_gateways(validator: Draft202012Validator) -> None:
    record = item_record(
        outcome(
            Sweep.ROUTES,
            Action.DELETED,
            "upstream-gateways-gone",
            kind="HTTPRoute",
            name="web",
            cluster="org/proj",
            gateways=("default/gw-a", "default/gw-b"),
        ),
        RUN_ID,
        NOW,
        False,
        EMITTED,
    )
    validator.validate(record)
    assert record["apiVersion"] == "gateway.networking.k8s.io/v1"
    assert record["cluster"] == "org/proj"
    assert record["gateways"] == ["default/gw-a", "default/gw-b"]
    assert record["dry_run"] is False
    assert "referrers" not in record


def test_optional_fields_only_when_present(validator: Draft202012Validator) -> None:
    record = item_record(
        outcome(Sweep.BINDINGS, Action.SKIPPED, "too-young", kind="ResourceBinding"),
        RUN_ID,
        NOW,
        True,
        EMITTED,
    )
    validator.validate(record)
    assert "referrers" not in record
    assert "cluster" not in record
    assert "gateways" not in record
    assert "orphaned_since" not in record


def test_a_marked_object_carries_since_when_it_is_an_orphan(
    validator: Draft202012Validator,
) -> None:
    since = datetime(2026, 11, 20, 11, 50, 0, 123456, tzinfo=UTC)
    record = item_record(
        outcome(action=Action.MARKED, orphaned_since=since), RUN_ID, NOW, False, EMITTED
    )
    validator.validate(record)
    assert (record["action"], record["orphaned_since"]) == ("marked", "2026-11-20T11:50:00Z")


def test_empty_cluster_name_is_still_reported(validator: Draft202012Validator) -> None:
    record = item_record(
        outcome(Sweep.ROUTES, Action.SKIPPED, "no-parent-refs", kind="HTTPRoute", cluster=""),
        RUN_ID,
        NOW,
        True,
        EMITTED,
    )
    validator.validate(record)
    assert record["cluster"] == ""


def test_age_unknown_is_null(validator: Draft202012Validator) -> None:
    record = item_record(
        outcome(action=Action.SKIPPED, reason="age-unknown", created=None),
        RUN_ID,
        NOW,
        True,
        EMITTED,
    )
    validator.validate(record)
    assert record["age_seconds"] is None


def test_age_is_whole_seconds(validator: Draft202012Validator) -> None:
    created = NOW - timedelta(seconds=59, milliseconds=900)
    record = item_record(outcome(created=created), RUN_ID, NOW, True, EMITTED)
    validator.validate(record)
    assert record["age_seconds"] == 59
    assert isinstance(record["age_seconds"], int)


def test_unpinnable_object_with_empty_uid_validates(validator: Draft202012Validator) -> None:
    record = item_record(
        outcome(action=Action.SKIPPED, reason="unpinnable", uid=""), RUN_ID, NOW, True, EMITTED
    )
    validator.validate(record)
    assert record["uid"] == ""


@pytest.mark.parametrize("action", list(Action))
@pytest.mark.parametrize("kind", ["ConfigMap", "Secret", "ResourceBinding", "HTTPRoute"])
def test_every_action_and_kind_validates(
    validator: Draft202012Validator, action: Action, kind: str
) -> None:
    record = item_record(
        outcome(action=action, reason="delete-failed", kind=kind), RUN_ID, NOW, False, EMITTED
    )
    validator.validate(record)
    assert record["action"] == action.value


def test_schema_rejects_an_unknown_field(validator: Draft202012Validator) -> None:
    record = item_record(outcome(), RUN_ID, NOW, True, EMITTED)
    record["data"] = {"x": "y"}
    assert not validator.is_valid(record)


def test_extra_is_not_reported(validator: Draft202012Validator) -> None:
    record = item_record(outcome(extra={"note": "internal"}), RUN_ID, NOW, True, EMITTED)
    validator.validate(record)
    assert "extra" not in record and "note" not in record


def test_record_is_json_serialisable() -> None:
    record = item_record(
        outcome(referrers=("a/b",), cluster="single", gateways=("a/gw",)),
        RUN_ID,
        NOW,
        True,
        EMITTED,
    )
    assert json.loads(json.dumps(record)) == record


def test_rfc3339() -> None:
    assert rfc3339(datetime(2026, 11, 20, 12, 0, 0, 123456, tzinfo=UTC)) == "2026-11-20T12:00:00Z"
    plus_two = datetime(2026, 11, 20, 14, 0, 0, tzinfo=timezone(timedelta(hours=2)))
    assert rfc3339(plus_two) == "2026-11-20T12:00:00Z"
    assert rfc3339(OLD) == "2026-07-01T11:00:00Z"


# -- Tally ----------------------------------------------------------------------------------


def test_tally_counts() -> None:
    tally = Tally()
    tally.add(outcome(Sweep.COMPANIONS, Action.WOULD_DELETE, "orphaned"))
    tally.add(outcome(Sweep.COMPANIONS, Action.WOULD_DELETE, "orphaned"))
    tally.add(outcome(Sweep.COMPANIONS, Action.WOULD_DELETE, "companion-deleted"))
    tally.add(outcome(Sweep.COMPANIONS, Action.SKIPPED, "referrer-live", healthy=True))
    tally.add(outcome(Sweep.BINDINGS, Action.SKIPPED, "object-exists", healthy=True))
    tally.add(outcome(Sweep.ROUTES, Action.FAILED, "delete-failed", kind="HTTPRoute"))
    tally.add(outcome(Sweep.ROUTES, Action.WOULD_DELETE, "upstream-namespace-gone"))
    assert tally.as_dict() == {
        "companions": {
            "would-delete": {"companion-deleted": 1, "orphaned": 2},
            "skipped": {"referrer-live": 1},
        },
        "bindings": {"skipped": {"object-exists": 1}},
        "routes": {"failed": {"delete-failed": 1}, "would-delete": {"upstream-namespace-gone": 1}},
    }
    assert tally.total(Action.WOULD_DELETE) == 4
    assert tally.total(Action.SKIPPED) == 2
    assert tally.total(Action.DELETED) == 0
    assert tally.totals() == {
        "deleted": 0,
        "delete-held": 0,  # counted apart from deleted (issue 47)
        "would-delete": 4,
        "already-gone": 0,
        "skipped": 2,
        "failed": 1,
        "marked": 0,
        "would-mark": 0,
        "unmarked": 0,
        "would-unmark": 0,
    }


def test_tally_reasons_sorted() -> None:
    tally = Tally()
    for reason in ("too-young", "protected", "terminating"):
        tally.add(outcome(action=Action.SKIPPED, reason=reason))
    assert list(tally.as_dict()["companions"]["skipped"]) == [
        "protected",
        "terminating",
        "too-young",
    ]


def test_empty_tally() -> None:
    tally = Tally()
    assert tally.as_dict() == {}
    assert set(tally.totals()) == {a.value for a in Action}
    assert all(n == 0 for n in tally.totals().values())
    # asking does not create entries
    assert tally.as_dict() == {}


# -- when each orphan goes (issue 23 item 2) ---------------------------------------------


def test_an_orphan_left_in_place_says_when_it_goes(validator: Draft202012Validator) -> None:
    due = NOW + timedelta(minutes=10, microseconds=250000)
    record = item_record(
        outcome(action=Action.WOULD_MARK, orphaned_since=NOW, would_delete_at=due),
        RUN_ID,
        NOW,
        True,
        EMITTED,
    )
    validator.validate(record)
    assert record["would_delete_at"] == "2026-07-01T12:10:00Z"  # RFC 3339, UTC, seconds
    assert "would_delete_at" not in item_record(outcome(), RUN_ID, NOW, True, EMITTED)


def test_the_schema_refuses_a_would_delete_at_that_is_no_time(
    validator: Draft202012Validator,
) -> None:
    record = item_record(outcome(), RUN_ID, NOW, True, EMITTED)
    record["would_delete_at"] = "in ten minutes"
    assert not validator.is_valid(record)


def test_due_tally_counts_this_run_and_later_per_sweep_with_the_earliest_and_latest() -> None:
    tally = DueTally()
    for sweep, at in (
        (Sweep.COMPANIONS, NOW),  # due now: this run
        (Sweep.COMPANIONS, NOW + timedelta(minutes=10)),
        (Sweep.COMPANIONS, NOW + timedelta(minutes=2)),
        (Sweep.ROUTES, NOW + timedelta(minutes=7)),
    ):
        tally.add(outcome(sweep, would_delete_at=at), NOW)
    tally.add(outcome(Sweep.BINDINGS, Action.DELETED), NOW)  # no time: gone, not counted
    tally.add(outcome(Sweep.BINDINGS, Action.WOULD_DELETE, "brake"), NOW)  # held back
    assert tally.as_dict(["companions", "bindings", "routes"]) == {
        "companions": {
            "this_run": 1,
            "later": 2,
            "earliest": "2026-07-01T12:02:00Z",
            "latest": "2026-07-01T12:10:00Z",
        },
        "bindings": {"this_run": 0, "later": 0, "earliest": None, "latest": None},
        "routes": {
            "this_run": 0,
            "later": 1,
            "earliest": "2026-07-01T12:07:00Z",
            "latest": "2026-07-01T12:07:00Z",
        },
    }


def test_the_summary_schema_holds_would_delete(validator: Draft202012Validator) -> None:
    """The summary's `would_delete` as the schema has it: this property alone, checked
    against its own definition (the rest of the summary is tested with the emitter)."""
    schema = validator.schema["$defs"]["summary"]
    assert "would_delete" in schema["required"]
    tally = DueTally()
    tally.add(outcome(would_delete_at=NOW + timedelta(minutes=1)), NOW)
    sub = Draft202012Validator(
        {"$defs": validator.schema["$defs"], **schema["properties"]["would_delete"]}
    )
    sub.validate(tally.as_dict(["companions", "bindings"]))
    assert not sub.is_valid({"companions": {"this_run": 0, "later": 0}})
    assert not sub.is_valid(
        {"companions": {"this_run": -1, "later": 0, "earliest": None, "latest": None}}
    )


def test_a_drains_next_round_keeps_what_the_rounds_did_and_forgets_what_they_found() -> None:
    tally = Tally()
    tally.add(outcome(Sweep.COMPANIONS, Action.MARKED, "orphaned"))
    tally.add(outcome(Sweep.COMPANIONS, Action.SKIPPED, "referrer-live", healthy=True))
    tally.add(outcome(Sweep.COMPANIONS, Action.SKIPPED, "grace-period"))
    tally.next_round()
    tally.add(outcome(Sweep.COMPANIONS, Action.DELETED, "orphaned"))
    tally.add(outcome(Sweep.COMPANIONS, Action.SKIPPED, "referrer-live", healthy=True))

    assert tally.as_dict() == {
        "companions": {
            "marked": {"orphaned": 1},
            "deleted": {"orphaned": 1},
            "skipped": {"referrer-live": 1},  # the live object, once: not once a round
        }
    }


def test_what_a_sweep_not_enforced_would_delete_is_counted_apart() -> None:
    due = DueTally()
    later = NOW + timedelta(minutes=10)
    due.add(outcome(Sweep.COMPANIONS, would_delete_at=NOW), NOW)
    due.add(outcome(Sweep.COPIES, would_delete_at=NOW, if_enforced=True), NOW)
    due.add(outcome(Sweep.COPIES, Action.MARKED, would_delete_at=later, if_enforced=True), NOW)

    assert due.as_dict(["companions"])["companions"]["this_run"] == 1
    assert due.of("copies") == {"this_run": 0, "later": 0, "earliest": None, "latest": None}
    assert due.if_enforced is not None
    assert due.if_enforced.of("copies") == {
        "this_run": 1,
        "later": 1,
        "earliest": rfc3339(later),
        "latest": rfc3339(later),
    }
    record = item_record(
        outcome(Sweep.COPIES, would_delete_at=NOW, if_enforced=True), RUN_ID, NOW, True, EMITTED
    )
    assert "would_delete_at" not in record
    assert record["would_delete_if_enforced_at"] == rfc3339(NOW)
