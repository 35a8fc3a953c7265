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

from testbed.cluster import wait_for
from testbed.hostile import Hostile
from testbed.report import start_gcjob, summary_of

# No Kubernetes server here, a socket that drips: once, on 1.36 (docs/testing.md).
pytestmark = pytest.mark.version_independent

# docs/operating.md: a stopped run ends within --timeout plus this grace (the settle read of a
# delete in flight, FINAL_READ_SECONDS, and writing the report); measured runs end far sooner.
GRACE = 10.0


def _drip(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
    for _ in range(1000):
        conn.sendall(b" ")
        time.sleep(1.0)


@pytest.fixture
def dripping_peer(tmp_path: Path) -> Iterator[tuple[Path, Hostile]]:
    """The hub's kubeconfig, and the peer (its `received`: the requests it was sent)."""
    peer = Hostile(_drip)
    kubeconfig = tmp_path / "hub.yaml"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: hub\n"
        f"clusters: [{{name: hub, cluster: {{server: '{peer.url}'}}}}]\n"
        "users: [{name: hub, user: {token: abc}}]\n"
        "contexts: [{name: hub, context: {cluster: hub, user: hub}}]\n"
    )
    yield kubeconfig, peer
    peer.close()


@pytest.fixture
def dripping_hub(dripping_peer: tuple[Path, Hostile]) -> Path:
    return dripping_peer[0]


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


def test_sigterm_ends_a_run_whose_hub_drips(
    dripping_peer: tuple[Path, Hostile], tmp_path: Path
) -> None:
    kubeconfig, peer = dripping_peer
    report = tmp_path / "report.json"
    run = _start(kubeconfig, report, "--timeout", "5m")
    # Signalled once its first request is in flight, however long the start took on a loaded
    # machine (a fixed sleep signalled a process still importing: returncode -15).
    wait_for(lambda: bool(peer.received) or run.poll() is not None, timeout=120)
    assert run.poll() is None and peer.received, run.communicate()[1]
    signalled = time.monotonic()
    run.send_signal(signal.SIGTERM)
    stdout, stderr = run.communicate(timeout=60)
    took = time.monotonic() - signalled

    assert took < GRACE, f"took {took:.1f}s after SIGTERM"
    assert run.returncode == 5, stderr
    assert summary_of(stdout)["exit_code"] == 5
    assert json.loads(report.read_text())["summary"]["exit_code"] == 5
