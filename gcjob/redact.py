"""What may leave gcjob in a message: one line, no credentials.

A request header, a URL's userinfo or a token must never reach the report, stderr or the
summary, even through an unexpected exception's message (e.g. http.client's
"Invalid header value b'Bearer <token>\\n'").
"""

from __future__ import annotations

import re

# scheme://user:password@host -> scheme://***@host
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]*@")
# Authorization values, however quoted or escaped: "Bearer abc", b'Basic abc\n'
_AUTHORIZATION = re.compile(r"(?i)\b(bearer|basic)(\s+|\\[nrt])+[^\s'\",;)\]}]+")


def redact(text: str) -> str:
    """`text` on one line, with userinfo and Authorization values replaced by ***."""
    text = _USERINFO.sub(r"\1***@", text)
    text = _AUTHORIZATION.sub(r"\1 ***", text)
    return " ".join(text.split())


def error_line(exc: BaseException, limit: int = 300) -> str:
    """An unexpected exception as one redacted line: its type and message, cut at `limit`."""
    return redact(f"{type(exc).__name__}: {exc}")[:limit]
