"""A hostile network peer (not Kubernetes): a plain-HTTP server on loopback that answers every
request as a test tells it to (slow drips, huge bodies, encodings nobody asked for), and a
gcjob transport pointed at one."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable

from kubernetes.client import ApiClient, Configuration

from gcjob.budget import RunBudget
from gcjob.kube.transport import RequestStats, RetryPolicy, Timeouts, Transport


class Hostile:
    """A plain-HTTP peer on loopback that answers every request with `reply(conn)`."""

    def __init__(self, reply: Callable[[socket.socket], None]) -> None:
        self.reply = reply
        self.received: list[bytes] = []  # each request's first bytes
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            self.received.append(conn.recv(65536))
            self.reply(conn)

    def close(self) -> None:
        # shutdown() wakes the accept() blocked in _serve; close() alone would leave the
        # port listening until that accept returns, answering some later test's connection.
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()


def hostile_transport(
    reply: Callable[[socket.socket], None], budget: RunBudget, read: float = 30.0
) -> tuple[Transport, Hostile]:
    """A hub transport (two attempts, a 1 s connect timeout) to a new peer answering `reply`;
    the caller closes the peer."""
    peer = Hostile(reply)
    configuration = Configuration()
    configuration.host = peer.url
    configuration.retries = False
    transport = Transport(
        ApiClient(configuration),
        "hub",
        stats=RequestStats(),
        budget=budget,
        timeouts=Timeouts(1.0, read),
        retry=RetryPolicy(attempts=2, max_total=60.0),
    )
    return transport, peer
