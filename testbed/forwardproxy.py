"""A small real HTTP proxy, as HTTPS_PROXY and HTTP_PROXY name one: a CONNECT tunnel for an
https:// server (the bytes passed on unread both ways) and an absolute-form request
(`GET http://host/path`) forwarded for an http:// one, its answer passed back. It keeps a log
of every request it was sent, headers included: what a proxy between gcjob and a cluster
reads. `hosts` resolves names the proxy alone knows (as a corporate proxy resolves names the
client cannot): a client that reaches such a name reached it through the proxy.
"""

from __future__ import annotations

import contextlib
import http.client
import select
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


@dataclass(frozen=True)
class ProxiedRequest:
    method: str  # CONNECT, or the forwarded request's method
    target: str  # host:port for CONNECT, the absolute URL otherwise
    headers: dict[str, str]  # lower-case names, as the proxy received them


class ForwardProxy:
    def __init__(self, hosts: Mapping[str, str] | None = None) -> None:
        self.hosts = dict(hosts or {})
        self._lock = threading.Lock()
        self._requests: list[ProxiedRequest] = []
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[ProxiedRequest]:
        with self._lock:
            return list(self._requests)

    def resolve(self, host: str) -> str:
        return self.hosts.get(host.lower(), host)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _record(self, request: ProxiedRequest) -> None:
        with self._lock:
            self._requests.append(request)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up mid-tunnel: nothing to report


class _Handler(BaseHTTPRequestHandler):
    owner: ForwardProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _received(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.owner._record(ProxiedRequest(self.command, self.path, headers))

    def do_CONNECT(self) -> None:
        self._received()
        host, _, port = self.path.rpartition(":")
        try:
            upstream = socket.create_connection((self.owner.resolve(host), int(port)), timeout=30)
        except (OSError, ValueError):
            self.send_error(502, "proxy: cannot connect")
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        with upstream:
            _splice(self.connection, upstream)

    def _forward(self) -> None:
        self._received()
        url = urlsplit(self.path)
        if url.scheme != "http" or not url.hostname:
            self.send_error(400, "proxy: an absolute http:// URL is needed")
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        path = url.path + (f"?{url.query}" if url.query else "")
        connection = http.client.HTTPConnection(
            self.owner.resolve(url.hostname), url.port or 80, timeout=30
        )
        try:
            connection.request(self.command, path or "/", body=body, headers=headers)
            answer = connection.getresponse()
            data = answer.read()
        except (OSError, http.client.HTTPException):
            self.send_error(502, "proxy: no answer")
            return
        finally:
            connection.close()
        self.send_response_only(answer.status, answer.reason)
        for key, value in answer.getheaders():
            if key.lower() not in HOP_BY_HOP and key.lower() != "content-length":
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward


def _splice(one: socket.socket, other: socket.socket) -> None:
    """Pass bytes both ways until either side closes."""
    sockets = [one, other]
    while True:
        readable, _, broken = select.select(sockets, [], sockets, 60)
        if broken or not readable:
            return
        for source in readable:
            try:
                data = source.recv(65536)
            except OSError:
                return
            if not data:
                return
            with contextlib.suppress(OSError):
                (other if source is one else one).sendall(data)
