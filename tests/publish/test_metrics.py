"""--pushgateway: the pushed metrics read back from a local HTTP server that records the push
(it plays a Pushgateway's HTTP endpoint, nothing of Kubernetes), and an unreachable
Pushgateway that changes nothing but a warning."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from gcjob.cli import cli
from gcjob.publish.metrics import push
from testbed import paths

DEMO = str(paths.DEMO)


class Receiver:
    """Records each push: (method, path, body text)."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.pushes: list[tuple[str, str, str]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def _record(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode()
                receiver.pushes.append((self.command, self.path, body))
                self.send_response(receiver.status)
                self.end_headers()

            do_PUT = do_POST = _record

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def samples(self, index: int = -1) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        text = self.pushes[index][2]
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


def summary(exit_code: int = 0, **counts: Any) -> dict[str, Any]:
    return {
        "dry_run": False,
        "exit_code": exit_code,
        "counts": counts
        or {"companions": {"deleted": {"orphaned": 3}, "skipped": {"referrer-live": 7}}},
        "sweeps": {"companions": {"scanned": 10}, "routes": {"scanned": 0}},
        "api_requests": {"total": 9, "by_target": {"hub": 8, "upstream": 1}},
    }


def test_a_successful_run_replaces_the_group_and_sets_the_last_success(
    receiver: Receiver,
) -> None:
    assert push(receiver.url, summary(), duration=1.5, finished=1_700_000_000.0)

    method, path, _ = receiver.pushes[0]
    assert (method, path) == ("PUT", "/metrics/job/gcjob/mode/delete")
    got = receiver.samples()
    labels = (("action", "deleted"), ("reason", "orphaned"), ("sweep", "companions"))
    assert got[("gcjob_run_objects", labels)] == 3
    skipped = (("action", "skipped"), ("reason", "referrer-live"), ("sweep", "companions"))
    assert got[("gcjob_run_objects", skipped)] == 7
    assert got[("gcjob_run_objects_seen", (("sweep", "companions"),))] == 10
    assert got[("gcjob_run_api_requests", (("target", "upstream"),))] == 1
    assert got[("gcjob_run_duration_seconds", ())] == 1.5
    assert got[("gcjob_run_exit_code", ())] == 0
    assert got[("gcjob_run_brake_engaged", ())] == 0
    assert got[("gcjob_last_success_timestamp_seconds", ())] == 1_700_000_000.0


def test_a_failed_run_adds_its_metrics_and_keeps_the_last_success(receiver: Receiver) -> None:
    braked = {"routes": {"would-delete": {"brake": 60}}}

    assert push(receiver.url, summary(4, **braked), duration=2.0, finished=1_700_000_300.0)

    method, path, _ = receiver.pushes[0]
    assert method == "POST"  # POST leaves the earlier gcjob_last_success_timestamp_seconds
    assert path == "/metrics/job/gcjob/mode/delete"
    got = receiver.samples()
    assert got[("gcjob_run_exit_code", ())] == 4
    assert got[("gcjob_run_brake_engaged", ())] == 1
    assert not [name for name, _ in got if name == "gcjob_last_success_timestamp_seconds"]


def test_a_push_the_gateway_refuses_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    refusing = Receiver(status=500)
    try:
        assert not push(refusing.url, summary(), duration=1.0, finished=1.0)
    finally:
        refusing.server.shutdown()
        refusing.server.server_close()
    assert "could not push metrics" in caplog.text


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_cli_pushes_at_the_end_of_a_run(receiver: Receiver) -> None:
    result = CliRunner().invoke(
        cli,
        ["sweep", "--snapshot", DEMO, "--grace", "0", "--pushgateway", receiver.url],
        standalone_mode=False,
    )

    assert result.return_value == 0, result.stderr
    assert [(m, p) for m, p, _ in receiver.pushes] == [("PUT", "/metrics/job/gcjob/mode/dry-run")]
    got = receiver.samples()
    would = sum(v for (name, labels), v in got.items() if ("action", "would-delete") in labels)
    assert would == 15  # the demo's would-delete total, as its report says
    assert got[("gcjob_run_exit_code", ())] == 0


def test_an_unreachable_pushgateway_changes_nothing_but_a_warning() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    plain = CliRunner().invoke(cli, ["sweep", "--snapshot", DEMO], standalone_mode=False)

    result = CliRunner().invoke(
        cli, ["sweep", "--snapshot", DEMO, "--pushgateway", url], standalone_mode=False
    )

    assert result.return_value == plain.return_value == 0
    assert "could not push metrics to the Pushgateway" in result.stderr
    assert len(result.stdout.splitlines()) == len(plain.stdout.splitlines())


def test_upstream_clusters_are_counted_by_status_every_status_shown(receiver: Receiver) -> None:
    """issue 20 item 15: a failed upstream cluster shows where alerts look."""
    failed = {**summary(1), "upstream_counts": {"ok": 3, "unavailable": 1}}

    assert push(receiver.url, failed, duration=1.0, finished=1_700_000_000.0)

    got = receiver.samples()
    assert got[("gcjob_run_upstream_clusters", (("status", "unavailable"),))] == 1
    assert got[("gcjob_run_upstream_clusters", (("status", "ok"),))] == 3
    assert got[("gcjob_run_upstream_clusters", (("status", "suspect"),))] == 0
    assert got[("gcjob_run_upstream_clusters", (("status", "unknown"),))] == 0
