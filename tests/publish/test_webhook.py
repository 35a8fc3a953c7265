"""--notify-webhook: when a run is worth a message, what it says (never a Secret's data), and
that a 500 or a timeout is a warning that leaves the exit code alone (`responses` answers)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests
import responses
from click.testing import CliRunner

from gcjob.cli import cli
from gcjob.publish.webhook import Notable, message, notify, why
from testbed import paths
from testbed.forwardproxy import ForwardProxy

URL = "https://hooks.example.test/services/T000/B000/secret-token"
DEMO = str(paths.DEMO)


def item(action: str, reason: str, name: str = "db-creds", kind: str = "Secret") -> dict[str, Any]:
    return {
        "record": "item",
        "sweep": "companions",
        "kind": kind,
        "namespace": "ns-a",
        "name": name,
        "action": action,
        "reason": reason,
        "detail": "no WorkloadDeployment named web in ns-a",
    }


def summary(exit_code: int = 0, **counts: Any) -> dict[str, Any]:
    counts = counts or {"companions": {"deleted": {"orphaned": 7}}}
    totals: dict[str, int] = {}
    for actions in counts.values():
        for action, reasons in actions.items():
            totals[action] = totals.get(action, 0) + sum(reasons.values())
    return {
        "run_id": "run-1",
        "hub": "https://hub.example",
        "dry_run": False,
        "exit_code": exit_code,
        "exit_reason": "completed" if exit_code == 0 else "an item failed",
        "counts": counts,
        "totals": totals,
    }


def test_a_run_is_worth_a_message_when_it_deleted_braked_or_failed() -> None:
    assert why(summary()) == ["deleted 7"]
    braked = summary(4, routes={"would-delete": {"brake": 60}})
    assert why(braked) == ["hit the brake"]
    assert why(summary(3, companions={"skipped": {"referrer-live": 2}})) == ["failed (exit 3)"]
    assert why(summary(0, companions={"skipped": {"referrer-live": 2}})) == []
    # Locked: said every time (issue 20 item 11), naming the holder through the exit reason.
    assert why(summary(6, companions={})) == ["found the lock held (exit 6)"]


def test_a_held_lock_is_said_with_its_holder() -> None:
    locked = summary(6, companions={})
    locked["exit_reason"] = (
        "lease default/gcjob is held by stuck-pod/run-9 (no renewTime: first seen unchanged "
        "now; taken over if it stays so until 2026-11-23T13:00:00Z)"
    )
    text = message(locked, [])["text"]
    assert text.startswith("*gcjob* found the lock held (exit 6) on https://hub.example")
    assert "exit 6: lease default/gcjob is held by stuck-pod/run-9 (no renewTime" in text


def test_the_message_carries_counts_first_items_run_id_and_exit_code() -> None:
    notable = Notable(limit=2)
    for record in (
        item("skipped", "referrer-live", "live"),
        item("deleted", "orphaned", "a"),
        item("deleted", "orphaned", "b"),
        item("deleted", "orphaned", "c"),
    ):
        notable(record)

    text = message(summary(), notable.items)["text"]

    assert [i["name"] for i in notable.items] == ["a", "b"]
    assert "deleted 7" in text
    assert "totals: 7 deleted" in text
    assert "• deleted Secret ns-a/a (companions: orphaned)" in text
    assert "… and 5 more in the report" in text
    assert "run_id run-1" in text
    assert "exit 0: completed" in text
    assert "live" not in text


@responses.activate
def test_a_post_goes_out_once_as_json() -> None:
    responses.post(URL, status=200)

    assert notify(URL, summary(), [item("deleted", "orphaned")]) is True

    assert len(responses.calls) == 1
    body = json.loads(responses.calls[0].request.body or b"{}")
    assert set(body) == {"text"}
    assert "db-creds" in body["text"]


@responses.activate
def test_a_quiet_run_posts_nothing() -> None:
    assert notify(URL, summary(0, companions={"skipped": {"referrer-live": 1}}), []) is None
    assert len(responses.calls) == 0


@responses.activate
def test_a_500_is_a_warning_without_the_url(caplog: pytest.LogCaptureFixture) -> None:
    responses.post(URL, status=500)

    assert notify(URL, summary(), []) is False

    assert len(responses.calls) == 1  # no retries
    assert "HTTP 500" in caplog.text
    assert "secret-token" not in caplog.text


@responses.activate
def test_a_timeout_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    responses.post(URL, body=requests.exceptions.ReadTimeout("read timed out"))

    assert notify(URL, summary(), []) is False

    assert len(responses.calls) == 1
    assert "ReadTimeout" in caplog.text


@pytest.mark.parametrize("answer", [500, requests.exceptions.ConnectTimeout("timed out")])
@responses.activate
def test_the_cli_posts_on_the_brake_and_a_failed_post_keeps_the_exit_code(answer: Any) -> None:
    args = ["sweep", "--snapshot", DEMO, "--max-delete-percent", "1", "--brake-min-objects", "1"]
    args += ["--grace", "0"]
    plain = CliRunner().invoke(cli, args, standalone_mode=False)
    if isinstance(answer, int):
        responses.post(URL, status=answer)
    else:
        responses.post(URL, body=answer)

    result = CliRunner().invoke(cli, [*args, "--notify-webhook", URL], standalone_mode=False)

    assert result.return_value == plain.return_value
    assert len(responses.calls) == 1
    text = json.loads(responses.calls[0].request.body or b"{}")["text"]
    assert "hit the brake" in text
    last = json.loads(result.stdout.splitlines()[-1])
    assert f"run_id {last['run_id']}" in text
    assert "could not post the notification webhook" in result.stderr


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[bytes]]]:
    """A webhook receiver on loopback, plain http:// (which gcjob allows there): its URL and
    the bodies it was posted."""
    bodies: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            bodies.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/services/T0/B0/secret-token", bodies
    server.shutdown()
    server.server_close()


def test_the_webhook_takes_the_route_chosen_for_its_url_never_cleartext_to_a_proxy(
    receiver: tuple[str, list[bytes]],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 46: requests read HTTP_PROXY its own way and sent a loopback webhook's URL, a
    credential, to the proxy in cleartext. Now: loopback straight; an http:// URL that would
    go through the proxy is not posted at all (a warning), the proxy hears nothing."""
    url, bodies = receiver
    proxy = ForwardProxy(hosts={"hooks.gcjob.test": "127.0.0.1"})
    try:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("http_proxy", proxy.url)
        assert notify(url, summary(), [item("deleted", "orphaned")]) is True
        assert len(bodies) == 1
        elsewhere = url.replace("127.0.0.1", "hooks.gcjob.test")
        assert notify(elsewhere, summary(), []) is False
    finally:
        proxy.stop()
    assert proxy.requests == []
    assert len(bodies) == 1
    assert "cleartext" in caplog.text and "secret-token" not in caplog.text


def test_a_failed_run_says_which_sweep_item_and_cluster_failed() -> None:
    """issue 51 item 5: "failed (exit 1)" named nothing. The message says what failed: the
    sweep not completed, the items kept by a failure (with their cluster), the clusters."""
    failed = summary(1, routes={"skipped": {"upstream-unavailable": 3, "referrer-live": 9}})
    failed["sweeps"] = {
        "routes": {"status": "completed", "detail": ""},
        "copies": {"status": "incomplete", "detail": "hub discovery failed: HTTP 503"},
    }
    failed["upstream_counts"] = {"ok": 4, "unavailable": 1}
    notable = Notable()
    notable({**item("skipped", "referrer-live", "kept"), "sweep": "routes"})
    notable({**item("skipped", "upstream-unavailable", "r1"), "sweep": "routes", "cluster": "p-9"})

    text = message(failed, notable.items)["text"]

    assert text.startswith("*gcjob* failed (exit 1) on https://hub.example")
    assert "why: copies sweep incomplete: hub discovery failed: HTTP 503" in text
    assert "why: routes: 3 skipped (upstream-unavailable)" in text
    assert "why: upstream clusters unavailable: 1" in text
    assert "• skipped Secret ns-a/r1 (routes: upstream-unavailable, cluster p-9)" in text
    assert "kept" not in text and "referrer-live" not in text
    assert "… and 2 more in the report" in text


def test_a_run_whose_every_delete_a_finalizer_holds_is_worth_a_message() -> None:
    """A Karmada hub with its controllers down: every binding delete is delete-held. Deletes
    went out: the run is said, as one that deleted."""
    held = summary(0, bindings={"delete-held": {"orphaned": 3}})
    assert why(held) == ["sent 3 deletes a finalizer holds"]
    assert message(held, [])["text"].startswith("*gcjob* sent 3 deletes a finalizer holds on ")
