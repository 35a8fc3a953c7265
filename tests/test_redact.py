"""gcjob.redact: no credential and no line break in any message (issue 12 A)."""

from __future__ import annotations

import pytest

from gcjob.redact import redact


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("ValueError: Invalid header value b'Bearer s3cr3t-token\\n'", "s3cr3t-token"),
        ("Invalid header value b'Bearer s3cr3t-token\n'", "s3cr3t-token"),
        ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
        ("https://admin:hunter2@hub.example:6443", "hunter2"),
        ("cannot reach https://admin:hunter2@hub.example/x: refused", "admin"),
        ("http://token@10.0.0.1/projects/p", "token"),
    ],
)
def test_credentials_are_redacted(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert "***" in out
    assert "\n" not in out


def test_a_message_without_credentials_is_kept_on_one_line() -> None:
    assert redact("HTTP 503\n  on /api:\tdown") == "HTTP 503 on /api: down"
    assert redact("https://hub.example:6443/api") == "https://hub.example:6443/api"
