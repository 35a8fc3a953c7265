"""Which objects exist, for a hub of 100k, in 8 bytes a key: wrong only on the side that keeps.

A run holds two large sets of keys: every WorkloadDeployment (is a referrer alive?) and every
labelled companion (does a binding's object exist?). As Python strings and tuples a key costs
about 170 bytes; here it is a 64-bit digest in a sorted array. Two keys can share a digest, so
a key never added may test as present, with odds of about n / 2**64 per lookup (5e-10 for
100k absent keys against 100k present ones), never the other way round. Both uses read
`present` as "keep": a collision costs one orphan missed, never a deletion. The digest is keyed
afresh in every process (not `hash()`, which a fixed PYTHONHASHSEED would make repeat), so the
next run does not miss the same orphan.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_left
from hashlib import blake2b

_KEY = os.urandom(16)  # one process is one run


def digest(parts: tuple[str, ...]) -> int:
    # NUL cannot occur in an object's name or namespace: the parts cannot run together.
    data = "\0".join(parts).encode("utf-8", "surrogatepass")
    return int.from_bytes(blake2b(data, digest_size=8, key=_KEY).digest(), "little")


class KeySet:
    """Keys (tuples of strings) added, then frozen; tested only once frozen, so that reader
    threads share it without a lock."""

    def __init__(self) -> None:
        self._digests = array("Q")
        self._frozen = False

    def add(self, *parts: str) -> None:
        assert not self._frozen, "a frozen KeySet is shared: it cannot change"
        self._digests.append(digest(parts))

    def update(self, other: KeySet) -> None:
        assert not self._frozen, "a frozen KeySet is shared: it cannot change"
        self._digests.extend(other._digests)

    def freeze(self) -> KeySet:
        if not self._frozen:
            # Sorted, then each once: no set of them beside the list (16 bytes a key more, at
            # the run's end, where the copies sweep freezes the anchors its copies name).
            ordered = sorted(self._digests)
            self._digests = array(
                "Q", (d for i, d in enumerate(ordered) if not i or d != ordered[i - 1])
            )
            self._frozen = True
        return self

    def __contains__(self, parts: object) -> bool:
        assert self._frozen, "freeze() a KeySet before testing it"
        if not isinstance(parts, tuple):
            return False
        wanted = digest(parts)
        at = bisect_left(self._digests, wanted)
        return at < len(self._digests) and self._digests[at] == wanted

    def __len__(self) -> int:
        """Distinct keys once frozen (a shared digest counts once)."""
        return len(self._digests)

    def within(self, *prefix: str) -> Within:
        """The keys that begin with prefix, as a container of their next part."""
        return Within(self, prefix)


class Within:
    """`name in keys.within(namespace)`: whether (namespace, name) is in keys."""

    def __init__(self, keys: KeySet, prefix: tuple[str, ...]) -> None:
        self._keys = keys
        self._prefix = prefix

    def __contains__(self, part: object) -> bool:
        return isinstance(part, str) and (*self._prefix, part) in self._keys
