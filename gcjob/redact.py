"""What may leave gcjob in a message: one line, no credentials.

A request header, a URL's userinfo or a token must never reach the report, stderr or the
summary, even through an unexpected exception's message (e.g. http.client's
"Invalid header value b'Bearer <token>\\n'"). Patterns catch what looks like one (`Bearer x`,
`user:pw@`); the run's own credentials are also redacted by value, wherever they are: a server
that echoes the bare token in a message ("token abc is not valid") says nothing that looks
like a credential (issue 46). The run keeps each credential it loads or sends
(`keep_secret`); `scrub` takes every kept one out of any text, and `redact` does too.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading

# scheme://user:password@host -> scheme://***@host
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]*@")
# Authorization values, however quoted or escaped: "Bearer abc", b'Basic abc\n'
_AUTHORIZATION = re.compile(r"(?i)\b(bearer|basic)(\s+|\\[nrt])+[^\s'\",;)\]}]+")
# A kept value shorter than this is not redacted by value: "other" would take every "other" out
# of every line. A credential that short is guessed, not leaked.
MIN_SECRET_CHARS = 8
REDACTED = "***"

_secrets: tuple[str, ...] = ()  # longest first: a secret that holds another goes whole
_secrets_lock = threading.Lock()


def keep_secret(value: str | None) -> None:
    """Redact `value` by value from every output of this process from now on: as it is, and
    as JSON writes it (a report line escapes a quote or a backslash)."""
    global _secrets
    if not value or len(value) < MIN_SECRET_CHARS:
        return
    forms = {value, json.dumps(value, ensure_ascii=False)[1:-1]}
    with _secrets_lock:
        if forms <= set(_secrets):
            return
        _secrets = tuple(sorted(set(_secrets) | forms, key=len, reverse=True))


def keep_authorization(header: object) -> None:
    """Keep the credential of an Authorization value (`Bearer <token>`, `Basic <base64>`, or
    a bare token): the token, and for basic auth `user:password` and the password too."""
    if not isinstance(header, str):
        return
    scheme, _, credential = header.strip().partition(" ")
    credential = credential.strip() or scheme
    keep_secret(credential)
    if scheme.lower() == "basic":
        try:
            pair = base64.b64decode(credential, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return
        keep_secret(pair)
        keep_secret(pair.partition(":")[2])


def scrub(text: str) -> str:
    """`text` with each kept secret replaced by ***."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact(text: str) -> str:
    """`text` on one line, with the run's credentials, userinfo and Authorization values
    replaced by ***."""
    text = scrub(text)
    text = _USERINFO.sub(r"\1***@", text)
    text = _AUTHORIZATION.sub(r"\1 ***", text)
    return " ".join(text.split())


def error_line(exc: BaseException, limit: int = 300) -> str:
    """An unexpected exception as one redacted line: its type and message, cut at `limit`."""
    return redact(f"{type(exc).__name__}: {exc}")[:limit]
