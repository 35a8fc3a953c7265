"""`--shard INDEX/COUNT`: which part of the hub one pod of an Indexed Job judges.

Every object goes to exactly one shard, by a stable hash of its key (sha256, never Python's
`hash()`, which changes from one process to the next): `int(sha256(key).hexdigest(), 16) %
COUNT`. The key of a route or a downstream copy is the project (upstream cluster) its
`upstream-cluster-name` label names, so one pod reads each project's control plane and judges
all of its objects; the key of a companion or a binding is its hub namespace (so is a route's
or a copy's whose cluster label does not decode: it has no project). What keeps objects alive
is read whole by every shard; only the candidates are split (docs/threat-model.md, "Sharding").

The absolute limits (--max-deletions, --max-marks, --max-writes) are split too: each shard
takes its `share`, and the shares add up to the limit, so COUNT pods together never pass what
one run may do. Pure."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from gcjob.domain import UPSTREAM_CLUSTER_LABEL, decode_cluster_label

MAX_SHARDS = 256
# ASCII digits only, as the durations: `\d` would read other scripts' digits.
_SHARD = re.compile(r"([0-9]+)/([0-9]+)")
# The environment variable Kubernetes sets in each pod of an Indexed Job.
COMPLETION_INDEX = "JOB_COMPLETION_INDEX"


@dataclass(frozen=True, slots=True)
class Shard:
    """One part of COUNT; Shard() is the whole hub (one part of one)."""

    index: int = 0
    count: int = 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def whole(self) -> bool:
        return self.count == 1

    def judges(self, key: str) -> bool:
        """Whether the object (or project) of this key is this shard's to judge."""
        return self.whole or shard_of(key, self.count) == self.index

    def share(self, limit: int) -> int:
        """This shard's part of a run's absolute limit: the shares of COUNT shards add up to
        `limit` exactly (the first `limit % COUNT` shards take one more)."""
        return limit // self.count + (1 if self.index < limit % self.count else 0)

    def lease_name(self, lock_name: str) -> str:
        """The shard's own Lease, beside the run's (`--lock-name`)."""
        return f"{lock_name}-shard-{self.index}-of-{self.count}"

    def siblings(self, lock_name: str) -> list[str]:
        """The Leases of the other shards of its COUNT (none for the whole hub)."""
        return [
            Shard(index, self.count).lease_name(lock_name)
            for index in range(self.count)
            if index != self.index
        ]


WHOLE = Shard()


def shard_of(key: str, count: int) -> int:
    """The shard of `key` among `count`: sha256 of its UTF-8 bytes, as a big-endian integer,
    modulo `count`."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest, "big") % count


def parse_shard(text: str) -> Shard:
    """`INDEX/COUNT`, e.g. `2/4`; raises ValueError."""
    match = _SHARD.fullmatch(text.strip())
    if match is None:
        return _refuse(f"{text!r} is not INDEX/COUNT (e.g. 0/4)")
    index, count = int(match[1]), int(match[2])
    if not 1 <= count <= MAX_SHARDS:
        return _refuse(f"{text!r}: COUNT must be from 1 to {MAX_SHARDS}")
    if index >= count:
        return _refuse(f"{text!r}: INDEX must be less than COUNT (0 to {count - 1})")
    return Shard(index, count)


def _refuse(problem: str) -> Shard:
    raise ValueError(problem)


def copy_key(labels: Mapping[str, str], namespace: str) -> str:
    """The shard key of a route or a downstream copy: the project its cluster label names
    (the cluster an upstream owner is read on: decide/upstream_labels.py decodes it the same
    way), else its hub namespace."""
    value = labels.get(UPSTREAM_CLUSTER_LABEL)
    return (decode_cluster_label(value) if value else None) or namespace
