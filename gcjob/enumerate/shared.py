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


@dataclass(frozen=True, slots=True)
class _Kept:
    """One object found, as Found keeps it: where, its name, and its identity, in one object
    (a key tuple, a tuple of pairs, a pair and a Seen were about 200 bytes more a cluster,
    held from the Gateways' reads until the copies' owners take them)."""

    resource: Resource
    namespace: str
    name: str
    uid: str
    created: datetime | None
    terminating: bool

    def seen(self) -> Seen:
        return Seen(self.uid, self.created, self.terminating)


Place = tuple[Resource, str]  # (resource, namespace)


class Found:
    """Objects found this round, by cluster; used from reader threads. A cluster's finds are
    one _Kept, almost always; past one, a map of each place's finds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: dict[str, _Kept | dict[Place, tuple[_Kept, ...]]] = {}
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
        if not found:
            return
        kept = [
            _Kept(resource, namespace, name, seen.uid, seen.created, seen.terminating)
            for name, seen in found.items()
        ]
        with self._lock:
            held = self._found.get(cluster)
            if held is None and len(kept) == 1:
                self._found[cluster] = kept[0]
                return
            places = self._places(cluster)
            names = {k.name: k for k in places.get((resource, namespace), ())}
            names.update((k.name, k) for k in kept)
            places[(resource, namespace)] = tuple(names.values())
            self._found[cluster] = places

    def take(
        self, cluster: str, resource: Resource, namespace: str, names: Mapping[str, object]
    ) -> dict[str, Seen] | None:
        """What was found of `names` there, when every one of them was found; else None (the
        asker reads them itself). Taken: what was found there is not kept once handed on."""
        with self._lock:
            places = self._places(cluster)
            there = {k.name: k for k in places.get((resource, namespace), ())}
            if not there or not all(name in there for name in names):
                return None
            del places[(resource, namespace)]
            if places:
                self._found[cluster] = places
            else:
                self._found.pop(cluster, None)
                if not self._found:  # all taken: its table, sized for every cluster, goes too
                    self._found = {}
        return {name: there[name].seen() for name in names}

    def _places(self, cluster: str) -> dict[Place, tuple[_Kept, ...]]:
        """The cluster's finds by place: the map held, past one find; else a new one (held
        only if the caller stores it)."""
        held = self._found.get(cluster)
        if held is None:
            return {}
        if isinstance(held, _Kept):
            return {(held.resource, held.namespace): (held,)}
        return held
