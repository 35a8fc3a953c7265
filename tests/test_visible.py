"""gcjob.visible: control characters from a cluster never reach a terminal or a pipeline raw
(issue 12 item 3)."""

from __future__ import annotations

import io
import json
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.visible import VisibleMessages, clip, json_text, visible

# A binding on a real hub printed a forged, coloured line and set the terminal title.
FORGED = "x\n\x1b[32mwould-delete  bindings  ResourceBinding  ns/forged\x1b[0m\x1b]0;pwned\x07"
RAW = [
    *(chr(c) for c in range(0x20)),
    "\x7f",
    *(chr(c) for c in range(0x80, 0xA0)),
    "\u061c",
    "\u200e",
    "\u200f",
    "\u2028",
    "\u2029",
    *(chr(c) for c in range(0x202A, 0x202F)),
    *(chr(c) for c in range(0x2066, 0x206A)),
]


@pytest.mark.parametrize("char", RAW, ids=lambda c: f"U+{ord(c):04X}")
def test_every_control_character_is_escaped_visibly(char: str) -> None:
    shown = visible(f"a{char}b")
    assert char not in shown
    assert shown.startswith("a\\") and shown.endswith("b")


def test_escapes_name_the_character() -> None:
    assert visible("\x1b[31m") == "\\x1b[31m"
    assert visible("\x9b") == "\\x9b"
    assert visible("gnp\u202eexe") == "gnp\\u202eexe"
    assert visible(FORGED).count("\n") == 0


def test_printable_text_is_left_alone() -> None:
    text = "ns-1/app-config: Größe 日本 ✓ [orphaned] tab-less"
    assert visible(text) == text


def test_json_text_stays_json_and_escapes_what_json_leaves_raw() -> None:
    value = {"name": "".join(RAW) + "é\ud800"}
    text = json_text(value)
    for char in [*RAW, "\ud800"]:
        assert char not in text
    assert "é" in text  # readable non-ASCII stays as it is
    assert json.loads(text) == value  # escaped as JSON: the value decodes unchanged
    text.encode("utf-8")  # a lone surrogate left raw could not be written


def test_log_messages_and_their_arguments_are_escaped() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(VisibleMessages())
    logger = logging.getLogger("gcjob.test-visible")
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.warning("binding %s: %s", FORGED, "HTTP 403\u202e")
    output = stream.getvalue()
    assert output.count("\n") == 1
    assert "\x1b" not in output and "\u202e" not in output and "\x07" not in output
    assert "\\x1b[32mwould-delete" in output


def test_text_logs_on_stderr_are_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    from gcjob import logs

    saved = logs.log.handlers[:]
    try:
        logs.setup("text")
        logs.log.error("upstream says: %s", FORGED)
    finally:
        logs.log.handlers[:] = saved
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\x07" not in err


@given(text=st.text(max_size=300), limit=st.integers(min_value=1, max_value=200))
def test_clip_fits_and_says_when_it_cut(text: str, limit: int) -> None:
    clipped = clip(text, limit)
    assert len(clipped) <= limit
    if len(text) <= limit:
        assert clipped == text
    else:
        assert clipped.endswith("…")
        assert text.startswith(clipped[:-1])


def test_clip_cuts_at_a_words_end() -> None:
    assert clip("grant 'delete' on configmaps in ns-a", 20) == "grant 'delete' on…"
