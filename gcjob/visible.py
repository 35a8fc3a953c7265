"""Text from a cluster, shown to a person or a log pipeline without its control characters.

Object names, spec.resource values, snapshot file names and servers' Status messages are
written by whoever can write to a cluster. Printed raw, a newline forges a report line, an
ANSI sequence recolours it and an OSC sequence sets the terminal's title; a bidi override
reorders what is read.
"""

from __future__ import annotations

import json
import re
from typing import Any

# The Unicode line and paragraph separators, bidi marks, embeddings, overrides and isolates.
_FORMAT = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
# What JSON itself leaves raw of those (it escapes C0 already), plus lone surrogates, which
# cannot be encoded as UTF-8: written as \\uXXXX escapes, the value decodes unchanged.
_JSON_RAW = re.compile(f"[\x7f-\x9f{_FORMAT}\ud800-\udfff]")


def json_text(value: Any) -> str:
    """One JSON document on one line: non-ASCII kept readable, but C1, bidi and separator
    characters (and lone surrogates) escaped, so no terminal or pipeline acts on them."""
    text = json.dumps(value, ensure_ascii=False)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
