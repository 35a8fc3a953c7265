"""The whole CLI, in a subprocess, against a hub that drips its answers one byte a second.

The peer is a hostile network (a local socket server), not Kubernetes: the point is that
`--timeout` and SIGTERM end the run, with its report, however slowly the network answers.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.hostile import Hostile
from testbed.report import start_gcjob, summary_of

# docs/operating.md: a stopped run ends within --timeout plus this grace (the settle read of a
# delete in flight, FINAL_READ_SECONDS, and writing the report); measured runs end far sooner.
GRACE = 10.0


def _drip(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
    for _ in range(1000):
        conn.sendall(b" ")
        time.sleep(1.0)


@pytest.fixture
def dripping_hub(tmp_path: Path) -> Iterator[Path]:
    peer = Hostile(_drip)
    kubeconfig = tmp_path / "hub.yaml"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: hub\n"
        f"clusters: [{{name: hub, cluster: {{server: '{peer.url}'}}}}]\n"
        "users: [{name: hub, user: {token: abc}}]\n"
        "contexts: [{name: hub, context: {cluster: hub, user: hub}}]\n"
    )
    yield kubeconfig
    peer.close()


def _start(kubeconfig: Path, report: Path, *flags: str) -> subprocess.Popen[str]:
    return start_gcjob(
        *("--hub-kubeconfig", str(kubeconfig), "--report-file", str(report)),
        *("--read-timeout", "60s", *flags),
    )


def test_timeout_ends_a_run_whose_hub_drips(dripping_hub: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    started = time.monotonic()
    run = _start(dripping_hub, report, "--timeout", "3s")
    stdout, stderr = run.communicate(timeout=60)
    took = time.monotonic() - started

    assert took < 3 + GRACE, f"took {took:.1f}s"
    assert run.returncode == 5, stderr
    assert summary_of(stdout)["exit_code"] == 5
    assert json.loads(report.read_text())["summary"]["exit_code"] == 5


def test_sigterm_ends_a_run_whose_hub_drips(dripping_hub: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    run = _start(dripping_hub, report, "--timeout", "5m")
    time.sleep(3.0)  # interpreter start, then a request in flight
    signalled = time.monotonic()
    run.send_signal(signal.SIGTERM)
    stdout, stderr = run.communicate(timeout=60)
    took = time.monotonic() - signalled

    assert took < GRACE, f"took {took:.1f}s after SIGTERM"
    assert run.returncode == 5, stderr
    assert summary_of(stdout)["exit_code"] == 5
    assert json.loads(report.read_text())["summary"]["exit_code"] == 5
