"""Kubernetes Events (events.k8s.io/v1) where operators and tenants look: one on the object's
namespace when a run marks, unmarks or deletes it, so `kubectl describe` and `kubectl get
events` show what gcjob did (kube-janitor does the same for its deletions).

Events are a courtesy, never part of a decision: they are queued as the run acts and sent
after its writes (`send`: between a drain's rounds while it sleeps, and at the end), outside
--max-writes and its pace, at most MAX_EVENTS a run, each attempted once. A failed or refused
one is a warning; a run without the permission sends none (a refusal, 403, stops the rest).
A namespace being deleted refuses its own only (403 with the cause NamespaceTerminating: the
API server creates nothing new there, whatever the permissions): the other namespaces' Events
are still sent. Never in a dry run (a dry run acts on nothing). An Event carries the
object's kind, name and uid, gcjob's reason code, the run id and when the object goes: no
annotation or label value, nothing of a Secret.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from gcjob.decide.plan import NOT_ENFORCED
from gcjob.domain import is_dns1123_subdomain
from gcjob.kube.access import KubeAccess
from gcjob.kube.errors import ApiError, KubeError, Stopped
from gcjob.kube.resources import EVENTS
from gcjob.logs import log
from gcjob.model import Action, Outcome
from gcjob.redact import redact

MAX_EVENTS = 1000  # a run's Events; the rest are counted, not sent
CONTROLLER = "gcjob.datumapis.com/gcjob"  # reportingController
# action -> (the Event's reason, its action), both CamelCase as Kubernetes writes them.
POSTED = {
    Action.MARKED: ("OrphanMarked", "Mark"),
    Action.UNMARKED: ("OrphanUnmarked", "Unmark"),
    Action.DELETED: ("OrphanDeleted", "Delete"),
    Action.DELETE_HELD: ("OrphanDeleteHeld", "Delete"),
}
NAME_CHARS = 200  # of the object's name, in the Event's name (253 at most in all)
EVENT_PREFIX = "gcjob"  # an Event's name for an object whose own name is no DNS-1123 subdomain


@dataclass
class EventTally:
    sent: int = 0
    failed: int = 0
    over_budget: int = 0


class Events:
    """The Events of one --delete run against a live hub: `note` each outcome, `send` them."""

    def __init__(self, access: KubeAccess, run_id: str, max_events: int = MAX_EVENTS) -> None:
        self.access = access
        self.run_id = run_id
        self.max_events = max_events
        self.instance = f"{socket.gethostname()}"[:128]  # reportingInstance: the pod
        self.queued: list[dict[str, object]] = []
        self.tally = EventTally()
        self.refused = False  # the hub refused one (403): none more this run
        self.terminating: set[str] = set()  # namespaces being deleted: none more there

    def note(self, outcome: Outcome, now: datetime) -> None:
        """The outcome's Event, queued, when it is a mark, an unmark or a delete of a
        namespaced object (within the run's budget)."""
        posted = POSTED.get(outcome.action)
        if posted is None or not outcome.ref.namespace:
            return
        self._queue(lambda: event_of(outcome, posted, self.run_id, self.instance, now))

    def note_restored(self, regarding: Regarding, deleted_uid: str, now: datetime) -> None:
        """The Event of an object `gcjob restore` put back (its new uid in `regarding`), queued
        as a delete's is (issue 51 item 13)."""
        if regarding.namespace:
            self._queue(lambda: restored_event(regarding, deleted_uid, self.instance, now))

    def _queue(self, event: Callable[[], dict[str, object]]) -> None:
        if self.refused:
            return
        if self.tally.sent + self.tally.failed + len(self.queued) >= self.max_events:
            self.tally.over_budget += 1
            return
        self.queued.append(event())

    def send(self, seconds: float | None = None) -> None:
        """Send what is queued, for at most `seconds` (None: no limit but the run's budget):
        what is left waits for the next call. Never raises: an Event is best effort."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while self.queued and not self.refused:
            if deadline is not None and time.monotonic() >= deadline:
                return
            body = self.queued.pop(0)
            namespace = str(body["metadata"]["namespace"])  # type: ignore[index]
            if namespace in self.terminating:
                self.tally.failed += 1
                continue
            try:
                self.access.create(EVENTS, namespace, body)
            except Stopped:
                self.tally.failed += 1 + len(self.queued)
                self.queued.clear()
                return
            except KubeError as exc:
                self.tally.failed += 1
                if isinstance(exc, ApiError) and exc.namespace_terminating:
                    # Not a permission: this namespace is being deleted. The others still are not.
                    self.terminating.add(namespace)
                    log.warning("Events: none more in %s, being deleted: %s", namespace, exc)
                elif isinstance(exc, ApiError) and exc.status == 403:
                    self.refused = True
                    self.tally.failed += len(self.queued)
                    self.queued.clear()
                    log.warning("Events: the hub refused one (%s): none more this run", exc)
                    return
                log.warning("Events: could not post one: %s", redact(str(exc)))
            except Exception as exc:  # an Event never ends a run
                self.tally.failed += 1
                log.warning("Events: could not post one: %s", redact(f"{type(exc).__name__}"))
            else:
                self.tally.sent += 1

    def finish(self) -> None:
        """The rest sent, and what the run's Events came to, said once."""
        self.send()
        t = self.tally
        if t.sent or t.failed or t.over_budget:
            log.info(
                "Events: %d posted, %d failed, %d over the run's budget of %d",
                t.sent,
                t.failed,
                t.over_budget,
                self.max_events,
            )


@dataclass(frozen=True)
class Regarding:
    """The object an Event is about, as its `regarding` names it."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str


RESTORED = ("OrphanRestored", "Restore")  # the reason and action of a restore's Event


def restored_event(
    regarding: Regarding, deleted_uid: str, instance: str, now: datetime
) -> dict[str, object]:
    """The events.k8s.io/v1 Event of an object `gcjob restore` created again: the new object
    by kind, name and new uid, and the uid gcjob deleted; nothing of its content."""
    reason, action = RESTORED
    note = f"gcjob restore put it back (deleted by gcjob as uid {deleted_uid or 'not recorded'})"
    return _event(regarding, reason, action, note, instance, now)


def event_of(
    outcome: Outcome, posted: tuple[str, str], run_id: str, instance: str, now: datetime
) -> dict[str, object]:
    """The events.k8s.io/v1 Event of one outcome: the object by kind, name and uid, gcjob's
    reason code, the run, and when it goes (of a sweep not enforced: when it would, were it
    enforced, and that it is not). No detail (it can quote what an object holds)."""
    reason, action = posted
    ref = outcome.ref
    sweep = outcome.sweep.value
    note = f"gcjob {outcome.action.value} it ({sweep} sweep, reason {outcome.reason})"
    if outcome.action is Action.MARKED and outcome.would_delete_at is not None:
        when = outcome.would_delete_at.astimezone(UTC).isoformat(timespec="seconds")
        when = when.replace("+00:00", "Z")
        if outcome.if_enforced:
            note += f"; {NOT_ENFORCED} (--enforce {sweep}): enforced, it would be deleted at {when}"
        else:
            note += f"; deleted at {when} if still orphaned"
    note += f"; run {run_id}"
    regarding = Regarding(ref.api_version, ref.kind, ref.namespace or "", ref.name, ref.uid)
    return _event(regarding, reason, action, note, instance, now)


def _event(
    regarding: Regarding, reason: str, action: str, note: str, instance: str, now: datetime
) -> dict[str, object]:
    return {
        "apiVersion": EVENTS.api_version,
        "kind": EVENTS.kind,
        # Named as client-go's recorder names them: the object's name and a unique suffix.
        "metadata": {
            "name": event_name(regarding.name, uuid.uuid4().hex[:16]),
            "namespace": regarding.namespace,
        },
        "eventTime": now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "reportingController": CONTROLLER,
        "reportingInstance": instance,
        "action": action,
        "reason": reason,
        "type": "Normal",
        "note": note,
        "regarding": {
            "apiVersion": regarding.api_version,
            "kind": regarding.kind,
            "namespace": regarding.namespace,
            "name": regarding.name,
            "uid": regarding.uid,
        },
    }


def event_name(name: str, suffix: str) -> str:
    """The name of an Event about the object `name`, as client-go's recorder names them: the
    object's name and a unique `suffix` (lowercase hex). Always a DNS-1123 subdomain, as the
    API server requires: the object's name is cut to NAME_CHARS, and what the cut leaves
    at its end of `-` and `.` is dropped (`a-` + `.` + suffix is refused: a part of a
    subdomain ends alphanumeric)."""
    prefix = name[:NAME_CHARS].rstrip("-.")
    if not is_dns1123_subdomain(prefix):
        prefix = EVENT_PREFIX
    return f"{prefix}.{suffix}"
