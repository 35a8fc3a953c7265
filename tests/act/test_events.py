"""gcjob/act/events.py without a server: which outcomes become Events, what an Event carries
(never an outcome's detail, where label and annotation values can be quoted), the run's own
budget, and a refusal that stops the rest. On the real hub: tests/e2e/test_events_e2e.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from gcjob.act.events import (
    NAME_CHARS,
    Events,
    Regarding,
    event_name,
    event_of,
    restored_event,
)
from gcjob.domain import is_dns1123_subdomain
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


# -- issue 46 item 8: an Event's name is a valid name, whatever the object's name --------------

_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_LABEL = st.builds(
    lambda first, middle, last: first + middle + last,
    st.sampled_from(_ALNUM),
    st.text(alphabet=_ALNUM + "-", max_size=61),
    st.sampled_from(_ALNUM),
) | st.sampled_from(_ALNUM)
# Valid object names (DNS-1123 subdomains), short and up to the longest, 253 characters.
OBJECT_NAMES = (
    st.lists(_LABEL, min_size=1, max_size=10).map(".".join).filter(lambda n: len(n) <= 253)
)


@st.composite
def long_names(draw: st.DrawFn) -> str:
    """A valid name past the cut, with `-` or `.` (or runs of them) at and around it."""
    length = draw(st.integers(NAME_CHARS + 3, 253))
    chars = [draw(st.sampled_from(_ALNUM)) for _ in range(length)]
    near = st.integers(NAME_CHARS - 3, NAME_CHARS + 1)
    for at in draw(st.lists(near, min_size=1, max_size=4)):
        chars[at] = draw(st.sampled_from("-."))
    name = "".join(chars)
    while ".." in name or "-." in name or ".-" in name:  # each part starts, ends alphanumeric
        name = name.replace("..", ".a").replace("-.", "-a").replace(".-", ".a")
    assert is_dns1123_subdomain(name)
    return name


SUFFIX = st.text(alphabet="0123456789abcdef", min_size=16, max_size=16)


@given(name=OBJECT_NAMES | long_names(), suffix=SUFFIX)
@example(name="a" * 199 + "-" + "b" * 10, suffix="0123456789abcdef")  # the issue's: `a-.<hex>`
@example(name="a" * 199 + "." + "b" * 10, suffix="0123456789abcdef")
def test_every_events_name_is_a_valid_name_and_starts_with_the_objects(
    name: str, suffix: str
) -> None:
    made = event_name(name, suffix)

    assert is_dns1123_subdomain(made), made
    prefix, _, tail = made.rpartition(".")
    assert tail == suffix  # unique as before: 16 hex digits of a uuid4 each
    assert name.startswith(prefix) and len(prefix) <= NAME_CHARS
    assert not name[len(prefix) : NAME_CHARS].strip("-.")  # only a cut's `-` and `.` dropped


@given(name=OBJECT_NAMES | long_names())
def test_an_events_body_is_named_validly_and_uniquely(name: str) -> None:
    deleted = Outcome(Sweep.COMPANIONS, ref(name=name), Action.DELETED, Reason.ORPHANED, "")
    bodies = [event_of(deleted, ("R", "A"), "run-1", "pod", NOW) for _ in range(2)]
    names = [str(b["metadata"]["name"]) for b in bodies]  # type: ignore[index]
    assert all(is_dns1123_subdomain(n) for n in names), names
    assert all(name.startswith(n.rpartition(".")[0]) for n in names), names  # what it is about
    assert names[0] != names[1]


def test_a_mark_of_a_sweep_not_enforced_says_it_is_not_and_what_enforcing_would_do() -> None:
    """issue 51 item 3: a report-only sweep's mark said "deleted at …Z if still orphaned";
    nothing would be. It says the sweep is not enforced, and when enforcing would delete."""
    access = Posted()
    events = Events(access, "run-1")  # type: ignore[arg-type]
    due = datetime(2026, 11, 28, 18, 0, tzinfo=UTC)

    # What the driver makes of a mark of a sweep not enforced (sweeps/driver.py not_enforced).
    events.note(outcome(Action.MARKED, would_delete_at=due, if_enforced=True), NOW)
    events.finish()

    [note] = [b["note"] for b in access.bodies]
    assert "not deleted: this sweep is not enforced (--enforce companions)" in note
    assert "enforced, it would be deleted at 2026-11-28T18:00:00Z" in note
    assert "; deleted at" not in note


def test_a_restored_objects_event_names_the_new_object_and_the_deleted_uid_only() -> None:
    """issue 51 item 13: `gcjob restore` posts an Event on what it put back, as a delete does:
    regarding the new object (its new uid), the uid gcjob deleted in the note, nothing else."""
    regarding = Regarding("v1", "ConfigMap", "ns-a", "api-config", "new-uid")
    now = datetime(2026, 11, 28, 21, 0, tzinfo=UTC)

    event = restored_event(regarding, "old-uid", "pod-1", now)

    assert (event["reason"], event["action"], event["type"]) == (
        "OrphanRestored",
        "Restore",
        "Normal",
    )
    assert event["regarding"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "namespace": "ns-a",
        "name": "api-config",
        "uid": "new-uid",
    }
    assert event["note"] == "gcjob restore put it back (deleted by gcjob as uid old-uid)"
    metadata = event["metadata"]
    assert isinstance(metadata, dict) and metadata["namespace"] == "ns-a"
    assert str(metadata["name"]).startswith("api-config.")
