"""One object for every equal one, for what is kept for each upstream cluster for the run
(most clusters serve the same documents and answer the same things)."""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class OneOfEach(Generic[K, V]):
    """The value first kept for a key, for every later equal key; at most `bound` keys, so
    what the world sends cannot grow it without end: past it, each value is used as made.
    A key built from ids (`id(answer)`) holds when the value holds those objects: their ids
    stay theirs while it is kept."""

    def __init__(self, bound: int = 4096) -> None:
        self.bound = bound
        self._kept: dict[K, V] = {}
        self._lock = threading.Lock()

    def kept(self, key: K, value: V) -> V:
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                return found
            if len(self._kept) < self.bound:
                self._kept[key] = value
        return value

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def __len__(self) -> int:
        return len(self._kept)
