"""One run at a time: a coordination.k8s.io/v1 Lease on the hub.

Taken with resourceVersion-checked writes, so of two runs racing for it exactly one wins
(the other sees 409). It is held for longer than the run's timeout, so a run that dies is
taken over once its lease expires, and released at the end.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from gcjob.kube.access import KubeAccess
from gcjob.kube.errors import ApiError, ConfigError
from gcjob.kube.resources import LEASES
from gcjob.times import parse_time


class LockHeld(Exception):
    """Another live run holds the lease."""


def _micro_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def holder_of(lease: dict[str, Any], now: datetime) -> str | None:
    """The live holder of a lease, or None when it is free or expired."""
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity")
    if not holder:
        return None
    renewed = parse_time(spec.get("renewTime")) or parse_time(spec.get("acquireTime"))
    duration = spec.get("leaseDurationSeconds")
    if renewed is None or not isinstance(duration, int):
        return str(holder)  # cannot tell when it expires: respect it
    if now >= renewed + timedelta(seconds=duration):
        return None
    return str(holder)


class LeaseLock:
    def __init__(
        self, access: KubeAccess, namespace: str, name: str, identity: str, duration: timedelta
    ) -> None:
        self.access = access
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.duration = duration
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
        is missing or the Lease is forbidden, KubeError when it cannot tell."""
        try:
            current = self.access.read(LEASES, self.namespace, self.name)
            if current is None:
                self.access.create(
                    LEASES,
                    self.namespace,
                    {
                        "apiVersion": LEASES.api_version,
                        "kind": LEASES.kind,
                        "metadata": {"name": self.name, "namespace": self.namespace},
                        "spec": self._spec(now, 0),
                    },
                )
            else:
                holder = holder_of(current, now)
                if holder is not None and holder != self.identity:
                    until = (current.get("spec") or {}).get("renewTime")
                    raise LockHeld(
                        f"lease {self.namespace}/{self.name} is held by {holder} (renewed {until})"
                    )
                transitions = int((current.get("spec") or {}).get("leaseTransitions") or 0) + 1
                current["spec"] = self._spec(now, transitions)
                self.access.replace(LEASES, self.namespace, self.name, current)
        except ApiError as exc:
            if exc.status == 409:
                raise LockHeld(
                    f"lease {self.namespace}/{self.name} was taken by another run first"
                ) from exc
            if exc.status in (403, 404):  # no such namespace, or no RBAC for Leases there
                raise ConfigError(f"--lock-namespace/--lock-name: {exc}") from exc
            raise
        self.held = True

    def release(self) -> None:
        if not self.held:
            return
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
