"""Every stdout record fits one log line: at most MAX_RECORD_BYTES, never split.

Container runtimes cut longer lines into partial entries (containerd and CRI-O at their
default `max_container_log_line_size` of 16384, Docker's json-file driver at 16 KiB), and a
pipeline that does not reassemble them gets fragments of invalid JSON. So each echoed field
has its own cap, and a record still too long loses its least-needed fields whole. Whatever is
cut is named in the record's `truncated` object: field path -> its original size (characters
of a string, items of a list). A field listed there and absent from the record (or empty, if
the schema requires it) was dropped. `--report-file` keeps every record whole.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gcjob.visible import ELLIPSIS, json_text

MAX_RECORD_BYTES = 16 * 1024  # one stdout line, its newline included, in UTF-8 bytes
TEXT_CHARS = 1024  # a free-text field: detail, exit_reason, a server's message
NAME_CHARS = 320  # an echoed name or key (<namespace>/<name> is at most 63 + 1 + 253)
LIST_ITEMS = 20  # an echoed list: referrers, gateways, namespaces
LAST_RESORT_CHARS = 64  # every string, when dropping fields was not enough
# Never cut: what routes and joins a record, and values the schema fixes (enums, times).
UNCUT = frozenset(
    {"record", "run_id", "time", "version", "sweep", "action", "reason", "status"}
    | {"started", "finished", "decided_at", "orphaned_since", "would_delete_at"}
    | {"would_delete_if_enforced_at"}
    | {"earliest", "latest"}
)


@dataclass(frozen=True)
class Bounds:
    """How one record type is capped. Paths are dotted; `*` is any key of a mapping."""

    texts: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    lists: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()  # least needed first
    required: frozenset[str] = frozenset()  # emptied, not removed, when dropped


BOUNDS = {
    "item": Bounds(
        texts=("detail",),
        names=("apiVersion", "kind", "namespace", "name", "uid", "cluster"),
        lists=("referrers", "gateways"),
        drop=("referrers", "gateways", "detail"),
        required=frozenset({"detail"}),
    ),
    "upstream": Bounds(
        texts=("detail", "server"),
        names=("cluster",),
        drop=("server", "detail"),
        required=frozenset({"server", "detail"}),
    ),
    "summary": Bounds(
        texts=("hub", "exit_reason", "sweeps.*.detail"),
        lists=("namespaces.included", "namespaces.excluded"),
        drop=("namespaces", "api_requests.by_target", "sweeps.*.detail", "hub"),
        required=frozenset({"api_requests.by_target", "sweeps.*.detail", "hub"}),
    ),
}


def line_bytes(text: str) -> int:
    """The size of `text` as one stdout line: UTF-8 and its newline."""
    return len(text.encode("utf-8")) + 1


def capped(record: dict[str, Any]) -> dict[str, Any]:
    """A copy of `record` with each echoed field within its own cap (the text output's view)."""
    bounds = BOUNDS.get(record.get("record", ""), Bounds())
    out = copy.deepcopy(record)
    truncated: dict[str, int] = dict(out.pop("truncated", None) or {})
    for path in bounds.texts:
        for parent, key, where in _locations(out, path):
            _cap_string(parent, key, where, TEXT_CHARS, truncated)
    for path in bounds.names:
        for parent, key, where in _locations(out, path):
            _cap_string(parent, key, where, NAME_CHARS, truncated)
    for path in bounds.lists:
        for parent, key, where in _locations(out, path):
            _cap_list(parent, key, where, truncated)
    if truncated:
        out["truncated"] = truncated
    return out


def json_line(record: dict[str, Any], limit: int = MAX_RECORD_BYTES) -> str:
    """`record` as one JSON line (without its newline) of at most `limit` bytes with it."""
    out = capped(record)
    text = json_text(out)
    if line_bytes(text) <= limit:
        return text
    bounds = BOUNDS.get(out.get("record", ""), Bounds())
    truncated: dict[str, int] = out.setdefault("truncated", {})
    for path in bounds.drop:
        for parent, key, where in _locations(out, path):
            _drop(parent, key, where, path in bounds.required, truncated)
        text = json_text(out)
        if line_bytes(text) <= limit:
            return text
    chars = LAST_RESORT_CHARS
    while chars >= 8:
        for parent, key, where in list(_strings(out)):
            _cap_string(parent, key, where, chars, truncated)
        text = json_text(out)
        if line_bytes(text) <= limit:
            return text
        chars //= 2
    # Unreachable for gcjob's records (their shapes are bounded); never print a split line.
    raise RuntimeError(f"a {out.get('record')} record does not fit in {limit} bytes")


def _cap_string(
    parent: dict[str, Any] | list[Any], key: Any, where: str, limit: int, truncated: dict[str, int]
) -> None:
    value = parent[key]
    if isinstance(value, str) and len(value) > limit:
        truncated.setdefault(where, len(value))
        parent[key] = value[: limit - 1] + ELLIPSIS


def _cap_list(parent: dict[str, Any], key: str, where: str, truncated: dict[str, int]) -> None:
    value = parent[key]
    if not isinstance(value, list):
        return
    if len(value) > LIST_ITEMS:
        truncated.setdefault(where, len(value))
        value = parent[key] = value[:LIST_ITEMS]
    for index in range(len(value)):
        _cap_string(value, index, f"{where}.{index}", NAME_CHARS, truncated)


def _drop(
    parent: dict[str, Any], key: str, where: str, required: bool, truncated: dict[str, int]
) -> None:
    value = parent[key]
    if value in ("", [], {}, None):
        return  # nothing to gain
    truncated.setdefault(where, len(value) if isinstance(value, str | list | dict) else 1)
    if required:
        parent[key] = type(value)() if isinstance(value, str | list | dict) else None
    else:
        del parent[key]


def _locations(record: dict[str, Any], path: str) -> Iterator[tuple[dict[str, Any], str, str]]:
    """(parent mapping, key, concrete path) of each field `path` names that is present."""
    parts = path.split(".")

    def walk(node: dict[str, Any], index: int, prefix: str) -> Iterator[tuple[Any, str, str]]:
        part = parts[index]
        keys = list(node) if part == "*" else [part] if part in node else []
        for key in keys:
            where = f"{prefix}{key}"
            if index == len(parts) - 1:
                yield node, key, where
            elif isinstance(node[key], dict):
                yield from walk(node[key], index + 1, where + ".")

    return walk(record, 0, "")


def _strings(node: Any, prefix: str = "") -> Iterator[tuple[Any, Any, str]]:
    """Every string value below `node` (not `truncated`, whose keys are paths)."""
    items: list[tuple[Any, Any]] = (
        list(node.items()) if isinstance(node, dict) else list(enumerate(node))
    )
    for key, value in items:
        if (prefix == "" and key == "truncated") or key in UNCUT:
            continue
        where = f"{prefix}{key}"
        if isinstance(value, str):
            yield node, key, where
        elif isinstance(value, dict | list):
            yield from _strings(value, where + ".")
