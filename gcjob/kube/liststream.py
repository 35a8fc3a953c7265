"""Decodes a list answer item by item as its bytes arrive, so memory stays flat however large
the collection (a 1.25 watch cache sends a whole collection in one answer).

A list answer is one JSON object: `{"kind": ..., "apiVersion": ..., "metadata": {...},
"items": [...]}`. Only its top level is walked here; each value (one item, or the list's own
metadata) is decoded whole by the standard library's C decoder, which keeps its limits: a value
nested deeper than Python's recursion limit is NestedTooDeeply (malformed, never a crash), and
it never builds more than MAX_VALUE_CHARS of one value. The incremental parsers tried (ijson's
C backend) build any depth iteratively, so a hostile item of `[[[[...` costs ~80 bytes of
memory per input byte, and decoded a 70 MB list more slowly than this does.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable
from typing import Any

from gcjob.kube.transport import NestedTooDeeply

# One value (an item or the list's metadata) larger than this is refused: an object in etcd
# is at most 1.5 MiB by default, so this is ten times what a real server can send.
MAX_VALUE_CHARS = 16 * 1024 * 1024

_RETRY_EVERY_CHUNK = 64 * 1024
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODE = json.JSONDecoder().raw_decode


class ValueTooLarge(ValueError):
    """One value of the answer is over MAX_VALUE_CHARS."""


class _NeedMore(Exception):
    """The buffer ends before the next token does."""


class ListStream:
    """Feed it the answer's bytes; each item goes to `on_item` as soon as it is complete.
    `end()` checks the answer was one whole list object and returns its top-level fields
    but `items` (e.g. `metadata.continue`). Raises ValueError on anything malformed.
    `on_field`: each top-level field but `items`, as soon as it is decoded (a real server sends
    `metadata`, and its continue token, before the items); `end()` is what the answer said."""

    def __init__(
        self,
        on_item: Callable[[Any], None],
        *,
        max_value_chars: int = MAX_VALUE_CHARS,
        on_field: Callable[[str, Any], None] | None = None,
    ) -> None:
        self._on_item = on_item
        self._on_field = on_field
        self._max_value = max_value_chars
        self._text = codecs.getincrementaldecoder("utf-8")()
        self._buffer = ""
        self._pos = 0
        self._ended = False
        self._retry_at = 0  # a value that did not decode is retried once the buffer grows
        # The state is the class's function, not a method bound to this stream: a stream
        # holding its own bound method was a cycle, and it kept the sink it fed (a whole
        # scan's results) until the cyclic collector ran, long after the list ended.
        self._state: Callable[[ListStream], bool] = ListStream._open_object
        self._key: str | None = None
        self._fields: dict[str, Any] = {}
        self._items_seen = False
        self.items = 0

    def feed(self, chunk: bytes) -> None:
        self._buffer = self._buffer[self._pos :] + self._text.decode(chunk)
        self._retry_at = max(0, self._retry_at - self._pos)
        self._pos = 0
        self._run()

    def end(self) -> dict[str, Any]:
        self._buffer = self._buffer[self._pos :] + self._text.decode(b"", final=True)
        self._pos = 0
        self._ended = True
        self._retry_at = 0
        self._run()
        if self._state is not ListStream._after_object:
            raise ValueError("the answer ends inside the list")
        if not self._items_seen:
            raise ValueError("list without items")
        return self._fields

    # -- the top-level walk: each state consumes what it can, then names the next ----------

    def _run(self) -> None:
        try:
            while self._state(self):
                pass
        except _NeedMore:
            if self._ended:
                raise ValueError("the answer ends inside the list") from None

    def _skip_space(self) -> str:
        match = _WHITESPACE.match(self._buffer, self._pos)
        assert match is not None  # the pattern matches the empty string
        self._pos = match.end()
        if self._pos >= len(self._buffer):
            raise _NeedMore
        return self._buffer[self._pos]

    def _expect(self, char: str) -> None:
        if self._skip_space() != char:
            raise ValueError(f"expected {char!r} at top level of the list")
        self._pos += 1

    def _value(self) -> Any:
        """The next complete JSON value, decoded whole."""
        self._skip_space()
        start = self._pos
        if len(self._buffer) < self._retry_at:
            raise _NeedMore  # not enough new text since the last try: never quadratic
        try:
            value, end = _DECODE(self._buffer, start)
        except RecursionError:
            raise NestedTooDeeply("nested too deeply to decode") from None
        except json.JSONDecodeError:
            if self._ended:
                raise ValueError("malformed JSON in the list") from None
            # Only text that does not decode as one value is over the limit: the buffer past
            # `start` may also hold the values after it.
            tail = len(self._buffer) - start
            if tail > self._max_value:
                raise ValueTooLarge(
                    f"a value of the list is over {self._max_value} characters"
                ) from None
            # A short tail is tried again with the next chunk; a long one once it doubled
            # (a huge value costs a few decodes, not one per chunk), and once more just past
            # the limit, so the buffer never grows much beyond it.
            again = len(self._buffer) + (1 if tail < _RETRY_EVERY_CHUNK else tail)
            self._retry_at = min(again, start + self._max_value + 1)
            raise _NeedMore from None
        if end - start > self._max_value:
            raise ValueTooLarge(f"a value of the list is over {self._max_value} characters")
        # A value that ends with the buffer may be cut short (a number, `nul`): only a
        # following character, or the end of the answer, proves it whole.
        if end >= len(self._buffer) and not self._ended:
            self._retry_at = len(self._buffer) + 1
            raise _NeedMore
        self._pos = end
        self._retry_at = 0
        return value

    def _open_object(self) -> bool:
        self._expect("{")
        self._state = ListStream._first_key
        return True

    def _first_key(self) -> bool:
        if self._skip_space() == "}":
            self._pos += 1
            self._state = ListStream._after_object
            return True
        self._state = ListStream._key_name
        return True

    def _next_key(self) -> bool:
        char = self._skip_space()
        self._pos += 1
        if char == "}":
            self._state = ListStream._after_object
        elif char == ",":
            self._state = ListStream._key_name
        else:
            raise ValueError("expected ',' or '}' at top level of the list")
        return True

    def _key_name(self) -> bool:
        if self._skip_space() != '"':
            raise ValueError("expected a key at top level of the list")
        key = self._value()
        self._key = key
        self._state = ListStream._colon
        return True

    def _colon(self) -> bool:
        self._expect(":")
        self._state = ListStream._items_open if self._key == "items" else ListStream._field_value
        return True

    def _field_value(self) -> bool:
        assert self._key is not None
        value = self._fields[self._key] = self._value()
        self._state = ListStream._next_key
        if self._on_field is not None:
            self._on_field(self._key, value)
        return True

    def _items_open(self) -> bool:
        char = self._skip_space()
        if char == "[":
            self._pos += 1
            self._items_seen = True
            self._state = ListStream._first_item
            return True
        # `"items": null` is how a real server sends an empty list (Go's nil slice).
        if char == "n":
            if self._value() is not None:
                raise ValueError("items is not a list")
            self._items_seen = True
            self._state = ListStream._next_key
            return True
        raise ValueError("items is not a list")

    def _first_item(self) -> bool:
        if self._skip_space() == "]":
            self._pos += 1
            self._state = ListStream._next_key
        else:
            self._state = ListStream._item
        return True

    def _next_item(self) -> bool:
        char = self._skip_space()
        self._pos += 1
        if char == "]":
            self._state = ListStream._next_key
        elif char == ",":
            self._state = ListStream._item
        else:
            raise ValueError("expected ',' or ']' between items")
        return True

    def _item(self) -> bool:
        item = self._value()
        self._state = ListStream._next_item
        self.items += 1
        self._on_item(item)
        return True

    def _after_object(self) -> bool:
        match = _WHITESPACE.match(self._buffer, self._pos)
        assert match is not None
        self._pos = match.end()
        if self._pos < len(self._buffer):
            raise ValueError("text after the list")
        return False
