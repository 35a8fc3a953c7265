"""Text from a cluster, shown to a person or a log pipeline without its control characters.

Object names, spec.resource values, snapshot file names and servers' Status messages are
written by whoever can write to a cluster. Printed raw, a newline forges a report line, an
ANSI sequence recolours it and an OSC sequence sets the terminal's title; a bidi override
reorders what is read.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

# The Unicode line and paragraph separators, bidi marks, embeddings, overrides and isolates.
_FORMAT = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
# What JSON itself leaves raw of those (it escapes C0 already), plus lone surrogates, which
# cannot be encoded as UTF-8: written as \\uXXXX escapes, the value decodes unchanged.
_JSON_RAW = re.compile(f"[\x7f-\x9f{_FORMAT}\ud800-\udfff]")


def visible(text: str) -> str:
    """`text` with every character that is not printable (C0, DEL, C1, U+2028/2029, bidi and
    other format characters, lone surrogates) written as a visible escape: `\\x1b`, `\\n`,
    `\\u202e`. Printable text, non-ASCII included, is left as it is."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def json_text(value: Any) -> str:
    """One JSON document on one line: non-ASCII kept readable, but C1, bidi and separator
    characters (and lone surrogates) escaped, so no terminal or pipeline acts on them."""
    text = json.dumps(value, ensure_ascii=False)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


ELLIPSIS = "…"


def clip(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: whole, or cut at a word's end (unless that would
    lose more than a fifth of the room) and ending in "…", so a reader sees it was cut."""
    if len(text) <= limit:
        return text
    room = max(limit - len(ELLIPSIS), 0)
    cut = text[:room]
    space = cut.rfind(" ")
    if space >= room * 4 // 5:
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS


class VisibleMessages(logging.Filter):
    """Escapes control characters in a log message and its arguments (text log format)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = visible(record.getMessage())
        record.args = None
        return True
