"""What the routes sweep's upstream reads found, handed to the copies sweep's in the same
round (`sweeps.execute` makes one a round when both run): a Gateway the routes asked about and
found is not listed again for the copies that name it.

Only what was found is handed on (an object's identity: its uid, creation and whether it is
being deleted, as a list or a GET read it); an absence never is, so every owner the copies
sweep would prove gone is still nominated by its own list and proven by its own GET. Each
(cluster, resource, namespace) is taken once, by the first read that it answers whole.

The copies sweep may read its owners while the routes sweep still reads (sweeps.execute
starts both ahead): it reads none of them before the routes sweep's Gateways are all read
(`settle`, `wait_settled`), so nothing the routes sweep finds is listed twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gcjob.enumerate.parallel import WAIT_TICK
from gcjob.kube import reduce
from gcjob.kube.resources import NAMESPACES, Resource


@dataclass(frozen=True, slots=True)
class Seen:
    """An object found by a read: its identity, for re-created owners."""

    uid: str
    created: datetime | None
    terminating: bool


def seen(obj: dict[str, Any]) -> tuple[str, Seen] | None:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        return None
    ref = reduce.object_ref(obj, NAMESPACES)  # the resource only names a ref's kind
    return meta["name"], Seen(ref.uid, ref.created, ref.terminating)


Key = tuple[str, Resource, str]  # (cluster, resource, namespace)


class Found:
    """Objects found this round, by (cluster, resource, namespace); used from reader threads.
    Each place's finds are kept as a tuple of (name, Seen) pairs, not a map: almost always one
    (a map of one was 232 bytes, kept for every cluster until the copies sweep takes it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: dict[Key, tuple[tuple[str, Seen], ...]] = {}
        self._settled = threading.Event()

    def settle(self) -> None:
        """Nothing more will be added this round (the Gateways' reads ended, however)."""
        self._settled.set()

    def wait_settled(self, ended: Callable[[], bool]) -> None:
        """Waits (not in a pool worker) until nothing more will be added, or `ended` says the
        reads that add were never run or ended without saying so."""
        while not self._settled.is_set() and not ended():
            self._settled.wait(WAIT_TICK)

    def add(
        self, cluster: str, resource: Resource, namespace: str, found: Mapping[str, Seen]
    ) -> None:
        if found:
            key = (cluster, resource, namespace)
            with self._lock:
                merged = dict(self._found.get(key, ()))
                merged.update(found)
                self._found[key] = tuple(merged.items())

    def take(
        self, cluster: str, resource: Resource, namespace: str, names: Mapping[str, object]
    ) -> dict[str, Seen] | None:
        """What was found of `names` there, when every one of them was found; else None (the
        asker reads them itself). Taken: not kept once handed on."""
        with self._lock:
            kept = self._found.get((cluster, resource, namespace))
            found = dict(kept) if kept is not None else None
            if found is None or not all(name in found for name in names):
                return None
            del self._found[(cluster, resource, namespace)]
        return {name: found[name] for name in names}
