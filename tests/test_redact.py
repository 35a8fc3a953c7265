"""gcjob.redact: no credential and no line break in any message (issue 12 A)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from gcjob import logs
from gcjob.budget import RunBudget
from gcjob.kube.connect import hub_client
from gcjob.kube.transport import RequestStats
from gcjob.lifecycle import open_sources
from gcjob.redact import (
    MIN_SECRET_CHARS,
    error_line,
    keep_authorization,
    keep_secret,
    redact,
    scrub,
)
from gcjob.settings import Settings


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


# -- the run's credentials, by value (issue 46, finding 6) -----------------------------------


def test_the_runs_credentials_are_redacted_by_value_wherever_they_show() -> None:
    """A server that echoes the bare token ("token X is not valid") says nothing that looks
    like a credential: the patterns above miss it; the value itself does not."""
    keep_authorization("Bearer 9f8e7d6c-bare-token-echoed")
    keep_authorization("Basic " + base64.b64encode(b"operator:pa55-w0rd!").decode())
    echoed = 'HTTP 403 on /apis: token 9f8e7d6c-bare-token-echoed is "not" valid'
    assert redact(echoed) == 'HTTP 403 on /apis: token *** is "not" valid'
    assert "9f8e7d6c" not in error_line(ValueError(echoed))
    assert scrub("user operator:pa55-w0rd! refused") == "user *** refused"
    assert scrub("password pa55-w0rd! refused") == "password *** refused"
    # As JSON writes it: a quote or a backslash in a secret is escaped in a report line.
    keep_secret('quo"te\\d-secret')
    line = json.dumps({"detail": 'said quo"te\\d-secret'})
    assert "secret" not in scrub(line) and json.loads(scrub(line)) == {"detail": "said ***"}


def test_a_secret_too_short_to_matter_is_not_redacted_from_every_word() -> None:
    keep_secret("other")
    keep_secret("")
    assert scrub("the others go on, other") == "the others go on, other"


def test_a_kubeconfigs_credentials_are_kept_when_its_client_is_made(tmp_path: Path) -> None:
    path = tmp_path / "hub.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "kubeconfig-token-4711\n"}}],
                "contexts": [{"name": "hub", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "hub",
            }
        ),
        encoding="utf-8",
    )
    hub_client(str(path), None)
    assert redact("server said: kubeconfig-token-4711") == "server said: ***"


def test_every_log_line_is_scrubbed_in_either_format(capsys: pytest.CaptureFixture[str]) -> None:
    keep_secret("logged-token-0815")
    for log_format in ("json", "text"):
        logs.setup(log_format, "run-1")
        logs.log.warning("upstream said %s", "logged-token-0815 expired")
        err = capsys.readouterr().err
        assert "logged-token-0815" not in err and "*** expired" in err


def test_every_proxys_password_is_kept_at_start_used_or_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46's audit: a proxy's password was kept only when a Kubernetes request went
    through that proxy; the webhook's and the Pushgateway's never were. Every proxy of the
    environment and a kubeconfig's proxy-url are kept when the run opens its sources, before
    anything is sent: as written, percent-decoded, and as its Proxy-Authorization."""
    monkeypatch.setenv("HTTP_PROXY", "http://hook-user:hook-proxy-pw@proxy.corp:3128")
    monkeypatch.setenv("https_proxy", "push-user:push%E2%82%ACproxy-pw@proxy.corp")
    path = tmp_path / "hub.yaml"
    cluster = {"server": "https://127.0.0.1:1", "proxy-url": "http://k:kube-proxy%2Fpw@p:3128"}
    path.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "hub", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "hub",
            }
        ),
        encoding="utf-8",
    )
    open_sources(Settings(hub_kubeconfig=str(path)), RunBudget(None), RequestStats())
    basic = base64.b64encode("push-user:push€proxy-pw".encode()).decode()
    for said in (
        "hook-proxy-pw",
        "hook-user:hook-proxy-pw",
        "push%E2%82%ACproxy-pw",
        "push€proxy-pw",
        basic,
        "kube-proxy%2Fpw",
        "kube-proxy/pw",
    ):
        assert scrub(f"the proxy said {said}.") == "the proxy said ***."


def test_a_value_shorter_than_the_minimum_is_not_kept_as_operating_md_says() -> None:
    """docs/operating.md names the length below which a credential is not redacted by value."""
    text = (Path(__file__).parents[1] / "docs" / "operating.md").read_text(encoding="utf-8")
    assert f"shorter than {MIN_SECRET_CHARS} characters is not replaced" in " ".join(text.split())
    keep_secret("x" * (MIN_SECRET_CHARS - 1))
    assert scrub("x" * (MIN_SECRET_CHARS - 1)) == "x" * (MIN_SECRET_CHARS - 1)
