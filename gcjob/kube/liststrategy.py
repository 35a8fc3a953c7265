"""How the hub's collections are read, chosen from what its API server says it is: a pure
function of the `/version` answer (docs/list-strategy.md has the table and its sources).

- CACHE: one `resourceVersion=0` list per collection, served whole from the watch cache. The
  only read a 1.25-1.33 server serves from its cache for a whole large collection: a list
  without a resourceVersion goes to etcd there (1.25-1.30), or only its first page comes from
  the cache and every continue page from etcd (1.31-1.33, KEP-2340 beta without KEP-4988).
- PAGES: `limit` + `continue`, no resourceVersion: a consistent read. From 1.34 on the server
  serves it from the watch cache, first page (KEP-2340, ConsistentListFromCache) and continue
  pages (KEP-4988, ListFromCacheSnapshot) alike, in pages that bound its own memory.

An answer that names no version gcjob can read is read the known way (CACHE): every server
gcjob was run against serves it, and both reads are safe (no deletion follows a list alone).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any


class ListStrategy(Enum):
    CACHE = "cache"
    PAGES = "pages"


# The first release whose API server serves a paginated consistent list from its watch cache,
# continue pages included: ConsistentListFromCache beta in 1.31 and GA in 1.34 (KEP-2340),
# ListFromCacheSnapshot beta (on by default) in 1.34 (KEP-4988).
PAGES_FROM_CACHE_SINCE = (1, 34)

# gitVersion as servers spell it: v1.25.0-k3s1, v1.31.2+k0s, v1.34.1-eks-3025e55, v1.33.5-gke.1.
# ASCII digits only; nine at most, so no digit string is ever too long to be an int.
_GIT_VERSION = re.compile(
    r"v?([0-9]{1,9})\.([0-9]{1,9})(?:\.[0-9]{1,9})?(?:[-+.][0-9A-Za-z.+_-]*)?"
)
# `major`/`minor` fields: "1", "31", and "31+" (EKS and GKE add a plus).
_NUMBER_FIELD = re.compile(r"([0-9]{1,9})\+?")
# What of a gitVersion the report repeats: printable, short; anything else is not echoed.
_SHOWN = re.compile(r"v?[0-9A-Za-z.+_-]{1,64}")


@dataclass(frozen=True, slots=True)
class ServerVersion:
    major: int  # the release whose behaviour the server has: its emulated one, if it says so
    minor: int
    shown: str  # as the report names it: the gitVersion, or "major.minor"
    emulated: bool = False  # a newer binary emulating an older release (KEP-4330)


@dataclass(frozen=True, slots=True)
class Choice:
    strategy: ListStrategy
    requested: str  # the --list-from value: auto, cache or pages
    server_version: str | None  # the server's own word, when it was asked and readable
    why: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "read": self.strategy.value,
            "requested": self.requested,
            "server_version": self.server_version,
            "why": self.why,
        }


def server_version(answer: Any) -> ServerVersion | None:
    """The release a `/version` answer names, or None when it names none readable. gitVersion
    is read first (it carries the patch and the vendor's suffix); the major and minor fields
    when it is missing or unreadable. A server emulating an older release (a newer one answers
    `emulationMajor`/`emulationMinor`, KEP-4330) has that release's feature defaults: the
    older of the two is the one that counts."""
    if not isinstance(answer, dict):
        return None
    binary = _binary_version(answer)
    if binary is None:
        return None
    emulated = _numbers(answer.get("emulationMajor"), answer.get("emulationMinor"))
    if emulated is not None and emulated < (binary.major, binary.minor):
        return ServerVersion(emulated[0], emulated[1], binary.shown, emulated=True)
    return binary


def _numbers(major_field: Any, minor_field: Any) -> tuple[int, int] | None:
    if not isinstance(major_field, str) or not isinstance(minor_field, str):
        return None
    major_match = _NUMBER_FIELD.fullmatch(major_field.strip())
    minor_match = _NUMBER_FIELD.fullmatch(minor_field.strip())
    if major_match is None or minor_match is None:
        return None
    return int(major_match.group(1)), int(minor_match.group(1))


def _binary_version(answer: dict[Any, Any]) -> ServerVersion | None:
    git_version = answer.get("gitVersion")
    if isinstance(git_version, str):
        match = _GIT_VERSION.fullmatch(git_version.strip())
        if match is not None:
            shown = git_version.strip() if _SHOWN.fullmatch(git_version.strip()) else None
            major, minor = int(match.group(1)), int(match.group(2))
            return ServerVersion(major, minor, shown or f"{major}.{minor}")
    fields = _numbers(answer.get("major"), answer.get("minor"))
    if fields is None:
        return None
    return ServerVersion(fields[0], fields[1], f"{fields[0]}.{fields[1]}")


def choose(requested: str, answer: Any = None) -> Choice:
    """The read for a server: `requested` is --list-from (gcjob/settings.py LIST_FROM: cache
    and pages are forced, anything else is auto); `answer` the server's `/version` answer,
    decoded (None: not asked, or it answered no version). Pure: never raises on any answer."""
    if requested == "cache":
        return Choice(ListStrategy.CACHE, requested, None, "--list-from cache")
    if requested == "pages":
        return Choice(ListStrategy.PAGES, requested, None, "--list-from pages")
    version = server_version(answer)
    if version is None:
        return Choice(
            ListStrategy.CACHE,
            "auto",
            None,
            "the server named no version gcjob can read: the whole-collection cache read, "
            "which every server serves",
        )
    since = ".".join(map(str, PAGES_FROM_CACHE_SINCE))
    release = f"{version.major}.{version.minor}" + (" (emulated)" if version.emulated else "")
    if (version.major, version.minor) >= PAGES_FROM_CACHE_SINCE:
        return Choice(
            ListStrategy.PAGES,
            "auto",
            version.shown,
            f"{release} >= {since}: the server reads pages from its "
            "watch cache, consistent (KEP-2340, KEP-4988)",
        )
    return Choice(
        ListStrategy.CACHE,
        "auto",
        version.shown,
        f"{release} < {since}: the server reads continue pages from "
        "etcd; resourceVersion=0 is its cache read of a whole collection",
    )
