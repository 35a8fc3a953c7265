"""One run at a time: a coordination.k8s.io/v1 Lease on the hub.

Taken with resourceVersion-checked writes, so of two runs racing for it exactly one wins
(the other sees 409). It is held for longer than the run's timeout, so a run that dies is
taken over once its lease expires, and released at the end.

When a lease has expired is judged as client-go's leader election judges it, adapted to a run
that lives once. client-go never trusts the holder's clock: it notes when it *observed* the
record change and waits out `leaseDurationSeconds` from then. Here:

- the duration is capped (`MAX_LEASE_DURATION`, or this run's own, if longer): a record asking
  for 2e9 seconds does not lock out every run for 63 years;
- `renewTime` (else `acquireTime`) is trusted only when it is not in the future of the API
  server's clock (its `Date` header), give or take `CLOCK_SKEW`: then the lease expires at
  that time plus the duration;
- otherwise (no time, an unreadable one, one in the future: 2099) the record's own time says
  nothing, so the run observes, as client-go does, and remembers the observation on the Lease
  itself (`OBSERVED_ANNOTATION`: a digest of the holder's record and the server's time when it
  was first seen). A later run that finds the same record unchanged for the capped duration
  since takes it over; any change by the holder starts the observation again.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from gcjob.kube.access import KubeAccess
from gcjob.kube.errors import ApiError, ConfigError, KubeError
from gcjob.kube.resources import LEASES
from gcjob.logs import log
from gcjob.shard import Shard
from gcjob.times import parse_time

MAX_LEASE_DURATION = timedelta(hours=1)
CLOCK_SKEW = timedelta(minutes=1)  # a holder's clock this far ahead of the server's is trusted
OBSERVED_ANNOTATION = "gcjob.datumapis.com/lock-observed"
RECORD_FIELDS = (
    "holderIdentity",
    "renewTime",
    "acquireTime",
    "leaseDurationSeconds",
    "leaseTransitions",
)
HOLDER_SHOWN = 200  # characters of a holder's identity said in a message


# A --drain run's (the rollout Job's) identity starts with this: the CronJob's runs that find
# it holding the lease step aside (exit 0, skipped) instead of failing (exit 6).
DRAIN_HOLDER = "drain/"
# The shards of one COUNT (--shard) hold the run's Lease together, as `shards/COUNT`: every
# other holder (an unsharded run, a drain, the shards of another COUNT) excludes them, and they
# it. Each shard also holds a Lease of its own (Shard.lease_name), against its own twin.
SHARDS_HOLDER = "shards/"
SHARED_ATTEMPTS = 5  # the shards of one COUNT start at once: a 409 from a sibling is retried
# On a shared Lease: the member (a shard's own identity) that last took or joined it. A join
# within the second of the last renewal would otherwise write the Lease unchanged (the server's
# Date counts seconds), keep its resourceVersion, and go unseen by a sibling freeing it as read.
JOINED_ANNOTATION = "gcjob.datumapis.com/lock-joined-by"


class LockHeld(Exception):
    """Another live run holds the lease; `held_for`: for how long, as far as the lease shows
    (zero when it does not: just taken, or first seen now); `holder`: who, when known."""

    def __init__(
        self,
        message: str,
        held_for: timedelta = timedelta(0),
        holder: str | None = None,
        *,
        conflict: bool = False,
    ) -> None:
        super().__init__(message)
        self.held_for = held_for
        self.holder = holder
        self.conflict = conflict  # another write came first (409): who holds it is not known

    @property
    def by_drain(self) -> bool:
        """Held by a --drain run (the rollout Job), as its identity says."""
        return self.holder is not None and self.holder.startswith(DRAIN_HOLDER)


def _micro_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _seconds_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class LeaseState:
    """What this run makes of a Lease: who holds it (None: free or expired), why it thinks
    so, and the observation to remember on it (when its own times cannot be trusted)."""

    holder: str | None
    why: str = ""
    observe: str | None = None  # the value OBSERVED_ANNOTATION must hold, when it must be written
    held_since: datetime | None = None  # since when the holder has held it, when that is known
    expires: datetime | None = None  # when it expires, when its own times can be trusted


def record_digest(spec: dict[str, Any]) -> str:
    """The holder's record, as client-go compares it: every field the holder writes."""
    record = {key: spec.get(key) for key in RECORD_FIELDS}
    canonical = json.dumps(record, sort_keys=True, default=str, ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def lease_duration(spec: dict[str, Any], cap: timedelta) -> timedelta:
    """`leaseDurationSeconds`, capped; the cap when it is missing or not a positive integer."""
    seconds = spec.get("leaseDurationSeconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds <= 0:
        return cap
    if seconds >= cap.total_seconds():  # compared first: 10**30 seconds is no timedelta
        return cap
    return timedelta(seconds=seconds)


def judge_lease(lease: dict[str, Any], server_now: datetime, cap: timedelta) -> LeaseState:
    """Pure: whether `lease` is held at `server_now` (the API server's clock), and why."""
    spec = lease.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    holder = spec.get("holderIdentity")
    if not holder:
        return LeaseState(None, "free")
    holder = str(holder)[:HOLDER_SHOWN]
    duration = lease_duration(spec, cap)
    raw = spec.get("renewTime") or spec.get("acquireTime")
    renewed = parse_time(raw) if isinstance(raw, str) else None
    if renewed is not None and renewed <= server_now + CLOCK_SKEW:
        expires = renewed + duration
        if server_now >= expires:
            return LeaseState(None, f"expired at {_seconds_time(expires)}")
        # acquireTime, when it is a time before the renewal: a holder that renews keeps it.
        raw_acquired = spec.get("acquireTime")
        acquired = parse_time(raw_acquired) if isinstance(raw_acquired, str) else None
        return LeaseState(
            holder,
            f"renewed {_seconds_time(renewed)}, expires {_seconds_time(expires)}",
            held_since=acquired if acquired is not None and acquired <= renewed else renewed,
            expires=expires,
        )
    untrusted = (
        "no renewTime"
        if raw is None
        else f"renewTime {str(raw)[:40]!r} is unreadable"
        if renewed is None
        else f"renewTime {_seconds_time(renewed)} is in the future of the server's clock"
    )
    digest = record_digest(spec)
    noted = _observed(lease, digest)
    if noted is None:
        until = server_now + duration
        return LeaseState(
            holder,
            f"{untrusted}: first seen unchanged now; taken over if it stays so until "
            f"{_seconds_time(until)}",
            observe=f"{digest} {_seconds_time(server_now)}",
            held_since=server_now,
        )
    until = noted + duration
    if server_now >= until:
        return LeaseState(None, f"{untrusted}, and unchanged since {_seconds_time(noted)}")
    return LeaseState(
        holder,
        f"{untrusted}: unchanged since {_seconds_time(noted)}; taken over if it stays so "
        f"until {_seconds_time(until)}",
        held_since=noted,
    )


def _observed(lease: dict[str, Any], digest: str) -> datetime | None:
    """When a run first saw this very record, as noted on the Lease; None if not noted."""
    metadata = lease.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    note = annotations.get(OBSERVED_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(note, str):
        return None
    noted_digest, _, when = note.partition(" ")
    if noted_digest != digest:
        return None
    return parse_time(when)


def holder_of(
    lease: dict[str, Any], now: datetime, cap: timedelta = MAX_LEASE_DURATION
) -> str | None:
    """The live holder of a lease, or None when it is free or expired."""
    return judge_lease(lease, now, cap).holder


class LeaseLock:
    def __init__(
        self,
        access: KubeAccess,
        namespace: str,
        name: str,
        identity: str,
        duration: timedelta,
        *,
        shared: bool = False,
        member: str = "",
    ) -> None:
        """`shared`: held together by every run of this `identity` (the shards of one COUNT):
        one that finds it held by its own identity joins, and keeps it at least as long as it
        was to last. `member`: who takes or joins a shared Lease (a shard's own identity),
        written on it each time (JOINED_ANNOTATION), so that every join changes it."""
        self.access = access
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.duration = duration
        self.shared = shared
        self.member = member
        self.cap = max(MAX_LEASE_DURATION, duration)  # never shorter than our own lease
        self.held = False

    def _spec(self, now: datetime, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.duration.total_seconds()),
            "acquireTime": _micro_time(now),
            "renewTime": _micro_time(now),
            "leaseTransitions": transitions,
        }

    def acquire(self, now: datetime) -> None:
        """Raises LockHeld when another live run holds it, ConfigError when the lock namespace
        is missing or the Lease is forbidden, KubeError when it cannot tell. `now`: this pod's
        clock, used when the server sends no Date. A shared lease is tried again when a
        sibling's write came first."""
        for attempt in range(1, SHARED_ATTEMPTS + 1):
            try:
                self._acquire(now)
                return
            except LockHeld as exc:
                if not (self.shared and exc.conflict) or attempt == SHARED_ATTEMPTS:
                    raise

    def _acquire(self, now: datetime) -> None:
        where = f"lease {self.namespace}/{self.name}"
        try:
            current, server_now = self.access.read_dated(LEASES, self.namespace, self.name)
            # Written on the server's clock, as it is judged: a pod clock behind the hub's
            # would stamp a renewTime that looks expired to the next run, and two runs overlap.
            stamp = server_now or now
            if current is None:
                metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
                self._sign(metadata)
                self.access.create(
                    LEASES,
                    self.namespace,
                    {
                        "apiVersion": LEASES.api_version,
                        "kind": LEASES.kind,
                        "metadata": metadata,
                        "spec": self._spec(stamp, 0),
                    },
                )
            else:
                state = judge_lease(current, stamp, self.cap)
                if state.holder is not None and state.holder != self.identity:
                    if state.observe is not None:
                        self._note(current, state.observe)
                    since = state.held_since or stamp
                    raise LockHeld(
                        f"{where} is held by {state.holder} ({state.why})",
                        held_for=max(stamp - since, timedelta(0)),
                        holder=state.holder,
                    )
                spec = current.get("spec")
                spec = spec if isinstance(spec, dict) else {}
                transitions = spec.get("leaseTransitions")
                if isinstance(transitions, bool) or not isinstance(transitions, int):
                    transitions = 0
                if self.shared and state.holder == self.identity:
                    current["spec"] = self._joined(spec, state, stamp)
                else:
                    current["spec"] = self._spec(stamp, max(transitions, 0) + 1)
                _drop_note(current)
                found = current.get("metadata")
                if isinstance(found, dict):
                    self._sign(found)
                self.access.replace(LEASES, self.namespace, self.name, current)
        except ApiError as exc:
            if exc.status == 409:
                raise LockHeld(f"{where} was taken by another run first", conflict=True) from exc
            if exc.status in (403, 404):  # no such namespace, or no RBAC for Leases there
                raise ConfigError(f"--lock-namespace/--lock-name: {exc}") from exc
            raise
        self.held = True

    def _sign(self, metadata: dict[str, Any]) -> None:
        """A shared Lease's metadata, naming the member taking or joining it."""
        if not self.shared:
            return
        annotations = metadata.get("annotations")
        if not isinstance(annotations, dict):
            annotations = metadata["annotations"] = {}
        annotations[JOINED_ANNOTATION] = self.member

    def _joined(self, spec: dict[str, Any], state: LeaseState, now: datetime) -> dict[str, Any]:
        """A shared lease joined: renewed now, for this run's duration or what it still had
        to run, whichever is longer (a sibling that started earlier stays covered)."""
        seconds = int(self.duration.total_seconds())
        if state.expires is not None:
            seconds = max(seconds, math.ceil((state.expires - now).total_seconds()))
        return {**spec, "renewTime": _micro_time(now), "leaseDurationSeconds": seconds}

    def _note(self, current: dict[str, Any], observed: str) -> None:
        """Remember on the Lease when this record was first seen (a resourceVersion-checked
        write: a holder's own change wins, and starts the observation again)."""
        metadata = current.get("metadata")
        if not isinstance(metadata, dict):
            return
        annotations = metadata.get("annotations")
        if not isinstance(annotations, dict):
            annotations = metadata["annotations"] = {}
        annotations[OBSERVED_ANNOTATION] = observed
        try:
            self.access.replace(LEASES, self.namespace, self.name, current)
        except KubeError as exc:  # the next run observes again: the lock stays held meanwhile
            log.warning("could not note the lease observation: %s", exc)

    def renew(self, now: datetime) -> None:
        """Renews the lease this run holds (a --drain run outlasts one sweep), on the
        server's clock. Raises LockHeld when it is no longer this run's, KubeError when it
        cannot tell: either way the run stops writing."""
        where = f"lease {self.namespace}/{self.name}"
        try:
            current, server_now = self.access.read_dated(LEASES, self.namespace, self.name)
            spec = (current or {}).get("spec")
            if (
                current is None
                or not isinstance(spec, dict)
                or spec.get("holderIdentity") != self.identity
            ):
                self.held = False
                raise LockHeld(f"{where} is no longer held by this run")
            spec["renewTime"] = _micro_time(server_now or now)
            self.access.replace(LEASES, self.namespace, self.name, current)
        except ApiError as exc:
            if exc.status == 409:
                raise LockHeld(f"{where} changed under this run while renewing it") from exc
            raise

    def release(self, current: dict[str, Any] | None = None) -> None:
        """Frees the lease, if this run still holds it, by a resourceVersion-checked write:
        on `current` when given (the Lease as read before what decided the release: a change
        since, such as a sibling joining, makes it 409), else on a fresh read."""
        if not self.held:
            return
        if current is None:
            current = self.access.read(LEASES, self.namespace, self.name)
        spec = (current or {}).get("spec")
        if (
            current is None
            or not isinstance(spec, dict)
            or spec.get("holderIdentity") != self.identity
        ):
            return
        spec["holderIdentity"] = None
        self.access.replace(LEASES, self.namespace, self.name, current)
        self.held = False


def _drop_note(lease: dict[str, Any]) -> None:
    metadata = lease.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if isinstance(annotations, dict):
        annotations.pop(OBSERVED_ANNOTATION, None)


def is_live(lease: dict[str, Any] | None, server_now: datetime, cap: timedelta) -> bool:
    """Whether `lease` is held by a live run (a record whose times cannot be trusted counts
    as live: that only keeps the run's lease a while longer)."""
    return lease is not None and judge_lease(lease, server_now, cap).holder is not None


class ShardLock:
    """The locks of one shard (--shard INDEX/COUNT): its own Lease (`<lock-name>-shard-INDEX-
    of-COUNT`), against a twin of the same shard; then the run's Lease (`--lock-name`), held
    together by the shards of its COUNT (`shards/COUNT`), against an unsharded run, a drain
    and the shards of another COUNT. Released: its own, then the run's by the last shard out
    (one that finds no sibling's Lease live); a shard that cannot tell leaves it to expire."""

    def __init__(
        self,
        access: KubeAccess,
        namespace: str,
        lock_name: str,
        shard: Shard,
        identity: str,
        duration: timedelta,
    ) -> None:
        self.access = access
        self.namespace = namespace
        self.own = LeaseLock(access, namespace, shard.lease_name(lock_name), identity, duration)
        self.run = LeaseLock(
            access,
            namespace,
            lock_name,
            f"{SHARDS_HOLDER}{shard.count}",
            duration,
            shared=True,
            member=identity,
        )
        self.siblings = shard.siblings(lock_name)

    @property
    def held(self) -> bool:
        return self.own.held and self.run.held

    def acquire(self, now: datetime) -> None:
        self.own.acquire(now)
        try:
            self.run.acquire(now)
        except BaseException:
            try:
                self.own.release()
            except KubeError as exc:  # it expires by itself
                log.warning("could not release the shard's lease: %s", exc)
            raise

    def renew(self, now: datetime) -> None:
        self.own.renew(now)
        self.run.renew(now)

    def release(self) -> None:
        self.own.release()
        if not self.run.held:
            return
        # The run's Lease is read before the siblings' and freed only as it was then: a
        # sibling that joins it meanwhile (its own Lease taken after it was read here, or read
        # late, a slow hub) changes its resourceVersion, and the swap fails with 409.
        run = self.access.read(LEASES, self.namespace, self.run.name)
        if run is None:
            return
        for name in self.siblings:
            lease, server_now = self.access.read_dated(LEASES, self.namespace, name)
            if is_live(lease, server_now or datetime.now(UTC), self.run.cap):
                return  # a sibling still runs: the last one out releases it
        try:
            self.run.release(run)
        except ApiError as exc:
            if exc.status != 409:
                raise
            # A sibling joined it since it was read: it is theirs to release.
